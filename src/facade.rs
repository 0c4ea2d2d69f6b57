//! The JavaScript API: `FusedRmsNorm`, its arguments and its errors.
//!
//! Every method returns a Promise and reports every failure as a rejection with a named
//! `Error`; nothing here panics on any input (a panic in wasm aborts the whole instance).
//! Arguments are checked and uploaded before `run` returns, so the caller may reuse its
//! arrays at once, and the returned future owns what it needs (`Rc`s, not `&self`), so
//! concurrent calls and `free()` during a call are safe.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use js_sys::{Object, Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::future_to_promise;

use crate::error::Error;
use crate::gpu::{GpuContext, GpuOutput, Output};
use crate::host::{Arg, JsArray};
use crate::shape::Inputs;
use crate::tensor::{Dtype, Tensor};

/// One call's arguments as the driver takes them.
type Args = Inputs<Arg<JsArray>>;

#[wasm_bindgen(typescript_custom_section)]
const TYPES: &'static str = r#"
/** Arguments of `run` and `runWithSum`. Lengths: `input` and `residual` rows × hidden, the rest hidden. */
export interface FusedRmsNormArgs {
  /** rows × hidden, row-major. */
  input: Float32Array | GpuTensor;
  /** rows × hidden, added to `input` before normalizing. */
  residual: Float32Array | GpuTensor;
  /** hidden; the scale applied after normalizing. */
  gamma: Float32Array | GpuTensor;
  /** hidden; the shift applied last. Omitted: zeros. */
  beta?: Float32Array | GpuTensor;
  /** hidden; added to every row before normalizing. Omitted: none. */
  bias?: Float32Array | GpuTensor;
  /** Row length: an integer ≥ 1. */
  hidden: number;
  /** Added to the mean square: finite and ≥ 0. Default 1e-6. */
  eps?: number;
  /** Where results go: `"array"` (default) resolves with `Float32Array`s. */
  output?: "array";
  /** See `FusedRmsNormInPlaceArgs`. */
  inPlace?: false;
}

/**
 * f16 data: half-precision bits in `Uint16Array`s (a `Float16Array` is accepted too where the
 * browser has one) or f16 `GpuTensor`s; results are `Uint16Array`s of f16 bits. Math is f32.
 * `hidden` must be a multiple of 4.
 */
export type FusedRmsNormF16Args = Omit<FusedRmsNormArgs, "input" | "residual" | "gamma" | "beta" | "bias"> & {
  input: Uint16Array;
  residual: Uint16Array | GpuTensor;
  gamma: Uint16Array | GpuTensor;
  beta?: Uint16Array | GpuTensor;
  bias?: Uint16Array | GpuTensor;
};

/**
 * In place on GPU tensors: `residual` receives `input + residual (+ bias)` and `input` the
 * normalized output; nothing new is allocated. Resolves when the GPU has the work.
 */
export type FusedRmsNormInPlaceArgs = Omit<FusedRmsNormArgs, "input" | "residual" | "output" | "inPlace"> & {
  input: GpuTensor;
  residual: GpuTensor;
  inPlace: true;
};

/** `FusedRmsNormArgs` whose results stay on the GPU as `GpuTensor`s (no readback). */
export type FusedRmsNormGpuArgs = Omit<FusedRmsNormArgs, "output"> & { output: "gpu" };

/** Result of `runWithSum` with `output: "gpu"`. */
export interface FusedRmsNormGpuWithSum {
  output: GpuTensor;
  sum: GpuTensor;
}

// Overloads of the class's methods (declaration merging) for GPU-resident results, in-place
// updates and f16 arrays.
export interface FusedRmsNorm {
  run(args: FusedRmsNormGpuArgs): Promise<GpuTensor>;
  run(args: FusedRmsNormInPlaceArgs): Promise<void>;
  run(args: FusedRmsNormF16Args): Promise<Uint16Array>;
  runWithSum(args: FusedRmsNormGpuArgs): Promise<FusedRmsNormGpuWithSum>;
  runWithSum(args: FusedRmsNormInPlaceArgs): Promise<void>;
  runWithSum(args: FusedRmsNormF16Args): Promise<{ output: Uint16Array; sum: Uint16Array }>;
}

