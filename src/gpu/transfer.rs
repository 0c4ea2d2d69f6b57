//! How numbers cross between the host and the GPU's buffers: reading a mapped buffer into a
//! host result ([`read_mapped`]).

use crate::call::dtype::Dtype;
use crate::call::results::HostVec;

/// Appends `count` numbers read from the mapped `buffer` to `dst` (natively chunks arrive in
/// order, so `_start` is where `dst` ends).
#[cfg(not(target_arch = "wasm32"))]
pub fn read_mapped(
    buffer: &wgpu::Buffer,
    dst: &mut HostVec,
    _start: usize,
    count: usize,
    dtype: Dtype,
) {
    let size = (count * dtype.bytes()).next_multiple_of(4) as u64;
    let view = buffer
        .slice(..size)
        .get_mapped_range()
        .expect("buffer was mapped");
    match dtype {
        Dtype::F32 => dst.extend(
            view.chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        ),
        Dtype::F16 => dst.extend(
            view.chunks_exact(2)
                .take(count)
                .map(|b| crate::call::dtype::f16_value(u16::from_le_bytes([b[0], b[1]]))),
        ),
    }
}

#[cfg(target_arch = "wasm32")]
#[wasm_bindgen::prelude::wasm_bindgen]
extern "C" {
    type JsBuffer;
    #[wasm_bindgen(method, js_name = getMappedRange)]
    fn get_mapped_range(this: &JsBuffer, offset: f64, size: f64) -> js_sys::ArrayBuffer;
}

/// Copies `count` numbers from the mapped `buffer` into `dst` from element `start`: one copy
/// from the mapped range into the typed array, never through wasm memory.
#[cfg(target_arch = "wasm32")]
pub fn read_mapped(
    buffer: &wgpu::Buffer,
    dst: &mut HostVec,
    start: usize,
    count: usize,
    dtype: Dtype,
) {
    use js_sys::{Float32Array, Uint16Array};
    use wasm_bindgen::JsCast;
    let Some(b) = buffer.as_webgpu() else {
        unreachable!("webgpu backend")
    };
    let b: &JsBuffer = b.unchecked_ref();
    let range = b.get_mapped_range(0.0, (count * dtype.bytes()).next_multiple_of(4) as f64);
    match dst {
        HostVec::F32(d) => d.set(&Float32Array::new(&range), start as u32),
        HostVec::F16(d) => d.set(
            &Uint16Array::new_with_byte_offset_and_length(&range, 0, count as u32),
            start as u32,
        ),
    }
}
