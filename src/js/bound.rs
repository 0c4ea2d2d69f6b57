//! `BoundNorm`, a call whose arguments were read and checked once (`norm.bind(args)`):
//! `encode(encoder)` and `run()` then do only what a hand-written engine does per call,
//! record (and submit) one pass with a pipeline and bind group made at `bind`, plus two
//! checks that cost no crossing into JavaScript: whether a tensor of the call has been freed
//! (looked up only when some tensor was freed since the last look) and whether its device is
//! lost. Reading and checking the argument object is most of a call's own cost
//! (docs/performance.md, "The call's own cost").
//!
//! A bound call lives on the device it was bound on: after a loss its tensors hold nothing,
//! so it rejects (or throws) `GpuDeviceError`, as a call with those tensors does, once the
//! instance has tried to open a new device (or, `"auto"`, continued on the CPU backend). On
//! the CPU backend a bound call runs on the CPU and `encode` is refused as `norm.encode` is.

use std::cell::Cell;
use std::rc::Rc;

use js_sys::Promise;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

use crate::backend::Engine;
use crate::call::error::Error;
use crate::call::host::{Arg, HostArray};
use crate::call::shape::Outputs;
use crate::cpu::driver::CpuContext;
use crate::gpu::encode::{dispatch, Dispatch};
use crate::gpu::GpuContext;
use crate::js::args::encoder_arg;
use crate::js::array::{Args, JsArray};
use crate::js::tensor::{freed_count, handle_of, is_live};
use crate::js::value::to_js;

thread_local! {
    /// Steps bound calls have taken without reading their arguments (`encode` and `run`
    /// past their checks), in every instance (`debugStats().boundCalls`).
    static USED: Cell<f64> = const { Cell::new(0.0) };
}

/// How many steps bound calls have taken so far.
pub fn used() -> f64 {
    USED.get()
}

/// Where a bound call runs.
enum On {
    /// The context it was bound on, and its dispatch (`None` for a call without rows).
    Gpu(Rc<GpuContext>, Option<Dispatch>),
    Cpu(Rc<CpuContext>),
}

/// A normalization bound to its arguments by `norm.bind(args)`: `encode(encoder)` and
/// `run()` as `norm.encode(encoder, args)` and an in-place `norm.run` do, without reading or
/// checking `args` again. Release with `free()`.
#[wasm_bindgen(skip_typescript)]
pub struct BoundNorm {
    engine: Engine,
    x: Args,
    outputs: Outputs<Arg<JsArray>>,
    on: On,
    /// Each tensor of the call by name, with its `GpuTensor`'s handle.
    tensors: Vec<(&'static str, u32)>,
    /// `tensor::freed_count` when `tensors` were last looked up.
    frees_seen: Cell<u64>,
    /// An app's `GPUBuffer` is among the arguments: `run` then waits for WebGPU's verdict.
    has_buffers: bool,
}

impl BoundNorm {
    /// `x → outputs`, read by `args::parse_encode`, checked and made ready on `ctx` (the live
    /// device; `None` on the CPU backend, whose context `engine` gives).
    pub(crate) fn new(
        engine: &Engine,
        ctx: Option<Rc<GpuContext>>,
        (x, outputs): (Args, Outputs<Arg<JsArray>>),
    ) -> Result<BoundNorm, Error> {
        let mut tensors = Vec::new();
        let mut has_buffers = false;
        for (name, a) in all(&x, &outputs) {
            has_buffers |= a.app_buffer().is_some();
            if let Some(t) = a.resident() {
                // An argument's getter may free a tensor read before it.
                let handle = handle_of(t).ok_or_else(|| freed(name))?;
                tensors.push((name, handle));
            }
        }
        let on = match (ctx, engine.active()) {
            (Some(ctx), _) => {
                let d = dispatch(&mut *ctx.browser_pipelines()?, &ctx, &x, &outputs)?;
                On::Gpu(ctx, d)
            }
            (None, crate::backend::Active::Cpu(cpu)) => {
                cpu.check_into_tensors(&x, &outputs)?;
                On::Cpu(cpu)
            }
            (None, crate::backend::Active::Gpu(_)) => {
                return Err(Error::InvalidState("bind: expected a live device".into()))
            }
        };
        Ok(BoundNorm {
            engine: engine.clone(),
            x,
            outputs,
            on,
            tensors,
            frees_seen: Cell::new(freed_count()),
            has_buffers,
        })
    }

    /// A freed tensor of the call, or the loss of its device, as `what`'s error; a step
    /// counted where there is none.
    fn check(&self, what: &str) -> Result<(), Error> {
        self.checked(what)?;
        USED.set(USED.get() + 1.0);
        Ok(())
    }

