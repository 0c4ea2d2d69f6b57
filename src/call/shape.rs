//! One call's inputs ([`Inputs`]: the arrays and the normalization they get, [`Norm`]),
//! checked into a [`Shape`] (rows, hidden, and every length against them), and an app's
//! buffers sized to the call ([`fit_buffers`]).
//! [`crate::call::plan`] turns a checked call into what a driver records.

use crate::call::checks::{
    eps_from_number, gamma_offset_from_number, hidden_from_number, DEFAULT_EPS,
};
use crate::call::dtype::Dtype;
use crate::call::error::Error;
use crate::call::host::Arg;
use crate::call::numbers::Len;
use crate::call::rotary::Rotary;

/// The arguments of one call. `A` is where the numbers live: a Rust slice natively, a JS
/// `Float32Array` in the browser (uploaded straight from JS, never copied through wasm).
///
/// For every row, with `N` the normalization `norm.kind` names:
/// `u = input + input2 + bias`, `w = post_gamma ? N(u) · (post_gamma + offset) : u`,
/// `v = residual + w` (the `sum` output), `y = N(v) · (gamma + offset) + beta` (`output`).
/// Without `gamma` a call computes `v` alone: OLMo 2's post-norm, `h = x + N(attn(x)) · w`,
/// with no norm of `h` in the same step. With `rotary`, each row's `y` is then rotated by its
/// token's position (`call/rotary.rs`).
///
/// Not `Copy`: a rotary stage owns its positions, one a token, as many as the call has.
/// Cloning is cheap (the arrays of a rotary stage are behind an `Rc`).
#[derive(Clone, Debug)]
pub struct Inputs<A> {
    pub input: A,
    /// Absent: QK-norm and a model's final norm, which add no residual.
    pub residual: Option<A>,
    /// A parallel block's second sublayer output (GPT-J, Phi-2, Falcon, Command-R:
    /// `x + attn(LN(x)) + mlp(LN(x))`), added to `input` in the same pass.
    pub input2: Option<A>,
    /// Absent: the call writes `sum` only (a post-norm with no next norm).
    pub gamma: Option<A>,
    pub beta: Option<A>,
    pub bias: Option<A>,
    /// The sandwich's post-norm (Gemma 2/3, OLMo 2): the sublayer's output normalized and
    /// scaled by it before the residual add.
    pub post_gamma: Option<A>,
    pub hidden: usize,
    pub eps: f32,
    pub norm: Norm,
    /// A rotation of each row's `y` by its token's position (RoPE), after `gamma` and `beta`.
    pub rotary: Option<Rotary>,
}

/// Which normalization a row gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum NormKind {
    /// `x · inverseSqrt(mean(x²) + eps)`.
    #[default]
    Rms,
    /// `(x − mean(x)) · inverseSqrt(mean((x − mean(x))²) + eps)`.
    Layer,
    /// No normalization: `y = v`, then a rotary stage (Llama's, Mistral's and GPT-J's q and
    /// k, which rotate without a QK-norm). No `gamma`, `beta` or `postGamma`.
    None,
}

impl NormKind {
    pub fn name(self) -> &'static str {
        match self {
            NormKind::Rms => "rms",
            NormKind::Layer => "layer",
            NormKind::None => "none",
        }
    }
}

/// The normalization of a call and the dtype of its `output`: the options beyond its arrays.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct Norm {
    pub kind: NormKind,
    /// Added to every gamma and post_gamma: Gemma's `1 + weight` is 1.
    pub gamma_offset: f32,
    /// `output`'s dtype where it differs from the data's (an f32 residual stream feeding f16
    /// matmuls); `None`: the data's.
    pub output_dtype: Option<Dtype>,
}

/// Where `encode` writes the results: over `input` (`y`) and `residual` (`v`), or into
/// the app's buffers or tensors (no `output` without `gamma`: the sum alone).
#[derive(Clone)]
pub enum Outputs<A> {
    InPlace,
    To { output: Option<A>, sum: Option<A> },
}

