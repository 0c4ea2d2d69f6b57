//! A call checked into a plan: what it asks for ([`Request`], [`Destination`]), where
//! `encode` writes ([`Outputs`]), which kernel it needs ([`Kernel`]: its row length, options
//! and dtypes, what `prepare` compiles), and the [`Plan`] a driver carries out (the request,
//! the kernel, the rows and how many one dispatch takes). A driver derives its own form of
//! the kernel from the plan's (the GPU's tiled variant: `gpu/kernel/tiling/`).
//!
//! With [`crate::call::shape`] (the inputs and their shape) and [`crate::call::checks`]
//! (single values), every check of every entry point lives here, not in the JavaScript
//! facade or the drivers, so native callers and tests get the same errors with the same
//! wording as the browser does, and a check added for one path holds for all of them.

use std::rc::Rc;

use crate::call::checks::{check_repeat, hidden_from_number, rows_per_binding};
use crate::call::device::{Caps, ContextId};
use crate::call::dtype::Dtype;
use crate::call::error::Error;
use crate::call::host::{Arg, HostArray};
use crate::call::numbers::Len;
use crate::call::options::Options;
use crate::call::shape::{Inputs, NormKind, Outputs, Shape};

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

/// In place, no tensor that is written (`input`, `residual`) is also read as a weight: the
/// rows would be written under the weights they are computed with, which the CPU backend
/// cannot borrow and WebGPU refuses to bind. Checked here, before either backend, so both
/// refuse such a call with the same error.
fn read_apart_from_written<A: HostArray>(x: &Inputs<A>) -> Result<(), Error> {
    let written = [Some(&x.input), x.residual.as_ref()];
    let written: Vec<_> = written
        .into_iter()
        .flatten()
        .filter_map(|a| a.resident())
        .collect();
    let weights = x
        .named()
        .filter(|(n, _)| !matches!(*n, "input" | "residual"));
    for (name, a) in weights {
        if a.resident()
            .is_some_and(|t| written.iter().any(|w| Rc::ptr_eq(w, t)))
        {
            return Err(Error::Type(format!(
                "{name}: expected a GpuTensor of its own, got one another argument of this call also writes"
            )));
        }
    }
    Ok(())
}

/// Checks a destination of a call's result `name` (`"output"` for `y`, else `v`'s): the
/// input's length, and `outputDtype`'s dtype for `y`, the data's for `v`. Where results go
/// into arrays of the app's: `encode`'s buffers and tensors, and `run`'s typed arrays.
pub fn check_written<A: HostArray>(
    x: &Inputs<A>,
    name: &str,
    len: usize,
    dtype: Dtype,
) -> Result<(), Error> {
    let n = x.input.len();
    if len != n {
        return Err(Error::Shape(format!(
            "{name}: expected length {n} (the length of input), got {len}"
        )));
    }
    let data = x.input.dtype();
    let (want, like) = if name == "output" {
        (x.norm.output_dtype.unwrap_or(data), "outputDtype")
    } else {
        (data, "input")
    };
    if dtype != want {
        return Err(Error::Type(format!(
            "{name}: expected {} data like {like}, got {}",
            want.name(),
            dtype.name()
        )));
    }
    Ok(())
}

/// A checked call: everything a driver needs to carry it out.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    pub request: Request,
    /// The kernel the call needs: its row length (`hidden`), options and dtypes.
    pub kernel: Kernel,
    pub rows: usize,
    /// Rows per dispatch: as many as one storage binding holds (all of them when any data
    /// is GPU-resident).
    pub rows_per_chunk: usize,
}

impl Plan {
    /// `rows × hidden`.
    pub fn shape(&self) -> Shape {
        Shape {
            rows: self.rows,
            hidden: self.kernel.hidden,
        }
    }

