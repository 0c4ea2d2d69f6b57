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
//! The layers, bottom up, by the rank `tests/layout.rs` gives each (`RANKS`). A module
//! imports only from its own top module and from lower ranks, never in a circle:
//! - [`support`] (0) — a clock, a hash, a number as JavaScript writes it, and the typed array a
//!   result reaches the browser in.
//! - [`call`] (1) — a call described without a backend: its arguments and where their numbers
//!   live, the checks that turn them into a shape and a plan, the kernel a plan needs, the
//!   device's limits and features ([`call::device`]), the kernel's options, tensors, results,
//!   dtypes and the named errors. The GPU driver implements what it asks of a device (an
//!   upload's destination, a tensor's storage, an app buffer's handle).
//! - [`gpu`] (2) — the GPU driver: device, pipelines and the binding table, the kernels'
//!   variants (which one a call runs as, and its WGSL) and their tilings, the pool, uploads
//!   and readback, the one call path (stage, record, submit), tensors' buffers, a call in
//!   flight, `encode`. Beside it, of the same rank, [`cpu`], the CPU backend (its driver and
//!   its kernel), and [`reference`](mod@reference), the f64 reference every test compares
//!   against; none of the three imports another.
//! - [`instance`] (3) — an instance's GPU device across losses: the live one, and the one that
//!   replaces it.
//! - [`backend`] (4) — WebGPU, CPU or `"auto"`, behind one interface; `"auto"` continues on
//!   the CPU backend when its device is lost and none can be had.
//! - `js/` (5) — the JavaScript API (wasm only): the `FusedRmsNorm` class and `GpuTensor`,
//!   reading arguments and options from JavaScript values, typed arrays as host arrays, the
//!   TypeScript types, the package's entry and the panic hook.
//! - `lib.rs` (6) — this file: the modules and the re-exports below.
//!
//! The WGSL is in `shaders/`: `fused_rms_norm.wgsl` (RMSNorm, tuned per stack) and
//! `norm_family.wgsl` (LayerNorm, the sandwich and RMSNorm's short rows), each including
//! `common.wgsl` (the uniform block, the bindings, the storage types, the finite and NaN tests,
//! the rescaling constants), the fused kernel also `row_cache.wgsl` (its row in registers).
//! A variant's choices are named constants and `#if` blocks in those files, assembled by
//! [`gpu::kernel::wgsl`]; `cargo run --example wgsl -- --hidden 4096` prints any variant.

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
