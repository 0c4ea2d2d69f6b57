//! The JavaScript API: `FusedRmsNorm`, its arguments and its errors.
//!
//! Every method returns a Promise and reports every failure as a rejection with a named
//! `Error`; nothing here panics on any input (a panic in wasm aborts the whole instance).
//! Arguments are checked and uploaded before `run` returns, so the caller may reuse its
//! arrays at once, and the returned future owns what it needs (`Rc`s, not `&self`), so
//! concurrent calls and `free()` during a call are safe.

use std::cell::RefCell;
use std::rc::Rc;

use js_sys::{Array, Float32Array, Object, Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::future_to_promise;

use crate::error::Error;
use crate::gpu::{GpuContext, Output};
use crate::shape::Inputs;

#[wasm_bindgen(typescript_custom_section)]
const TYPES: &'static str = r#"
/** Arguments of `run` and `runWithSum`. Lengths: `input` and `residual` rows × hidden, the rest hidden. */
export interface FusedRmsNormArgs {
  /** rows × hidden, row-major. */
  input: Float32Array;
  /** rows × hidden, added to `input` before normalizing. */
  residual: Float32Array;
  /** hidden; the scale applied after normalizing. */
  gamma: Float32Array;
  /** hidden; the shift applied last. Omitted: zeros. */
  beta?: Float32Array;
  /** hidden; added to every row before normalizing. Omitted: none. */
  bias?: Float32Array;
  /** Row length: an integer ≥ 1. */
  hidden: number;
  /** Added to the mean square: finite and ≥ 0. Default 1e-6. */
  eps?: number;
}

/** Options of `FusedRmsNorm.create`. */
export interface FusedRmsNormOptions {
  powerPreference?: "low-power" | "high-performance";
}

/** The WebGPU adapter the instance runs on (WebGPU's `GPUAdapterInfo`). */
export interface FusedRmsNormAdapterInfo {
  readonly vendor: string;
  readonly architecture: string;
  readonly device: string;
  readonly description: string;
  readonly isFallbackAdapter: boolean;
}

/** Counters from `debugStats()`. */
export interface FusedRmsNormDebugStats {
  /** GPU buffers alive: in use by calls in flight, or pooled for reuse. */
  readonly liveBuffers: number;
  /** GPU buffers pooled for reuse. */
  readonly idleBuffers: number;
  /** Size of the WebAssembly memory in bytes. */
  readonly wasmMemoryBytes: number;
}

/** Result of `runWithSum`: the normalized output and `input + residual (+ bias)`. */
export interface FusedRmsNormWithSum {
  output: Float32Array;
  sum: Float32Array;
}
"#;

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
#[wasm_bindgen]
pub struct FusedRmsNorm {
    /// Replaced by a fresh context when the device is lost.
    ctx: Rc<RefCell<Rc<GpuContext>>>,
    power: wgpu::PowerPreference,
}

#[wasm_bindgen]
impl FusedRmsNorm {
    /// Opens a WebGPU device. Rejects with `WebGpuUnavailableError` where the browser has no
    /// WebGPU or no adapter, `GpuDeviceError` where the device cannot be created, and
    /// `TypeError` for malformed options.
    pub async fn create(options: Option<CreateOptions>) -> Result<FusedRmsNorm, JsValue> {
        let power = power_preference(options.as_ref().map(|o| o.as_ref())).map_err(to_js)?;
        let ctx = GpuContext::new(power).await.map_err(to_js)?;
        Ok(FusedRmsNorm { ctx: Rc::new(RefCell::new(Rc::new(ctx))), power })
    }

    /// Normalizes `args.input + args.residual (+ args.bias)` row by row. Resolves with a
    /// fresh `Float32Array` of `input.length`; rejects with `TypeError`, `ShapeError` or
    /// `GpuDeviceError`.
    #[wasm_bindgen(unchecked_return_type = "Promise<Float32Array>")]
    pub fn run(&self, #[wasm_bindgen(unchecked_param_type = "FusedRmsNormArgs")] args: JsValue) -> Promise {
        self.start(&args, false)
    }

    /// As `run`, and also resolves with `sum = input + residual (+ bias)`, the residual
    /// stream the next layer takes.
    #[wasm_bindgen(js_name = runWithSum, unchecked_return_type = "Promise<FusedRmsNormWithSum>")]
    pub fn run_with_sum(&self, #[wasm_bindgen(unchecked_param_type = "FusedRmsNormArgs")] args: JsValue) -> Promise {
        self.start(&args, true)
    }

    /// The adapter this instance runs on.
    #[wasm_bindgen(getter, js_name = adapterInfo, unchecked_return_type = "FusedRmsNormAdapterInfo")]
    pub fn adapter_info(&self) -> JsValue {
        let ctx = self.ctx.borrow();
        let a = ctx.adapter();
        let info = Object::new();
        for (key, value) in [
            ("vendor", JsValue::from_str(&a.vendor)),
            ("architecture", JsValue::from_str(&a.architecture)),
            ("device", JsValue::from_str(&a.device)),
            ("description", JsValue::from_str(&a.description)),
            ("isFallbackAdapter", JsValue::from_bool(a.is_fallback)),
        ] {
            let _ = Reflect::set(&info, &JsValue::from_str(key), &value);
        }
        Object::freeze(&info).into()
    }

    /// Runs `args` with the kernel dispatched `repeat` times in one submission and resolves
    /// with the wall time in milliseconds. The slope over `repeat` is the kernel's cost per
    /// operation on GPU-resident data: what `npm run bench` compares.
    #[wasm_bindgen(js_name = timeDispatches, unchecked_return_type = "Promise<number>")]
    pub fn time_dispatches(
        &self,
        #[wasm_bindgen(unchecked_param_type = "FusedRmsNormArgs")] args: JsValue,
        repeat: u32,
    ) -> Promise {
        let x = match parse_args(&args) {
            Ok(x) => x,
            Err(e) => return Promise::reject(&to_js(e)),
        };
        let start = now();
        match self.ctx.borrow().submit_repeated(&x, false, repeat) {
            Ok(pending) => future_to_promise(async move {
                pending.read().await.map_err(to_js)?;
                Ok(JsValue::from_f64(now() - start))
            }),
            Err(e) => Promise::reject(&to_js(e)),
        }
    }

    /// Counters for leak checks in long-running apps and tests: GPU buffers alive (in use or
    /// pooled for reuse), those idle in the pool, and the wasm memory's size in bytes.
    #[wasm_bindgen(js_name = debugStats, unchecked_return_type = "FusedRmsNormDebugStats")]
    pub fn debug_stats(&self) -> JsValue {
        let stats = self.ctx.borrow().buffer_stats();
        let memory = wasm_bindgen::memory()
            .dyn_into::<js_sys::WebAssembly::Memory>()
            .map(|m| m.buffer().dyn_into::<js_sys::ArrayBuffer>().map(|b| b.byte_length()).unwrap_or(0))
            .unwrap_or(0);
        let o = Object::new();
        let _ = Reflect::set(&o, &"liveBuffers".into(), &(stats.live as f64).into());
        let _ = Reflect::set(&o, &"idleBuffers".into(), &(stats.idle as f64).into());
        let _ = Reflect::set(&o, &"wasmMemoryBytes".into(), &(memory as f64).into());
        o.into()
    }

    /// Destroys the GPU device, as a driver reset would. Calls in flight reject with
    /// `GpuDeviceError`; the next call opens a new device. For testing recovery.
    #[wasm_bindgen(js_name = simulateDeviceLoss)]
    pub fn simulate_device_loss(&self) {
        self.ctx.borrow().destroy_device();
    }
}

impl FusedRmsNorm {
    fn start(&self, args: &JsValue, want_sum: bool) -> Promise {
        let x = match parse_args(args) {
            Ok(x) => x,
            Err(e) => return Promise::reject(&to_js(e)),
        };
        let ctx = self.ctx.borrow().clone();
        if ctx.lost_reason().is_none() {
            return match ctx.submit(&x, want_sum) {
                Ok(pending) => future_to_promise(async move { pending.read().await.map(|o| result(o, want_sum)).map_err(to_js) }),
                Err(e) => Promise::reject(&to_js(e)),
            };
        }
        // The device is gone: a new one takes a while to open, so keep private copies of the
        // arrays (the caller may change its own once this returns).
        let x = Inputs {
            input: x.input.slice(0, x.input.length()),
            residual: x.residual.slice(0, x.residual.length()),
            gamma: x.gamma.slice(0, x.gamma.length()),
            beta: x.beta.map(|a| a.slice(0, a.length())),
            bias: x.bias.map(|a| a.slice(0, a.length())),
            ..x
        };
        let (slot, power) = (self.ctx.clone(), self.power);
        future_to_promise(async move {
            let fresh = Rc::new(GpuContext::new(power).await.map_err(to_js)?);
            *slot.borrow_mut() = fresh.clone();
            let out = fresh.run(&x, want_sum).await.map_err(to_js)?;
            Ok(result(out, want_sum))
        })
    }
}

/// `performance.now()`, in windows and workers alike.
fn now() -> f64 {
    let perf = Reflect::get(&js_sys::global(), &JsValue::from_str("performance")).unwrap_or(JsValue::UNDEFINED);
    Reflect::get(&perf, &JsValue::from_str("now"))
        .ok()
        .and_then(|f| f.dyn_into::<js_sys::Function>().ok())
        .and_then(|f| f.call0(&perf).ok())
        .and_then(|t| t.as_f64())
        .unwrap_or(0.0)
}

fn result(out: Output, want_sum: bool) -> JsValue {
    match (want_sum, out.sum) {
        (true, Some(sum)) => {
            let o = Object::new();
            let _ = Reflect::set(&o, &JsValue::from_str("output"), &out.y);
            let _ = Reflect::set(&o, &JsValue::from_str("sum"), &sum);
            o.into()
        }
        _ => out.y.into(),
    }
}

fn to_js(e: Error) -> JsValue {
    // A wrong-typed argument is JavaScript's own TypeError, so `instanceof TypeError` holds.
    if let Error::Type(message) = &e {
        return js_sys::TypeError::new(message).into();
    }
    let err = js_sys::Error::new(e.message());
    err.set_name(e.name());
    err.into()
}

/// How a value looks to a reader of an error message.
fn describe(v: &JsValue) -> String {
    if v.is_undefined() {
        return "undefined".into();
    }
    if v.is_null() {
        return "null".into();
    }
    if let Some(s) = v.as_string() {
        let short: String = s.chars().take(40).collect();
        return format!("the string {short:?}");
    }
    if let Some(n) = v.as_f64() {
        return format!("the number {n}");
    }
    if let Some(b) = v.as_bool() {
        return format!("the boolean {b}");
    }
    if Array::is_array(v) {
        return "an Array".into();
    }
    if v.is_bigint() {
        return "a bigint".into();
    }
    if v.is_function() {
        return "a function".into();
    }
    if let Some(o) = v.dyn_ref::<Object>() {
        let name = o.constructor().name().as_string().unwrap_or_default();
        if !name.is_empty() {
            let article = if name.starts_with(['A', 'E', 'I', 'O', 'U']) { "an" } else { "a" };
            return format!("{article} {name}");
        }
    }
    "an object".into()
}

fn get(obj: &JsValue, key: &str) -> JsValue {
    Reflect::get(obj, &JsValue::from_str(key)).unwrap_or(JsValue::UNDEFINED)
}

fn float32(args: &JsValue, name: &str, required: bool) -> Result<Option<Float32Array>, Error> {
    let v = get(args, name);
    if v.is_undefined() && !required {
        return Ok(None);
    }
    let Some(a) = v.dyn_ref::<Float32Array>() else {
        let expected = if required { "a Float32Array" } else { "a Float32Array or undefined" };
        return Err(Error::Type(format!("{name}: expected {expected}, got {}", describe(&v))));
    };
    // A transferred (detached) buffer reads as length 0; say so instead of a length error.
    if get(&a.buffer(), "detached").as_bool() == Some(true) {
        return Err(Error::Type(format!(
            "{name}: expected a Float32Array over a live buffer, got one whose ArrayBuffer was transferred (detached)"
        )));
    }
    Ok(Some(a.clone()))
}

fn parse_args(args: &JsValue) -> Result<Inputs<Float32Array>, Error> {
    if !args.is_object() || args.is_function() || Array::is_array(args) {
        return Err(Error::Type(format!(
            "args: expected an object {{ input, residual, gamma, hidden, beta?, bias?, eps? }}, got {}",
            describe(args)
        )));
    }
    let required = |name| float32(args, name, true).map(|a| a.expect("required arrays are Some"));
    let input = required("input")?;
    let residual = required("residual")?;
    let gamma = required("gamma")?;
    let beta = float32(args, "beta", false)?;
    let bias = float32(args, "bias", false)?;

    let h = get(args, "hidden");
    let Some(hidden) = h.as_f64() else {
        return Err(Error::Type(format!("hidden: expected a number (an integer >= 1), got {}", describe(&h))));
    };
    if !(hidden.fract() == 0.0 && hidden >= 1.0 && hidden <= u32::MAX as f64) {
        return Err(Error::Shape(format!("hidden: expected an integer from 1 to {}, got {hidden}", u32::MAX)));
    }
    let e = get(args, "eps");
    let eps = if e.is_undefined() {
        1e-6
    } else {
        let Some(eps) = e.as_f64() else {
            return Err(Error::Type(format!("eps: expected a number or undefined, got {}", describe(&e))));
        };
        if !(eps.is_finite() && eps >= 0.0 && eps <= f32::MAX as f64) {
            return Err(Error::Shape(format!("eps: expected a finite number >= 0, got {eps}")));
        }
        eps as f32
    };
    Ok(Inputs { input, residual, gamma, beta, bias, hidden: hidden as usize, eps })
}

fn power_preference(options: Option<&JsValue>) -> Result<wgpu::PowerPreference, Error> {
    let Some(o) = options.filter(|o| !o.is_undefined()) else {
        return Ok(wgpu::PowerPreference::default());
    };
    if !o.is_object() {
        return Err(Error::Type(format!(
            "options: expected an object {{ powerPreference? }} or undefined, got {}",
            describe(o)
        )));
    }
    let p = get(o, "powerPreference");
    match p.as_string().as_deref() {
        _ if p.is_undefined() => Ok(wgpu::PowerPreference::default()),
        Some("low-power") => Ok(wgpu::PowerPreference::LowPower),
        Some("high-performance") => Ok(wgpu::PowerPreference::HighPerformance),
        _ => Err(Error::Type(format!(
            "options.powerPreference: expected \"low-power\" or \"high-performance\", got {}",
            describe(&p)
        ))),
    }
}
