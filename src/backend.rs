//! Which backend an instance runs on: WebGPU (the GPU driver, behind `instance.rs` for
//! device loss) or the CPU backend (`cpu/driver.rs`), and the rule `"auto"` chooses by.
//! Every entry point goes through here, so both backends take the same calls.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use crate::call::error::Error;
use crate::call::host::HostArray;
use crate::call::plan::{Kernel, Request};
use crate::call::results::{Finished, Given};
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
    /// its CPU adapters), unless `accept_fallback`. It continues on the CPU backend when its
    /// device is lost and no new one can be had.
    Auto {
        accept_fallback: bool,
    },
}

type LocalFuture<T> = Pin<Box<dyn Future<Output = Result<T, Error>>>>;

/// The backend that runs an instance's calls now.
#[derive(Clone)]
pub enum Active {
    Gpu(Rc<Instance>),
    Cpu(Rc<CpuContext>),
}

/// An instance's backend: the one chosen at `create`, or, for `"auto"`, the CPU backend once
/// the device is lost and none can be had again (the browser refusing WebGPU after GPU
/// crashes, the GPU gone). It stays on the CPU from then on: the page asked for whatever
/// works, and its tensors would otherwise change place under it twice.
#[derive(Clone)]
pub struct Engine(Rc<Shared>);

struct Shared {
    active: RefCell<Active>,
    /// `"auto"`: continue on the CPU backend rather than reject.
    falls_back: bool,
    /// Called once, with why, when the instance continues on the CPU backend.
    on_fall_back: RefCell<Option<OnFallBack>>,
}

/// What an `"auto"` engine calls, with why, when it continues on the CPU backend.
type OnFallBack = Box<dyn Fn(&Error)>;

impl Engine {
    pub async fn open(choice: Choice, settings: Settings) -> Result<Engine, Error> {
        let active = match choice {
            Choice::WebGpu => Active::Gpu(Instance::open(settings).await?),
            Choice::Cpu => cpu(),
            Choice::Auto { accept_fallback } => match Instance::open(settings).await {
                Ok(gpu) if accept_fallback || !gpu.latest().adapter().is_fallback => {
                    Active::Gpu(gpu)
                }
                Ok(_) | Err(Error::WebGpuUnavailable(_)) | Err(Error::GpuDevice(_)) => cpu(),
                Err(e) => return Err(e),
            },
        };
        Ok(Engine(Rc::new(Shared {
            active: RefCell::new(active),
            falls_back: matches!(choice, Choice::Auto { .. }),
            on_fall_back: RefCell::new(None),
        })))
    }

    /// The backend running now.
    pub fn active(&self) -> Active {
        self.0.active.borrow().clone()
    }

    /// `"webgpu"` or `"cpu"`.
    pub fn name(&self) -> &'static str {
        match self.active() {
            Active::Gpu(_) => "webgpu",
            Active::Cpu(_) => "cpu",
        }
    }

    pub fn gpu(&self) -> Option<Rc<Instance>> {
        match self.active() {
            Active::Gpu(g) => Some(g),
            Active::Cpu(_) => None,
        }
    }

    /// Sets what runs, once, when an `"auto"` instance continues on the CPU backend.
    pub fn set_on_fall_back(&self, hook: impl Fn(&Error) + 'static) {
        *self.0.on_fall_back.borrow_mut() = Some(Box::new(hook));
    }

    /// The GPU instance of an `"auto"` engine whose device is gone: its next call reopens
    /// one or falls back (`reopen_or_fall_back`).
    fn lost_gpu(&self) -> Option<Rc<Instance>> {
        self.gpu()
            .filter(|g| self.0.falls_back && g.live().is_none())
    }

    /// A live device for `g`, or, where none can be had, the CPU backend from now on.
    async fn reopen_or_fall_back(&self, g: Rc<Instance>) -> Result<Active, Error> {
        match g.clone().context().await {
            Ok(_) => Ok(Active::Gpu(g)),
            Err(e @ (Error::WebGpuUnavailable(_) | Error::GpuDevice(_))) => Ok(self.fall_back(&e)),
            Err(e) => Err(e),
        }
    }

    /// Continues on the CPU backend (once, whichever call finds the device gone first).
    fn fall_back(&self, why: &Error) -> Active {
        if let Active::Gpu(_) = self.active() {
            *self.0.active.borrow_mut() = cpu();
            if let Some(hook) = self.0.on_fall_back.borrow().as_ref() {
                hook(why);
            }
        }
        self.active()
    }

    /// One call; host data is read before this returns on either backend.
    pub fn call<A: HostArray>(&self, x: &Inputs<A>, request: Request) -> LocalFuture<Finished> {
        self.call_into(x, request, Given::default())
    }

    /// One call whose host results go into the caller's arrays where `given` holds them.
    pub fn call_into<A: HostArray>(
        &self,
        x: &Inputs<A>,
        request: Request,
        given: Given,
    ) -> LocalFuture<Finished> {
        if let Some(g) = self.lost_gpu() {
            let (engine, x) = (self.clone(), x.map(|a| a.detach()));
            return Box::pin(async move {
                match engine.reopen_or_fall_back(g).await? {
                    Active::Gpu(g) => Ok(g.call(&x, request, given).await?.1),
                    Active::Cpu(c) => c.submit_into(&x, request, given),
                }
            });
        }
        match self.active() {
            Active::Gpu(g) => {
                let call = g.call(x, request, given);
                Box::pin(async move { Ok(call.await?.1) })
            }
            Active::Cpu(c) => {
                let done = c.submit_into(x, request, given);
                Box::pin(async move { done })
            }
        }
    }

    pub fn read(&self, t: &Rc<Tensor>) -> LocalFuture<Finished> {
        match self.active() {
            Active::Gpu(g) => Box::pin(g.read(t)),
            // A tensor of the device that was lost is a GpuDeviceError (`Tensor::check`).
            Active::Cpu(c) => {
                let done = c.read(t);
                Box::pin(async move { done })
            }
        }
    }

    pub fn upload<A: HostArray>(&self, data: &A) -> Result<Rc<Tensor>, Error> {
        match self.active() {
            Active::Gpu(g) => g.upload(data),
            Active::Cpu(c) => c.upload(data),
        }
    }

    /// Compiles the kernels ahead of time; the CPU backend has nothing to compile but checks
    /// them the same way.
    pub fn prepare(&self, kernels: Vec<Kernel>) -> LocalFuture<()> {
        let check = |kernels: &[Kernel]| kernels.iter().try_for_each(Kernel::check);
        if let Some(g) = self.lost_gpu() {
            let engine = self.clone();
            return Box::pin(async move {
                match engine.reopen_or_fall_back(g).await? {
                    Active::Gpu(g) => g.prepare(kernels).await,
                    Active::Cpu(_) => check(&kernels),
                }
            });
        }
        match self.active() {
            Active::Gpu(g) => Box::pin(g.prepare(kernels)),
            Active::Cpu(_) => {
                let checked = check(&kernels);
                Box::pin(async move { checked })
            }
        }
    }
}

fn cpu() -> Active {
    Active::Cpu(Rc::new(CpuContext::default()))
}
