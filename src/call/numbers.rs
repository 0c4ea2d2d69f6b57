//! What every layer knows of a call's numbers: their length, the CPU backend's own copies of
//! them, and where an upload of them goes.

#[cfg(target_arch = "wasm32")]
use std::any::Any;
use std::ops::Range;

/// Anything with a length in elements of its dtype (f32 numbers, or f16 halves).
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

/// Numbers in Rust's memory (wasm memory in the browser) as an upload takes them.
#[cfg(not(target_arch = "wasm32"))]
#[derive(Clone, Copy, Debug)]
pub enum Numbers<'a> {
    F32(&'a [f32]),
    /// Half-precision bits.
    F16(&'a [u16]),
}

/// Where an upload goes: elements [`range`](Upload::range) of an array, to the beginning of
/// a buffer of the backend's. The GPU driver implements it (`gpu/transfer/`); a host
/// array writes its own numbers through it (`HostArray::upload`), which natively are Rust
/// slices and in the browser JavaScript typed arrays, uploaded straight from JavaScript.
pub trait Upload {
    /// The array's elements that go.
    fn range(&self) -> Range<usize>;

    /// Writes `numbers`, the range's, to the buffer.
    #[cfg(not(target_arch = "wasm32"))]
    fn write(&self, numbers: Numbers) -> Result<(), String>;

    /// Writes the elements `elements` of the typed array `array` to the buffer (WebGPU's
    /// `writeBuffer`, which moves whole 4-byte words); the error says why the browser
    /// refused it. `array` is the typed array's JavaScript value (a `JsValue`), which only
    /// the driver reads: `call/` passes it along as it passes an app's buffer
    /// (`host::BufferHandle`).
    #[cfg(target_arch = "wasm32")]
    fn write_typed_array(&self, array: &dyn Any, elements: Range<usize>) -> Result<(), String>;
}

/// An upload a tensor made while no device was live keeps until one is (see `instance.rs`).
pub type DeferredUpload = Box<dyn Fn(&dyn Upload) -> Result<(), String>>;
