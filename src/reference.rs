//! The CPU reference every test compares against: the contract's formula in f64, for every
//! kind of normalization (RMSNorm, LayerNorm), with or without a residual, a post-norm
//! (the sandwich) and a gamma offset.
//!
//! `v` is formed in f32, in the kernel's order `((input + input2) + residual) + bias`
//! (`input2`: a parallel block's second sublayer output), because `v` is
//! itself an f32 output (`sum`); everything after it (means, squares, inverse square root,
//! scale and shift) is f64, so the reference carries no f32 rounding of its own. With a
//! post-norm, `v = residual + w` is `w` in f64 rounded once to f32.

pub use crate::call::shape::Inputs as GenericInputs;
use crate::call::shape::NormKind;

/// One call's inputs as Rust slices.
pub type Inputs<'a> = GenericInputs<&'a [f32]>;

/// The family's `(y, v)` for every element of `x`, row-major (the formula is
/// [`GenericInputs`]'s): `y` in f64, `v` (the `sum` output) in f32.
pub fn norm_family(x: &Inputs) -> (Vec<f64>, Vec<f32>) {
    norm_rows(x, |s| s)
}

/// As [`norm_family`], with every subnormal input flushed to zero and, with `sums`, every
/// subnormal partial sum of `v` too, as WGSL lets a GPU do (NVIDIA's do): the other answers a
/// GPU may give. The kernel's plain path gives the second; its rescaled path, which forms `v`
/// from scaled inputs, the first.
pub fn norm_family_flushed(x: &Inputs, sums: bool) -> (Vec<f64>, Vec<f32>) {
    let ftz = |s: f32| if s.is_subnormal() { 0.0 } else { s };
    let flushed = |a: &[f32]| a.iter().map(|&s| ftz(s)).collect::<Vec<_>>();
    let (input, residual, input2, bias) = (
        flushed(x.input),
        x.residual.map(flushed),
        x.input2.map(flushed),
        x.bias.map(flushed),
    );
    let flushed = Inputs {
        input: &input,
        residual: residual.as_deref(),
        input2: input2.as_deref(),
        bias: bias.as_deref(),
        ..*x
    };
    if sums {
        norm_rows(&flushed, ftz)
    } else {
        norm_rows(&flushed, |s| s)
    }
}

/// `N(row)` in f64: the row's normalization, each value times the factor it is scaled by.
/// RMSNorm: `x · 1/sqrt(mean(x²) + eps)`;
/// LayerNorm: `(x − m) · 1/sqrt(mean((x − m)²) + eps)`.
/// Sums in f64 of f32 values are exact to far below f32's precision, so the centered form
/// needs no care here.
fn normalized(row: &[f64], kind: NormKind, eps: f32) -> Vec<f64> {
    let n = row.len() as f64;
    let mean = match kind {
        NormKind::Rms => 0.0,
        NormKind::Layer => row.iter().sum::<f64>() / n,
    };
    let var = row.iter().map(|&s| (s - mean) * (s - mean)).sum::<f64>() / n;
    let inv = 1.0 / (var + eps as f64).sqrt();
    row.iter().map(|&s| (s - mean) * inv).collect()
}

/// `v` of one row in f32 as the kernel forms it: `((input + input2) + residual) + bias`
/// without a post-norm (so that the `sum` output can be compared bit for bit); with one,
/// `residual + w`, `w = N(input + bias) · (postGamma + offset)` rounded once from f64.
fn row_v(x: &Inputs, r: usize, flush: &impl Fn(f32) -> f32) -> Vec<f32> {
    let h = x.hidden;
    let at = |a: &[f32], i: usize| a[r * h + i];
    let bias = |i: usize| x.bias.map(|b| b[i]);
    let Some(post) = x.post_gamma else {
        return (0..h)
            .map(|i| {
                let mut s = at(x.input, i);
                if let Some(b) = x.input2 {
                    s = flush(s + at(b, i));
                }
                if let Some(res) = x.residual {
                    s = flush(s + at(res, i));
                }
                if let Some(b) = bias(i) {
                    s = flush(s + b);
                }
                s
            })
            .collect();
    };
    let u: Vec<f64> = (0..h)
        .map(|i| bias(i).map_or(at(x.input, i), |b| flush(at(x.input, i) + b)) as f64)
        .collect();
    let offset = x.norm.gamma_offset as f64;
    normalized(&u, x.norm.kind, x.eps)
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let w = w * (post[i] as f64 + offset);
            let res = x.residual.map_or(0.0, |res| at(res, i) as f64);
            (res + w) as f32
        })
        .collect()
}