/** Options of `FusedRmsNorm.upload`: `dtype` must match the array (f16: Uint16Array/Float16Array). */
export interface GpuTensorOptions {
  dtype?: "f32" | "f16";
}

/** Options of `FusedRmsNorm.create`. */
export interface FusedRmsNormOptions {
  powerPreference?: "low-power" | "high-performance";
  /** f16 data through WGSL `shader-f16` where the adapter has it (default true); false packs halves in u32s. */
  shaderF16?: boolean;
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
  /** Whether f16 data goes through WGSL `shader-f16` (else halves packed in u32s). */
  readonly shaderF16: boolean;
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
    settings: Settings,
}

/// What `create` was asked for, kept to open an equal device after a loss.
#[derive(Clone, Copy)]
struct Settings {
    power: wgpu::PowerPreference,
    shader_f16: bool,
}

impl Settings {
    async fn open(self) -> Result<GpuContext, Error> {
        let mut ctx = GpuContext::new(self.power).await?;
        ctx.set_shader_f16(self.shader_f16);
        Ok(ctx)
    }
}

/// Where a call's results go.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Array,
    Gpu,
    InPlace,
}

#[wasm_bindgen]
impl FusedRmsNorm {
    /// Opens a WebGPU device. Rejects with `WebGpuUnavailableError` where the browser has no
    /// WebGPU or no adapter, `GpuDeviceError` where the device cannot be created, and
    /// `TypeError` for malformed options.
    pub async fn create(options: Option<CreateOptions>) -> Result<FusedRmsNorm, JsValue> {
        let settings = settings(options.as_ref().map(|o| o.as_ref())).map_err(to_js)?;
        let ctx = settings.open().await.map_err(to_js)?;
        Ok(FusedRmsNorm {
            ctx: Rc::new(RefCell::new(Rc::new(ctx))),
            settings,
        })
    }

    /// Uploads `data` to the GPU as a tensor this instance's calls accept in place of an
    /// array. Synchronous; throws `TypeError`, `ShapeError` (too large for one binding) or
    /// `GpuDeviceError`.
    #[wasm_bindgen(unchecked_return_type = "GpuTensor")]
    pub fn upload(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Float32Array | Uint16Array")] data: JsValue,
        #[wasm_bindgen(unchecked_param_type = "GpuTensorOptions")] options: Option<JsValue>,
    ) -> Result<JsValue, JsValue> {
        let holder = Object::new();
        let _ = Reflect::set(&holder, &"data".into(), &data);
        let arg = array_arg(&holder, "data", true).map_err(to_js)?;
        let Some(Arg::Host(a)) = arg else {
            return Err(to_js(Error::Type(format!(
                "data: expected a typed array, got {}",
                describe(&data)
            ))));
        };
        let dtype = get(options.as_ref().unwrap_or(&JsValue::UNDEFINED), "dtype");
        let wanted = match dtype.as_string().as_deref() {
            _ if dtype.is_undefined() => a.dtype,
            Some("f32") => Dtype::F32,
            Some("f16") => Dtype::F16,
            _ => {
                return Err(to_js(Error::Type(format!(
                    "options.dtype: expected \"f32\" or \"f16\", got {}",
                    describe(&dtype)
                ))))
            }
        };
        if wanted != a.dtype {
            return Err(to_js(Error::Type(format!(
                "data: expected {} for dtype \"{}\", got {}",
                if wanted == Dtype::F32 {
                    "a Float32Array"
                } else {
                    "a Uint16Array or Float16Array"
                },
                wanted.name(),
                describe(&data)
            ))));
        }
        let ctx = self.ctx.borrow().clone();
        let tensor = ctx.upload(&a).map_err(to_js)?;
        Ok(tensor_value(GpuTensor::new(tensor, ctx)))
    }

