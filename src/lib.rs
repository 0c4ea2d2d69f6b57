//! Fused residual add + optional bias + RMSNorm on WebGPU.
//!
//! For `rows × hidden` inputs, every row `r` and column `i`:
//!
//! ```text
//! v[r,i] = input[r,i] + residual[r,i] + bias[i]
//! y[r,i] = v[r,i] * inverseSqrt(mean_i(v[r,i]²) + eps) * gamma[i] + beta[i]
//! ```
//!
//! The layers, top down (each folder imports only from the ones below it and `support`):
//! - `js/` — the JavaScript API (wasm only): the `FusedRmsNorm` class, reading arguments and
//!   options from JavaScript values, `Float32Array`s as host arrays, the TypeScript types.
//! - [`backend`] — WebGPU, CPU or `"auto"`, behind one interface; [`instance`] — the live
//!   device, and its replacement after a loss.
//! - [`gpu`] — the GPU driver: device, pipelines and the binding table, kernel variants and
//!   tiling over `shaders/fused_rms_norm.wgsl`, the pool, the one call path (stage, record,
//!   submit), resident tensors, a call in flight and its readback, `encode`.
//! - [`cpu`] — the CPU backend: its driver beside its kernel.
//! - [`call`] — a call described without a backend: arguments, shape, checks, plan, dtypes,
//!   the named errors.
//! - [`support`] — a clock and a hash.
//!
//! [`reference`](mod@reference) is the f64 CPU reference every test compares against.

pub mod backend;
pub mod call;
pub mod cpu;
pub mod gpu;
pub mod instance;
pub mod reference;
pub mod support;

#[cfg(target_arch = "wasm32")]
pub mod js;

pub use call::error::Error;
pub use call::plan::Request;
pub use call::results::Output;
pub use call::shape::{Inputs, Shape};
pub use gpu::device::AdapterSummary;
pub use gpu::GpuContext;
