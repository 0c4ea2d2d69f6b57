//! The CPU backend's driver: the same calls as the GPU driver (`gpu/context.rs`, `gpu/submit.rs`, `gpu/resident.rs`), checked by the
//! same `Plan`, computed by `cpu/` in wasm memory. For browsers without WebGPU, and for
//! software adapters, where a WebGPU call costs many times a CPU loop.

use std::cell::{Ref, RefMut};
use std::rc::Rc;

use crate::call::arrays::host_vec;
use crate::call::checks::check_upload;
use crate::call::error::Error;
use crate::call::host::HostArray;
use crate::call::numbers::CpuData;
use crate::call::plan::{Destination, Plan, Request};
use crate::call::shape::Inputs;
use crate::call::tensor::Tensor;
use crate::cpu;
use crate::gpu::device::{next_context_id, Caps, ContextId};
use crate::gpu::pending::{Finished, GpuOutput, Output};

/// No device limits: a call is one pass over wasm memory, whatever its size.
const CAPS: Caps = Caps {
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

/// The element types the CPU kernels take.
trait Element: Copy + Default + 'static {
    fn norm(x: &Inputs<&[Self]>, y: &mut [Self], v: Option<&mut [Self]>);
    fn norm_in_place(input: &mut [Self], residual: &mut [Self], x: &Inputs<&[Self]>);
    fn of(d: &CpuData) -> &[Self];
    fn of_mut(d: &mut CpuData) -> &mut [Self];
    fn wrap(v: Vec<Self>) -> CpuData;
}

