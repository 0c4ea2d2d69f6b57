//! The CPU backend, for browsers without a usable WebGPU: its driver (the same calls as the
//! GPU driver, in wasm memory) over its kernel (the WGSL's contract in Rust, with simd128).

pub mod driver;
mod element;
pub mod half;
mod kernel;
mod row;

pub use kernel::{norm_f16, norm_f16_in_place, norm_f32, norm_f32_in_place};
