//! What an app reads of a `FusedRmsNorm` (`adapterInfo`, `device`, `backend`,
//! `debugStats`) and asks of its device (`trim`, `simulateDeviceLoss`).

use js_sys::Object;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::backend::Active;
use crate::gpu::device::AdapterSummary;
use crate::js::tensor::live_tensors;
use crate::js::value::object;

use super::FusedRmsNorm;

#[wasm_bindgen]
impl FusedRmsNorm {
    /// The adapter this instance runs on.
    #[wasm_bindgen(getter, js_name = adapterInfo, unchecked_return_type = "FusedRmsNormAdapterInfo")]
    pub fn adapter_info(&self) -> JsValue {
        let summary = match self.engine.active() {
            Active::Gpu(g) => g.latest().adapter().clone(),
            Active::Cpu(_) => AdapterSummary {
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
            ("keptDispatchCalls", crate::js::call_cache::used().into()),
            ("repeatedCalls", crate::js::call_cache::repeats().into()),
            ("boundCalls", crate::js::bound::used().into()),
        ])
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
