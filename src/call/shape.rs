//! One call's inputs ([`Inputs`]), checked into a [`Shape`] (rows, hidden, and every
//! length against them), and an app's buffers sized to the call ([`fit_buffers`]).
//! [`crate::call::plan`] turns a checked call into what a driver records.

use crate::call::checks::{eps_from_number, hidden_from_number};
use crate::call::error::Error;
use crate::call::host::Arg;
use crate::call::numbers::Len;

/// The arguments of one call. `A` is where the numbers live: a Rust slice natively, a JS
/// `Float32Array` in the browser (uploaded straight from JS, never copied through wasm).
#[derive(Clone, Copy, Debug)]
pub struct Inputs<A> {
    pub input: A,
    pub residual: A,
    pub gamma: A,
    pub beta: Option<A>,
    pub bias: Option<A>,
    pub hidden: usize,
    pub eps: f32,
}

/// Where `encode` writes the results: over `input` (`y`) and `residual` (`v`), or into
/// the app's buffers or tensors.
#[derive(Clone)]
pub enum Outputs<A> {
    InPlace,
    To { output: A, sum: Option<A> },
}

/// A checked problem: `rows × hidden`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    pub rows: usize,
    pub hidden: usize,
}

impl Shape {
    /// Validates the lengths of `x` against `hidden`, and `eps`.
    pub fn of<A: Len>(x: &Inputs<A>) -> Result<Shape, Error> {
        // The same checks, and words, as the numbers JavaScript passes.
        let hidden = hidden_from_number(x.hidden as f64)?;
        eps_from_number(x.eps.into())?;
        let n = x.input.len();
        if !n.is_multiple_of(hidden) {
            return Err(Error::Shape(format!(
                "input: expected a length that is a multiple of hidden ({hidden}), got {n}"
            )));
        }
        if x.residual.len() != n {
            return Err(Error::Shape(format!(
                "residual: expected length {n} (the length of input), got {}",
                x.residual.len()
            )));
        }
        let per_row = [
            ("gamma", Some(&x.gamma)),
            ("beta", x.beta.as_ref()),
            ("bias", x.bias.as_ref()),
        ];
        for (name, array) in per_row {
            if let Some(a) = array {
                if a.len() != hidden {
                    return Err(Error::Shape(format!(
                        "{name}: expected length {hidden} (hidden), got {}",
                        a.len()
                    )));
                }
            }
        }
        let rows = n / hidden;
        if rows > u32::MAX as usize {
            return Err(Error::Shape(format!(
                "input: expected at most {} rows, got {rows}",
                u32::MAX
            )));
        }
        Ok(Shape { rows, hidden })
    }

    pub fn len(&self) -> usize {
        self.rows * self.hidden
    }

    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }
}

/// `eps` where a call gives none.
pub const DEFAULT_EPS: f32 = 1e-6;

impl<A> Inputs<A> {
    /// A call with neither beta nor bias and the default eps.
    pub fn plain(input: A, residual: A, gamma: A, hidden: usize) -> Inputs<A> {
        Inputs {
            input,
            residual,
            gamma,
            beta: None,
            bias: None,
            hidden,
            eps: DEFAULT_EPS,
        }
    }

    /// The array arguments by name, absent optional ones as `None` skipped.
    pub fn named(&self) -> impl Iterator<Item = (&'static str, &A)> {
        [
            ("input", Some(&self.input)),
            ("residual", Some(&self.residual)),
            ("gamma", Some(&self.gamma)),
            ("beta", self.beta.as_ref()),
            ("bias", self.bias.as_ref()),
        ]
        .into_iter()
        .filter_map(|(name, a)| a.map(|a| (name, a)))
    }

    /// The same call with each array mapped by `f`.
    pub fn map<B>(&self, mut f: impl FnMut(&A) -> B) -> Inputs<B> {
        Inputs {
            input: f(&self.input),
            residual: f(&self.residual),
            gamma: f(&self.gamma),
            beta: self.beta.as_ref().map(&mut f),
            bias: self.bias.as_ref().map(&mut f),
            hidden: self.hidden,
            eps: self.eps,
        }
    }
}