fn norm_rows(x: &Inputs, flush: impl Fn(f32) -> f32) -> (Vec<f64>, Vec<f32>) {
    let n = x.input.len();
    let mut y = Vec::with_capacity(n);
    let mut v = Vec::with_capacity(n);
    if x.hidden == 0 {
        return (y, v);
    }
    let offset = x.norm.gamma_offset as f64;
    for r in 0..n / x.hidden {
        let row = row_v(x, r, &flush);
        let wide: Vec<f64> = row.iter().map(|&s| s as f64).collect();
        for (i, t) in normalized(&wide, x.norm.kind, x.eps).iter().enumerate() {
            let shift = x.beta.map_or(0.0, |b| b[i] as f64);
            y.push(t * (x.gamma[i] as f64 + offset) + shift);
        }
        v.extend(row);
    }
    (y, v)
}

/// The second half of `x` alone, from a `v` as a kernel formed it (its `sum` output): `y`
/// is then checked against `N(v)` of that `v`. A post-norm's `v = residual + w` holds `w`
/// rounded in f32, so where `v` cancels it differs from the reference's `v` by more than a
/// relative bound on `y` allows; the `sum` output is checked against the reference's `v`
/// on its own ([`same_sum`]).
pub fn from_sum<'a>(x: &Inputs<'a>, v: &'a [f32]) -> Inputs<'a> {
    Inputs {
        input: v,
        residual: None,
        input2: None,
        bias: None,
        post_gamma: None,
        ..*x
    }
}

