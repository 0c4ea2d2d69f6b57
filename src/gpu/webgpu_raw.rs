//! The few WebGPU calls the package makes on the browser's objects directly rather than
//! through wgpu: wgpu 30 can hand out the `GPUDevice`, `GPUQueue` and `GPUBuffer` behind its
//! objects, but cannot take in an app's `GPUBuffer` or `GPUCommandEncoder`. So copying from
//! an app's buffer (`app_buffer.rs`) and recording into an app's encoder (`encode.rs`) speak
//! WebGPU here. Every method is `catch`: an exception (a look-alike object, a finished
//! encoder) comes back as an `Err`, never unwinding through wasm.

use js_sys::{Array, Object, Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

#[wasm_bindgen]
extern "C" {
    pub type RawDevice;
    #[wasm_bindgen(catch, method, js_name = pushErrorScope)]
    pub fn push_error_scope(this: &RawDevice, filter: &str) -> Result<(), JsValue>;
    #[wasm_bindgen(catch, method, js_name = popErrorScope)]
    pub fn pop_error_scope(this: &RawDevice) -> Result<Promise, JsValue>;
    #[wasm_bindgen(catch, method, js_name = createCommandEncoder)]
    pub fn create_command_encoder(this: &RawDevice) -> Result<RawEncoder, JsValue>;
    #[wasm_bindgen(catch, method, js_name = createShaderModule)]
    pub fn create_shader_module(this: &RawDevice, desc: &Object) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(catch, method, js_name = createBindGroupLayout)]
    pub fn create_bind_group_layout(this: &RawDevice, desc: &Object) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(catch, method, js_name = createPipelineLayout)]
    pub fn create_pipeline_layout(this: &RawDevice, desc: &Object) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(catch, method, js_name = createComputePipeline)]
    pub fn create_compute_pipeline(this: &RawDevice, desc: &Object) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(catch, method, js_name = createBindGroup)]
    pub fn create_bind_group(this: &RawDevice, desc: &Object) -> Result<JsValue, JsValue>;

    pub type RawQueue;
    #[wasm_bindgen(catch, method)]
    pub fn submit(this: &RawQueue, buffers: &Array) -> Result<(), JsValue>;

    pub type RawEncoder;
    #[wasm_bindgen(catch, method, js_name = copyBufferToBuffer)]
    pub fn copy_buffer_to_buffer(
        this: &RawEncoder,
        src: &JsValue,
        src_offset: f64,
        dst: &JsValue,
        dst_offset: f64,
        size: f64,
    ) -> Result<(), JsValue>;
    #[wasm_bindgen(catch, method, js_name = beginComputePass)]
    pub fn begin_compute_pass(this: &RawEncoder) -> Result<RawPass, JsValue>;
    #[wasm_bindgen(catch, method)]
    pub fn finish(this: &RawEncoder) -> Result<JsValue, JsValue>;

    pub type RawPass;
    #[wasm_bindgen(catch, method, js_name = setPipeline)]
    pub fn set_pipeline(this: &RawPass, pipeline: &JsValue) -> Result<(), JsValue>;
    #[wasm_bindgen(catch, method, js_name = setBindGroup)]
    pub fn set_bind_group(this: &RawPass, index: u32, group: &JsValue) -> Result<(), JsValue>;
    #[wasm_bindgen(catch, method, js_name = dispatchWorkgroups)]
    pub fn dispatch_workgroups(this: &RawPass, x: u32, y: u32, z: u32) -> Result<(), JsValue>;
    #[wasm_bindgen(catch, method)]
    pub fn end(this: &RawPass) -> Result<(), JsValue>;
}

#[wasm_bindgen(inline_js = r#"
export function submitDispatch(device, queue, pipeline, group, x, y) {
  const encoder = device.createCommandEncoder();
  const pass = encoder.beginComputePass();
  pass.setPipeline(pipeline);
  pass.setBindGroup(0, group);
  pass.dispatchWorkgroups(x, y, 1);
  pass.end();
  queue.submit([encoder.finish()]);
}
"#)]
extern "C" {
    /// One dispatch recorded and submitted in one crossing into JavaScript. Made call by
    /// call from wasm, through wgpu, the same eight WebGPU calls cost a decode-sized call
    /// more (glue per call, descriptor objects, the encoder's label read back:
    /// docs/performance.md, "Dawn in Node").
    #[wasm_bindgen(catch, js_name = submitDispatch)]
    pub fn submit_dispatch(
        device: &RawDevice,
        queue: &RawQueue,
        pipeline: &JsValue,
        group: &JsValue,
        x: u32,
        y: u32,
    ) -> Result<(), JsValue>;
}