/// Sizes the app's buffers to the call. A `GPUBuffer` may be larger than the array it holds
/// (engines round buffer sizes up: onnxruntime-web's to size buckets), so the array is its
/// first `rows × hidden` elements (`hidden` for gamma, beta and bias): `rows` as the call gives
/// them, else from a typed-array or tensor `input`, else the `input` buffer's whole size. A
/// buffer smaller than that keeps its size, and the shape checks name it.
pub fn fit_buffers<H: Len>(
    x: &mut Inputs<Arg<H>>,
    outputs: Option<&mut Outputs<Arg<H>>>,
    rows: Option<usize>,
) -> Result<(), Error> {
    let hidden = x.hidden.max(1);
    let input_is_buffer = matches!(x.input, Arg::Buffer(_));
    let rows = match rows {
        Some(r) if !input_is_buffer && Some(x.input.len()) != r.checked_mul(hidden) => {
            return Err(Error::Shape(format!(
                "rows: expected {} (input.length / hidden), got {r}",
                x.input.len() as f64 / hidden as f64
            )));
        }
        Some(r) => r,
        None if x.input.len().is_multiple_of(hidden) => x.input.len() / hidden,
        None => return Ok(()),
    };
    let Some(n) = rows.checked_mul(hidden) else {
        return Err(Error::Shape(format!(
            "rows: expected at most {} rows of {hidden}, got {rows}",
            usize::MAX / hidden
        )));
    };
    if let Arg::Buffer(b) = &x.input {
        if b.len < n {
            return Err(Error::Shape(format!(
                "input: expected a GPUBuffer of at least {n} elements (rows × hidden), got {}",
                b.len
            )));
        }
    }
    let fit = |a: &mut Arg<H>, want: usize| {
        if let Arg::Buffer(b) = a {
            b.len = b.len.min(want);
        }
    };
    fit(&mut x.input, n);
    fit(&mut x.residual, n);
    fit(&mut x.gamma, hidden);
    for a in [x.beta.as_mut(), x.bias.as_mut()].into_iter().flatten() {
        fit(a, hidden);
    }
    if let Some(Outputs::To { output, sum }) = outputs {
        fit(output, n);
        if let Some(s) = sum.as_mut() {
            fit(s, n);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs<'a>(
        input: &'a [f32],
        residual: &'a [f32],
        gamma: &'a [f32],
        hidden: usize,
    ) -> Inputs<&'a [f32]> {
        Inputs::plain(input, residual, gamma, hidden)
    }

    #[test]
    fn accepts_a_valid_problem_and_an_empty_one() {
        let a = [0.0f32; 6];
        assert_eq!(
            Shape::of(&inputs(&a, &a, &a[..3], 3)).unwrap(),
            Shape { rows: 2, hidden: 3 }
        );
        assert_eq!(
            Shape::of(&inputs(&[], &[], &a[..3], 3)).unwrap(),
            Shape { rows: 0, hidden: 3 }
        );
    }

    #[test]
    fn names_the_argument_and_both_values() {
        let a = [0.0f32; 6];
        let e = Shape::of(&inputs(&a[..5], &a[..5], &a[..3], 3)).unwrap_err();
        assert_eq!(e.name(), "ShapeError");
        assert!(
            e.message().starts_with("input:") && e.message().contains('5'),
            "{e}"
        );
        let e = Shape::of(&inputs(&a, &a[..3], &a[..3], 3)).unwrap_err();
        assert!(
            e.message().starts_with("residual:") && e.message().contains("6"),
            "{e}"
        );
        let e = Shape::of(&inputs(&a, &a, &a[..2], 3)).unwrap_err();
        assert!(e.message().starts_with("gamma:"), "{e}");
        let mut x = inputs(&a, &a, &a[..3], 3);
        x.bias = Some(&a[..4]);
        assert!(Shape::of(&x).unwrap_err().message().starts_with("bias:"));
        x.bias = None;
        x.beta = Some(&a[..1]);
        assert!(Shape::of(&x).unwrap_err().message().starts_with("beta:"));
        for eps in [f32::NAN, -1.0, f32::INFINITY] {
            let mut x = inputs(&a, &a, &a[..3], 3);
            x.eps = eps;
            assert!(Shape::of(&x).unwrap_err().message().starts_with("eps:"));
        }
        assert!(Shape::of(&inputs(&a, &a, &a[..3], 0))
            .unwrap_err()
            .message()
            .starts_with("hidden:"));
    }
}
