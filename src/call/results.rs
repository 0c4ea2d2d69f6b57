//! A call's results as the host receives them, and everything a finished call hands back.
//!
//! Natively a result is a Rust vector. In the browser it is a fresh typed array owned by
//! JavaScript, never a view into wasm memory (which a `memory.grow` detaches), or the
//! caller's own array ([`Given`]): the GPU driver copies each mapped chunk into it once
//! (`gpu/transfer/`), the CPU backend its numbers from wasm memory.

use std::rc::Rc;

use crate::call::dtype::Dtype;
use crate::call::error::Error;
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

/// The caller's own arrays a call's host results are written into (`output`, `sum`), where
/// it gave them: each of the result's length and dtype (`plan::check_written`), written only
/// once the whole result is at hand, so that a call that fails leaves them as they were.
#[derive(Default)]
pub struct Given {
    pub y: Option<HostVec>,
    pub sum: Option<HostVec>,
}

impl Given {
    /// Whether each array given still holds `len` elements: in the browser the caller may
    /// transfer or shrink its buffer while the call runs, and then nothing is written.
    pub fn check_intact(&self, len: usize) -> Result<(), Error> {
        for (name, v) in [("output", &self.y), ("sum", &self.sum)] {
            let Some(got) = v.as_ref().map(host_len) else {
                continue;
            };
            if got != len {
                return Err(Error::Type(format!(
                    "{name}: expected the array given to keep its {len} elements until the call \
                     resolved, got one of {got} (its buffer transferred or resized meanwhile)"
                )));
            }
        }
        Ok(())
    }

    /// The array `y` (or `v`) goes into: the one given, else a fresh one of `len` elements
    /// of `dtype`.
    pub fn take(slot: &mut Option<HostVec>, len: usize, dtype: Dtype) -> HostVec {
        slot.take().unwrap_or_else(|| new_host_vec(len, dtype))
    }
}

/// Elements of a result.
#[cfg(not(target_arch = "wasm32"))]
fn host_len(v: &HostVec) -> usize {
    v.len()
}

/// Elements of a result (0 once its buffer is detached).
#[cfg(target_arch = "wasm32")]
fn host_len(v: &HostVec) -> usize {
    match v {
        HostVec::F32(a) => a.length() as usize,
        HostVec::F16(a) => a.length() as usize,
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

/// A result computed in memory, as the host receives it: into the array given, else a
/// fresh one.
pub fn host_vec_into(data: &CpuData, given: Option<HostVec>) -> Result<HostVec, Error> {
    match given {
        Some(mut dst) => write_host(&mut dst, data).map(|()| dst),
        None => Ok(host_vec(data)),
    }
}

/// `data` over the given array `dst` of its length.
#[cfg(not(target_arch = "wasm32"))]
fn write_host(dst: &mut HostVec, data: &CpuData) -> Result<(), Error> {
    *dst = host_vec(data);
    Ok(())
}

/// `data` copied out of wasm memory into the given array `dst` of its length, with one
/// `set()` (the copy `host_vec`'s `slice()` makes, less a fresh array's allocation).
#[cfg(target_arch = "wasm32")]
fn write_host(dst: &mut HostVec, data: &CpuData) -> Result<(), Error> {
    use js_sys::{Float32Array, Uint16Array};
    // As in `host_vec`: the view lives only for this copy.
    match (dst, data) {
        (HostVec::F32(d), CpuData::F32(v)) => d.set(unsafe { &Float32Array::view(v) }, 0),
        (HostVec::F16(d), CpuData::F16(v)) => d.set(unsafe { &Uint16Array::view(v) }, 0),
        // `plan::check_written` refuses such an array before the call starts.
        _ => {
            return Err(Error::Type(
                "output: expected an array of the result's dtype, got another".into(),
            ))
        }
    }
    Ok(())
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
