//! The JavaScript API: `FusedRmsNorm`.
//!
//! Every method that does GPU work returns a Promise and reports every failure as a
//! rejection with a named `Error`; nothing here panics on any input (a panic in wasm aborts
//! the whole instance). Each entry point is the same three steps: parse the JavaScript
//! values (`args.rs`, `options.rs`), hand the call to the backend (`backend.rs`: the
//! instance in `instance.rs`, the live device or a new one after a loss, or the CPU backend), and turn what comes back into JavaScript values. The returned
//! future owns what it needs (`Rc`s, not `&self`), so concurrent calls and `free()` during a
//! call are safe.

use std::cell::RefCell;
use std::rc::Rc;

use js_sys::{Object, Promise};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::future_to_promise;

use crate::backend::Engine;
use crate::call::error::Error;
use crate::call::plan::{Destination, Request};
use crate::call::results::Finished;
use crate::gpu::device::AdapterSummary;
use crate::gpu::GpuContext;
use crate::js::args::{parse_args, parse_encode, parse_timed, upload_arg};
use crate::js::array::Args;
use crate::js::options::{parse_kernels, parse_source, settings};
use crate::js::tensor::{live_tensors, tensor_value};
use crate::js::value::{expect_encoder, object, to_js};
use crate::support::clock::now_ms;

#[wasm_bindgen]
extern "C" {
    /// `FusedRmsNormOptions` as the `.d.ts` names it; checked field by field at runtime.
    #[wasm_bindgen(typescript_type = "FusedRmsNormOptions")]
    pub type CreateOptions;
}

/// Fused residual add + optional bias + RMSNorm on WebGPU.
///
/// `y = (input + residual + bias) * inverseSqrt(mean((input + residual + bias)²) + eps) * gamma + beta`,
/// row by row. Create with `await FusedRmsNorm.create()`; release with `free()`.
#[wasm_bindgen(skip_typescript)]
pub struct FusedRmsNorm {
    engine: Engine,
    handlers: Rc<Handlers>,
}

/// The app's device-loss handlers (`ondevicelost`, `ondevicerestored`).
struct Handlers {
    lost: RefCell<JsValue>,
    restored: RefCell<JsValue>,
}

impl Handlers {
    fn new() -> Handlers {
        Handlers {
            lost: RefCell::new(JsValue::NULL),
            restored: RefCell::new(JsValue::NULL),
        }
    }

    fn fire(which: &RefCell<JsValue>, event: &JsValue) {
        let f = which.borrow().clone();
        if let Some(f) = f.dyn_ref::<js_sys::Function>() {
            // A handler that throws is the app's business; it must not unwind into wasm.
            let _ = f.call1(&JsValue::UNDEFINED, event);
        }
    }

    /// Calls `ondevicelost` when the device of `ctx` is lost (WebGPU's `device.lost`).
    fn watch(self: &Rc<Self>, ctx: &GpuContext) {
        let Some(device) = ctx.device().as_webgpu() else {
            return;
        };
        let Ok(lost) = js_sys::Reflect::get(device.as_ref(), &"lost".into()) else {
            return;
        };
        let handlers = Rc::downgrade(self);
        let on_lost = Closure::once(move |info: JsValue| {
            if let Some(h) = handlers.upgrade() {
                let field =
                    |k: &str| js_sys::Reflect::get(&info, &k.into()).unwrap_or(JsValue::UNDEFINED);
                let event = object(&[("reason", field("reason")), ("message", field("message"))]);
                Handlers::fire(&h.lost, &event);
            }
        });
        let _ = lost.unchecked_into::<Promise>().then(&on_lost);
        on_lost.forget();
    }
}

