//! The device a context runs on: adapter, device and queue, what they can do, and whether
//! the device has been lost.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::call::error::Error;

/// Identifies a context: buffers of one device cannot be bound on another, and a lost
/// device's buffers hold nothing.
pub type ContextId = u64;

pub(crate) fn next_context_id() -> ContextId {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// What the adapter says about itself, in the shape of WebGPU's `GPUAdapterInfo`.
#[derive(Clone, Debug, Default)]
pub struct AdapterSummary {
    pub vendor: String,
    pub architecture: String,
    pub device: String,
    pub description: String,
    pub is_fallback: bool,
}

/// Why the device is gone, once it is: set by the device-lost callback (or synchronously by
/// [`Device::destroy`]), shared with every tensor of the device.
#[derive(Clone, Default)]
pub struct LostSlot(Arc<Mutex<Option<String>>>);

impl LostSlot {
    pub fn reason(&self) -> Option<String> {
        self.0.lock().ok().and_then(|s| s.clone())
    }

    fn set(&self, why: String) {
        if let Ok(mut slot) = self.0.lock() {
            slot.get_or_insert(why);
        }
    }
}

/// The limits and features a call's plan depends on.
#[derive(Clone, Copy, Debug)]
pub struct Caps {
    /// Largest storage binding in bytes: a chunk of rows never exceeds it.
    pub max_binding: u64,
    pub max_groups_per_dim: u32,
    /// Largest workgroup the device runs (invocations, and the x dimension).
    pub max_workgroup: u32,
    /// f16 data through WGSL `shader-f16`; otherwise packed in u32s.
    pub shader_f16: bool,
    pub timestamps: bool,
    /// Kernels tiled for a CPU adapter (`FusedTiling::choose`, `FamilyTiling::choose`).
    pub cpu_tiling: bool,
}

/// One opened device.
pub struct Device {
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    pub adapter: AdapterSummary,
    pub caps: Caps,
    pub lost: LostSlot,
    pub id: ContextId,
}

impl Device {
    /// Finds an adapter and opens a device on it.
    pub async fn open(power_preference: wgpu::PowerPreference) -> Result<Device, Error> {
        #[cfg(target_arch = "wasm32")]
        check_browser()?;
        let backends = if cfg!(target_arch = "wasm32") {
            wgpu::Backends::BROWSER_WEBGPU
        } else {
            wgpu::Backends::VULKAN
        };
        let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
            backends,
            ..wgpu::InstanceDescriptor::new_without_display_handle()
        });
        let adapter = instance
            .request_adapter(&wgpu::RequestAdapterOptions {
                power_preference,
                ..Default::default()
            })
            .await
            .map_err(|e| {
                Error::WebGpuUnavailable(format!(
                    "requestAdapter: expected an adapter, got none: this browser has WebGPU but \
                     offers no adapter here (a blocklisted or disabled GPU; headless Chromium \
                     needs --enable-unsafe-webgpu) ({e})"
                ))
            })?;
        // Timestamps only for timed calls; both features are taken only where offered.
        Self::on_adapter(
            &adapter,
            wgpu::Features::SHADER_F16 | wgpu::Features::TIMESTAMP_QUERY,
        )
        .await
    }

    /// Opens a device on `adapter` with its full limits (the defaults cap a storage binding
    /// at 128 MiB even where the hardware allows more) and any of `wanted` it supports.
    pub async fn on_adapter(
        adapter: &wgpu::Adapter,
        wanted: wgpu::Features,
    ) -> Result<Device, Error> {
        let limits = adapter.limits();
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("webgpu-rmsnorm"),
                required_features: wanted & adapter.features(),
                required_limits: limits.clone(),
                ..Default::default()
            })
            .await
            .map_err(|e| {
                Error::GpuDevice(format!(
                    "requestDevice: expected a device, got an error ({e})"
                ))
            })?;

        // Errors outside an error scope would otherwise reach wgpu's default handler, which
        // panics; a panic in wasm kills the instance for good.
        device.on_uncaptured_error(Arc::new(|_e: wgpu::Error| {}));
        let lost = LostSlot::default();
        let on_lost = lost.clone();
        device.set_device_lost_callback(move |reason, message| {
            on_lost.set(format!("{reason:?}: {message}"));
        });
        let adapter_summary = summarize(adapter, &device);
        let features = device.features();
        let caps = Caps {
            max_binding: limits
                .max_storage_buffer_binding_size
                .min(limits.max_buffer_size),
            max_groups_per_dim: limits.max_compute_workgroups_per_dimension,
            max_workgroup: limits
                .max_compute_invocations_per_workgroup
                .min(limits.max_compute_workgroup_size_x),
            shader_f16: features.contains(wgpu::Features::SHADER_F16),
            timestamps: features.contains(wgpu::Features::TIMESTAMP_QUERY),
            // CPU adapters in the browser (SwiftShader) get their own tiling. Natively,
            // lavapipe keeps the GPU tiling so that the tests there cover what GPUs run.
            cpu_tiling: cfg!(target_arch = "wasm32") && adapter_summary.is_fallback,
        };
        Ok(Device {
            device,
            queue,
            adapter: adapter_summary,
            caps,
            lost,
            id: next_context_id(),
        })
    }

    /// Why the device is gone, if it is.
    pub fn lost_reason(&self) -> Option<String> {
        self.lost.reason()
    }

    /// Fails with the reason where the device is gone.
    pub fn check_live(&self) -> Result<(), Error> {
        match self.lost_reason() {
            Some(why) => Err(lost_error(&why)),
            None => Ok(()),
        }
    }

    /// Destroys the device, as a driver reset would. The loss is recorded at once: the
    /// callback that reports it comes later, and a call made meanwhile must already know.
    pub fn destroy(&self) {
        self.lost.set("Destroyed: the device was destroyed".into());
        self.device.destroy();
    }
}