    /// Normalizes `args.input + args.residual (+ args.bias)` row by row. Resolves with a
    /// fresh `Float32Array` of `input.length`; rejects with `TypeError`, `ShapeError` or
    /// `GpuDeviceError`.
    #[wasm_bindgen(unchecked_return_type = "Promise<Float32Array>")]
    pub fn run(
        &self,
        #[wasm_bindgen(unchecked_param_type = "FusedRmsNormArgs")] args: JsValue,
    ) -> Promise {
        self.start(&args, false)
    }

    /// As `run`, and also resolves with `sum = input + residual (+ bias)`, the residual
    /// stream the next layer takes.
    #[wasm_bindgen(js_name = runWithSum, unchecked_return_type = "Promise<FusedRmsNormWithSum>")]
    pub fn run_with_sum(
        &self,
        #[wasm_bindgen(unchecked_param_type = "FusedRmsNormArgs")] args: JsValue,
    ) -> Promise {
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
            Ok((x, _)) => x,
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
        let ctx = self.ctx.borrow();
        let stats = ctx.buffer_stats();
        let memory = wasm_bindgen::memory()
            .dyn_into::<js_sys::WebAssembly::Memory>()
            .map(|m| {
                m.buffer()
                    .dyn_into::<js_sys::ArrayBuffer>()
                    .map(|b| b.byte_length())
                    .unwrap_or(0)
            })
            .unwrap_or(0);
        let o = Object::new();
        let _ = Reflect::set(&o, &"liveBuffers".into(), &(stats.live as f64).into());
        let _ = Reflect::set(&o, &"idleBuffers".into(), &(stats.idle as f64).into());
        let _ = Reflect::set(&o, &"wasmMemoryBytes".into(), &(memory as f64).into());
        let _ = Reflect::set(&o, &"shaderF16".into(), &ctx.uses_shader_f16().into());
        o.into()
    }

    /// Runs `args` with the kernel dispatched `repeat` times in one compute pass and resolves
    /// with the pass's GPU time in milliseconds, from timestamp queries, or `undefined` where
    /// the adapter has no `timestamp-query`.
    #[wasm_bindgen(js_name = gpuTime, unchecked_return_type = "Promise<number | undefined>")]
    pub fn gpu_time(
        &self,
        #[wasm_bindgen(unchecked_param_type = "FusedRmsNormArgs")] args: JsValue,
        repeat: u32,
    ) -> Promise {
        let x = match parse_args(&args) {
            Ok((x, _)) => x,
            Err(e) => return Promise::reject(&to_js(e)),
        };
        match self.ctx.borrow().submit_timed(&x, repeat) {
            Ok(pending) => future_to_promise(async move {
                let (_, ns) = pending.read_timed().await.map_err(to_js)?;
                Ok(ns.map_or(JsValue::UNDEFINED, |ns| JsValue::from_f64(ns / 1e6)))
            }),
            Err(e) => Promise::reject(&to_js(e)),
        }
    }

    /// Destroys the GPU device, as a driver reset would. Calls in flight reject with
    /// `GpuDeviceError`; the next call opens a new device. For testing recovery.
    #[wasm_bindgen(js_name = simulateDeviceLoss)]
    pub fn simulate_device_loss(&self) {
        self.ctx.borrow().destroy_device();
    }
}

/// Data on the GPU: made by `FusedRmsNorm.upload` or returned by `run` / `runWithSum` with
/// `output: "gpu"`, and accepted by them wherever an array is. Release with `free()`.
#[wasm_bindgen]
pub struct GpuTensor {
    handle: u32,
    tensor: Rc<Tensor>,
    ctx: Rc<GpuContext>,
}

