//! An instance's device across losses: the live context, and the one that replaces it.
//!
//! A GPU reset (or `simulateDeviceLoss()`) loses the device and every buffer on it. The
//! next call of any kind opens a new device; calls that arrive while it is being opened
//! wait for that same one, so a loss opens one device, not one per call. Tensors of the
//! lost device stay lost (their data is gone); tensors uploaded meanwhile wait, with a copy
//! of their data, and are placed on the new device before any waiting call runs.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::rc::{Rc, Weak};

use futures_channel::oneshot;

use crate::call::checks::check_upload;
use crate::call::error::Error;
use crate::call::host::{Arg, HostArray};
use crate::call::numbers::DeferredUpload;
use crate::call::plan::{Kernel, Request};
use crate::call::results::{Finished, Given};
use crate::call::shape::Inputs;
use crate::call::tensor::Tensor;
use crate::gpu::pending::Pending;
use crate::gpu::GpuContext;
use crate::support::clock::now_ms;

/// After a failed attempt to open a device, how long calls are refused with its error before
/// the next attempt.
const RETRY_MS: f64 = 1000.0;

/// What `create` was asked for, kept to open an equal device after a loss.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    pub power: wgpu::PowerPreference,
    pub shader_f16: bool,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            power: wgpu::PowerPreference::default(),
            shader_f16: true,
        }
    }
}

impl Settings {
    pub async fn open(self) -> Result<GpuContext, Error> {
        let mut ctx = GpuContext::new(self.power).await?;
        ctx.set_shader_f16(self.shader_f16);
        Ok(ctx)
    }
}

pub struct Instance {
    settings: Settings,
    /// The context made last, lost or not: what `adapterInfo` and `debugStats` describe.
    latest: RefCell<Rc<GpuContext>>,
    /// Calls waiting for the device being opened; `None` when none is.
    opening: RefCell<Option<Vec<oneshot::Sender<()>>>>,
    /// Why the last attempt to open a device failed, and when: for the calls that waited on
    /// it, and the calls of the next `RETRY_MS`.
    failure: RefCell<Option<(Error, f64)>>,
    /// Tensors uploaded while no device was live.
    waiting: RefCell<Vec<Weak<Tensor>>>,
    opened: Cell<u32>,
    /// Called with each device opened after a loss.
    on_reopen: RefCell<Option<OnReopen>>,
}

/// What an instance calls with each device it opens after a loss.
type OnReopen = Box<dyn Fn(&Rc<GpuContext>)>;

impl Instance {
    pub async fn open(settings: Settings) -> Result<Rc<Instance>, Error> {
        let ctx = settings.open().await?;
        Ok(Rc::new(Instance {
            settings,
            latest: RefCell::new(Rc::new(ctx)),
            opening: RefCell::new(None),
            failure: RefCell::new(None),
            waiting: RefCell::new(Vec::new()),
            opened: Cell::new(1),
            on_reopen: RefCell::new(None),
        }))
    }

    /// The context made last, lost or not.
    pub fn latest(&self) -> Rc<GpuContext> {
        self.latest.borrow().clone()
    }

    /// Sets what runs with each device opened after a loss (the app's resident data is gone
    /// and must be uploaded again).
    pub fn set_on_reopen(&self, hook: impl Fn(&Rc<GpuContext>) + 'static) {
        *self.on_reopen.borrow_mut() = Some(Box::new(hook));
    }

    /// Devices opened so far (1 until a loss).
    pub fn devices_opened(&self) -> u32 {
        self.opened.get()
    }

    /// The live context, if there is one now.
    pub fn live(&self) -> Option<Rc<GpuContext>> {
        let ctx = self.latest();
        (self.opening.borrow().is_none() && ctx.lost_reason().is_none()).then_some(ctx)
    }

    /// A live context: the current one, or after a loss a new one.
    pub async fn context(self: Rc<Self>) -> Result<Rc<GpuContext>, Error> {
        if let Some(ctx) = self.live() {
            return Ok(ctx);
        }
        if self.opening.borrow().is_none() {
            if let Some(e) = self.recent_failure() {
                return Err(e);
            }
        }
        let wait = {
            let mut opening = self.opening.borrow_mut();
            match opening.as_mut() {
                Some(waiters) => {
                    let (tx, rx) = oneshot::channel();
                    waiters.push(tx);
                    Some(rx)
                }
                None => {
                    *opening = Some(Vec::new());
                    None
                }
            }
        };
        if let Some(rx) = wait {
            let _ = rx.await;
            return self.live().ok_or_else(|| self.failed());
        }

        // This call opens the device; the others wait for it.
        let opened = self.settings.open().await;
        let result = match opened {
            Ok(ctx) => {
                let ctx = Rc::new(ctx);
                for t in self.waiting.take().iter().filter_map(Weak::upgrade) {
                    ctx.place(&t);
                }
                *self.latest.borrow_mut() = ctx.clone();
                self.opened.set(self.opened.get() + 1);
                *self.failure.borrow_mut() = None;
                if let Some(hook) = self.on_reopen.borrow().as_ref() {
                    hook(&ctx);
                }
                Ok(ctx)
            }
            Err(e) => {
                let e = self.after_loss(e);
                *self.failure.borrow_mut() = Some((e.clone(), now_ms()));
                Err(e)
            }
        };
        for waiter in self.opening.take().unwrap_or_default() {
            let _ = waiter.send(());
        }
        result
    }

