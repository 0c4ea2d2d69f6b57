//! The JavaScript boundary (wasm only): the `FusedRmsNorm` class (`facade/`) and
//! `GpuTensor` (`tensor.rs`); a call's argument object read once (`call_record.rs`, with its
//! JavaScript in `call.js`) and decoded (`args.rs`) by every entry point, the kept dispatch
//! (`call_cache.rs`) and the CPU backend's common call (`cpu_call.rs`) included: its fields'
//! types by `fields.rs` and `rotary_args.rs`, the arrays given for its results by
//! `caller_arrays.rs`, a refusal worded by `refused.rs`; options
//! (`options.rs`) read from JavaScript values (`value.rs`); each reader's keys from one table
//! (`keys.rs`); typed arrays as host data (`array.rs`); the TypeScript types (`types/`). What the package relies
//! on in wasm-bindgen's generated glue is in `glue.rs`; `freed_guard.js` and `dispose.d.ts`
//! are appended to that glue by `scripts/build.sh`.

mod args;
pub mod array;
mod bound;
mod call_cache;
mod call_codes;
mod call_js;
mod call_record;
pub(crate) mod caller_arrays;
mod cpu_call;
pub mod facade;
mod fields;
mod glue;
mod keys;
mod options;
mod panic;
mod refused;
mod rotary_args;
mod tensor;
mod types;
pub(crate) mod value;