/// `|N(v)[i] · (gamma[i] + offset)|` of every element: the size of the product each `y` is
/// made of, to which its tolerance is relative.
fn products(x: &Inputs, v: &[f32]) -> Vec<f64> {
    let offset = x.norm.gamma_offset as f64;
    v.chunks(x.hidden.max(1))
        .flat_map(|row| {
            let wide: Vec<f64> = row.iter().map(|&s| s as f64).collect();
            normalized(&wide, x.norm.kind, x.eps)
                .into_iter()
                .enumerate()
                .map(|(i, t)| (t * (x.gamma[i] as f64 + offset)).abs())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// A residual chain as a model runs it: layer `l` normalizes `input + residual` with
/// `gammas[l]`, its `y` (rounded to f32, as the kernel stores it) becomes the next input and
/// its `v` the next residual. Returns the last layer's `(y, v)`.
pub fn chain(
    input: &[f32],
    residual: &[f32],
    gammas: &[Vec<f32>],
    hidden: usize,
    eps: f32,
) -> (Vec<f32>, Vec<f32>) {
    let (mut input, mut residual) = (input.to_vec(), residual.to_vec());
    for g in gammas {
        let x = Inputs {
            eps,
            ..Inputs::plain(&input, &residual, g, hidden)
        };
        let (y, v) = norm_family(&x);
        input = y.iter().map(|&y| y as f32).collect();
        residual = v;
    }
    (input, residual)
}

/// The worst `|got - want| / (|want| + 1e-3)`: for results that went through several f32
/// layers, whose error is relative to the values but cannot be held to 1e-5 (each layer
/// rounds what the next one reads).
pub fn worst_relative(got: &[f32], want: &[f32]) -> f32 {
    assert_eq!(got.len(), want.len(), "result length");
    got.iter()
        .zip(want)
        .map(|(a, b)| (a - b).abs() / (b.abs() + 1e-3))
        .fold(0.0f32, f32::max)
}

/// How far a result is from the reference, in units of the tolerance that f32 arithmetic
/// allows; `<= 1` passes. An element's allowance is relative to the size of the terms that
/// make it, `|v * inv * gamma| + |beta|`, so a `y` near zero because `beta` cancels the
/// product is not held to a relative bound it cannot meet. NaN must match NaN.
///
/// WGSL lets a GPU flush subnormal f32 values (below 2^-126) to zero, and NVIDIA's do: each
/// subnormal term of `v` may be lost, which adds its own size, times `inv * gamma`, to the
/// allowance of that element only.
pub fn worst_error(got: &[f32], want: &[f64], x: &Inputs, rtol: f64) -> f64 {
    worst_error_at(got, want, x, rtol).0
}

/// [`worst_error`], and the element where it is.
pub fn worst_error_at(got: &[f32], want: &[f64], x: &Inputs, rtol: f64) -> (f64, usize) {
    assert_eq!(got.len(), want.len(), "output length");
    let mut worst = (0.0f64, 0usize);
    let (_, v) = norm_family(x);
    let size = products(x, &v);
    // WGSL lets a GPU flush subnormal inputs and results to zero, and NVIDIA's do: that
    // changes the row's mean square, so every element of the row, not only the flushed one.
    // Where anything of `v` can be subnormal, the reference of the flushed arithmetic is
    // accepted too: only rows with terms under ~2^-100, since a sum of f32 terms at least
    // that large is zero or at least their ulp, ~2^-123, a normal number.
    let any_subnormal = [Some(x.input), x.residual, x.bias]
        .into_iter()
        .flatten()
        .any(|a| a.iter().any(|v| v.abs() < 1e-30 && *v != 0.0));
    let want_flushed: Vec<Vec<f64>> = if any_subnormal {
        vec![
            norm_family_flushed(x, false).0,
            norm_family_flushed(x, true).0,
        ]
    } else {
        Vec::new()
    };
    let offset = x.norm.gamma_offset as f64;
    // LayerNorm's mean is an f32 sum's: off by ~1e-9 of the row's spread, which an element
    // within ~1e-4 of the spread from the mean sees as more than 1e-5 of itself. It is
    // allowed 1e-2 of a unit normalized value (times gamma) on top: a millionth of what a
    // wrong mean or variance costs every element.
    let centering = match x.norm.kind {
        NormKind::Rms => 0.0,
        NormKind::Layer => 1e-2,
    };
    for (row_start, row_v) in (0..v.len())
        .step_by(x.hidden.max(1))
        .map(|s| (s, &v[s..s + x.hidden]))
    {
        let wide: Vec<f64> = row_v.iter().map(|&s| s as f64).collect();
        let mean = match x.norm.kind {
            NormKind::Rms => 0.0,
            NormKind::Layer => wide.iter().sum::<f64>() / x.hidden as f64,
        };
        let var = wide.iter().map(|s| (s - mean) * (s - mean)).sum::<f64>() / x.hidden as f64;
        let inv = 1.0 / (var + x.eps as f64).sqrt();
        for i in 0..x.hidden {
            let at = row_start + i;
            let (g, w) = (got[at] as f64, want[at]);
            if w.is_nan() || g.is_nan() {
                if w.is_nan() != g.is_nan() {
                    return (f64::INFINITY, at);
                }
                continue;
            }
            let scale = size[at] + x.beta.map_or(0.0, |b| (b[i] as f64).abs());
            let residual = x.residual.map(|r| r[at]);
            let terms = [
                Some(x.input[at]),
                residual,
                residual.map(|r| x.input[at] + r),
                x.bias.map(|b| b[i]),
                Some(row_v[i]),
            ];
            let flushable: f64 = terms.into_iter().flatten().map(subnormal_size).sum();
            let allowed = rtol * (scale + centering * (x.gamma[i] as f64 + offset).abs())
                + flushable * inv * (x.gamma[i] as f64 + offset).abs()
                + f32::MIN_POSITIVE as f64;
            let err = want_flushed
                .iter()
                .map(|f| (g - f[at]).abs())
                .fold((g - w).abs(), f64::min);
            if err / allowed > worst.0 {
                worst = (err / allowed, at);
            }
        }
    }
    worst
}

/// |x| if x is a subnormal f32 (a GPU may flush it to zero), else 0.
pub fn subnormal_size(x: f32) -> f64 {
    if x.is_subnormal() {
        x.abs() as f64
    } else {
        0.0
    }
}

/// Whether a GPU's `v` (the `sum` output) is the reference's `want`, element by element,
/// allowing any subnormal term or partial sum of an element to be flushed to zero.
pub fn same_sum(x: &Inputs, got: &[f32], want: &[f32]) -> bool {
    got.len() == want.len()
        && got
            .iter()
            .zip(want)
            .enumerate()
            .all(|(at, (&g, &w))| same_v(x, at, g, w))
}

/// [`same_sum`] at element `at`. With a post-norm, `v = residual + w` adds a `w` the GPU forms
/// in f32: within a few ulps of the terms, not bit for bit.
fn same_v(x: &Inputs, at: usize, got: f32, want: f32) -> bool {
    if got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()) {
        return true;
    }
    let flush = |v: f32| if v.is_subnormal() { 0.0 } else { v };
    let residual = x.residual.map_or(0.0, |r| r[at]);
    if let Some(post) = x.post_gamma {
        // w = N(u) · (postGamma + offset) rounded in f32: a few ulps of a normalized value.
        let w = (post[at % x.hidden] + x.norm.gamma_offset).abs() as f64;
        let terms = want.abs() as f64 + 2.0 * residual.abs() as f64 + 8.0 * w;
        return ((got - want).abs() as f64) <= 1e-6 * terms + f32::MIN_POSITIVE as f64;
    }
    let bias = x.bias.map_or(0.0, |b| flush(b[at % x.hidden]));
    let mut partial = flush(x.input[at]);
    if let Some(b) = x.input2 {
        partial = flush(partial + flush(b[at]));
    }
    if x.residual.is_some() {
        partial = flush(partial + flush(residual));
    }
    got == flush(partial + bias)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_computed_row() {
        // v = [3, 4] → mean square 12.5 → y = v / sqrt(12.5) * gamma + beta.
        let x = Inputs {
            beta: Some(&[0.0, 1.0]),
            bias: Some(&[1.0, 1.0]),
            eps: 0.0,
            ..Inputs::plain(&[1.0, 2.0], &[1.0, 1.0], &[2.0, 0.5], 2)
        };
        let (y, v) = norm_family(&x);
        assert_eq!(v, vec![3.0, 4.0]);
        let r = 12.5f64.sqrt();
        assert!((y[0] - 3.0 / r * 2.0).abs() < 1e-15);
        assert!((y[1] - (4.0 / r * 0.5 + 1.0)).abs() < 1e-15);
    }

    #[test]
    fn scale_invariance_holds_in_f64() {
        let base = [0.5f32, -1.25, 2.0, 0.75];
        let gamma = [1.0f32; 4];
        let run = |k: f32| {
            let input: Vec<f32> = base.iter().map(|b| b * k).collect();
            let zero = [0.0f32; 4];
            norm_family(&Inputs {
                eps: 0.0,
                ..Inputs::plain(&input, &zero, &gamma, 4)
            })
            .0
        };
        let one = run(1.0);
        for k in [1e30f32, 1e-30] {
            for (a, b) in run(k).iter().zip(&one) {
                assert!((a - b).abs() < 1e-6, "{k}: {a} vs {b}");
            }
        }
    }

    #[test]
    fn nan_poisons_only_its_row() {
        let input = [f32::NAN, 1.0, 1.0, 2.0];
        let zero = [0.0f32; 4];
        let (y, _) = norm_family(&Inputs::plain(&input, &zero, &[1.0, 1.0], 2));
        assert!(y[0].is_nan() && y[1].is_nan());
        assert!(y[2].is_finite() && y[3].is_finite());
    }

    #[test]
    fn worst_error_flags_a_wrong_value() {
        let x = Inputs {
            eps: 0.0,
            ..Inputs::plain(&[1.0, 2.0], &[0.0, 0.0], &[1.0, 1.0], 2)
        };
        let (want, _) = norm_family(&x);
        let good: Vec<f32> = want.iter().map(|&w| w as f32).collect();
        assert!(worst_error(&good, &want, &x, 1e-5) <= 1.0);
        let bad = [good[0] * 1.001, good[1]];
        assert!(worst_error(&bad, &want, &x, 1e-5) > 1.0);
        assert!(worst_error(&[f32::NAN, good[1]], &want, &x, 1e-5).is_infinite());
    }

    /// The row that failed on an H200: a subnormal residual flushed on load changes the whole
    /// row's normalization; that result is accepted, a wrong one still is not.
    #[test]
    fn a_flushed_subnormal_input_is_accepted_for_the_whole_row_and_nothing_else() {
        let input = [-1.9e-37f32, 1.9e-37, 6.9e-37, -4.9e-37];
        let residual = [0.0f32, 0.0, 0.0, 8.96e-39];
        let x = Inputs {
            eps: 0.0,
            ..Inputs::plain(&input, &residual, &[0.7, -1.2, 0.4, 0.9], 4)
        };
        let (want, _) = norm_family(&x);
        let flushed = Inputs {
            residual: Some(&[0.0; 4]),
            ..x
        };
        let (as_gpu, _) = norm_family(&flushed);
        let got: Vec<f32> = as_gpu.iter().map(|&w| w as f32).collect();
        assert!(worst_error(&got, &want, &x, 1e-5) <= 1.0);
        let wrong: Vec<f32> = got.iter().map(|g| g * 1.001).collect();
        assert!(worst_error(&wrong, &want, &x, 1e-5) > 1.0);
    }
}