/// Why a page cannot have WebGPU, told apart: the causes need different fixes.
#[cfg(target_arch = "wasm32")]
fn check_browser() -> Result<(), Error> {
    use wasm_bindgen::JsValue;
    let get = |o: &JsValue, k: &str| {
        js_sys::Reflect::get(o, &JsValue::from_str(k)).unwrap_or(JsValue::UNDEFINED)
    };
    let global = js_sys::global();
    if get(&global, "isSecureContext").as_bool() == Some(false) {
        return Err(Error::WebGpuUnavailable(
            "navigator.gpu: expected a secure context, got a page that is not one: browsers \
             offer WebGPU only to https pages and http://localhost or 127.0.0.1"
                .into(),
        ));
    }
    let gpu = get(&get(&global, "navigator"), "gpu");
    if gpu.is_undefined() || gpu.is_null() {
        return Err(Error::WebGpuUnavailable(
            "navigator.gpu: expected WebGPU in this browser, got none (Chrome/Edge 113+, \
             Safari 26+, Firefox 141+; Firefox ESR and older Safari have none)"
                .into(),
        ));
    }
    Ok(())
}

pub fn lost_error(why: &str) -> Error {
    Error::GpuDevice(format!(
        "device: expected a live GPU device, got a lost one ({why})"
    ))
}

#[cfg(not(target_arch = "wasm32"))]
fn summarize(adapter: &wgpu::Adapter, _device: &wgpu::Device) -> AdapterSummary {
    let info = adapter.get_info();
    AdapterSummary {
        vendor: format!("0x{:04x}", info.vendor),
        architecture: format!("{:?}", info.device_type),
        device: info.name.clone(),
        description: format!(
            "{} ({:?}; {} {})",
            info.name, info.backend, info.driver, info.driver_info
        ),
        is_fallback: info.device_type == wgpu::DeviceType::Cpu,
    }
}

#[cfg(target_arch = "wasm32")]
fn summarize(adapter: &wgpu::Adapter, device: &wgpu::Device) -> AdapterSummary {
    use wasm_bindgen::JsValue;
    // wgpu's AdapterInfo drops WebGPU's vendor and architecture strings; read them from
    // GPUDevice.adapterInfo instead.
    let info = device
        .as_webgpu()
        .and_then(|d| js_sys::Reflect::get(d.as_ref(), &JsValue::from_str("adapterInfo")).ok())
        .unwrap_or(JsValue::UNDEFINED);
    let field = |name: &str| {
        js_sys::Reflect::get(&info, &JsValue::from_str(name))
            .ok()
            .and_then(|v| v.as_string())
            .unwrap_or_default()
    };
    let is_fallback = js_sys::Reflect::get(&info, &JsValue::from_str("isFallbackAdapter"))
        .ok()
        .and_then(|v| v.as_bool())
        .unwrap_or(adapter.get_info().device_type == wgpu::DeviceType::Cpu);
    AdapterSummary {
        vendor: field("vendor"),
        architecture: field("architecture"),
        device: field("device"),
        description: field("description"),
        is_fallback,
    }
}
