//! One call's inputs and the checks that turn them into a plan.
//!
//! Every check of every entry point lives here or, for single values, in [`crate::checks`],
//! not in the JavaScript facade or the driver, so native callers and tests get the same
//! errors with the same wording as the browser does, and a check added for one path holds
//! for all of them.

use std::rc::Rc;

use crate::checks::{check_repeat, hidden_from_number, rows_per_binding};
use crate::device::{Caps, ContextId};
use crate::dtype::Dtype;
use crate::error::Error;
use crate::host::{Arg, HostArray};
use crate::kernel::{Options, Variant};

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

    fn is_empty(&self) -> bool {
        self.len() == 0
    }
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

/// Where a call's results go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Destination {
    /// Read back into host arrays.
    Host,
    /// New tensors.
    Gpu,
    /// Over the `input` and `residual` tensors: `input ← y`, `residual ← v`.
    InPlace,
}

/// What a call asks for beyond its inputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    /// The `sum` output (`v`) too.
    pub sum: bool,
    pub to: Destination,
    /// Dispatches of the kernel in the one submission (timing calls; 1 otherwise).
    pub repeat: u32,
    /// Time the pass with GPU timestamps where the device has them.
    pub timed: bool,
}

impl Request {
    /// A plain call: `y` (and `v` when `sum`) read back.
    pub fn host(sum: bool) -> Request {
        Request {
            sum,
            to: Destination::Host,
            repeat: 1,
            timed: false,
        }
    }

    pub fn to_gpu(sum: bool) -> Request {
        Request {
            to: Destination::Gpu,
            ..Request::host(sum)
        }
    }

    pub fn in_place() -> Request {
        Request {
            to: Destination::InPlace,
            ..Request::host(true)
        }
    }

    /// `repeat` dispatches in one submission, timed on the GPU when `timed`.
    pub fn repeated(repeat: u32, timed: bool) -> Request {
        Request {
            repeat,
            timed,
            ..Request::host(false)
        }
    }
}

/// `run` writes in place only over its own tensors; an app's buffer is written in place by
/// recording into the app's encoder (`encode`).
fn not_in_place<A: HostArray>(name: &str, a: &A) -> Error {
    let got = if a.app_buffer().is_some() {
        "a GPUBuffer (norm.encode writes GPUBuffers in place)"
    } else {
        "host data"
    };
    Error::Type(format!(
        "{name}: expected a GpuTensor with inPlace: true, got {got}"
    ))
}

/// Where `encode` writes the results: over `input` (`y`) and `residual` (`v`), or into
/// the app's buffers or tensors.
#[derive(Clone)]
pub enum Outputs<A> {
    InPlace,
    To { output: A, sum: Option<A> },
}

/// A checked call: everything the driver needs to encode it.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    pub shape: Shape,
    pub dtype: Dtype,
    pub request: Request,
    /// Rows per dispatch: as many as one storage binding holds (all of them when any data
    /// is GPU-resident).
    pub rows_per_chunk: usize,
    pub variant: Variant,
}

impl Plan {
    /// Checks `x` and `request` against the device's `caps`; tensors must be placed on
    /// the live device of context `owner`.
    pub fn new<A: HostArray>(
        x: &Inputs<A>,
        request: Request,
        caps: &Caps,
        owner: ContextId,
    ) -> Result<Plan, Error> {
        if request.to == Destination::InPlace {
            match (x.input.resident(), x.residual.resident()) {
                (Some(a), Some(b)) if Rc::ptr_eq(a, b) => {
                    return Err(Error::Type("residual: expected a GpuTensor other than input (both are written in place)".into()));
                }
                (Some(_), Some(_)) => {}
                (None, _) => return Err(not_in_place("input", &x.input)),
                (_, None) => return Err(not_in_place("residual", &x.residual)),
            }
        }
        Plan::of_inputs(x, request, caps, owner)
    }

