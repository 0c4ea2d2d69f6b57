//! The CPU backend's kernel: the WGSL kernels' contract (`shaders/`) in Rust over slices, for
//! browsers and machines without a usable GPU, compiled into the same wasm module (with
//! simd128; see `.cargo/config.toml`).
//!
//! The whole family of [`Inputs`]: RMSNorm or LayerNorm, with or without a residual, bias,
//! beta, the sandwich's post-norm, a parallel block's `input2` and a gamma offset, `y` in the
//! data's dtype or another. Without a post-norm `v = ((input + input2) + residual) + bias` in
//! f32, bit for bit; with one,
//! `v = residual + N(input + bias) · (post_gamma + offset)` in f32 math. Then
//! `y = N(v) · (gamma + offset) + beta` in f32 math, each normalization's rows that overflow
//! or underflow f32 rescaled by a power of two, NaN and Inf poisoning only their row. A CPU
//! keeps subnormals (a GPU may flush them), so `v` is the reference's bit for bit even where
//! it is subnormal.
//!
//! A row is read from memory once: `row.rs` forms it into an f32 row of scratch that stays
//! in L1 cache, normalizes it there (twice for the sandwich) and reads it from there to write
//! `y`. Callers check shapes first (with [`crate::call::shape::Shape::of`]); these functions
//! take them as given.

use std::borrow::Cow;

use super::element::Element;
use super::memory::room;
use super::rope::Rotation;
use super::row;
use crate::call::error::Error;
use crate::call::shape::{Inputs, NormKind};

/// `y` (and `v`, the `sum` output, when given) of every row of `x`: `T` is the data's
/// storage, `O` the output's (f32, or f16 as IEEE half bits in a `u16`); `x.norm.output_dtype`
/// is not read, `O` says it. Every input is widened exactly, the math is f32, and each result
/// is rounded once to its storage.
///
/// Without `x.gamma` only `v` is computed (a post-norm's sum alone), and `y` is empty.
///
/// Fails only where wasm memory has no room for the row's scratch and the widened per-column
/// arrays (a few times `hidden` in f32), before anything is written.
///
/// # Panics
/// If `y` (with `gamma`) or `v` is not as long as `x.input`.
pub fn norm<T: Element, O: Element>(
    x: &Inputs<&[T]>,
    y: &mut [O],
    mut v: Option<&mut [T]>,
) -> Result<(), Error> {
    let n = x.input.len();
    let y_len = if x.writes_y() { n } else { 0 };
    assert_eq!(
        y.len(),
        y_len,
        "y: expected the length of input, or none without gamma"
    );
    if let Some(v) = &v {
        assert_eq!(v.len(), n, "v: expected the length of input");
    }
    let hidden = x.hidden;
    if hidden == 0 {
        return Ok(());
    }
    let mut rows = Rows::new(x, n / hidden)?;
    for r in 0..n / hidden {
        let at = r * hidden..(r + 1) * hidden;
        let input2 = x.input2.map(|a| &a[at.clone()]);
        rows.read(
            &x.input[at.clone()],
            input2,
            x.residual.map(|a| &a[at.clone()]),
        );
        let y = y.get_mut(at.clone()).unwrap_or_default();
        rows.write(r, v.as_deref_mut().map(|v| &mut v[at.clone()]), y);
    }
    Ok(())
}

/// [`norm`] over `input` and `residual`: `residual ← v` (where there is one), `input ← y`
/// (where there is `gamma`), bit for bit what [`norm`] returns (both are computed from the
/// original values). `x` gives the
/// call's per-column arrays, `input2` and options; its `input` and `residual` are not read.
/// Fails as
/// [`norm`] does, before anything is written.
///
/// # Panics
/// If `residual` is not as long as `input`.
pub fn norm_in_place<T: Element>(
    input: &mut [T],
    residual: Option<&mut [T]>,
    x: &Inputs<&[T]>,
) -> Result<(), Error> {
    let hidden = x.hidden;
    if let Some(residual) = &residual {
        assert_eq!(
            residual.len(),
            input.len(),
            "residual: expected the length of input"
        );
    }
    if hidden == 0 {
        return Ok(());
    }
    let mut rows = Rows::new(x, input.len() / hidden)?;
    let inputs = input.chunks_exact_mut(hidden).enumerate();
    let input2 = |r: usize| x.input2.map(|a| &a[r * hidden..(r + 1) * hidden]);
    // The row is read whole before either of its arrays is written.
    match residual {
        Some(residual) => {
            for ((r, y), v) in inputs.zip(residual.chunks_exact_mut(hidden)) {
                rows.read(y, input2(r), Some(v));
                rows.write(r, Some(v), y);
            }
        }
        None => {
            for (r, y) in inputs {
                rows.read(y, input2(r), None);
                rows.write(r, None::<&mut [T]>, y);
            }
        }
    }
    Ok(())
}

