//! What the package relies on in wasm-bindgen's generated JavaScript glue
//! (`pkg/webgpu_rmsnorm.js`) beyond wasm-bindgen's documented API, all of it here, for the
//! version [`WRITTEN_FOR`]. Rust reads the names below from here; `freed_guard.js`, which
//! `scripts/build.sh` appends to the glue (and so cannot import from Rust), declares the same
//! ones at its top.
//!
//! Checked three ways, each failing with what to re-check: `tests/js_boundary.rs` (native)
//! compares [`WRITTEN_FOR`] with the wasm-bindgen in `Cargo.lock`, the names in
//! `freed_guard.js` with these, and a built glue's text with what is relied on; the browser
//! suite (`tests/e2e/browsers/entry-points.test.mjs`, "wasm-bindgen's glue") checks them on live
//! objects.
//!
//! Pure data, so that the native tests compile this file as it is; Rust itself reads only
//! [`POINTER_FIELD`], the guard and the tests the rest.
#![allow(dead_code)]

/// The wasm-bindgen version whose generated glue was read for what follows. Upgrading means
/// reading the new glue for each item below, then changing this.
pub const WRITTEN_FOR: &str = "0.2.130";

/// The field where an object of an exported class (`FusedRmsNorm`, `GpuTensor`, `BoundNorm`) keeps its
/// pointer into wasm memory: a non-zero number while live, `0` once `free()` ran. Read to
/// refuse a freed object with `InvalidStateError` before the glue would pass a null pointer
/// to Rust, which throws a generic error through wasm frames.
pub const POINTER_FIELD: &str = "__wbg_ptr";

/// The glue's module-level binding of the instance's exports: `undefined` until `init()` has
/// finished, so that `create` before it rejects with `InvalidStateError`.
pub const EXPORTS_BINDING: &str = "wasm";

/// The prefix of the glue's own members of a class (`__destroy_into_raw`, `__wrap`), which
/// the guard leaves as they are.
pub const INTERNAL_PREFIX: &str = "__";

/// Also relied on, and checked with the names above: the exported classes are bindings of
/// the glue's module scope (the guard, appended to it, names them); their methods and
/// accessors are own properties of their prototypes; `free` is a method of each.
pub const CLASSES: [&str; 3] = ["FusedRmsNorm", "GpuTensor", "BoundNorm"];