impl<A> Outputs<A> {
    /// The app's arrays the results go into, by name (none in place).
    pub fn named(&self) -> impl Iterator<Item = (&'static str, &A)> {
        let (output, sum) = match self {
            Outputs::InPlace => (None, None),
            Outputs::To { output, sum } => (output.as_ref(), sum.as_ref()),
        };
        [("output", output), ("sum", sum)]
            .into_iter()
            .filter_map(|(name, a)| a.map(|a| (name, a)))
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
        // The same checks, and words, as the numbers JavaScript passes.
        let hidden = hidden_from_number(x.hidden as f64)?;
        eps_from_number(x.eps.into())?;
        gamma_offset_from_number(x.norm.gamma_offset.into())?;
        let n = x.input.len();
        if !n.is_multiple_of(hidden) {
            return Err(Error::Shape(format!(
                "input: expected a length that is a multiple of hidden ({hidden}), got {n}"
            )));
        }
        for (name, a) in [("residual", &x.residual), ("input2", &x.input2)] {
            if let Some(a) = a.as_ref().filter(|a| a.len() != n) {
                return Err(Error::Shape(format!(
                    "{name}: expected length {n} (the length of input), got {}",
                    a.len()
                )));
            }
        }
        let rows = n / hidden;
        if rows > u32::MAX as usize {
            return Err(Error::Shape(format!(
                "input: expected at most {} rows, got {rows}",
                u32::MAX
            )));
        }
        // Where rows are heads of a rotary stage (checked first), gamma may hold a weight a
        // head.
        let rotary = x
            .rotary
            .as_ref()
            .map(|r| r.check(rows, hidden))
            .transpose()?;
        if let Some(r) = &x.rotary {
            r.check_passing(x.residual.is_some(), x.bias.is_some())?;
        }
        let said = x.rotary.as_ref().and_then(|r| r.gamma_heads);
        let each_head = rotary.and_then(|r| r.turned.checked_mul(hidden));
        let gamma = x.gamma.as_ref().map(|g| g.len());
        crate::call::rotary::gamma::gamma_fits(gamma, hidden, each_head, said)?;
        for (name, array) in [
            ("beta", x.beta.as_ref()),
            ("bias", x.bias.as_ref()),
            ("postGamma", x.post_gamma.as_ref()),
        ] {
            if let Some(len) = array.map(|a| a.len()).filter(|&len| len != hidden) {
                return Err(Error::Shape(format!(
                    "{name}: expected length {hidden} (hidden), got {len}"
                )));
            }
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

impl<A> Inputs<A> {
    /// Whether the call computes `y`: with `gamma`, or with no norm (`kind: "none"`, a
    /// rotation alone); else it computes a post-norm's sum alone.
    pub fn writes_y(&self) -> bool {
        self.gamma.is_some() || self.norm.kind == NormKind::None
    }

    /// A call with a residual, neither beta nor bias, and the default eps and norm.
    pub fn plain(input: A, residual: A, gamma: A, hidden: usize) -> Inputs<A> {
        Inputs {
            residual: Some(residual),
            ..Inputs::without_residual(input, gamma, hidden)
        }
    }

    /// A call with no residual (QK-norm, a final norm), no optional array and the defaults.
    pub fn without_residual(input: A, gamma: A, hidden: usize) -> Inputs<A> {
        Inputs {
            input,
            residual: None,
            input2: None,
            gamma: Some(gamma),
            beta: None,
            bias: None,
            post_gamma: None,
            hidden,
            eps: DEFAULT_EPS,
            norm: Norm::default(),
            rotary: None,
        }
    }

    /// How many of [`Inputs::arrays`] come first as rows × hidden (`input`, `residual`,
    /// `input2`); the rest are a row's.
    pub const ROW_ARRAYS: usize = 3;

    /// Where `gamma` is in [`Inputs::arrays`].
    pub const GAMMA: usize = 3;

    /// The array arguments in their order (`input`, `residual`, `input2`, `gamma`, `beta`,
    /// `bias`, `postGamma`: `named`'s), absent ones `None`.
    #[rustfmt::skip]
    pub fn arrays(&self) -> [Option<&A>; 7] {
        let x = self;
        [Some(&x.input), x.residual.as_ref(), x.input2.as_ref(), x.gamma.as_ref(),
         x.beta.as_ref(), x.bias.as_ref(), x.post_gamma.as_ref()]
    }

    /// [`Inputs::arrays`], to change.
    #[rustfmt::skip]
    pub fn arrays_mut(&mut self) -> [Option<&mut A>; 7] {
        let x = self;
        [Some(&mut x.input), x.residual.as_mut(), x.input2.as_mut(), x.gamma.as_mut(),
         x.beta.as_mut(), x.bias.as_mut(), x.post_gamma.as_mut()]
    }

    /// The array arguments by name, absent optional ones as `None` skipped.
    pub fn named(&self) -> impl Iterator<Item = (&'static str, &A)> {
        [
            ("input", Some(&self.input)),
            ("residual", self.residual.as_ref()),
            ("input2", self.input2.as_ref()),
            ("gamma", self.gamma.as_ref()),
            ("beta", self.beta.as_ref()),
            ("bias", self.bias.as_ref()),
            ("postGamma", self.post_gamma.as_ref()),
        ]
        .into_iter()
        .filter_map(|(name, a)| a.map(|a| (name, a)))
    }

    /// The same call with each array mapped by `f`.
    pub fn map<B>(&self, mut f: impl FnMut(&A) -> B) -> Inputs<B> {
        Inputs {
            input: f(&self.input),
            residual: self.residual.as_ref().map(&mut f),
            input2: self.input2.as_ref().map(&mut f),
            gamma: self.gamma.as_ref().map(&mut f),
            beta: self.beta.as_ref().map(&mut f),
            bias: self.bias.as_ref().map(&mut f),
            post_gamma: self.post_gamma.as_ref().map(&mut f),
            hidden: self.hidden,
            eps: self.eps,
            norm: self.norm,
            rotary: self.rotary.clone(),
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
    let len = x.input.len();
    let rows = match rows {
        Some(r) if !input_is_buffer && len.is_multiple_of(hidden) && len / hidden != r => {
            return Err(Error::Shape(format!(
                "rows: expected {} (input.length / hidden), got {r}",
                len / hidden
            )));
        }
        Some(r) if !input_is_buffer && !len.is_multiple_of(hidden) => {
            return Err(Error::Shape(format!(
                "rows: expected undefined with an input of {len} elements, no whole rows of \
                 {hidden}, got {r}"
            )));
        }
        Some(r) => r,
        None if len.is_multiple_of(hidden) => len / hidden,
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
    let gamma = x
        .rotary
        .as_ref()
        .and_then(|r| r.said_gamma_len(rows, hidden));
    let gamma = gamma.unwrap_or(hidden);
    for (i, a) in x.arrays_mut().into_iter().enumerate() {
        if let Some(a) = a {
            fit(
                a,
                match i {
                    _ if i < Inputs::<H>::ROW_ARRAYS => n,
                    Inputs::<H>::GAMMA => gamma,
                    _ => hidden,
                },
            );
        }
    }
    if let Some(Outputs::To { output, sum }) = outputs {
        for a in [output.as_mut(), sum.as_mut()].into_iter().flatten() {
            fit(a, n);
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
