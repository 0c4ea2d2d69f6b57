//! One row of the CPU kernel, as the passes it makes: [`form_v`] reads the inputs once into
//! an f32 row that stays in L1 cache, [`normalize`] settles the row's normalization there
//! (centring it for LayerNorm, rescaling it where its squares leave f32), [`add_post`] turns
//! a normalized row into the sandwich's `v`, and [`write_y`] reads the row again to write `y`.
//!
//! Elementwise passes are plain loops, which LLVM vectorizes (f32x4 in WebAssembly). Sums
//! and maxima run in [`LANES`] independent partial results over fixed-size blocks, which it
//! vectorizes too without reordering any float operation: results are the same, bit for
//! bit, natively and in the browser, whether or not a given build vectorized.

use std::ops::Add;

use super::element::Element;
use crate::call::shape::NormKind;

/// Partial sums per row: four f32x4 registers in WebAssembly, enough independent additions
/// to hide their latency; each also sums only 1/16 of the row, which keeps its rounding
/// error well inside the 1e-5 budget at any row length the package takes.
const LANES: usize = 16;

/// Rows with a sum of squares below 2^-60 are rescaled (as in the WGSL kernel): below it
/// squares that matter could be subnormal or zero, and the plain sum would lose them.
const TINY_SUM: f32 = f32::from_bits((127 - 60) << 23);

/// Rows whose largest magnitude is in `[CENTRED_IN_F32, CENTRING_OVERFLOWS)` are centred in
/// f32; others, rare, in f64 (see [`center`]). Below 2^-60, `lo` and the centred values
/// nearest the mean near f32's subnormals, whose fixed spacing (2^-149) is no longer small
/// next to them.
const CENTRED_IN_F32: f32 = f32::from_bits((127 - 60) << 23);
/// From this magnitude up, `x - mean` of a row can pass f32's largest (2^128).
const CENTRING_OVERFLOWS: f32 = f32::from_bits((127 + 126) << 23);

/// `v` of one row into `v`, in f32, in the order the `sum` output is formed bit for bit:
/// `((input + input2) + residual) + bias`, each term only where the call has it (`input2`
/// empty where it has none).
#[inline(always)]
pub fn form_v<T: Element>(
    [input, input2]: [&[T]; 2],
    residual: Option<&[T]>,
    bias: Option<&[f32]>,
    v: &mut [f32],
) {
    if !input2.is_empty() {
        return form_v_of_two(input, input2, residual, bias, v);
    }
    // An absent array is no addition at all: adding 0 would turn -0 into +0.
    let inputs = v.iter_mut().zip(input);
    match (residual, bias) {
        (Some(residual), Some(bias)) => {
            for (((v, &a), &r), &b) in inputs.zip(residual).zip(bias) {
                *v = (a.widen() + r.widen()) + b;
            }
        }
        (Some(residual), None) => {
            for ((v, &a), &r) in inputs.zip(residual) {
                *v = a.widen() + r.widen();
            }
        }
        (None, Some(bias)) => {
            for ((v, &a), &b) in inputs.zip(bias) {
                *v = a.widen() + b;
            }
        }
        (None, None) => {
            for (v, &a) in inputs {
                *v = a.widen();
            }
        }
    }
}

/// [`form_v`] of a parallel block: its two sublayers' outputs added first, then the residual
/// and the bias, each a pass over the row in cache.
fn form_v_of_two<T: Element>(
    input: &[T],
    input2: &[T],
    residual: Option<&[T]>,
    bias: Option<&[f32]>,
    v: &mut [f32],
) {
    for ((v, &a), &b) in v.iter_mut().zip(input).zip(input2) {
        *v = a.widen() + b.widen();
    }
    if let Some(residual) = residual {
        v.iter_mut()
            .zip(residual)
            .for_each(|(v, &r)| *v += r.widen());
    }
    if let Some(bias) = bias {
        v.iter_mut().zip(bias).for_each(|(v, &b)| *v += b);
    }
}

