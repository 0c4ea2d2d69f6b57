//! The reference's formula: the family's `(y, v)` in f64 (`v` formed in f32 as the kernel
//! forms it), and a residual chain of layers.

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
        ..x.clone()
    };
    if sums {
        norm_rows(&flushed, ftz)
    } else {
        norm_rows(&flushed, |s| s)
    }
}

/// `N(row)` in f64: the row's normalization, each value times the factor it is scaled by.
/// RMSNorm: `x · 1/sqrt(mean(x²) + eps)`;
/// LayerNorm: `(x − m) · 1/sqrt(mean((x − m)²) + eps)`; none: `x`.
/// Sums in f64 of f32 values are exact to far below f32's precision, so the centered form
/// needs no care here.
pub(super) fn normalized(row: &[f64], kind: NormKind, eps: f32) -> Vec<f64> {
    let n = row.len() as f64;
    let mean = match kind {
        NormKind::Rms => 0.0,
        NormKind::Layer => row.iter().sum::<f64>() / n,
        NormKind::None => return row.to_vec(),
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

/// The call's `gamma`, for the checks of `y`: a call without it has only `v`, or (no norm)
/// `y = v`, a gamma of ones.
pub(super) fn gamma<'a>(x: &Inputs<'a>) -> std::borrow::Cow<'a, [f32]> {
    match x.gamma {
        Some(g) => g.into(),
        None if x.norm.kind == NormKind::None => vec![1.0; x.hidden].into(),
        None => panic!("y is checked only where the call has gamma"),
    }
}

/// Row `r`'s gamma: a head's where the call has a gamma a head (rows that are heads of a
/// rotary stage: Cohere's QK-norm), else the call's own.
pub(super) fn row_gamma<'g>(x: &Inputs, gamma: &'g [f32], r: usize) -> &'g [f32] {
    let h = x.hidden;
    let Some(rotary) = x.rotary.as_ref().filter(|_| gamma.len() > h) else {
        return gamma;
    };
    let heads = rotary.shape(x.input.len() / h.max(1), h).heads;
    // A head the stage passes has no weight of its own (its `y` is its `v`): the last one's.
    let head = rotary.head(r, heads).min(gamma.len() / h - 1);
    &gamma[head * h..][..h]
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
        // Without gamma the call has `v` alone, or (no norm) `y = v`.
        let ones = vec![1.0; x.hidden];
        let gamma = match x.gamma {
            Some(g) => g,
            None if x.norm.kind == NormKind::None => &ones[..],
            None => {
                v.extend(row);
                continue;
            }
        };
        // A head the rotary stage passes (a packed qkv row's v) is `y` as it is.
        let rows = x.input.len() / x.hidden.max(1);
        if let Some(shape) = x.rotary.as_ref().map(|t| (t, t.shape(rows, x.hidden))) {
            let (rotary, shape) = shape;
            if rotary.head(r, shape.heads) >= shape.turned {
                y.extend(wide);
                v.extend(row);
                continue;
            }
        }
        let gamma = row_gamma(x, gamma, r);
        let mut out: Vec<f64> = normalized(&wide, x.norm.kind, x.eps)
            .iter()
            .enumerate()
            .map(|(i, t)| t * (gamma[i] as f64 + offset) + x.beta.map_or(0.0, |b| b[i] as f64))
            .collect();
        super::rotary::rotate(x.rotary.as_ref(), (rows, x.hidden), r, &mut out);
        y.extend(out);
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
        ..x.clone()
    }
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
