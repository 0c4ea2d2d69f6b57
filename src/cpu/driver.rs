//! The CPU backend's driver: the same calls as the GPU driver (`gpu/submit.rs`,
//! `gpu/resident.rs`), checked by the same `Plan`, computed by `cpu/` in wasm memory and
//! returning the same results (`call/results.rs`). For browsers without WebGPU, and for
//! software adapters, where a WebGPU call costs many times a CPU loop.

use std::cell::{Ref, RefMut};
use std::rc::Rc;

use crate::call::checks::check_upload;
use crate::call::device::{next_context_id, Caps, ContextId};
use crate::call::dtype::Dtype;
use crate::call::error::Error;
use crate::call::host::{Arg, HostArray};
use crate::call::numbers::CpuData;
use crate::call::plan::{Destination, Plan, Request};
use crate::call::results::{Finished, Given, GpuOutput, Output};
use crate::call::rotary::{Positions, Rotary};
use crate::call::shape::{Inputs, Outputs};
use crate::call::tensor::Tensor;
use crate::cpu;
use crate::cpu::memory::room;
use crate::cpu::results::{host_result, host_result_into};

/// A call's `y` and `v`, each where it has one.
type Results = (Option<CpuData>, Option<CpuData>);
/// No device limits: a call is one pass over wasm memory, whatever its size.
pub(crate) const CAPS: Caps = Caps {
    max_binding: u64::MAX,
    max_groups_per_dim: u32::MAX,
    max_workgroup: u32::MAX,
    shader_f16: false,
    timestamps: false,
    cpu_tiling: false,
};

pub struct CpuContext {
    id: ContextId,
}

impl Default for CpuContext {
    fn default() -> Self {
        CpuContext {
            id: next_context_id(),
        }
    }
}

/// An argument's numbers: copied from the host, or a tensor's, borrowed.
enum Data<'a> {
    Copied(CpuData),
    Tensor(Ref<'a, CpuData>),
}

impl std::ops::Deref for Data<'_> {
    type Target = CpuData;
    fn deref(&self) -> &CpuData {
        match self {
            Data::Copied(d) => d,
            Data::Tensor(d) => d,
        }
    }
}

/// The element types the CPU kernel takes, as a call's arrays hold them.
trait Stored: cpu::Element + Default + 'static {
    fn of(d: &CpuData) -> &[Self];
    fn of_mut(d: &mut CpuData) -> &mut [Self];
    fn wrap(v: Vec<Self>) -> CpuData;
}

macro_rules! stored {
    ($t:ty, $variant:ident) => {
        impl Stored for $t {
            fn of(d: &CpuData) -> &[Self] {
                match d {
                    CpuData::$variant(v) => v,
                    _ => &[],
                }
            }
            fn of_mut(d: &mut CpuData) -> &mut [Self] {
                match d {
                    CpuData::$variant(v) => v,
                    _ => &mut [],
                }
            }
            fn wrap(v: Vec<Self>) -> CpuData {
                CpuData::$variant(v)
            }
        }
    };
}
stored!(f32, F32);
stored!(u16, F16);

impl CpuContext {
    pub fn id(&self) -> ContextId {
        self.id
    }

    /// Checks and computes one call; the results are ready when this returns.
    pub fn submit<A: HostArray>(&self, x: &Inputs<A>, request: Request) -> Result<Finished, Error> {
        self.submit_into(x, request, Given::default())
    }

    /// As [`submit`](Self::submit), host results written into the caller's arrays where
    /// `given` holds them, once they are whole.
    pub fn submit_into<A: HostArray>(
        &self,
        x: &Inputs<A>,
        request: Request,
        given: Given,
    ) -> Result<Finished, Error> {
        let plan = Plan::new(x, request, &CAPS, self.id)?;
        refuse_buffers(x.named(), x.rotary.as_ref())?;
        let results = match (plan.kernel.dtype, plan.kernel.out_dtype) {
            (Dtype::F32, Dtype::F32) => self.compute::<f32, f32, A>(x, &plan),
            (Dtype::F32, Dtype::F16) => self.compute::<f32, u16, A>(x, &plan),
            (Dtype::F16, Dtype::F32) => self.compute::<u16, f32, A>(x, &plan),
            (Dtype::F16, Dtype::F16) => self.compute::<u16, u16, A>(x, &plan),
        }?;
        match results {
            Some((y, v)) => self.finished(&plan, y, v, given),
            None => Ok(Finished::default()),
        }
    }