    /// Checks `x` and `request` against the device's `caps`; tensors must be placed on
    /// the live device of context `owner`.
    pub fn new<A: HostArray>(
        x: &Inputs<A>,
        request: Request,
        caps: &Caps,
        owner: ContextId,
    ) -> Result<Plan, Error> {
        if request.to == Destination::InPlace {
            let Some(input) = x.input.resident() else {
                return Err(not_in_place("input", &x.input));
            };
            if let Some(residual) = &x.residual {
                match residual.resident() {
                    Some(r) if Rc::ptr_eq(input, r) => {
                        return Err(Error::Type("residual: expected a GpuTensor other than input (both are written in place)".into()));
                    }
                    Some(_) => {}
                    None => return Err(not_in_place("residual", residual)),
                }
            }
            read_apart_from_written(x)?;
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
        // In place, `y` goes over `input` (where there is `gamma`) and `v` over `residual`.
        let y_over_input = x.writes_y().then_some(&x.input);
        let written: Vec<(&str, &Arg<H>)> = match outputs {
            Outputs::InPlace => [("input", y_over_input), ("residual", x.residual.as_ref())]
                .into_iter()
                .filter_map(|(name, a)| a.map(|a| (name, a)))
                .collect(),
            Outputs::To { .. } => outputs.named().collect(),
        };
        for (name, a) in &written {
            if let Some(t) = a.resident() {
                t.check(name, owner)?;
            }
            check_written(x, name, a.len(), a.dtype())?;
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
        if x.gamma.is_some() && x.norm.kind == NormKind::None {
            return Err(Error::Type(
                "gamma: expected undefined with kind \"none\" (it normalizes nothing: y is the sum, \
                 turned by a rotary stage)"
                    .into(),
            ));
        }
        if !x.writes_y() && x.rotary.is_some() {
            return Err(Error::Type(
                "positions: expected undefined without gamma (the call computes the sum alone, \
                 and the rotary stage turns y)"
                    .into(),
            ));
        }
        if !x.writes_y() && x.norm.output_dtype.is_some() {
            return Err(Error::Type(
                "outputDtype: expected undefined without gamma (the call computes the sum alone)"
                    .into(),
            ));
        }
        let out_dtype = x.norm.output_dtype.unwrap_or(dtype);
        if request.to == Destination::InPlace && out_dtype != dtype {
            return Err(Error::Type(format!(
                "outputDtype: expected {} (the data's) in place, where y is written over input, got {}",
                dtype.name(),
                out_dtype.name()
            )));
        }
        let kernel = Kernel {
            hidden: shape.hidden,
            options: Options::of(x, request.sum),
            dtype,
            out_dtype,
            in_place: request.to == Destination::InPlace,
        };
        kernel.check()?;
        let mut rows_per_chunk = rows_per_binding(shape.hidden, caps.max_binding)?;
        // A rotary stage's positions count the call's rows from its first: one dispatch.
        if request.to != Destination::Host || any_resident || x.rotary.is_some() {
            if shape.rows > rows_per_chunk {
                // Tensors are single bindings; splitting them would need offset-aligned views.
                return Err(Error::Shape(format!(
                    "input: expected GPU-resident data, or a call with a rotary stage, to fit one storage binding ({} bytes), got {} rows of {}",
                    caps.max_binding, shape.rows, shape.hidden
                )));
            }
            rows_per_chunk = shape.rows.max(1);
        }
        Ok(Plan {
            request,
            kernel,
            rows: shape.rows,
            rows_per_chunk,
        })
    }
}

/// Which kernel a call needs, from what it passes: what `prepare` compiles ahead of time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kernel {
    pub hidden: usize,
    pub options: Options,
    pub dtype: Dtype,
    pub out_dtype: Dtype,
    pub in_place: bool,
}

impl Kernel {
    /// The f32 kernel of `hidden` with `options`, not in place.
    pub fn f32(hidden: usize, options: Options) -> Self {
        Kernel {
            hidden,
            options,
            dtype: Dtype::F32,
            out_dtype: Dtype::F32,
            in_place: false,
        }
    }

    /// Checks what a call with this kernel would check of `hidden`, and that it passes at
    /// most one of `postGamma` and `input2` (the kernels carry either in one binding: see
    /// `gpu/kernel/bindings.rs`).
    pub fn check(&self) -> Result<(), Error> {
        hidden_from_number(self.hidden as f64)?;
        let o = self.options;
        if o.input2 && o.post_gamma {
            return Err(Error::Type(
                "input2: expected undefined with postGamma (a parallel block adds its two \
                 sublayers' outputs with no post-norm)"
                    .into(),
            ));
        }
        if !o.output {
            o.check_sum_alone(self.in_place)?;
        }
        if let Some(r) = o.rotary {
            let f16 = self.dtype == Dtype::F16 || self.out_dtype == Dtype::F16;
            r.check_beside(o.post_gamma, o.input2, f16)?;
        }
        if o.kind == NormKind::None {
            o.check_no_norm()?;
        }
        // Halves are moved four at a time (two 32-bit words); a row must not end mid-word.
        for (f16, what) in [(self.dtype, "data"), (self.out_dtype, "output")] {
            if f16 == Dtype::F16 && !self.hidden.is_multiple_of(4) {
                return Err(Error::Shape(format!(
                    "hidden: expected a multiple of 4 for f16 {what}, got {}",
                    self.hidden
                )));
            }
        }
        Ok(())
    }
}
