//! One row of the CPU kernel, as the passes it makes: [`form_v`] reads the inputs once into
//! an f32 row that stays in L1 cache, [`normalizer`] settles the row's scale, and [`write_y`]
//! reads that row again to write `y`.
//!
//! Elementwise passes are plain loops, which LLVM vectorizes (f32x4 in WebAssembly). Sums
//! and maxima run in [`LANES`] independent partial results over fixed-size blocks, which it
//! vectorizes too without reordering any float operation: results are the same, bit for
//! bit, natively and in the browser, whether or not a given build vectorized.

use super::element::Element;

/// Partial sums per row: four f32x4 registers in WebAssembly, enough independent additions
/// to hide their latency; each also sums only 1/16 of the row, which keeps its rounding
/// error well inside the 1e-5 budget at any row length the package takes.
const LANES: usize = 16;

/// Rows with a sum of squares below 2^-60 are rescaled (as in the WGSL kernel): below it
/// squares that matter could be subnormal or zero, and the plain sum would lose them.
const TINY_SUM: f32 = f32::from_bits((127 - 60) << 23);

/// `v = (input + residual) + bias` of one row into `v`, formed in f32 in that order (it is
/// the `sum` output, bit for bit); returns the sum of its squares.
#[inline(always)]
pub fn form_v<T: Element>(input: &[T], residual: &[T], bias: Option<&[f32]>, v: &mut [f32]) -> f32 {
    // The squares are summed from L1 afterwards: in one loop with the stores, LLVM cannot
    // tell the stores from the loads and vectorizes the block only in halves.
    let sums = v.iter_mut().zip(input).zip(residual);
    match bias {
        Some(bias) => {
            for (((v, &a), &r), &b) in sums.zip(bias) {
                *v = (a.widen() + r.widen()) + b;
            }
        }
        // No bias is no addition at all: adding 0 would turn -0 into +0.
        None => {
            for ((v, &a), &r) in sums {
                *v = a.widen() + r.widen();
            }
        }
    }
    sum_of_squares(v)
}

/// `post` of `y = v' * post * gamma + beta`, from the row's sum of `squares`. `v'` is what
/// this leaves in `v`: `v` itself, or, for a row whose squares overflow f32 (values ~1e19
/// and up) or underflow it, `v` times a power of two that brings the largest magnitude into
/// [0.5, 1). That scaling is exact (short of a tiny value in a huge row dropping into
/// subnormals, far below anything that row's `y` can show), so such rows normalize like
/// rows of ~1, eps = 0 included. NaN and Inf rows stay on the plain path and poison only
/// themselves; a row of zeros with eps = 0 gives 0/0 = NaN, like the reference.
pub fn normalizer(v: &mut [f32], squares: f32, eps: f32) -> f32 {
    let hidden = v.len() as f32;
    let plain = 1.0 / (squares / hidden + eps).sqrt();
    let lost = squares.is_infinite() || squares < TINY_SUM;
    if !lost {
        // Also every NaN row: it must stay NaN.
        return plain;
    }
    let max = max_magnitude(v);
    if !(max.is_finite() && max > 0.0) {
        return plain;
    }
    // max is in [2^(e-127), 2^(e-126)) for its biased exponent e (subnormals take the
    // clamp); the clamp keeps the scale itself a normal f32.
    let exponent = (max.to_bits() >> 23) as i32;
    let k = (126 - exponent).clamp(-126, 126);
    let scale = f32::from_bits(((k + 127) as u32) << 23);
    // eps * scale², in two exact steps: scale² alone overflows for k > 63.
    let eps_scaled = eps * scale * scale;
    if !eps_scaled.is_finite() {
        // Then mean < 2^-2k < eps * 2^-128: eps dominates the mean by more than f32 can
        // see, and `plain` is 1/sqrt(eps) exactly (the WGSL's fallback).
        return plain;
    }
    for x in v.iter_mut() {
        *x *= scale;
    }
    1.0 / (sum_of_squares(v) / hidden + eps_scaled).sqrt()
}

/// `y = v * post * gamma + beta` for one row, each result rounded once to `T`.
#[inline(always)]
pub fn write_y<T: Element>(v: &[f32], gamma: &[f32], beta: Option<&[f32]>, post: f32, y: &mut [T]) {
    match beta {
        Some(beta) => {
            for (((y, &v), &g), &b) in y.iter_mut().zip(v).zip(gamma).zip(beta) {
                *y = T::narrow(v * post * g + b);
            }
        }
        None => {
            for ((y, &v), &g) in y.iter_mut().zip(v).zip(gamma) {
                *y = T::narrow(v * post * g);
            }
        }
    }
}

/// `v` rounded once to `T`, for the `sum` output.
#[inline(always)]
pub fn store<T: Element>(v: &[f32], out: &mut [T]) {
    for (o, &x) in out.iter_mut().zip(v) {
        *o = T::narrow(x);
    }
}

fn sum_of_squares(v: &[f32]) -> f32 {
    let mut lanes = [0.0f32; LANES];
    for_each_block(v, |b| {
        for j in 0..LANES {
            lanes[j] += b[j] * b[j];
        }
    });
    // Pairwise, the same way on every target.
    let mut width = LANES / 2;
    while width > 0 {
        for j in 0..width {
            lanes[j] += lanes[j + width];
        }
        width /= 2;
    }
    lanes[0]
}

/// The largest |v|; the row holds no NaN here (its sum of squares is not NaN).
fn max_magnitude(v: &[f32]) -> f32 {
    // Comparisons, not f32::max: they have no NaN rule to honour, so each stays one SIMD
    // instruction.
    let larger = |a: f32, b: f32| if b > a { b } else { a };
    let mut lanes = [0.0f32; LANES];
    for_each_block(v, |b| {
        for j in 0..LANES {
            lanes[j] = larger(lanes[j], b[j].abs());
        }
    });
    lanes.into_iter().fold(0.0, larger)
}

/// Calls `f` on each block of `LANES` elements of `v`, the last one padded with zeros (which
/// change neither a sum of squares nor a largest magnitude). Whole blocks as arrays are
/// what LLVM turns into SIMD registers; lanes filled one by one at the end of a row would
/// make it split them.
#[inline(always)]
fn for_each_block(v: &[f32], mut f: impl FnMut(&[f32; LANES])) {
    let mut blocks = v.chunks_exact(LANES);
    for block in &mut blocks {
        f(block.try_into().unwrap());
    }
    let rest = blocks.remainder();
    if !rest.is_empty() {
        let mut last = [0.0; LANES];
        last[..rest.len()].copy_from_slice(rest);
        f(&last);
    }
}
