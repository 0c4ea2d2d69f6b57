//! Which backend an instance runs on: WebGPU (the GPU driver, behind `instance.rs` for
//! device loss) or the CPU backend (`cpu/driver.rs`), and the rule `"auto"` chooses by.
//! Every entry point goes through here, so both backends take the same calls.

use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use crate::call::error::Error;
use crate::call::host::HostArray;
use crate::call::plan::{Kernel, Request};
use crate::call::results::Finished;
use crate::call::shape::Inputs;
use crate::call::tensor::Tensor;
use crate::cpu::driver::CpuContext;
use crate::instance::{Instance, Settings};

/// What `create({ backend })` asks for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Choice {
    #[default]
    WebGpu,
    Cpu,
    /// WebGPU on a real GPU; the CPU backend where WebGPU is missing, no adapter is found,
    /// or the adapter is a fallback (software) one, where a WebGPU call costs many times a
    /// CPU loop over the same numbers (docs/performance.md, "Tiling of the RMSNorm kernel",
    /// its CPU adapters).
    Auto,
}

type LocalFuture<T> = Pin<Box<dyn Future<Output = Result<T, Error>>>>;

#[derive(Clone)]
pub enum Engine {
    Gpu(Rc<Instance>),
    Cpu(Rc<CpuContext>),
}

impl Engine {
    pub async fn open(choice: Choice, settings: Settings) -> Result<Engine, Error> {
        match choice {
            Choice::WebGpu => Ok(Engine::Gpu(Instance::open(settings).await?)),
            Choice::Cpu => Ok(Engine::cpu()),
            Choice::Auto => match Instance::open(settings).await {
                Ok(gpu) if !gpu.latest().adapter().is_fallback => Ok(Engine::Gpu(gpu)),
                Ok(_) | Err(Error::WebGpuUnavailable(_)) | Err(Error::GpuDevice(_)) => {
                    Ok(Engine::cpu())
                }
                Err(e) => Err(e),
            },
        }
    }

    fn cpu() -> Engine {
        Engine::Cpu(Rc::new(CpuContext::default()))
    }

    /// `"webgpu"` or `"cpu"`.
    pub fn name(&self) -> &'static str {
        match self {
            Engine::Gpu(_) => "webgpu",
            Engine::Cpu(_) => "cpu",
        }
    }

    pub fn gpu(&self) -> Option<&Rc<Instance>> {
        match self {
            Engine::Gpu(g) => Some(g),
            Engine::Cpu(_) => None,
        }
    }

    /// One call; host data is read before this returns on either backend.
    pub fn call<A: HostArray>(&self, x: &Inputs<A>, request: Request) -> LocalFuture<Finished> {
        match self {
            Engine::Gpu(g) => {
                let call = g.call(x, request);
                Box::pin(async move { Ok(call.await?.1) })
            }
            Engine::Cpu(c) => {
                let done = c.submit(x, request);
                Box::pin(async move { done })
            }
        }
    }

    pub fn read(&self, t: &Rc<Tensor>) -> LocalFuture<Finished> {
        match self {
            Engine::Gpu(g) => Box::pin(g.read(t)),
            Engine::Cpu(c) => {
                let done = c.read(t);
                Box::pin(async move { done })
            }
        }
    }

    pub fn upload<A: HostArray>(&self, data: &A) -> Result<Rc<Tensor>, Error> {
        match self {
            Engine::Gpu(g) => g.upload(data),
            Engine::Cpu(c) => c.upload(data),
        }
    }

    /// Compiles the kernels ahead of time; the CPU backend has nothing to compile but checks
    /// them the same way.
    pub fn prepare(&self, kernels: Vec<Kernel>) -> LocalFuture<()> {
        match self {
            Engine::Gpu(g) => Box::pin(g.prepare(kernels)),
            Engine::Cpu(_) => {
                let checked = kernels.iter().try_for_each(Kernel::check);
                Box::pin(async move { checked })
            }
        }
    }
}
