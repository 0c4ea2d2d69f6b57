//! How numbers cross between the host and the GPU's buffers: uploads into a buffer
//! ([`BufferUpload`], which implements `call::numbers::Upload`), and a mapped buffer read
//! into a host result (`read_mapped`). Each platform moves them its own way: natively as
//! Rust slices, large uploads through pooled staging buffers ([`native`]); in the browser
//! straight between the caller's typed arrays and WebGPU, never through wasm memory
//! ([`web`]).

#[cfg(not(target_arch = "wasm32"))]
use crate::gpu::pool::BufferPool;

#[cfg(not(target_arch = "wasm32"))]
pub mod native;
#[cfg(target_arch = "wasm32")]
pub mod web;

/// An upload into `buffer` on a context's device: elements `start .. start + count` of an
/// array, to the buffer's beginning.
pub struct BufferUpload<'a> {
    pub queue: &'a wgpu::Queue,
    pub buffer: &'a wgpu::Buffer,
    pub start: usize,
    pub count: usize,
    /// Natively, large uploads go through staging buffers kept in the context's pool.
    #[cfg(not(target_arch = "wasm32"))]
    pub device: &'a wgpu::Device,
    #[cfg(not(target_arch = "wasm32"))]
    pub pool: &'a BufferPool,
}