#[wasm_bindgen(inline_js = r#"
export function recordDispatch(encoder, d) {
  const c = d.copy;
  if (c !== null) encoder.copyBufferToBuffer(c.src, 0, c.dst, c.to, c.size);
  const pass = encoder.beginComputePass();
  pass.setPipeline(d.pipeline);
  pass.setBindGroup(0, d.group);
  pass.dispatchWorkgroups(d.x, d.y, 1);
  pass.end();
}
let encoderPrototype;
export function recordOnEncoder(encoder, d) {
  if (encoderPrototype === undefined) encoderPrototype = typeof GPUCommandEncoder === "function" ? GPUCommandEncoder.prototype : null;
  let prototype;
  try {
    prototype = Object.getPrototypeOf(encoder);
  } catch {
    return false;
  }
  if (prototype === null || prototype !== encoderPrototype) return false;
  recordDispatch(encoder, d);
  return true;
}
export function submitObjects(d) {
  const encoder = d.device.createCommandEncoder();
  recordDispatch(encoder, d);
  d.queue.submit([encoder.finish()]);
  return Promise.resolve();
}
"#)]
extern "C" {
    /// A dispatch's pass recorded into `encoder` in one crossing into JavaScript; `objects`
    /// is `encode.rs`'s `Dispatch` (`{ pipeline, group, x, y, device, queue, copy }`, `copy`
    /// the copy of a rotary stage's positions from an app's buffer that goes first, or null). Made one by
    /// one from wasm, the WebGPU calls' glue costs more than the calls themselves (measured
    /// in docs/performance.md, "The call's own cost").
    #[wasm_bindgen(catch, js_name = recordDispatch)]
    pub fn record_dispatch(encoder: &JsValue, objects: &Object) -> Result<(), JsValue>;
    /// As `record_dispatch` where `encoder` is a direct instance of the runtime's
    /// `GPUCommandEncoder` (every encoder a device makes is); `false` for anything else, which
    /// the caller then recognises, or not, as its runtime's WebGPU would (`js/args.rs`).
    #[wasm_bindgen(catch, js_name = recordOnEncoder)]
    pub fn record_on_encoder(encoder: &JsValue, objects: &Object) -> Result<bool, JsValue>;
    /// The same pass recorded into an encoder of `objects.device`'s and submitted to
    /// `objects.queue`; returns a Promise resolved with `undefined`, made on this side.
    #[wasm_bindgen(catch, js_name = submitObjects)]
    pub fn submit_objects(objects: &Object) -> Result<Promise, JsValue>;
}

#[wasm_bindgen(inline_js = r#"
const waiting = [];
let channel;
export function nextTask() {
  return new Promise((resolve) => {
    if (typeof MessageChannel !== "function") return setTimeout(resolve, 0);
    if (!channel) {
      const c = (channel = new MessageChannel());
      c.port1.onmessage = () => {
        waiting.shift()();
        // In Node and Deno (whose ports have unref) an open port keeps the process running
        // after the app is done: closed once nothing waits. Browsers keep theirs.
        if (!waiting.length && typeof c.port1.unref === "function") {
          c.port1.close();
          channel = undefined;
        }
      };
    }
    waiting.push(resolve);
    channel.port2.postMessage(0);
  });
}
"#)]
extern "C" {
    #[wasm_bindgen(catch, js_name = nextTask)]
    fn next_task_promise() -> Result<Promise, JsValue>;
}

/// Resolves in the next task of the event loop: a message to a channel of the package's own
/// (browsers clamp nested `setTimeout(0)`s to several milliseconds, as the HTML standard
/// allows).
pub async fn next_task() {
    if let Ok(p) = next_task_promise() {
        let _ = JsFuture::from(p).await;
    }
}

/// The `GPUDevice` behind a wgpu device (`None` natively, where there is none).
pub fn device(device: &wgpu::Device) -> Option<RawDevice> {
    device
        .as_webgpu()
        .map(|d| JsValue::from(d.clone()).unchecked_into())
}

pub fn queue(queue: &wgpu::Queue) -> Option<RawQueue> {
    queue
        .as_webgpu()
        .map(|q| JsValue::from(q.clone()).unchecked_into())
}

pub fn buffer(buffer: &wgpu::Buffer) -> JsValue {
    buffer
        .as_webgpu()
        .map_or(JsValue::UNDEFINED, |b| JsValue::from(b.clone()))
}

/// The message of the error a scope caught, once popped.
pub type ScopeFound = std::pin::Pin<Box<dyn std::future::Future<Output = Option<String>>>>;

/// Runs `work` inside a validation scope of its own on `device`, and resolves with the
/// message of the error the scope caught, if any. The scope is popped whatever `work`
/// returns, so the device's scope stack stays balanced.
pub fn scoped<T>(
    device: &RawDevice,
    work: impl FnOnce() -> Result<T, JsValue>,
) -> Result<(T, ScopeFound), JsValue> {
    device.push_error_scope("validation")?;
    let done = work();
    let popped = device.pop_error_scope();
    let value = done?;
    let popped = popped?;
    Ok((
        value,
        Box::pin(async move {
            match JsFuture::from(popped).await {
                Ok(e) if e.is_null() || e.is_undefined() => None,
                Ok(e) => Some(message(&e)),
                Err(e) => Some(message(&e)),
            }
        }),
    ))
}

/// An error object's `message`, or the value as a string.
pub fn message(e: &JsValue) -> String {
    Reflect::get(e, &"message".into())
        .ok()
        .and_then(|m| m.as_string())
        .or_else(|| e.as_string())
        .unwrap_or_else(|| "no message".into())
}

/// A plain object of `fields`, for WebGPU descriptors.
pub fn descriptor(fields: &[(&str, JsValue)]) -> Object {
    let o = Object::new();
    for (key, value) in fields {
        let _ = Reflect::set(&o, &JsValue::from_str(wasm_bindgen::intern(key)), value);
    }
    o
}
