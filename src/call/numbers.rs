//! What every layer knows of a call's numbers: their length, the CPU backend's own copies of
//! them, and where an upload of them goes.

/// Anything with a length in f32 elements.
pub trait Len {
    fn len(&self) -> usize;

    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Len for &[f32] {
    fn len(&self) -> usize {
        <[f32]>::len(self)
    }
}

/// Numbers in wasm memory (natively: in Rust vectors): the CPU backend's arrays and tensors.
#[derive(Clone, Debug, PartialEq)]
pub enum CpuData {
    F32(Vec<f32>),
    /// Half-precision bits.
    F16(Vec<u16>),
}

/// Where an upload goes: elements `start .. start + count` of an array, to the beginning
/// of `buffer`.
#[derive(Clone, Copy)]
pub struct Upload<'a> {
    pub queue: &'a wgpu::Queue,
    pub buffer: &'a wgpu::Buffer,
    pub start: usize,
    pub count: usize,
    /// Natively, large uploads go through staging buffers kept in the context's pool
    /// (see `native_arrays.rs`).
    #[cfg(not(target_arch = "wasm32"))]
    pub device: &'a wgpu::Device,
    #[cfg(not(target_arch = "wasm32"))]
    pub pool: &'a crate::gpu::pool::BufferPool,
}

/// An upload a tensor made while no device was live keeps until one is (see `instance.rs`).
pub type DeferredUpload = Box<dyn Fn(Upload) -> Result<(), String>>;
