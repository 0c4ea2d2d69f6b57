//! Fused residual add + optional bias + RMSNorm on WebGPU.
//!
//! For `rows × hidden` inputs, every row `r` and column `i`:
//!
//! ```text
//! v[r,i] = input[r,i] + residual[r,i] + bias[i]
//! y[r,i] = v[r,i] * inverseSqrt(mean_i(v[r,i]²) + eps) * gamma[i] + beta[i]
//! ```
//!
//! The data path, one file each: [`facade`] (JavaScript API, wasm only) →
//! [`gpu`] (device, pipelines, one call's uploads, dispatch and readback) →
//! `shaders/fused_rms_norm.wgsl` (the kernel, whose variants [`kernel`] assembles).
//! [`reference`] is the f64 CPU reference every test compares against.

pub mod error;
pub mod gpu;
pub mod host;
pub mod kernel;
pub mod pool;
pub mod reference;
pub mod shape;
pub mod tensor;

#[cfg(target_arch = "wasm32")]
pub mod facade;

pub use error::Error;
pub use gpu::{AdapterSummary, GpuContext, Output};
pub use shape::{Inputs, Shape};