macro_rules! element {
    ($t:ty, $variant:ident, $norm:path, $in_place:path) => {
        impl Element for $t {
            fn norm(x: &Inputs<&[Self]>, y: &mut [Self], v: Option<&mut [Self]>) {
                $norm(x, y, v)
            }
            fn norm_in_place(input: &mut [Self], residual: &mut [Self], x: &Inputs<&[Self]>) {
                $in_place(input, residual, x.gamma, x.beta, x.bias, x.hidden, x.eps)
            }
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
element!(f32, F32, cpu::norm_f32, cpu::norm_f32_in_place);
element!(u16, F16, cpu::norm_f16, cpu::norm_f16_in_place);

impl CpuContext {
    pub fn id(&self) -> ContextId {
        self.id
    }

    /// Checks and computes one call; the results are ready when this returns.
    pub fn submit<A: HostArray>(&self, x: &Inputs<A>, request: Request) -> Result<Finished, Error> {
        let plan = Plan::new(x, request, &CAPS, self.id)?;
        if let Some((name, _)) = x.named().find(|(_, a)| a.app_buffer().is_some()) {
            return Err(Error::Type(format!(
                "{name}: expected a typed array or a GpuTensor (this instance runs on the CPU \
                 backend, which has no GPU device), got a GPUBuffer"
            )));
        }
        match plan.dtype {
            crate::call::dtype::Dtype::F32 => self.compute::<f32, A>(x, &plan),
            crate::call::dtype::Dtype::F16 => self.compute::<u16, A>(x, &plan),
        }
    }

    fn compute<T: Element, A: HostArray>(
        &self,
        x: &Inputs<A>,
        plan: &Plan,
    ) -> Result<Finished, Error> {
        // TEMPORARY until the CPU kernel has the whole family.
        let Some(x_residual) = x.residual.as_ref() else {
            return Err(Error::Type("residual: missing".into()));
        };
        let gamma = data("gamma", &x.gamma)?;
        let beta = x.beta.as_ref().map(|a| data("beta", a)).transpose()?;
        let bias = x.bias.as_ref().map(|a| data("bias", a)).transpose()?;
        let per_row = |input: &'static [T], residual: &'static [T]| Inputs {
            input,
            residual: Some(residual),
            post_gamma: None,
            norm: x.norm,
            gamma: T::of(&gamma),
            beta: beta.as_deref().map(T::of),
            bias: bias.as_deref().map(T::of),
            hidden: x.hidden,
            eps: x.eps,
        };
        let Request {
            sum, to, repeat, ..
        } = plan.request;
        if to == Destination::InPlace {
            let (mut input, mut residual) = (
                written("input", &x.input)?,
                written("residual", x_residual)?,
            );
            // One dispatch's worth: repeating in place would normalize its own output.
            let affine = per_row(&[], &[]);
            T::norm_in_place(T::of_mut(&mut input), T::of_mut(&mut residual), &affine);
            return Ok(Finished {
                host: None,
                gpu: None,
                ns: None,
            });
        }
        let (input, residual) = (data("input", &x.input)?, data("residual", x_residual)?);
        let (y, v) = match (input, residual) {
            // Host arrays were copied into memory of the call's own: normalize those copies
            // in place (bit for bit the same result) rather than fill two more arrays.
            (Data::Copied(mut input), Data::Copied(mut residual)) if repeat == 1 => {
                let affine = per_row(&[], &[]);
                T::norm_in_place(T::of_mut(&mut input), T::of_mut(&mut residual), &affine);
                (input, sum.then_some(residual))
            }
            (input, residual) => {
                let n = plan.shape.len();
                let (mut y, mut v) = (vec![T::default(); n], sum.then(|| vec![T::default(); n]));
                let call = Inputs {
                    input: T::of(&input),
                    residual: Some(T::of(&residual)),
                    ..per_row(&[], &[])
                };
                for _ in 0..repeat {
                    T::norm(&call, &mut y, v.as_deref_mut());
                }
                (T::wrap(y), v.map(T::wrap))
            }
        };
        Ok(match to {
            Destination::Gpu => Finished {
                host: None,
                gpu: Some(GpuOutput {
                    y: Rc::new(Tensor::on_cpu(y, self.id)),
                    sum: v.map(|v| Rc::new(Tensor::on_cpu(v, self.id))),
                }),
                ns: None,
            },
            _ => Finished {
                host: Some(Output {
                    y: host_vec(&y),
                    sum: v.as_ref().map(host_vec),
                }),
                gpu: None,
                ns: None,
            },
        })
    }

    /// Copies `data` into a tensor of this context.
    pub fn upload<A: HostArray>(&self, data: &A) -> Result<Rc<Tensor>, Error> {
        check_upload(data.len(), data.dtype(), &CAPS)?;
        let copied = data
            .to_cpu()
            .map_err(|e| Error::Type(format!("data: the browser refused the array ({e})")))?;
        Ok(Rc::new(Tensor::on_cpu(copied, self.id)))
    }

    /// A tensor of this context, copied out.
    pub fn read(&self, t: &Tensor) -> Result<Finished, Error> {
        t.check("tensor", self.id)?;
        let data = t.cpu_data().ok_or_else(|| busy("tensor"))?;
        let data = data.try_borrow().map_err(|_| busy("tensor"))?;
        Ok(Finished {
            host: Some(Output {
                y: host_vec(&data),
                sum: None,
            }),
            gpu: None,
            ns: None,
        })
    }
}

/// An argument's numbers, borrowed from its tensor or copied from the host.
fn data<'a, A: HostArray>(name: &str, a: &'a A) -> Result<Data<'a>, Error> {
    match a.resident().and_then(|t| t.cpu_data()) {
        Some(d) => d.try_borrow().map(Data::Tensor).map_err(|_| busy(name)),
        None => a
            .to_cpu()
            .map(Data::Copied)
            .map_err(|e| Error::Type(format!("{name}: the browser refused the array ({e})"))),
    }
}

/// A tensor the call writes in place.
fn written<'a, A: HostArray>(name: &str, a: &'a A) -> Result<RefMut<'a, CpuData>, Error> {
    let t = a
        .resident()
        .and_then(|t| t.cpu_data())
        .ok_or_else(|| busy(name))?;
    t.try_borrow_mut().map_err(|_| busy(name))
}

fn busy(name: &str) -> Error {
    Error::Type(format!(
        "{name}: expected a GpuTensor of its own, got one another argument of this call also writes"
    ))
}