/// The sandwich's `v = residual + N(u) · post_gamma` over a row that [`normalize`] left as
/// `N(u) = x · post`: `x` becomes `v`. `residual` is read here, after the post-norm, so the
/// row's inputs are still read from memory once each.
#[inline(always)]
pub fn add_post<T: Element>(x: &mut [f32], post: f32, post_gamma: &[f32], residual: Option<&[T]>) {
    let scaled = x.iter_mut().zip(post_gamma);
    match residual {
        Some(residual) => {
            for ((x, &g), &r) in scaled.zip(residual) {
                *x = r.widen() + *x * post * g;
            }
        }
        None => {
            for (x, &g) in scaled {
                *x *= post * g;
            }
        }
    }
}

/// Settles the normalization of the row in `x`: leaves values `x'` there and returns `post`
/// such that `N(x) = x' · post`. RMSNorm: `x' = x`, or `x` times a power of two where its
/// squares leave f32. LayerNorm: `x' = x - mean(x)`, the same way. None: `x`, `post` 1.
#[inline(always)]
pub fn normalize(x: &mut [f32], kind: NormKind, eps: f32) -> f32 {
    if kind == NormKind::None {
        return 1.0;
    }
    if kind == NormKind::Layer {
        if let Some(post) = center(x, eps) {
            return post;
        }
    }
    let squares = sum_of_squares(x);
    normalizer(x, squares, eps)
}

/// `x ← x - mean(x)`; `post` too where it also scaled the row.
///
/// Never `E[x²] - E[x]²`, which cancels to nothing where the mean is large next to the
/// spread. Nor the mean in f32: its rounding (2^-24 of the mean), or that of any f32 shift
/// of the row, is the whole of `x - mean` for the elements nearest the mean, whose `y` is
/// held to 1e-5 of itself. So the mean is summed in f64 from the row shifted by its first
/// value (exact in f64; the terms are then of the spread's size, not the mean's), and split
/// into two f32s, `hi + lo`: `(x - hi) - lo` is exact where `x` is near `hi` (Sterbenz) and
/// off by one rounding of `x - mean` elsewhere. Rows near the ends of f32's range take
/// [`center_in_f64`].
fn center(x: &mut [f32], eps: f32) -> Option<f32> {
    let mean = x[0] as f64 + shifted_mean(x);
    let max = max_magnitude(x);
    // NaN and Inf rows keep a NaN or infinite mean, which turns their whole row NaN (as
    // the reference's does); finite rows never have one (f64 holds any f32 row's sum).
    let in_f32 = (CENTRED_IN_F32..CENTRING_OVERFLOWS).contains(&max);
    if in_f32 || max == 0.0 || !(max.is_finite() && mean.is_finite()) {
        let hi = mean as f32;
        let lo = (mean - hi as f64) as f32;
        for v in x.iter_mut() {
            *v = (*v - hi) - lo;
        }
        return None;
    }
    Some(center_in_f64(x, mean, eps))
}

/// [`center`] for rows near the ends of f32's range, where `x - mean` could overflow f32,
/// or `lo` and the centred values be subnormal and lose digits that matter: each value
/// centred in f64 and scaled by the power of two that brings the largest into [0.5, 1)
/// before it is rounded to f32; the row's `post` from those, in f64 too, eps scaled alike.
#[cold]
fn center_in_f64(x: &mut [f32], mean: f64, eps: f32) -> f32 {
    let largest = x
        .iter()
        .fold(0.0f64, |m, &v| m.max((v as f64 - mean).abs()));
    if largest == 0.0 {
        // One value throughout: N(x) = 0 · 1/sqrt(eps), NaN without eps.
        x.fill(0.0);
        return 1.0 / eps.sqrt();
    }
    // largest is a normal f64 (it is at least half the smallest f32 subnormal): its
    // exponent e puts it in [2^e, 2^(e+1)), and 2^-(e+1) brings it into [0.5, 1).
    let exponent = ((largest.to_bits() >> 52) & 0x7ff) as i64 - 1023;
    let scale = f64::from_bits(((1023 - exponent - 1) as u64) << 52);
    for v in x.iter_mut() {
        *v = ((*v as f64 - mean) * scale) as f32;
    }
    let variance = sum_of_squares(x) as f64 / x.len() as f64;
    (1.0 / (scale * (variance / (scale * scale) + eps as f64).sqrt())) as f32
}