    /// Checks a call whose results go to tensors it names (in place, or `output` and `sum`),
    /// as a bound call (`norm.bind`) takes it on this backend.
    pub fn check_into_tensors<H: HostArray>(
        &self,
        x: &Inputs<Arg<H>>,
        outputs: &Outputs<Arg<H>>,
    ) -> Result<(), Error> {
        Plan::encoded(x, outputs, &CAPS, self.id)?;
        refuse_buffers(x.named().chain(outputs.named()), x.rotary.as_ref())
    }

    /// Computes a checked call ([`check_into_tensors`](Self::check_into_tensors)) into its tensors.
    pub fn submit_into_tensors<H: HostArray>(
        &self,
        x: &Inputs<Arg<H>>,
        outputs: &Outputs<Arg<H>>,
    ) -> Result<(), Error> {
        self.check_into_tensors(x, outputs)?;
        let Outputs::To { output, sum } = outputs else {
            return self.submit(x, Request::in_place()).map(drop);
        };
        let done = self.submit(x, Request::to_gpu(sum.is_some()))?;
        let Some(out) = done.gpu else {
            return Ok(());
        };
        for (name, to, from) in [("output", output, &out.y), ("sum", sum, &out.sum)] {
            if let (Some(to), Some(from)) = (to, from) {
                move_into(name, to, from)?;
            }
        }
        Ok(())
    }

    /// A call of `T` data with `y` in `O`: its [`Results`] `y` (not without `gamma`) and `v`
    /// (where asked for), none in place.
    fn compute<T: Stored, O: Stored, A: HostArray>(
        &self,
        x: &Inputs<A>,
        plan: &Plan,
    ) -> Result<Option<Results>, Error> {
        let (gamma, beta, bias, post_gamma, input2) = (
            optional("gamma", &x.gamma)?,
            optional("beta", &x.beta)?,
            optional("bias", &x.bias)?,
            optional("postGamma", &x.post_gamma)?,
            optional("input2", &x.input2)?,
        );
        // The per-column arrays, `input2` and options; the kernel is given input and
        // residual apart.
        let columns = Inputs {
            input: &[][..],
            residual: None,
            input2: input2.as_deref().map(T::of),
            gamma: gamma.as_deref().map(T::of),
            beta: beta.as_deref().map(T::of),
            bias: bias.as_deref().map(T::of),
            post_gamma: post_gamma.as_deref().map(T::of),
            hidden: x.hidden,
            eps: x.eps,
            norm: x.norm,
            rotary: x.rotary.clone(),
        };
        let Request {
            sum, to, repeat, ..
        } = plan.request;
        if to == Destination::InPlace {
            let mut input = written("input", &x.input)?;
            let mut residual = optional_written("residual", &x.residual)?;
            // One dispatch's worth: repeating in place would normalize its own output.
            cpu::norm_in_place(
                T::of_mut(&mut input),
                residual.as_deref_mut().map(T::of_mut),
                &columns,
            )?;
            return Ok(None);
        }
        let input = data("input", &x.input)?;
        let residual = optional("residual", &x.residual)?;
        // Host arrays were copied into memory of the call's own: where y has their dtype,
        // normalize those copies in place (bit for bit the same result) rather than fill
        // more arrays.
        let with_y = plan.kernel.options.output;
        let reuse = repeat == 1 && plan.kernel.out_dtype == plan.kernel.dtype && with_y;
        let (y, v) = match (input, residual) {
            (Data::Copied(mut input), Some(Data::Copied(mut residual))) if reuse => {
                let residual_rows = Some(T::of_mut(&mut residual));
                cpu::norm_in_place(T::of_mut(&mut input), residual_rows, &columns)?;
                (input, sum.then_some(residual))
            }
            (Data::Copied(mut input), None) if reuse && !sum => {
                cpu::norm_in_place(T::of_mut(&mut input), None, &columns)?;
                (input, None)
            }
            (input, residual) => {
                let n = plan.shape().len();
                let y_len = if with_y { n } else { 0 };
                let mut y = room(y_len, "output")?;
                y.resize(y_len, O::default());
                let mut v = sum.then(|| room(n, "sum")).transpose()?;
                if let Some(v) = v.as_mut() {
                    v.resize(n, T::default());
                }
                let call = Inputs {
                    input: T::of(&input),
                    residual: residual.as_deref().map(T::of),
                    ..columns
                };
                for _ in 0..repeat {
                    cpu::norm(&call, &mut y, v.as_deref_mut())?;
                }
                (O::wrap(y), v.map(T::wrap))
            }
        };
        Ok(Some((with_y.then_some(y), v)))
    }

