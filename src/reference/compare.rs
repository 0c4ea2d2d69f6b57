//! How a result is held to the reference ([`super::norm_family`]): each `y` within a tolerance
//! relative to the product it is made of, `v` (the `sum` output) bit for bit but for what a GPU
//! may flush to zero, and chains of layers relative to their values.

use super::formula::{gamma, norm_family, norm_family_flushed, normalized, row_gamma, Inputs};
use crate::call::shape::NormKind;

/// `|N(v)[i] · (gamma[i] + offset)|` of every element: the size of the product each `y` is
/// made of, to which its tolerance is relative.
fn products(x: &Inputs, v: &[f32]) -> Vec<f64> {
    let offset = x.norm.gamma_offset as f64;
    let gamma = gamma(x);
    v.chunks(x.hidden.max(1))
        .enumerate()
        .flat_map(|(r, row)| {
            let gamma = row_gamma(x, &gamma, r);
            let wide: Vec<f64> = row.iter().map(|&s| s as f64).collect();
            normalized(&wide, x.norm.kind, x.eps)
                .into_iter()
                .enumerate()
                .map(|(i, t)| (t * (gamma[i] as f64 + offset)).abs())
                .collect::<Vec<_>>()
        })
        .collect()
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
/// product is not held to a relative bound it cannot meet. NaN must match NaN. A rotated
/// value mixes two of its row's, so with a rotary stage each is held to the row's largest
/// term times the attention scaling (the contract's 1e-5 of the row's scale).
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
        NormKind::Layer => 1e-2,
        NormKind::Rms | NormKind::None => 0.0,
    };
    let weights = gamma(x);
    for (row_start, row_v) in (0..v.len())
        .step_by(x.hidden.max(1))
        .map(|s| (s, &v[s..s + x.hidden]))
    {
        let weights = row_gamma(x, &weights, row_start / x.hidden.max(1));
        let inv = inverse_deviation(row_v, x.norm.kind, x.eps);
        let beta = |i: usize| x.beta.map_or(0.0, |b| (b[i] as f64).abs());
        let turned = turned_scale(x, &size[row_start..row_start + x.hidden]);
        for i in 0..x.hidden {
            let at = row_start + i;
            let (g, w) = (got[at] as f64, want[at]);
            if w.is_nan() || g.is_nan() {
                if w.is_nan() != g.is_nan() {
                    return (f64::INFINITY, at);
                }
                continue;
            }
            let scale = turned.unwrap_or(size[at] + beta(i));
            let residual = x.residual.map(|r| r[at]);
            let terms = [
                Some(x.input[at]),
                residual,
                residual.map(|r| x.input[at] + r),
                x.bias.map(|b| b[i]),
                Some(row_v[i]),
            ];
            let flushable: f64 = terms.into_iter().flatten().map(subnormal_size).sum();
            let allowed = rtol * (scale + centering * (weights[i] as f64 + offset).abs())
                + flushable * inv * (weights[i] as f64 + offset).abs()
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

/// The factor a row's normalization scales it by, `1/sqrt(var + eps)` (1 without one).
fn inverse_deviation(row: &[f32], kind: NormKind, eps: f32) -> f64 {
    let wide: Vec<f64> = row.iter().map(|&s| s as f64).collect();
    let n = row.len() as f64;
    let mean = match kind {
        NormKind::Rms => 0.0,
        NormKind::Layer => wide.iter().sum::<f64>() / n,
        NormKind::None => return 1.0,
    };
    let var = wide.iter().map(|s| (s - mean) * (s - mean)).sum::<f64>() / n;
    1.0 / (var + eps as f64).sqrt()
}

/// A rotated value mixes two of its row's: with a rotary stage, each is held to the row's
/// largest term (`sizes`, beside `|beta|`) times the attention scaling.
fn turned_scale(x: &Inputs, sizes: &[f64]) -> Option<f64> {
    let beta = |i: usize| x.beta.map_or(0.0, |b| (b[i] as f64).abs());
    x.rotary.as_ref().map(|r| {
        let largest = sizes.iter().enumerate().map(|(i, s)| s + beta(i));
        largest.fold(0.0, f64::max) * r.attention_scaling as f64
    })
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
