//! The CPU backend's kernel: `shaders/fused_rms_norm.wgsl` in Rust over slices, for browsers
//! and machines without a usable GPU, compiled into the same wasm module (with simd128; see
//! `.cargo/config.toml`).
//!
//! Same contract as the GPU kernel: `v = (input + residual) + bias` in f32, bit for bit;
//! `y = v * inverseSqrt(mean(v²) + eps) * gamma + beta` in f32 math, rows that overflow or
//! underflow f32 rescaled by a power of two, NaN and Inf poisoning only their row. A CPU
//! keeps subnormals (a GPU may flush them), so `v` is the reference's bit for bit even where
//! it is subnormal.
//!
//! A row is read from memory once: `row.rs` forms `v` into an f32 row of scratch that stays
//! in L1 cache and is read from there to write `y`. Callers check shapes first (with
//! [`crate::call::shape::Shape::of`]); these functions take them as given.

use std::borrow::Cow;

use super::element::Element;
use super::row;
use crate::call::shape::Inputs;

/// `y` (and `v`, the `sum` output, when given) of every row of `x`.
///
/// # Panics
/// If `y` or `v` is not as long as `x.input`.
pub fn norm_f32(x: &Inputs<&[f32]>, y: &mut [f32], v: Option<&mut [f32]>) {
    norm(x, y, v);
}

/// [`norm_f32`] over `input` and `residual`: `residual ← v`, `input ← y`.
///
/// # Panics
/// If `residual` is not as long as `input`.
pub fn norm_f32_in_place(
    input: &mut [f32],
    residual: &mut [f32],
    gamma: &[f32],
    beta: Option<&[f32]>,
    bias: Option<&[f32]>,
    hidden: usize,
    eps: f32,
) {
    norm_in_place(input, residual, Affine { gamma, beta, bias }, hidden, eps);
}

/// [`norm_f32`] for f16 storage (IEEE half bits): inputs widened exactly, f32 math, each
/// result rounded once to f16.
///
/// # Panics
/// If `y` or `v` is not as long as `x.input`.
pub fn norm_f16(x: &Inputs<&[u16]>, y: &mut [u16], v: Option<&mut [u16]>) {
    norm(x, y, v);
}

/// [`norm_f16`] over `input` and `residual`: `residual ← v`, `input ← y`, bit for bit what
/// [`norm_f16`] returns (both are computed from the original halves).
///
/// # Panics
/// If `residual` is not as long as `input`.
pub fn norm_f16_in_place(
    input: &mut [u16],
    residual: &mut [u16],
    gamma: &[u16],
    beta: Option<&[u16]>,
    bias: Option<&[u16]>,
    hidden: usize,
    eps: f32,
) {
    norm_in_place(input, residual, Affine { gamma, beta, bias }, hidden, eps);
}

/// The per-column arrays, the same for every row.
#[derive(Clone, Copy)]
struct Affine<'a, T> {
    gamma: &'a [T],
    beta: Option<&'a [T]>,
    bias: Option<&'a [T]>,
}

fn norm<T: Element>(x: &Inputs<&[T]>, y: &mut [T], mut v: Option<&mut [T]>) {
    let n = x.input.len();
    assert_eq!(y.len(), n, "y: expected the length of input");
    if let Some(v) = &v {
        assert_eq!(v.len(), n, "v: expected the length of input");
    }
    let hidden = x.hidden;
    if hidden == 0 {
        return;
    }
    let affine = Affine {
        gamma: x.gamma,
        beta: x.beta,
        bias: x.bias,
    };
    let mut rows = Rows::new(affine, hidden, x.eps);
    for (r, y) in y.chunks_exact_mut(hidden).enumerate() {
        let at = r * hidden..(r + 1) * hidden;
        let residual = x.residual.expect("the driver passes a residual");
        let sum = rows.read(&x.input[at.clone()], &residual[at.clone()]);
        rows.write(sum, v.as_deref_mut().map(|v| &mut v[at]), y);
    }
}

fn norm_in_place<T: Element>(
    input: &mut [T],
    residual: &mut [T],
    affine: Affine<T>,
    hidden: usize,
    eps: f32,
) {
    assert_eq!(
        residual.len(),
        input.len(),
        "residual: expected the length of input"
    );
    if hidden == 0 {
        return;
    }
    let mut rows = Rows::new(affine, hidden, eps);
    for (y, v) in input
        .chunks_exact_mut(hidden)
        .zip(residual.chunks_exact_mut(hidden))
    {
        // The row is read whole before either of its arrays is written.
        let sum = rows.read(y, v);
        rows.write(sum, Some(v), y);
    }
}

/// One row at a time, through a row of f32 scratch.
struct Rows<'a> {
    gamma: Cow<'a, [f32]>,
    beta: Option<Cow<'a, [f32]>>,
    bias: Option<Cow<'a, [f32]>>,
    eps: f32,
    v: Vec<f32>,
}

impl<'a> Rows<'a> {
    fn new<T: Element>(affine: Affine<'a, T>, hidden: usize, eps: f32) -> Self {
        Rows {
            gamma: T::widen_all(affine.gamma),
            beta: affine.beta.map(T::widen_all),
            bias: affine.bias.map(T::widen_all),
            eps,
            v: vec![0.0; hidden],
        }
    }

    /// Forms the row's `v` into scratch; returns its sum of squares.
    fn read<T: Element>(&mut self, input: &[T], residual: &[T]) -> f32 {
        row::form_v(input, residual, self.bias.as_deref(), &mut self.v)
    }

    /// Stores the row's `v` (before any rescaling changes the scratch) and its `y`.
    fn write<T: Element>(&mut self, sum_of_squares: f32, v: Option<&mut [T]>, y: &mut [T]) {
        if let Some(v) = v {
            row::store(&self.v, v);
        }
        let post = row::normalizer(&mut self.v, sum_of_squares, self.eps);
        row::write_y(&self.v, &self.gamma, self.beta.as_deref(), post, y);
    }
}