thread_local! {
    /// Live tensors by handle: how an argument object's `GpuTensor` is found again (an
    /// object's fields arrive as plain `JsValue`s, not as Rust references).
    static TENSORS: RefCell<HashMap<u32, Rc<Tensor>>> = RefCell::new(HashMap::new());
    static NEXT_HANDLE: std::cell::Cell<u32> = const { std::cell::Cell::new(1) };
    /// `GpuTensor.prototype`, learnt from the first tensor handed to JavaScript.
    static TENSOR_PROTOTYPE: RefCell<Option<JsValue>> = const { RefCell::new(None) };
}

impl GpuTensor {
    fn new(tensor: Rc<Tensor>, ctx: Rc<GpuContext>) -> GpuTensor {
        let handle = NEXT_HANDLE.with(|n| {
            let h = n.get();
            n.set(h.wrapping_add(1).max(1));
            h
        });
        TENSORS.with(|t| t.borrow_mut().insert(handle, tensor.clone()));
        GpuTensor {
            handle,
            tensor,
            ctx,
        }
    }
}

/// Hands a tensor to JavaScript, noting the class's prototype for `tensor_arg`.
fn tensor_value(t: GpuTensor) -> JsValue {
    let v: JsValue = t.into();
    TENSOR_PROTOTYPE.with(|p| {
        if p.borrow().is_none() {
            *p.borrow_mut() = prototype_of(&v).ok();
        }
    });
    v
}

impl Drop for GpuTensor {
    fn drop(&mut self) {
        TENSORS.with(|t| t.borrow_mut().remove(&self.handle));
    }
}

#[wasm_bindgen]
impl GpuTensor {
    /// Number of elements.
    #[wasm_bindgen(getter)]
    pub fn length(&self) -> f64 {
        self.tensor.len as f64
    }

    /// Element type on the GPU.
    #[wasm_bindgen(getter, unchecked_return_type = "\"f32\" | \"f16\"")]
    pub fn dtype(&self) -> String {
        self.tensor.dtype.name().into()
    }

    /// Copies the data back into a fresh typed array: a `Float32Array` for f32, a
    /// `Uint16Array` of the half-precision bits for f16.
    #[wasm_bindgen(unchecked_return_type = "Promise<Float32Array | Uint16Array>")]
    pub fn read(&self) -> Promise {
        match self.ctx.read_tensor(&self.tensor) {
            Ok(p) => {
                future_to_promise(async move { p.read().await.map(|o| o.y.into()).map_err(to_js) })
            }
            Err(e) => Promise::reject(&to_js(e)),
        }
    }

    #[doc(hidden)]
    #[wasm_bindgen(getter, js_name = __handle, skip_typescript)]
    pub fn handle(&self) -> u32 {
        self.handle
    }
}

impl FusedRmsNorm {
    fn start(&self, args: &JsValue, want_sum: bool) -> Promise {
        let (x, mode) = match parse_args(args) {
            Ok(x) => x,
            Err(e) => return Promise::reject(&to_js(e)),
        };
        let ctx = self.ctx.borrow().clone();
        if mode != Mode::Array {
            let submitted = match mode {
                Mode::InPlace => ctx.submit_in_place(&x),
                _ => ctx.submit_to_gpu(&x, want_sum),
            };
            return match submitted {
                Ok(pending) => future_to_promise(async move {
                    let out = pending.read_gpu().await.map_err(to_js)?;
                    Ok(out.map_or(JsValue::UNDEFINED, |out| gpu_result(out, &ctx, want_sum)))
                }),
                Err(e) => Promise::reject(&to_js(e)),
            };
        }
        let resident = [
            Some(&x.input),
            Some(&x.residual),
            Some(&x.gamma),
            x.beta.as_ref(),
            x.bias.as_ref(),
        ]
        .into_iter()
        .any(|a| matches!(a, Some(Arg::Gpu(_))));
        if ctx.lost_reason().is_none() || resident {
            return match ctx.submit(&x, want_sum) {
                Ok(pending) => future_to_promise(async move {
                    pending
                        .read()
                        .await
                        .map(|o| result(o, want_sum))
                        .map_err(to_js)
                }),
                Err(e) => Promise::reject(&to_js(e)),
            };
        }
        // The device is gone: a new one takes a while to open, so keep private copies of the
        // arrays (the caller may change its own once this returns).
        let copy = |a: Arg<JsArray>| match a {
            Arg::Host(h) => Arg::Host(h.copy()),
            gpu => gpu,
        };
        let x = Inputs {
            input: copy(x.input),
            residual: copy(x.residual),
            gamma: copy(x.gamma),
            beta: x.beta.map(copy),
            bias: x.bias.map(copy),
            ..x
        };
        let (slot, settings) = (self.ctx.clone(), self.settings);
        future_to_promise(async move {
            let fresh = Rc::new(settings.open().await.map_err(to_js)?);
            *slot.borrow_mut() = fresh.clone();
            let out = fresh.run(&x, want_sum).await.map_err(to_js)?;
            Ok(result(out, want_sum))
        })
    }
}

