//! Fused residual add + optional bias + RMSNorm on WebGPU.
//!
//! For `rows × hidden` inputs, every row `r` and column `i`:
//!
//! ```text
//! v[r,i] = input[r,i] + residual[r,i] + bias[i]
//! y[r,i] = v[r,i] * inverseSqrt(mean_i(v[r,i]²) + eps) * gamma[i] + beta[i]
//! ```
//!
//! The data path, one concern a file:
//! - `facade` (JavaScript API, wasm only; with `js_args`, `js_tensor_call`, `js_options`,
//!   `js_value`, `js_tensor`, `js_types`) →
//! - [`backend`] (WebGPU, CPU or `"auto"`; the CPU backend is [`cpu_driver`] over [`cpu`]) →
//! - [`instance`] (the live device, and its replacement after a loss) →
//! - [`shape`] and [`plan`] (a call's checks: arguments into a [`plan::Plan`], with
//!   [`checks`] for single values) →
//! - [`gpu`] (the driver: the context in `gpu.rs`, the one call path that stages, records and
//!   submits a plan in `gpu/call.rs`, tensors' uploads and readback in `resident.rs`) over
//!   [`device`], [`pipelines`] (the binding table, layouts and pipeline cache), [`pool`] and
//!   [`tensor`] →
//! - [`pending`] (a call in flight and its readback) →
//! - `shaders/fused_rms_norm.wgsl` (the kernel, whose variants [`kernel`] assembles, tiled as
//!   [`tiling`] measured).
//!
//! [`host`] is where numbers live on the host, [`dtype`] how they are stored, and
//! [`reference`](mod@reference) the f64 CPU reference every test compares against.

pub mod app_buffer;
pub mod backend;
pub mod checks;
pub mod clock;
pub mod cpu;
pub mod cpu_driver;
pub mod device;
pub mod dtype;
pub mod error;
mod fast_hash;
pub mod gpu;
pub mod host;
pub mod instance;
pub mod kernel;
pub mod pending;
pub mod pipelines;
pub mod plan;
pub mod pool;
pub mod reference;
mod resident;
pub mod shape;
pub mod tensor;
mod test_hooks;
pub mod tiling;

#[cfg(target_arch = "wasm32")]
mod encode;
#[cfg(target_arch = "wasm32")]
pub mod facade;
#[cfg(target_arch = "wasm32")]
mod js_args;
#[cfg(target_arch = "wasm32")]
mod js_array;
#[cfg(target_arch = "wasm32")]
mod js_options;
#[cfg(target_arch = "wasm32")]
mod js_tensor;
#[cfg(target_arch = "wasm32")]
mod js_tensor_call;
#[cfg(target_arch = "wasm32")]
mod js_types;
#[cfg(target_arch = "wasm32")]
mod js_value;
#[cfg(target_arch = "wasm32")]
mod webgpu_raw;

pub use device::AdapterSummary;
pub use error::Error;
pub use gpu::GpuContext;
pub use pending::Output;
pub use plan::Request;
pub use shape::{Inputs, Shape};