#[wasm_bindgen]
impl FusedRmsNorm {
    /// Opens a WebGPU device. Rejects with `WebGpuUnavailableError` where the browser has no
    /// WebGPU or no adapter, `GpuDeviceError` where the device cannot be created, and
    /// `TypeError` for malformed options.
    pub async fn create(options: Option<CreateOptions>) -> Result<FusedRmsNorm, JsValue> {
        let (settings, choice) = settings(options.as_ref().map(|o| o.as_ref())).map_err(to_js)?;
        let engine = Engine::open(choice, settings).await.map_err(to_js)?;
        let handlers = Rc::new(Handlers::new());
        if let Some(instance) = engine.gpu() {
            handlers.watch(&instance.latest());
            let weak = Rc::downgrade(&handlers);
            instance.set_on_reopen(move |ctx| {
                if let Some(h) = weak.upgrade() {
                    h.watch(ctx);
                    Handlers::fire(&h.restored, &JsValue::UNDEFINED);
                }
            });
        }
        Ok(FusedRmsNorm { engine, handlers })
    }

    /// Uploads `data` to the GPU as a tensor this instance's calls accept in place of an
    /// array. Synchronous; throws `TypeError`, `ShapeError` (too large for one binding) or
    /// `GpuDeviceError`. After a device loss the tensor goes to the new device.
    #[wasm_bindgen(unchecked_return_type = "GpuTensor")]
    pub fn upload(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Float32Array | Uint16Array")] data: JsValue,
        #[wasm_bindgen(unchecked_param_type = "GpuTensorOptions")] options: Option<JsValue>,
    ) -> Result<JsValue, JsValue> {
        let a = upload_arg(&data, options.as_ref()).map_err(to_js)?;
        let tensor = self.engine.upload(&a).map_err(to_js)?;
        Ok(tensor_value(tensor, &self.engine))
    }

    /// Normalizes `args.input + args.residual (+ args.bias)` row by row. Resolves with a
    /// fresh `Float32Array` of `input.length`; rejects with `TypeError`, `ShapeError` or
    /// `GpuDeviceError` (on the CPU backend, `RangeError` where its wasm memory is full).
    #[wasm_bindgen(unchecked_return_type = "Promise<Float32Array>")]
    pub fn run(
        &self,
        #[wasm_bindgen(unchecked_param_type = "FusedRmsNormArgs")] args: JsValue,
    ) -> Promise {
        if let Some(done) = self.cpu_call(&args, false) {
            return done;
        }
        self.start(parse_args(&args, false), |done| Ok(results(done, false)))
    }

    /// As `run`, and also resolves with `sum = input + residual (+ bias)`, the residual
    /// stream the next layer takes.
    #[wasm_bindgen(js_name = runWithSum, unchecked_return_type = "Promise<FusedRmsNormWithSum>")]
    pub fn run_with_sum(
        &self,
        #[wasm_bindgen(unchecked_param_type = "FusedRmsNormArgs")] args: JsValue,
    ) -> Promise {
        if let Some(done) = self.cpu_call(&args, true) {
            return done;
        }
        self.start(parse_args(&args, true), |done| Ok(results(done, true)))
    }

    /// Runs `args` with the kernel dispatched `repeat` times (an integer from 1 to 10,000)
    /// in one submission and resolves with the wall time in milliseconds. The slope over
    /// `repeat` is the kernel's cost per operation on GPU-resident data: what
    /// `npm run bench` compares.
    #[wasm_bindgen(js_name = timeDispatches, unchecked_return_type = "Promise<number>")]
    pub fn time_dispatches(
        &self,
        #[wasm_bindgen(unchecked_param_type = "FusedRmsNormArgs")] args: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] repeat: JsValue,
    ) -> Promise {
        let start = now_ms();
        self.start(parse_timed(&args, &repeat, false), move |_| {
            Ok(JsValue::from_f64(now_ms() - start))
        })
    }

    /// Runs `args` with the kernel dispatched `repeat` times (1 to 10,000) in one compute
    /// pass and resolves with the pass's GPU time in milliseconds, from timestamp queries,
    /// or `undefined` where the adapter has no `timestamp-query`.
    #[wasm_bindgen(js_name = gpuTime, unchecked_return_type = "Promise<number | undefined>")]
    pub fn gpu_time(
        &self,
        #[wasm_bindgen(unchecked_param_type = "FusedRmsNormArgs")] args: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] repeat: JsValue,
    ) -> Promise {
        self.start(parse_timed(&args, &repeat, true), |done| {
            Ok(done
                .ns
                .map_or(JsValue::UNDEFINED, |ns| JsValue::from_f64(ns / 1e6)))
        })
    }