    /// Why a device could not be opened, where that was tried less than `RETRY_MS` ago: a page
    /// the browser refuses WebGPU to is not asked again on every call.
    fn recent_failure(&self) -> Option<Error> {
        let failure = self.failure.borrow();
        let (e, at) = failure.as_ref()?;
        (now_ms() - at < RETRY_MS).then(|| e.clone())
    }

    /// `e`, saying that it came of asking for a new device after a loss, and what was lost.
    fn after_loss(&self, e: Error) -> Error {
        let why = self.latest().lost_reason().unwrap_or_default();
        let more = format!(
            "{} (asked for after the device was lost: {why}; a browser may refuse WebGPU to a \
             page after its GPU process crashed repeatedly)",
            e.message()
        );
        match e {
            Error::WebGpuUnavailable(_) => Error::WebGpuUnavailable(more),
            Error::GpuDevice(_) => Error::GpuDevice(more),
            other => other,
        }
    }

    fn failed(&self) -> Error {
        self.failure
            .borrow()
            .as_ref()
            .map(|(e, _)| e.clone())
            .unwrap_or_else(|| {
                Error::GpuDevice("device: expected a new device after a loss, got none".into())
            })
    }

    /// Submits `x` now on the live device, or once a new one is open after a loss; either
    /// way the host data is read before this returns (copied in the second case, since the
    /// caller may change its arrays at once). Host results go into `given` where it holds
    /// the caller's arrays. Resolves with the context that ran the call.
    pub fn call<A: HostArray>(
        self: &Rc<Self>,
        x: &Inputs<A>,
        request: Request,
        given: Given,
    ) -> impl Future<Output = Result<(Rc<GpuContext>, Finished), Error>> + 'static {
        // Submitted now on the live device, or kept (host data copied) for the next one.
        let start = match self.live() {
            Some(ctx) => {
                let pending = ctx.submit(x, request);
                Ok((ctx, pending))
            }
            // An app's GPUBuffer belongs to the device that was lost: nothing can copy it.
            None => match x.named().find(|(_, a)| a.app_buffer().is_some()) {
                Some((name, _)) => Ok((self.latest(), Err(lost_buffer(name)))),
                None => Err((self.clone(), x.map(|a| a.detach()))),
            },
        };
        async move {
            let (ctx, mut pending) = match start {
                Ok((ctx, pending)) => (ctx, pending?),
                Err((inst, x)) => {
                    let ctx = inst.context().await?;
                    let pending = ctx.submit(&x, request)?;
                    (ctx, pending)
                }
            };
            pending.given = given;
            Ok((ctx, pending.finish().await?))
        }
    }

    /// Reads a tensor back, on the live device or once a new one is open.
    pub fn read(
        self: &Rc<Self>,
        t: &Rc<Tensor>,
    ) -> impl Future<Output = Result<Finished, Error>> + 'static {
        let start: Result<Result<Pending, Error>, _> = match self.live() {
            Some(ctx) => Ok(ctx.read_tensor(t)),
            None => Err((self.clone(), t.clone())),
        };
        async move {
            let pending = match start {
                Ok(pending) => pending?,
                Err((inst, t)) => inst.context().await?.read_tensor(&t)?,
            };
            pending.finish().await
        }
    }

    /// Compiles the pipelines of `kernels` ahead of the calls that need them.
    pub fn prepare(
        self: &Rc<Self>,
        kernels: Vec<Kernel>,
    ) -> impl Future<Output = Result<(), Error>> + 'static {
        let instance = self.clone();
        async move {
            let ctx = instance.context().await?;
            ctx.prepare(&kernels)?.await;
            Ok(())
        }
    }

    /// Uploads `data` as a tensor: on the live device, or, while none is, kept as a copy
    /// and placed on the next one.
    pub fn upload<A: HostArray>(&self, data: &A) -> Result<Rc<Tensor>, Error> {
        if let Some(ctx) = self.live() {
            return ctx.upload(data);
        }
        check_upload(data.len(), data.dtype(), self.latest().caps())?;
        let Arg::Host(copy) = data.detach() else {
            return Err(Error::Type(
                "data: expected a typed array, got a GpuTensor".into(),
            ));
        };
        let upload: DeferredUpload = Box::new(move |to| copy.upload(to));
        let t = Rc::new(Tensor::waiting(data.len(), data.dtype(), Some(upload)));
        let mut waiting = self.waiting.borrow_mut();
        waiting.retain(|w| w.strong_count() > 0);
        waiting.push(Rc::downgrade(&t));
        Ok(t)
    }

    /// Loses the device, as a GPU reset would (for tests of recovery).
    pub fn simulate_device_loss(&self) {
        self.latest().destroy_device();
    }
}

fn lost_buffer(name: &str) -> Error {
    Error::GpuDevice(format!(
        "{name}: expected a GPUBuffer on a live device, got one of the device that was lost \
         (create it again on norm.device once ondevicerestored is called)"
    ))
}