    /// A call's results `y` (and `v`) where its request wants them: new tensors of this
    /// context, or read back (into the caller's arrays where `given` holds them).
    fn finished(
        &self,
        plan: &Plan,
        y: Option<CpuData>,
        v: Option<CpuData>,
        mut given: Given,
    ) -> Result<Finished, Error> {
        if plan.request.to == Destination::Gpu {
            let tensor = |d| Rc::new(Tensor::on_cpu(d, self.id));
            return Ok(Finished {
                gpu: Some(GpuOutput {
                    y: y.map(tensor),
                    sum: v.map(tensor),
                }),
                ..Finished::default()
            });
        }
        given.check_intact(plan.shape().len())?;
        let host =
            |d: Option<CpuData>, to: Option<_>| d.map(|d| host_result_into(&d, to)).transpose();
        Ok(Finished {
            host: Some(Output {
                y: host(y, given.y.take())?,
                sum: host(v, given.sum.take())?,
            }),
            ..Finished::default()
        })
    }

    /// Copies `data` into a tensor of this context.
    pub fn upload<A: HostArray>(&self, data: &A) -> Result<Rc<Tensor>, Error> {
        check_upload(data.len(), data.dtype(), &CAPS)?;
        let copied = data.to_cpu("data")?;
        Ok(Rc::new(Tensor::on_cpu(copied, self.id)))
    }

    /// A tensor of this context, copied out.
    pub fn read(&self, t: &Tensor) -> Result<Finished, Error> {
        t.check("tensor", self.id)?;
        let data = t.cpu_data().ok_or_else(|| busy("tensor"))?;
        let data = data.try_borrow().map_err(|_| busy("tensor"))?;
        Ok(Finished {
            host: Some(Output {
                y: Some(host_result(&data)),
                sum: None,
            }),
            ..Finished::default()
        })
    }
}

/// An argument's numbers, borrowed from its tensor or copied from the host.
fn data<'a, A: HostArray>(name: &str, a: &'a A) -> Result<Data<'a>, Error> {
    match a.resident().and_then(|t| t.cpu_data()) {
        Some(d) => d.try_borrow().map(Data::Tensor).map_err(|_| busy(name)),
        None => a.to_cpu(name).map(Data::Copied),
    }
}

/// An optional argument's numbers, where the call has it.
fn optional<'a, A: HostArray>(name: &str, a: &'a Option<A>) -> Result<Option<Data<'a>>, Error> {
    a.as_ref().map(|a| data(name, a)).transpose()
}

/// The tensor of an optional argument the call writes in place, where it has one.
fn optional_written<'a, A: HostArray>(
    name: &str,
    a: &'a Option<A>,
) -> Result<Option<RefMut<'a, CpuData>>, Error> {
    a.as_ref().map(|a| written(name, a)).transpose()
}

/// A tensor the call writes in place.
fn written<'a, A: HostArray>(name: &str, a: &'a A) -> Result<RefMut<'a, CpuData>, Error> {
    let t = a
        .resident()
        .and_then(|t| t.cpu_data())
        .ok_or_else(|| busy(name))?;
    t.try_borrow_mut().map_err(|_| busy(name))
}

/// Moves the numbers of `from`, a result just computed, into the tensor `to` (of the same
/// length and dtype, as the plan checked).
fn move_into<H: HostArray>(name: &str, to: &Arg<H>, from: &Tensor) -> Result<(), Error> {
    let mut to = written(name, to)?;
    let from = from.cpu_data().ok_or_else(|| busy(name))?;
    std::mem::swap(
        &mut *to,
        &mut *from.try_borrow_mut().map_err(|_| busy(name))?,
    );
    Ok(())
}

/// The backend has no GPU device, so no `GPUBuffer` argument.
fn refuse_buffers<'a, A: HostArray + 'a>(
    mut named: impl Iterator<Item = (&'static str, &'a A)>,
    rotary: Option<&Rotary>,
) -> Result<(), Error> {
    refuse_buffer_positions(rotary)?;
    match named.find(|(_, a)| a.app_buffer().is_some()) {
        Some((name, _)) => Err(Error::Type(format!(
            "{name}: expected a typed array or a GpuTensor (this instance runs on the CPU \
             backend, which has no GPU device), got a GPUBuffer"
        ))),
        None => Ok(()),
    }
}

/// A rotary stage's positions in a `GPUBuffer`, which this backend cannot read.
pub(crate) fn refuse_buffer_positions(rotary: Option<&Rotary>) -> Result<(), Error> {
    match rotary.map(|r| &r.positions) {
        Some(Positions::Buffer(_)) => Err(Error::Type(
            "positions: expected an Int32Array or a Uint32Array (this instance runs on the CPU \
             backend, which has no GPU device), got a GPUBuffer"
                .into(),
        )),
        _ => Ok(()),
    }
}

fn busy(name: &str) -> Error {
    Error::Type(format!(
        "{name}: expected a GpuTensor of its own, got one another argument of this call also writes"
    ))
}
