//! The JavaScript boundary (wasm only): the `FusedRmsNorm` class, reading arguments and
//! options from JavaScript values, host arrays as `Float32Array`s, tensors, and the
//! TypeScript types; `freed_guard.js` and `dispose.d.ts` are appended to the generated glue.

mod args;
pub mod array;
mod cpu_call;
pub mod facade;
mod options;
mod panic;
mod tensor;
mod tensor_call;
mod types;
pub(crate) mod value;