    /// Checks a call recorded into the app's command encoder: its inputs as [`Plan::new`]
    /// does, its outputs of the inputs' length and dtype, and no buffer bound twice where
    /// one of the bindings is written (WebGPU would refuse the dispatch, later and unnamed).
    pub fn encoded<H: HostArray>(
        x: &Inputs<Arg<H>>,
        outputs: &Outputs<Arg<H>>,
        caps: &Caps,
        owner: ContextId,
    ) -> Result<Plan, Error> {
        let request = match outputs {
            Outputs::InPlace => Request::in_place(),
            Outputs::To { sum, .. } => Request::to_gpu(sum.is_some()),
        };
        let plan = Plan::of_inputs(x, request, caps, owner)?;
        let written: Vec<(&str, &Arg<H>)> = match outputs {
            Outputs::InPlace => vec![("input", &x.input), ("residual", &x.residual)],
            Outputs::To { output, sum } => {
                let mut w = vec![("output", output)];
                w.extend(sum.as_ref().map(|s| ("sum", s)));
                w
            }
        };
        for (name, a) in &written {
            if let Some(t) = a.resident() {
                t.check(name, owner)?;
            }
            if a.len() != plan.shape.len() {
                return Err(Error::Shape(format!(
                    "{name}: expected length {} (the length of input), got {}",
                    plan.shape.len(),
                    a.len()
                )));
            }
            if a.dtype() != plan.dtype {
                return Err(Error::Type(format!(
                    "{name}: expected {} data like input, got {}",
                    plan.dtype.name(),
                    a.dtype().name()
                )));
            }
        }
        let mut bound: Vec<(&str, &Arg<H>)> = x.named().collect();
        if let Outputs::To { .. } = outputs {
            bound.extend(written.iter().copied());
        }
        for (i, (name, a)) in bound.iter().enumerate() {
            let writes = |n: &str| written.iter().any(|(w, _)| *w == n);
            if let Some((other, _)) = bound[..i]
                .iter()
                .find(|(other, b)| (writes(name) || writes(other)) && a.same_storage(b))
            {
                return Err(Error::Type(format!(
                    "{name}: expected a buffer other than {other}'s (one of the two is written)"
                )));
            }
        }
        Ok(plan)
    }

    /// The checks every call shares: lengths, dtypes, tensors' owners, the kernel, and
    /// how many rows one binding holds.
    fn of_inputs<A: HostArray>(
        x: &Inputs<A>,
        request: Request,
        caps: &Caps,
        owner: ContextId,
    ) -> Result<Plan, Error> {
        let shape = Shape::of(x)?;
        check_repeat(request.repeat)?;
        let dtype = x.input.dtype();
        let mut any_resident = false;
        for (name, a) in x.named() {
            if let Some(t) = a.resident() {
                t.check(name, owner)?;
                any_resident = true;
            }
            if a.dtype() != dtype {
                return Err(Error::Type(format!(
                    "{name}: expected {} data like input, got {}",
                    dtype.name(),
                    a.dtype().name()
                )));
            }
        }
        let kernel = Kernel {
            hidden: shape.hidden,
            options: Options {
                bias: x.bias.is_some(),
                beta: x.beta.is_some(),
                sum: request.sum,
            },
            dtype,
            in_place: request.to == Destination::InPlace,
        };
        kernel.check()?;
        let mut rows_per_chunk = rows_per_binding(shape.hidden, caps.max_binding)?;
        if request.to != Destination::Host || any_resident {
            if shape.rows > rows_per_chunk {
                // Tensors are single bindings; splitting them would need offset-aligned views.
                return Err(Error::Shape(format!(
                    "input: expected GPU-resident data to fit one storage binding ({} bytes), got {} rows of {}",
                    caps.max_binding, shape.rows, shape.hidden
                )));
            }
            rows_per_chunk = shape.rows.max(1);
        }
        let variant = kernel.variant(caps, shape.rows);
        Ok(Plan {
            shape,
            dtype,
            request,
            rows_per_chunk,
            variant,
        })
    }
}

/// Which kernel a call needs, from what it passes: what `prepare` compiles ahead of time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kernel {
    pub hidden: usize,
    pub options: Options,
    pub dtype: Dtype,
    pub in_place: bool,
}

impl Kernel {
    /// Checks what a call with this kernel would check of `hidden`.
    pub fn check(&self) -> Result<(), Error> {
        hidden_from_number(self.hidden as f64)?;
        if self.dtype == Dtype::F16 && !self.hidden.is_multiple_of(4) {
            // Halves are moved four at a time (two 32-bit words); a row must not end mid-word.
            return Err(Error::Shape(format!(
                "hidden: expected a multiple of 4 for f16 data, got {}",
                self.hidden
            )));
        }
        Ok(())
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