    /// Records the normalization of GPU data (`GPUBuffer`s of `norm.device` or `GpuTensor`s)
    /// into the app's `encoder` as one compute pass: no submission, no await. `args` as
    /// `run`'s, plus `output` and `sum` (buffers or tensors the results go to) or `inPlace`.
    /// Throws `TypeError`, `ShapeError`, `InvalidStateError` or `GpuDeviceError` for what can
    /// be known now; what WebGPU finds later reaches the app's own error scopes.
    pub fn encode(
        &self,
        #[wasm_bindgen(unchecked_param_type = "GPUCommandEncoder")] encoder: JsValue,
        #[wasm_bindgen(unchecked_param_type = "FusedRmsNormEncodeArgs")] args: JsValue,
    ) -> Result<(), JsValue> {
        let ctx = self.live_device("encode").map_err(to_js)?;
        let (x, outputs) = parse_encode(&args).map_err(to_js)?;
        // An argument's getter may call back into this instance; `encode` within `encode`
        // is refused rather than allowed to trip the borrow.
        let mut recorder = ctx.recorder().map_err(to_js)?;
        expect_encoder(&encoder).map_err(to_js)?;
        crate::gpu::encode::record(&mut recorder, &ctx, &encoder, &x, &outputs).map_err(to_js)
    }

    /// The WGSL this instance runs for `kernel` (as `prepare` takes it, plus `rows` for the
    /// grid), its bindings and uniform block: for engines that build their own pipelines.
    #[wasm_bindgen(js_name = kernelSource, unchecked_return_type = "FusedRmsNormKernelSource")]
    pub fn kernel_source(
        &self,
        #[wasm_bindgen(unchecked_param_type = "FusedRmsNormKernel & { rows?: number }")]
        kernel: JsValue,
    ) -> Result<JsValue, JsValue> {
        let (k, rows) = parse_source(&kernel).map_err(to_js)?;
        let Some(gpu) = self.engine.gpu() else {
            return Err(to_js(on_cpu("kernelSource")));
        };
        crate::gpu::encode::source(&gpu.latest(), &k, rows).map_err(to_js)
    }

    /// The adapter this instance runs on.
    #[wasm_bindgen(getter, js_name = adapterInfo, unchecked_return_type = "FusedRmsNormAdapterInfo")]
    pub fn adapter_info(&self) -> JsValue {
        let summary = match &self.engine {
            Engine::Gpu(g) => g.latest().adapter().clone(),
            Engine::Cpu(_) => AdapterSummary {
                architecture: "cpu".into(),
                device: "webgpu-rmsnorm CPU backend".into(),
                description: "WebAssembly (SIMD), one thread, no GPU".into(),
                is_fallback: true,
                ..Default::default()
            },
        };
        let info = object(&[
            ("vendor", JsValue::from_str(&summary.vendor)),
            ("architecture", JsValue::from_str(&summary.architecture)),
            ("device", JsValue::from_str(&summary.device)),
            ("description", JsValue::from_str(&summary.description)),
            ("isFallbackAdapter", JsValue::from_bool(summary.is_fallback)),
        ]);
        Object::freeze(info.unchecked_ref::<Object>()).into()
    }

    /// The `GPUDevice` this instance runs on (`undefined` on the CPU backend), for an app's own
    /// pipelines beside the package's: tensors' buffers live on it. After a device loss this
    /// is the new device (read it again in `ondevicerestored`). The app must not destroy it,
    /// nor change its `onuncapturederror` or the error scopes around the package's calls.
    #[wasm_bindgen(getter, unchecked_return_type = "WebGpuDevice | undefined")]
    pub fn device(&self) -> JsValue {
        self.engine
            .gpu()
            .and_then(|g| {
                g.latest()
                    .device()
                    .as_webgpu()
                    .map(|d| JsValue::from(d.clone()))
            })
            .unwrap_or(JsValue::UNDEFINED)
    }

    /// Which backend runs: `"webgpu"` or `"cpu"` (see `create`'s `backend`).
    #[wasm_bindgen(getter)]
    pub fn backend(&self) -> String {
        self.engine.name().into()
    }

