//! The normalization family of transformer layers, fused with the residual add, on WebGPU,
//! and on the CPU where WebGPU is missing or runs on a software adapter.
//!
//! For `rows × hidden` inputs, every row, with `N` the normalization `kind` names:
//!
//! ```text
//! N_rms(x)[i]   = x[i] · inverseSqrt(mean(x²) + eps)
//! N_layer(x)[i] = (x[i] − m) · inverseSqrt(mean((x − m)²) + eps),   m = mean(x)
//! u = input + bias
//! w = postGamma ? N(u) · (postGamma + gammaOffset) : u     (the sandwich's post-norm)
//! v = residual + w                                          (the `sum` output)
//! y = N(v) · (gamma + gammaOffset) + beta                   (`output`)
//! ```
//!
//! An absent `bias`, `residual` or `beta` adds nothing; `gammaOffset` is 0 unless given
//! (Gemma's `1 + γ` is 1). With `kind: "rms"` and none of them but the residual, this is the
//! fused residual add + RMSNorm: `y = v · inverseSqrt(mean(v²) + eps) · gamma`.
//!
//! The layers, bottom up. A module imports only from its own folder and from the layers
//! below it, never from one beside it (`tests/layout.rs` checks):
//! - [`support`] — a clock and a hash.
//! - [`call`] — a call described without a backend: its arguments and where their numbers
//!   live, the checks that turn them into a shape and a plan, the kernel a plan needs, the
//!   device's limits, dtypes, results and the named errors.
//! - [`gpu`] — the GPU driver: device, pipelines and the binding table, the two kernels'
//!   variants and tiling over `shaders/fused_rms_norm.wgsl` (RMSNorm, tuned per stack) and
//!   `shaders/norm_family.wgsl` (LayerNorm, the sandwich and RMSNorm's short rows), the pool,
//!   the one call path (stage, record, submit), tensors' buffers, a call in flight and its
//!   readback, `encode`. Beside it [`cpu`], the CPU backend (its driver and its kernel), and
//!   [`reference`](mod@reference), the f64 reference every test compares against; none of
//!   the three imports another.
//! - [`instance`] — the live device, and its replacement after a loss.
//! - [`backend`] — WebGPU, CPU or `"auto"`, behind one interface.
//! - `js/` — the JavaScript API (wasm only): the `FusedRmsNorm` class, reading arguments and
//!   options from JavaScript values, typed arrays as host arrays, the TypeScript types.

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
