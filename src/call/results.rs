//! A call's results as the host receives them, and everything a finished call hands back.
//!
//! Natively a result is a Rust vector. In the browser it is a fresh typed array owned by
//! JavaScript, never a view into wasm memory (which a `memory.grow` detaches): the GPU
//! driver copies each mapped chunk into it once (`gpu/transfer.rs`), the CPU backend its
//! numbers from wasm memory.

use std::rc::Rc;

use crate::call::dtype::Dtype;
use crate::call::numbers::CpuData;
use crate::call::tensor::Tensor;

/// A call's results read back: `y`, and `v` when the `sum` output was asked for.
pub struct Output {
    pub y: HostVec,
    pub sum: Option<HostVec>,
}

/// Results left on the device, as new tensors.
pub struct GpuOutput {
    pub y: Rc<Tensor>,
    pub sum: Option<Rc<Tensor>>,
}

/// Everything a finished call hands back; which parts exist depends on its request.
#[derive(Default)]
pub struct Finished {
    /// Read back (`Destination::Host`).
    pub host: Option<Output>,
    /// New tensors (`Destination::Gpu`).
    pub gpu: Option<GpuOutput>,
    /// The timed pass's GPU time in nanoseconds, where the device has timestamps.
    pub ns: Option<f64>,
}

/// A result under assembly, one chunk after another; f16 results are widened to f32, which
/// is exact.
#[cfg(not(target_arch = "wasm32"))]
pub type HostVec = Vec<f32>;

/// A result under assembly: a fresh typed array owned by JavaScript, f16 as its bits.
#[cfg(target_arch = "wasm32")]
pub enum HostVec {
    F32(js_sys::Float32Array),
    F16(js_sys::Uint16Array),
}

#[cfg(target_arch = "wasm32")]
impl From<HostVec> for wasm_bindgen::JsValue {
    fn from(v: HostVec) -> wasm_bindgen::JsValue {
        match v {
            HostVec::F32(a) => a.into(),
            // Always the bits: every browser has Uint16Array and every TypeScript lib
            // types it (`new Float16Array(bits.buffer)` views it where that exists).
            HostVec::F16(a) => a.into(),
        }
    }
}

/// An empty result of `len` elements of `dtype` to fill.
#[cfg(not(target_arch = "wasm32"))]
pub fn new_host_vec(len: usize, _dtype: Dtype) -> HostVec {
    Vec::with_capacity(len)
}

/// An empty result of `len` elements of `dtype` to fill.
#[cfg(target_arch = "wasm32")]
pub fn new_host_vec(len: usize, dtype: Dtype) -> HostVec {
    match dtype {
        Dtype::F32 => HostVec::F32(js_sys::Float32Array::new_with_length(len as u32)),
        Dtype::F16 => HostVec::F16(js_sys::Uint16Array::new_with_length(len as u32)),
    }
}

/// The bits of an f32 result (for words that are not numbers, like timestamps).
#[cfg(not(target_arch = "wasm32"))]
pub fn host_f32_bits(v: HostVec) -> Vec<u32> {
    v.into_iter().map(f32::to_bits).collect()
}

/// The bits of an f32 result (for words that are not numbers, like timestamps). Typed
/// array copies move bytes, so no NaN pattern is canonicalized on the way.
#[cfg(target_arch = "wasm32")]
pub fn host_f32_bits(v: HostVec) -> Vec<u32> {
    match v {
        HostVec::F32(a) => js_sys::Uint32Array::new(&a.buffer()).to_vec(),
        HostVec::F16(a) => a.to_vec().into_iter().map(u32::from).collect(),
    }
}

/// A result computed in memory, as the host receives it.
#[cfg(not(target_arch = "wasm32"))]
pub fn host_vec(data: &CpuData) -> HostVec {
    match data {
        CpuData::F32(v) => v.clone(),
        CpuData::F16(v) => v
            .iter()
            .map(|&h| crate::call::dtype::f16_value(h))
            .collect(),
    }
}

/// A result computed in wasm memory, copied out into a fresh typed array.
#[cfg(target_arch = "wasm32")]
pub fn host_vec(data: &CpuData) -> HostVec {
    use js_sys::{Float32Array, Uint16Array};
    // `slice()` of a view: `new Float32Array(view)` (js-sys's `From<&[f32]>`) took about
    // twice `slice()`'s time in Chromium (docs/performance.md, "Host arrays a block at a
    // time"). The view
    // lives only for this copy: nothing allocates meanwhile, so wasm memory cannot grow and
    // detach it.
    match data {
        CpuData::F32(v) => HostVec::F32(unsafe { Float32Array::view(v) }.slice(0, v.len() as u32)),
        CpuData::F16(v) => HostVec::F16(unsafe { Uint16Array::view(v) }.slice(0, v.len() as u32)),
    }
}
