//! One call's inputs and the checks that make them a valid problem.
//!
//! The checks live here, not in the JavaScript facade, so native callers and tests get the
//! same errors with the same wording as the browser does.

use crate::error::Error;

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

/// Anything with a length in f32 elements.
pub trait Len {
    fn len(&self) -> usize;
}

impl Len for &[f32] {
    fn len(&self) -> usize {
        <[f32]>::len(self)
    }
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
        let hidden = x.hidden;
        if hidden == 0 {
            return Err(Error::Shape(
                "hidden: expected a positive integer, got 0".into(),
            ));
        }
        if hidden > u32::MAX as usize {
            return Err(Error::Shape(format!(
                "hidden: expected at most {}, got {hidden}",
                u32::MAX
            )));
        }
        if !x.eps.is_finite() || x.eps < 0.0 {
            return Err(Error::Shape(format!(
                "eps: expected a finite number >= 0, got {}",
                x.eps
            )));
        }
        let n = x.input.len();
        if n % hidden != 0 {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs<'a>(
        input: &'a [f32],
        residual: &'a [f32],
        gamma: &'a [f32],
        hidden: usize,
    ) -> Inputs<&'a [f32]> {
        Inputs {
            input,
            residual,
            gamma,
            beta: None,
            bias: None,
            hidden,
            eps: 1e-6,
        }
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
