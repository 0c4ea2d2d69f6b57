//! `FusedRmsNorm`'s calls: `upload`, `run`, `runWithSum`, the timing calls, `encode`,
//! `kernelSource` and `prepare`, and the one path of every GPU call (`start`).

use std::rc::Rc;

use js_sys::Promise;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

use crate::backend::Active;
use crate::call::error::Error;
use crate::call::plan::{Destination, Request};
use crate::call::results::{Finished, Given};
use crate::gpu::GpuContext;
use crate::js::args::{encoder_arg, parse_call, parse_encode, parse_timed, upload_arg};
use crate::js::array::Args;
use crate::js::call_cache;
use crate::js::call_record::Call;
use crate::js::caller_arrays::CallerArrays;
use crate::js::options::{parse_kernels, parse_source};
use crate::js::tensor::tensor_value;
use crate::js::value::{results_value, to_js};
use crate::support::clock::now_ms;

use super::FusedRmsNorm;

#[wasm_bindgen]
impl FusedRmsNorm {
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

    /// Normalizes row by row: `v = residual + (postGamma ? N(input + bias)·(postGamma +
    /// gammaOffset) : input + bias)`, `y = N(v)·(gamma + gammaOffset) + beta`, `N` RMSNorm or
    /// LayerNorm as `kind` says. Resolves with `y`: a fresh typed array of `input.length` in
    /// `outputDtype` (a `Float32Array` for f32, a `Uint16Array` of half bits for f16), a new
    /// `GpuTensor` with `output: "gpu"`, nothing in place. Rejects with `TypeError`,
    /// `ShapeError` or `GpuDeviceError` (on the CPU backend, `RangeError` where its wasm
    /// memory is full).
    #[wasm_bindgen(unchecked_return_type = "Promise<Float32Array>")]
    pub fn run(
        &self,
        #[wasm_bindgen(unchecked_param_type = "FusedRmsNormArgs")] args: JsValue,
    ) -> Promise {
        self.normalize(&args, false)
    }

    /// As `run`, and also resolves with `sum = v` (in the data's dtype), the residual stream
    /// the next layer takes.
    #[wasm_bindgen(js_name = runWithSum, unchecked_return_type = "Promise<FusedRmsNormWithSum>")]
    pub fn run_with_sum(
        &self,
        #[wasm_bindgen(unchecked_param_type = "FusedRmsNormArgs")] args: JsValue,
    ) -> Promise {
        self.normalize(&args, true)
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
        self.start(parse_timed(&Call::read(&args), &repeat, false), move |_| {
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
        self.start(parse_timed(&Call::read(&args), &repeat, true), |done| {
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
        let call = Call::read(&args);
        if let Some(done) = call_cache::encode(&self.engine, &encoder, &call) {
            return done;
        }
        let ctx = self.live_device("encode").map_err(to_js)?;
        let (x, outputs) = parse_encode(&call).map_err(to_js)?;
        // An argument's getter may call back into this instance; `encode` within `encode`
        // is refused rather than allowed to trip the borrow.
        let mut recorder = ctx.browser_pipelines().map_err(to_js)?;
        let encoder = encoder_arg(&encoder).map_err(to_js)?;
        crate::gpu::encode::record(&mut recorder, &ctx, encoder, &x, &outputs).map_err(to_js)
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

    /// Compiles the kernels an app will use ahead of its first calls (the first call with
    /// each combination of options otherwise waits for the shader compiler, which on a CPU
    /// adapter takes a visible pause). `kernels`: a kernel description (`keys.rs`'s
    /// `KERNEL_KEYS`) or an array of them; `sum` for `runWithSum`.
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
}

impl FusedRmsNorm {
    /// `run`, or `runWithSum` where `sum`: `args` read once, then the kept dispatch of a call
    /// of tensors in place, the CPU backend's common call, or the call decoded in full and
    /// started on the active backend.
    fn normalize(&self, args: &JsValue, sum: bool) -> Promise {
        let call = Call::read(args);
        let missed = match self.engine.active() {
            Active::Gpu(_) => match call_cache::run(&self.engine, &call) {
                Ok(done) => return done,
                Err(missed) => missed,
            },
            Active::Cpu(cpu) => match crate::js::cpu_call::run(&cpu, &call, sum) {
                Some(done) => return done,
                None => None,
            },
        };
        let (parsed, arrays) = match parse_call(&call, sum) {
            Ok((x, request, arrays)) => (Ok((x, request)), arrays),
            Err(e) => (Err(e), CallerArrays::default()),
        };
        let given = arrays.given();
        let done = self.start_into(parsed, given, move |done| Ok(results(done, sum, &arrays)));
        if let Some(m) = missed {
            m.keep(&call);
        }
        done
    }

    /// The live device, for the synchronous GPU entry points. After a loss a new device is
    /// opened in the background (as the next asynchronous call would), and this says so.
    pub(super) fn live_device(&self, what: &str) -> Result<Rc<GpuContext>, Error> {
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
        self.start_into(parsed, Given::default(), finish)
    }

    /// [`start`](Self::start), host results written into the caller's arrays where `given`
    /// holds them.
    fn start_into(
        &self,
        parsed: Result<(Args, Request), Error>,
        given: Given,
        finish: impl FnOnce(Finished) -> Result<JsValue, Error> + 'static,
    ) -> Promise {
        let (x, request) = match parsed {
            Ok(p) => p,
            Err(e) => return Promise::reject(&to_js(e)),
        };
        let call = self.engine.call_into(&x, request, given);
        let engine = self.engine.clone();
        settle(async move {
            let mut done = call.await.map_err(to_js)?;
            if let Some(out) = done.gpu.take() {
                let tensor = |t| tensor_value(t, &engine);
                let sum = out
                    .sum
                    .filter(|_| request.sum && request.to == Destination::Gpu);
                return Ok(results_value(out.y.map(tensor), sum.map(tensor)));
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

/// Results read back: `y`, or `{ output, sum }` for `runWithSum`, the caller's own arrays
/// where it gave them.
fn results(done: Finished, want_sum: bool, arrays: &CallerArrays) -> JsValue {
    match done.host {
        Some(out) => arrays.resolve(out, want_sum),
        None => JsValue::UNDEFINED,
    }
}

fn on_cpu(what: &str) -> Error {
    Error::InvalidState(format!(
        "{what}: expected an instance on the webgpu backend, got one on the CPU backend \
         (norm.backend is \"cpu\")"
    ))
}