    /// Counters for leak checks in long-running apps and tests.
    #[wasm_bindgen(js_name = debugStats, unchecked_return_type = "FusedRmsNormDebugStats")]
    pub fn debug_stats(&self) -> JsValue {
        let gpu = self.engine.gpu().map(|g| g.latest());
        let stats = gpu.as_ref().map(|c| c.buffer_stats());
        let memory = wasm_bindgen::memory()
            .dyn_into::<js_sys::WebAssembly::Memory>()
            .ok()
            .and_then(|m| m.buffer().dyn_into::<js_sys::ArrayBuffer>().ok())
            .map_or(0, |b| b.byte_length());
        let (tensors, tensor_bytes) = live_tensors();
        object(&[
            ("liveBuffers", (stats.map_or(0, |s| s.live) as f64).into()),
            ("idleBuffers", (stats.map_or(0, |s| s.idle) as f64).into()),
            (
                "idleBytes",
                (stats.map_or(0, |s| s.idle_bytes) as f64).into(),
            ),
            ("liveTensors", (tensors as f64).into()),
            ("liveTensorBytes", (tensor_bytes as f64).into()),
            ("wasmMemoryBytes", (memory as f64).into()),
            (
                "shaderF16",
                gpu.as_ref().is_some_and(|c| c.uses_shader_f16()).into(),
            ),
            (
                "devicesOpened",
                self.engine.gpu().map_or(0, |g| g.devices_opened()).into(),
            ),
            (
                "pipelines",
                (gpu.as_ref().map_or(0, |c| c.pipeline_count()) as f64).into(),
            ),
        ])
    }

    /// Compiles the kernels an app will use ahead of its first calls (the first call with
    /// each combination of options otherwise waits for the shader compiler: ~100–175 ms on a
    /// CPU adapter). `kernels`: `{ hidden, bias?, beta?, sum?, dtype?, inPlace? }` or an
    /// array of them; `sum` for `runWithSum`.
    #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
    pub fn prepare(
        &self,
        #[wasm_bindgen(
            unchecked_param_type = "FusedRmsNormKernel | readonly FusedRmsNormKernel[]"
        )]
        kernels: JsValue,
    ) -> Promise {
        let kernels = match parse_kernels(&kernels) {
            Ok(k) => k,
            Err(e) => return Promise::reject(&to_js(e)),
        };
        let prepared = self.engine.prepare(kernels);
        future_to_promise(async move {
            prepared.await.map_err(to_js)?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// Called with `{ reason, message }` when the device is lost (a GPU reset, or
    /// `simulateDeviceLoss()`); the next call opens a new one. `GpuTensor`s of the lost device
    /// hold nothing: upload resident data (weights) again in `ondevicerestored`.
    #[wasm_bindgen(
        getter,
        unchecked_return_type = "((event: { reason: string; message: string }) => void) | null"
    )]
    pub fn ondevicelost(&self) -> JsValue {
        self.handlers.lost.borrow().clone()
    }

    #[wasm_bindgen(setter)]
    pub fn set_ondevicelost(
        &self,
        #[wasm_bindgen(
            unchecked_param_type = "((event: { reason: string; message: string }) => void) | null"
        )]
        f: JsValue,
    ) {
        *self.handlers.lost.borrow_mut() = if f.is_function() { f } else { JsValue::NULL };
    }

    /// Called when a new device has been opened after a loss, before the call that needed
    /// it runs.
    #[wasm_bindgen(getter, unchecked_return_type = "(() => void) | null")]
    pub fn ondevicerestored(&self) -> JsValue {
        self.handlers.restored.borrow().clone()
    }

    #[wasm_bindgen(setter)]
    pub fn set_ondevicerestored(
        &self,
        #[wasm_bindgen(unchecked_param_type = "(() => void) | null")] f: JsValue,
    ) {
        *self.handlers.restored.borrow_mut() = if f.is_function() { f } else { JsValue::NULL };
    }

    /// Releases the GPU buffers pooled for reuse now (they are also released after
    /// 5 seconds idle). Calls after it create new ones.
    pub fn trim(&self) {
        if let Some(g) = self.engine.gpu() {
            g.latest().trim();
        }
    }

    /// Destroys the GPU device, as a driver reset would. Calls in flight reject with
    /// `GpuDeviceError`; the next call of any kind opens a new device. For testing recovery.
    #[wasm_bindgen(js_name = simulateDeviceLoss)]
    pub fn simulate_device_loss(&self) {
        if let Some(g) = self.engine.gpu() {
            g.simulate_device_loss();
        }
    }
}

