//! A call described without a backend: its arguments and where their numbers live, the
//! checks that turn them into a shape and a plan, dtypes and the named errors.

pub mod checks;
pub mod device;
pub mod dtype;
pub mod error;
pub mod host;
#[cfg(not(target_arch = "wasm32"))]
pub mod native_arrays;
pub mod numbers;
pub mod options;
pub mod plan;
pub mod shape;
pub mod tensor;

/// This target's host arrays and results: Rust slices and vectors natively, JavaScript typed
/// arrays in the browser.
#[cfg(target_arch = "wasm32")]
pub use crate::js::array as arrays;
#[cfg(not(target_arch = "wasm32"))]
pub use native_arrays as arrays;