/// One row at a time, through a row of f32 scratch; the per-column arrays in f32, widened
/// (and offset) once per call rather than once per row.
struct Rows<'a> {
    kind: NormKind,
    /// Absent: `y` is not computed.
    gamma: Option<Cow<'a, [f32]>>,
    post_gamma: Option<Cow<'a, [f32]>>,
    beta: Option<Cow<'a, [f32]>>,
    bias: Option<Cow<'a, [f32]>>,
    eps: f32,
    v: Vec<f32>,
    /// The call's rotary stage, applied to each row's `y` in f32 before it is stored.
    rotation: Option<Rotation>,
}

impl<'a> Rows<'a> {
    /// The rows of `x`, `rows` of them (its `input` is not read: the call's rows may be
    /// given apart).
    fn new<T: Element>(x: &Inputs<&'a [T]>, rows: usize) -> Result<Self, Error> {
        let offset = x.norm.gamma_offset;
        let gamma = |g: &'a [T], what: &str| -> Result<Cow<'a, [f32]>, Error> {
            let g = T::widen_all(g, what)?;
            // No offset is no addition: adding 0 would turn a gamma of -0 into +0.
            if offset == 0.0 {
                return Ok(g);
            }
            let mut shifted = room(g.len(), what)?;
            shifted.extend(g.iter().map(|&g| g + offset));
            Ok(Cow::Owned(shifted))
        };
        let mut v = room(x.hidden, "input")?;
        v.resize(x.hidden, 0.0);
        Ok(Rows {
            kind: x.norm.kind,
            gamma: match x.gamma {
                Some(g) => Some(gamma(g, "gamma")?),
                // No norm: `y = v`, a gamma of ones.
                None if x.writes_y() => Some(vec![1.0; x.hidden].into()),
                None => None,
            },
            post_gamma: x.post_gamma.map(|g| gamma(g, "postGamma")).transpose()?,
            beta: x.beta.map(|b| T::widen_all(b, "beta")).transpose()?,
            bias: x.bias.map(|b| T::widen_all(b, "bias")).transpose()?,
            eps: x.eps,
            v,
            rotation: x.rotary.as_ref().map(|r| Rotation::new(r, rows, x.hidden)),
        })
    }

    /// Forms the row's `v` into scratch.
    fn read<T: Element>(&mut self, input: &[T], input2: Option<&[T]>, residual: Option<&[T]>) {
        let Some(post_gamma) = &self.post_gamma else {
            row::form_v(
                [input, input2.unwrap_or_default()],
                residual,
                self.bias.as_deref(),
                &mut self.v,
            );
            return;
        };
        row::form_v([input, &[]], None, self.bias.as_deref(), &mut self.v);
        let post = row::normalize(&mut self.v, self.kind, self.eps);
        row::add_post(&mut self.v, post, post_gamma, residual);
    }

    /// Stores the row's `v` (before normalizing changes the scratch) and writes its `y`
    /// where the call has `gamma`; `r` is the row's index, which its rotation needs.
    fn write<T: Element, O: Element>(&mut self, r: usize, v: Option<&mut [T]>, y: &mut [O]) {
        if let Some(v) = v {
            row::store(&self.v, v);
        }
        let Some(gamma) = &self.gamma else {
            return;
        };
        // A head the stage passes (a packed qkv row's v) is stored as it is.
        if self
            .rotation
            .as_ref()
            .is_some_and(|rotation| rotation.passes(r))
        {
            row::store(&self.v, y);
            return;
        }
        let post = row::normalize(&mut self.v, self.kind, self.eps);
        let Some(rotation) = &mut self.rotation else {
            row::write_y(&self.v, gamma, self.beta.as_deref(), post, y);
            return;
        };
        // A gamma a head (rows that are heads): the row's head's.
        let hidden = self.v.len();
        let gamma = match gamma.len() > hidden {
            true => &gamma[rotation.head(r) * hidden..][..hidden],
            false => &gamma[..],
        };
        // `y` in f32 in the scratch row, turned there, then rounded once to its storage.
        row::scale(&mut self.v, gamma, self.beta.as_deref(), post);
        rotation.rotate(r, &mut self.v);
        row::store(&self.v, y);
    }
}