    fn checked(&self, what: &str) -> Result<(), Error> {
        let frees = freed_count();
        if frees != self.frees_seen.get() {
            if let Some((name, _)) = self.tensors.iter().find(|(_, h)| !is_live(*h)) {
                return Err(freed(name));
            }
            self.frees_seen.set(frees);
        }
        match &self.on {
            On::Gpu(ctx, _) => match ctx.lost_reason() {
                Some(why) => Err(Error::GpuDevice(format!(
                    "{what}: expected a call bound on a live device, got one whose device was \
                     lost ({why}); bind it again, with tensors of the new device, once \
                     ondevicerestored is called"
                ))),
                None => Ok(()),
            },
            On::Cpu(_) => Ok(()),
        }
    }

    /// Whether the device the call was bound on is lost.
    fn lost(&self) -> bool {
        matches!(&self.on, On::Gpu(ctx, _) if ctx.lost_reason().is_some())
    }

    /// `e`, once the instance has tried to open a new device (or, `"auto"`, continued on
    /// the CPU backend) where `e` is the loss of the call's device: as a call of the lost
    /// device's tensors would.
    fn rejected(&self, e: Error) -> Promise {
        if !self.lost() {
            return Promise::reject(&to_js(e));
        }
        let recovering = self.engine.prepare(Vec::new());
        future_to_promise(async move {
            // The loss is what this call reports, whether or not a new device opened.
            let _ = recovering.await;
            Err(to_js(e))
        })
    }

    /// Submits a call of the app's buffers in an error scope and rejects with what it
    /// caught: a destroyed `GPUBuffer` is known only once the GPU process has looked.
    fn run_scoped(d: &Dispatch) -> Promise {
        let found = match d.submit_scoped() {
            Ok(found) => found,
            Err(e) => return Promise::reject(&to_js(e)),
        };
        future_to_promise(async move {
            match found.await {
                None => Ok(JsValue::UNDEFINED),
                Some(m) => Err(to_js(crate::gpu::app_buffer::refused("run", &m))),
            }
        })
    }
}

#[wasm_bindgen]
impl BoundNorm {
    /// Records the call into `encoder` as one compute pass, as `norm.encode(encoder, args)`
    /// would. Throws `TypeError` (not an encoder, or one that has finished),
    /// `InvalidStateError` (a tensor freed since `bind`, or on the CPU backend) or
    /// `GpuDeviceError` (the device was lost).
    pub fn encode(
        &self,
        #[wasm_bindgen(unchecked_param_type = "GPUCommandEncoder")] encoder: JsValue,
    ) -> Result<(), JsValue> {
        if let Err(e) = self.check("encode") {
            if self.lost() {
                let recovering = self.engine.prepare(Vec::new());
                wasm_bindgen_futures::spawn_local(async move {
                    let _ = recovering.await;
                });
            }
            return Err(to_js(e));
        }
        let d = match &self.on {
            On::Gpu(_, d) => d.as_ref(),
            On::Cpu(_) => {
                return Err(to_js(Error::InvalidState(
                    "encode: expected a call bound on the webgpu backend, got one on the CPU \
                     backend (norm.backend is \"cpu\"): use run()"
                        .into(),
                )))
            }
        };
        if let Some(d) = d {
            if d.record_on_encoder(&encoder).map_err(to_js)? {
                return Ok(());
            }
        }
        // Not an encoder made by this runtime's device as such: the full check, with its
        // messages (a look-alike, or where the runtime has no `GPUCommandEncoder` global).
        let encoder = encoder_arg(&encoder).map_err(to_js)?;
        d.map_or(Ok(()), |d| d.record(encoder)).map_err(to_js)
    }

    /// Runs the call: resolves with `undefined` once it is submitted (on the CPU backend,
    /// computed), its results in place or in its `output` and `sum`. Rejects as `encode`
    /// throws; with `GPUBuffer` arguments, also with `InvalidStateError` for one that was
    /// destroyed, once the GPU has looked.
    #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
    pub fn run(&self) -> Promise {
        if let Err(e) = self.check("run") {
            return self.rejected(e);
        }
        let done = match &self.on {
            On::Gpu(_, None) => Ok(()),
            On::Gpu(_, Some(d)) if self.has_buffers => return Self::run_scoped(d),
            On::Gpu(_, Some(d)) => {
                return d.submit().unwrap_or_else(|e| Promise::reject(&to_js(e)))
            }
            On::Cpu(cpu) => cpu.submit_into_tensors(&self.x, &self.outputs),
        };
        match done {
            Ok(()) => Promise::resolve(&JsValue::UNDEFINED),
            Err(e) => Promise::reject(&to_js(e)),
        }
    }
}

/// Every array of the call by name, outputs included.
fn all<'a>(
    x: &'a Args,
    outputs: &'a Outputs<Arg<JsArray>>,
) -> impl Iterator<Item = (&'static str, &'a Arg<JsArray>)> {
    x.named().chain(outputs.named())
}

fn freed(name: &str) -> Error {
    Error::InvalidState(format!(
        "{name}: expected a live GpuTensor, got one that was freed"
    ))
}
