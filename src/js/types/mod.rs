//! The package's TypeScript declarations, written out rather than derived: wasm-bindgen
//! would type every argument as one loose interface and every result as one union, while an
//! app needs the result its call actually resolves with (a `Uint16Array` for f16 data, a
//! `GpuTensor` for `output: "gpu"`, nothing in place) and tensors typed by dtype. The classes
//! are `skip_typescript` in `facade/mod.rs`, `tensor.rs` and `bound.rs`; the type tests
//! (`tests/types/`) check every overload against what the runtime accepts.
//!
//! One file per concern: the data a call takes (`data.rs`), the argument objects and results
//! of the calls (`calls.rs`), the kernel as `prepare` and `kernelSource` describe it
//! (`kernel.rs`), and the classes with their options and counters (`classes.rs`).

mod calls;
mod classes;
mod data;
mod kernel;
