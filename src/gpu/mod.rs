//! The GPU driver: the device, the kernels ([`kernel`]: their WGSL variants, tilings, binding
//! table and uniform block), the pipelines, the buffer pool, uploads and readback, the one
//! path every call takes (stage, record, submit), tensors' buffers, a call in flight, and (in
//! the browser) recording into an engine's own command encoder.
//!
//! The same code runs on the browser's WebGPU (wasm) and on Vulkan (native tests and
//! benchmarks).

pub mod app_buffer;
pub mod context;
pub mod device;
pub mod kernel;
pub mod pending;
pub mod pipelines;
pub mod pool;
mod recording;
mod resident;
mod stage;
mod submit;
pub mod tensor_buffer;
mod test_hooks;
pub mod transfer;

#[cfg(target_arch = "wasm32")]
mod browser_pipelines;
#[cfg(target_arch = "wasm32")]
pub(crate) mod encode;
#[cfg(target_arch = "wasm32")]
pub(crate) mod webgpu_raw;

pub use context::GpuContext;