impl FusedRmsNorm {
    /// The CPU backend's common call of typed arrays, in a few crossings (`cpu_call.rs`);
    /// `None` for any other call or backend, and for every call a check refuses.
    fn cpu_call(&self, args: &JsValue, sum: bool) -> Option<Promise> {
        match &self.engine {
            Engine::Cpu(cpu) => crate::js::cpu_call::run(cpu, args, sum),
            Engine::Gpu(_) => None,
        }
    }

    /// The live device, for the synchronous GPU entry points. After a loss a new device is
    /// opened in the background (as the next asynchronous call would), and this says so.
    fn live_device(&self, what: &str) -> Result<Rc<GpuContext>, Error> {
        let Some(instance) = self.engine.gpu() else {
            return Err(on_cpu(what));
        };
        if let Some(ctx) = instance.live() {
            return Ok(ctx);
        }
        let reopen = instance.clone();
        wasm_bindgen_futures::spawn_local(async move {
            let _ = reopen.context().await;
        });
        Err(Error::GpuDevice(format!(
            "{what}: the device was lost ({}); a new one is being opened: read norm.device \
             again once ondevicerestored is called",
            instance.latest().lost_reason().unwrap_or_default()
        )))
    }

    /// The one path of every GPU call: the parsed call goes to the instance, which runs it
    /// on the live device (or a new one after a loss); `finish` turns the results into
    /// JavaScript values.
    fn start(
        &self,
        parsed: Result<(Args, Request), Error>,
        finish: impl FnOnce(Finished) -> Result<JsValue, Error> + 'static,
    ) -> Promise {
        let (x, request) = match parsed {
            Ok(p) => p,
            Err(e) => return Promise::reject(&to_js(e)),
        };
        let call = self.engine.call(&x, request);
        let engine = self.engine.clone();
        settle(async move {
            let mut done = call.await.map_err(to_js)?;
            if let Some(out) = done.gpu.take() {
                let y = tensor_value(out.y, &engine);
                return Ok(match out.sum {
                    Some(sum) if request.sum && request.to == Destination::Gpu => {
                        object(&[("output", y), ("sum", tensor_value(sum, &engine))])
                    }
                    _ => y,
                });
            }
            if request.to == Destination::InPlace {
                return Ok(JsValue::UNDEFINED);
            }
            finish(done).map_err(to_js)
        })
    }
}

/// A Promise of `call`. A call with nothing to wait for (in place, or results left on the
/// GPU, with every GPU object cached: an inference app's decode step) is complete at its
/// first poll: it then gets an already-settled Promise, without the task, closures and
/// microtask hops of `future_to_promise`, which were a measurable part of such a call.
fn settle(call: impl std::future::Future<Output = Result<JsValue, JsValue>> + 'static) -> Promise {
    let mut call = Box::pin(call);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match call.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(Ok(v)) => Promise::resolve(&v),
        std::task::Poll::Ready(Err(e)) => Promise::reject(&e),
        // Polled again by the executor, with a waker that works: every future re-registers
        // its waker on each poll.
        std::task::Poll::Pending => future_to_promise(call),
    }
}

/// Results read back: `y`, or `{ output, sum }` for `runWithSum`.
fn results(done: Finished, want_sum: bool) -> JsValue {
    let Some(out) = done.host else {
        return JsValue::UNDEFINED;
    };
    match (want_sum, out.sum) {
        (true, Some(sum)) => object(&[("output", out.y.into()), ("sum", sum.into())]),
        _ => out.y.into(),
    }
}

fn on_cpu(what: &str) -> Error {
    Error::InvalidState(format!(
        "{what}: expected an instance on the webgpu backend, got one on the CPU backend \
         (norm.backend is \"cpu\")"
    ))
}