/// `post` of `N(v) = v' * post`, from the row's sum of `squares`. `v'` is what this leaves
/// in `v`: `v` itself, or, for a row whose squares overflow f32 (values ~1e19 and up) or
/// underflow it, `v` times a power of two that brings the largest magnitude into [0.5, 1).
/// That scaling is exact (short of a tiny value in a huge row dropping into subnormals, far
/// below anything that row's `y` can show), so such rows normalize like rows of ~1, eps = 0
/// included. NaN and Inf rows stay on the plain path and poison only themselves; a row of
/// zeros with eps = 0 gives 0/0 = NaN, like the reference.
fn normalizer(v: &mut [f32], squares: f32, eps: f32) -> f32 {
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

/// [`write_y`] in f32, over the row itself: `x = x * post * gamma + beta`, for a stage that
/// works on `y` before it is stored (the rotary stage).
#[inline(always)]
pub fn scale(x: &mut [f32], gamma: &[f32], beta: Option<&[f32]>, post: f32) {
    match beta {
        Some(beta) => {
            for ((x, &g), &b) in x.iter_mut().zip(gamma).zip(beta) {
                *x = *x * post * g + b;
            }
        }
        None => {
            for (x, &g) in x.iter_mut().zip(gamma) {
                *x = *x * post * g;
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
    for_each_block(v, 0.0, |b| {
        for j in 0..LANES {
            lanes[j] += b[j] * b[j];
        }
    });
    pairwise(lanes)
}

/// The mean of `v - v[0]`, in f64.
fn shifted_mean(v: &[f32]) -> f64 {
    let shift = v[0] as f64;
    let mut sums = [0.0f64; LANES];
    // Padded with v[0]: terms of 0.
    for_each_block(v, v[0], |b| {
        for j in 0..LANES {
            sums[j] += b[j] as f64 - shift;
        }
    });
    pairwise(sums) / v.len() as f64
}

/// The largest |v|, NaN aside.
fn max_magnitude(v: &[f32]) -> f32 {
    let mut lanes = [0.0f32; LANES];
    for_each_block(v, 0.0, |b| {
        for j in 0..LANES {
            lanes[j] = larger(lanes[j], b[j].abs());
        }
    });
    lanes.into_iter().fold(0.0, larger)
}

/// A comparison, not f32::max: it has no NaN rule to honour, so it stays one SIMD
/// instruction.
#[inline(always)]
fn larger(a: f32, b: f32) -> f32 {
    if b > a {
        b
    } else {
        a
    }
}

/// The lanes' total, pairwise, the same way on every target.
#[inline(always)]
fn pairwise<S: Copy + Add<Output = S>>(mut lanes: [S; LANES]) -> S {
    let mut width = LANES / 2;
    while width > 0 {
        for j in 0..width {
            lanes[j] = lanes[j] + lanes[j + width];
        }
        width /= 2;
    }
    lanes[0]
}

/// Calls `f` on each block of `LANES` elements of `v`, the last one padded with `pad`
/// (chosen by the caller to change nothing it computes). Whole blocks as arrays are what
/// LLVM turns into SIMD registers; lanes filled one by one at the end of a row would make
/// it split them.
#[inline(always)]
fn for_each_block(v: &[f32], pad: f32, mut f: impl FnMut(&[f32; LANES])) {
    let mut blocks = v.chunks_exact(LANES);
    for block in &mut blocks {
        f(block.try_into().unwrap());
    }
    let rest = blocks.remainder();
    if !rest.is_empty() {
        let mut last = [pad; LANES];
        last[..rest.len()].copy_from_slice(rest);
        f(&last);
    }
}
