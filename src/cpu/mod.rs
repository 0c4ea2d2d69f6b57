//! The CPU backend, for browsers without a usable WebGPU: its driver (the same calls as the
//! GPU driver, in wasm memory) over its kernel (the WGSL's contract in Rust, with simd128), and
//! the browser's fast path for host arrays, computed in scratch memory kept across calls; and
//! the cos and sin of a rotary angle as the models compute them (`rope`).

pub mod driver;
mod element;
pub mod half;
mod kernel;
pub mod memory;
pub mod results;
pub mod rope;
mod row;
pub mod scratch;

pub use element::Element;
pub use kernel::{norm, norm_in_place};
