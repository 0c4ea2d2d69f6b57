//! The JavaScript boundary (wasm only): the `FusedRmsNorm` class (`facade/`) and
//! `GpuTensor` (`tensor.rs`); reading arguments (`args.rs`, with the one-step readers of the
//! common calls in `tensor_call.rs` and `cpu_call.rs`) and options (`options.rs`) from
//! JavaScript values (`value.rs`), each reader's keys from one table (`keys.rs`); typed
//! arrays as host data (`array.rs`); the TypeScript types (`types/`). What the package relies
//! on in wasm-bindgen's generated glue is in `glue.rs`; `freed_guard.js` and `dispose.d.ts`
//! are appended to that glue by `scripts/build.sh`.

mod args;
pub mod array;
mod bound;
mod call_cache;
pub(crate) mod caller_arrays;
mod cpu_call;
mod cpu_call_js;
pub mod facade;
mod glue;
mod keys;
mod options;
mod panic;
mod tensor;
mod tensor_call;
mod types;
pub(crate) mod value;