/// `performance.now()`, in windows and workers alike.
fn now() -> f64 {
    let perf = Reflect::get(&js_sys::global(), &JsValue::from_str("performance"))
        .unwrap_or(JsValue::UNDEFINED);
    Reflect::get(&perf, &JsValue::from_str("now"))
        .ok()
        .and_then(|f| f.dyn_into::<js_sys::Function>().ok())
        .and_then(|f| f.call0(&perf).ok())
        .and_then(|t| t.as_f64())
        .unwrap_or(0.0)
}

fn gpu_result(out: GpuOutput, ctx: &Rc<GpuContext>, want_sum: bool) -> JsValue {
    let y = tensor_value(GpuTensor::new(out.y, ctx.clone()));
    match (want_sum, out.sum) {
        (true, Some(sum)) => {
            let o = Object::new();
            let _ = Reflect::set(&o, &JsValue::from_str("output"), &y);
            let _ = Reflect::set(
                &o,
                &JsValue::from_str("sum"),
                &tensor_value(GpuTensor::new(sum, ctx.clone())),
            );
            o.into()
        }
        _ => y,
    }
}

fn result(out: Output, want_sum: bool) -> JsValue {
    match (want_sum, out.sum) {
        (true, Some(sum)) => {
            let o = Object::new();
            let _ = Reflect::set(&o, &JsValue::from_str("output"), &out.y.into());
            let _ = Reflect::set(&o, &JsValue::from_str("sum"), &sum.into());
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
    match is_array(v) {
        Ok(true) => return "an Array".into(),
        Err(_) => return "a revoked Proxy".into(),
        Ok(false) => {}
    }
    if v.is_bigint() {
        return "a bigint".into();
    }
    if v.is_function() {
        return "a function".into();
    }
    let name = get(&get(v, "constructor"), "name")
        .as_string()
        .unwrap_or_default();
    if !name.is_empty() {
        let article = if name.starts_with(['A', 'E', 'I', 'O', 'U']) {
            "an"
        } else {
            "a"
        };
        return format!("{article} {name}");
    }
    "an object".into()
}

// Checks that cannot throw into Rust: an exception unwinding through wasm frames skips
// their cleanup (borrow flags, the shadow stack), and enough of them kill the module. Every
// JavaScript operation on a caller's value goes through a `catch` import or `Reflect`.
#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(catch, js_namespace = Array, js_name = isArray)]
    fn is_array(v: &JsValue) -> Result<bool, JsValue>;
    #[wasm_bindgen(catch, js_namespace = ArrayBuffer, js_name = isView)]
    fn is_view(v: &JsValue) -> Result<bool, JsValue>;
    #[wasm_bindgen(catch, js_namespace = Reflect, js_name = getPrototypeOf)]
    fn prototype_of(v: &JsValue) -> Result<JsValue, JsValue>;
}

fn get(obj: &JsValue, key: &str) -> JsValue {
    Reflect::get(obj, &JsValue::from_str(key)).unwrap_or(JsValue::UNDEFINED)
}

/// A typed array: `Float32Array` (f32), or `Uint16Array` / `Float16Array` (f16 bits).
/// Subclasses and arrays from other realms (iframes) count: the kind is read from the
/// array's internal slot through `Symbol.toStringTag`, not from its constructor.
fn typed_array(v: &JsValue) -> Result<Option<JsArray>, String> {
    if !is_view(v).unwrap_or(false) {
        return Ok(None);
    }
    let kind = Reflect::get(v, &js_sys::Symbol::to_string_tag())
        .ok()
        .and_then(|k| k.as_string());
    let dtype = match kind.as_deref() {
        Some("Float32Array") => Dtype::F32,
        Some("Uint16Array") | Some("Float16Array") => Dtype::F16,
        _ => return Ok(None),
    };
    let buffer = get(v, "buffer");
    if get(&buffer, "detached").as_bool() == Some(true) {
        return Err("a typed array over a live buffer, got one whose ArrayBuffer was transferred (detached)".into());
    }
    let mut array = v.clone();
    if get(&buffer, "resizable").as_bool() == Some(true)
        || get(&buffer, "growable").as_bool() == Some(true)
    {
        // WebGPU's writeBuffer refuses views of resizable buffers; upload a fixed copy.
        array = get(v, "slice")
            .dyn_into::<js_sys::Function>()
            .ok()
            .and_then(|slice| slice.call0(v).ok())
            .ok_or("a typed array whose resizable buffer can be copied")?;
    }
    let len = get(&array, "length").as_f64().unwrap_or(0.0) as usize;
    Ok(Some(JsArray { array, dtype, len }))
}

/// A typed array or a `GpuTensor` argument; `None` when optional and absent.
fn array_arg(args: &JsValue, name: &str, required: bool) -> Result<Option<Arg<JsArray>>, Error> {
    let v = get(args, name);
    if v.is_undefined() && !required {
        return Ok(None);
    }
    // A transferred (detached) buffer would read as length 0: it gets its own message.
    match typed_array(&v) {
        Ok(Some(a)) => return Ok(Some(Arg::Host(a))),
        Ok(None) => {}
        Err(expected) => return Err(Error::Type(format!("{name}: expected {expected}"))),
    }
    if let Some(t) = tensor_arg(&v, name)? {
        return Ok(Some(Arg::Gpu(t)));
    }
    let expected = if required {
        "a Float32Array (or Uint16Array/Float16Array for f16) or a GpuTensor"
    } else {
        "a Float32Array (or Uint16Array/Float16Array for f16), a GpuTensor or undefined"
    };
    Err(Error::Type(format!(
        "{name}: expected {expected}, got {}",
        describe(&v)
    )))
}

/// The tensor behind a `GpuTensor` object, `None` for anything else. The brand is the
/// prototype of the tensors this module made, so a look-alike class is not mistaken for one.
fn tensor_arg(v: &JsValue, name: &str) -> Result<Option<Rc<Tensor>>, Error> {
    if !v.is_object() {
        return Ok(None);
    }
    let ours = TENSOR_PROTOTYPE.with(|p| {
        let p = p.borrow();
        p.as_ref()
            .is_some_and(|p| prototype_of(v).is_ok_and(|q| &q == p))
    });
    if !ours {
        return Ok(None);
    }
    // wasm-bindgen zeroes the pointer on free(); reading the handle then would throw.
    let freed = get(v, "__wbg_ptr").as_f64().unwrap_or(0.0) == 0.0;
    let tensor = (!freed)
        .then(|| get(v, "__handle").as_f64())
        .flatten()
        .and_then(|h| TENSORS.with(|t| t.borrow().get(&(h as u32)).cloned()));
    match tensor {
        Some(t) => Ok(Some(t)),
        None => Err(Error::GpuDevice(format!(
            "{name}: expected a live GpuTensor, got one that was freed"
        ))),
    }
}

/// The call's inputs, and whether its results stay on the GPU.
fn parse_args(args: &JsValue) -> Result<(Args, Mode), Error> {
    if !args.is_object()
        || args.is_function()
        || is_array(args).unwrap_or(true)
        || is_view(args).unwrap_or(true)
    {
        return Err(Error::Type(format!(
            "args: expected an object {{ input, residual, gamma, hidden, beta?, bias?, eps? }}, got {}",
            describe(args)
        )));
    }
    let required =
        |name| array_arg(args, name, true)?.ok_or_else(|| Error::Type(format!("{name}: missing")));
    let input = required("input")?;
    let residual = required("residual")?;
    let gamma = required("gamma")?;
    let beta = array_arg(args, "beta", false)?;
    let bias = array_arg(args, "bias", false)?;
    let o = get(args, "output");
    let mut mode = match o.as_string().as_deref() {
        _ if o.is_undefined() => Mode::Array,
        Some("array") => Mode::Array,
        Some("gpu") => Mode::Gpu,
        _ => {
            return Err(Error::Type(format!(
                "output: expected \"array\", \"gpu\" or undefined, got {}",
                describe(&o)
            )));
        }
    };
    let p = get(args, "inPlace");
    match p.as_bool() {
        _ if p.is_undefined() => {}
        Some(false) => {}
        Some(true) if o.is_undefined() => mode = Mode::InPlace,
        Some(true) => {
            return Err(Error::Type(format!(
                "output: expected undefined with inPlace: true (the results overwrite input and residual), got {}",
                describe(&o)
            )));
        }
        None => {
            return Err(Error::Type(format!(
                "inPlace: expected a boolean or undefined, got {}",
                describe(&p)
            )));
        }
    }

    let h = get(args, "hidden");
    let Some(hidden) = h.as_f64() else {
        return Err(Error::Type(format!(
            "hidden: expected a number (an integer >= 1), got {}",
            describe(&h)
        )));
    };
    if !(hidden.fract() == 0.0 && hidden >= 1.0 && hidden <= u32::MAX as f64) {
        return Err(Error::Shape(format!(
            "hidden: expected an integer from 1 to {}, got {hidden}",
            u32::MAX
        )));
    }
    let e = get(args, "eps");
    let eps = if e.is_undefined() {
        1e-6
    } else {
        let Some(eps) = e.as_f64() else {
            return Err(Error::Type(format!(
                "eps: expected a number or undefined, got {}",
                describe(&e)
            )));
        };
        if !(eps.is_finite() && eps >= 0.0 && eps <= f32::MAX as f64) {
            return Err(Error::Shape(format!(
                "eps: expected a finite number >= 0, got {eps}"
            )));
        }
        eps as f32
    };
    Ok((
        Inputs {
            input,
            residual,
            gamma,
            beta,
            bias,
            hidden: hidden as usize,
            eps,
        },
        mode,
    ))
}

fn settings(options: Option<&JsValue>) -> Result<Settings, Error> {
    let mut settings = Settings {
        power: wgpu::PowerPreference::default(),
        shader_f16: true,
    };
    let Some(o) = options.filter(|o| !o.is_undefined() && !o.is_null()) else {
        return Ok(settings);
    };
    if !o.is_object() {
        return Err(Error::Type(format!(
            "options: expected an object {{ powerPreference?, shaderF16? }} or undefined, got {}",
            describe(o)
        )));
    }
    let p = get(o, "powerPreference");
    settings.power = match p.as_string().as_deref() {
        _ if p.is_undefined() => wgpu::PowerPreference::default(),
        Some("low-power") => wgpu::PowerPreference::LowPower,
        Some("high-performance") => wgpu::PowerPreference::HighPerformance,
        _ => {
            return Err(Error::Type(format!(
                "options.powerPreference: expected \"low-power\" or \"high-performance\", got {}",
                describe(&p)
            )))
        }
    };
    let f = get(o, "shaderF16");
    settings.shader_f16 = match f.as_bool() {
        _ if f.is_undefined() => true,
        Some(on) => on,
        None => {
            return Err(Error::Type(format!(
                "options.shaderF16: expected a boolean or undefined, got {}",
                describe(&f)
            )));
        }
    };
    Ok(settings)
}
