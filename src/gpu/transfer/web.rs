//! In the browser, numbers cross between the caller's typed arrays and WebGPU's buffers
//! directly, never through wasm memory: `writeBuffer` from the typed array, and one copy from
//! a mapped range into the result's typed array.

use std::any::Any;
use std::ops::Range;

use js_sys::{ArrayBuffer, Float32Array, Reflect, Uint16Array, Uint32Array};
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::{JsCast, JsValue};

use crate::call::dtype::Dtype;
use crate::call::numbers::Upload;
use crate::support::typed_result::TypedResult;

use super::BufferUpload;

#[wasm_bindgen]
extern "C" {
    type JsQueue;
    // With a TypedArray source, dataOffset and size count elements, not bytes.
    #[wasm_bindgen(catch, method, js_name = writeBuffer)]
    fn write_buffer(
        this: &JsQueue,
        buffer: &JsValue,
        offset: f64,
        data: &JsValue,
        data_offset: f64,
        size: f64,
    ) -> Result<(), JsValue>;

    type JsBuffer;
    #[wasm_bindgen(method, js_name = getMappedRange)]
    fn get_mapped_range(this: &JsBuffer, offset: f64, size: f64) -> ArrayBuffer;
}

impl Upload for BufferUpload<'_> {
    fn range(&self) -> Range<usize> {
        self.start..self.start + self.count
    }

    fn write_typed_array(&self, array: &dyn Any, elements: Range<usize>) -> Result<(), String> {
        let Some(array) = array.downcast_ref::<JsValue>() else {
            return Err("writeBuffer: expected a typed array's JsValue".into());
        };
        let (Some(q), Some(b)) = (self.queue.as_webgpu(), self.buffer.as_webgpu()) else {
            return Err("WebGPU objects expected in a wasm build".into());
        };
        let q: &JsQueue = q.unchecked_ref();
        let (start, count) = (elements.start as f64, elements.len() as f64);
        q.write_buffer(b.as_ref(), 0.0, array, start, count)
            .map_err(|e| {
                Reflect::get(&e, &"message".into())
                    .ok()
                    .and_then(|m| m.as_string())
                    .unwrap_or_else(|| "writeBuffer failed".into())
            })
    }
}

/// An empty result of `len` elements of `dtype` to fill: a fresh typed array.
pub fn new_result(len: usize, dtype: Dtype) -> TypedResult {
    match dtype {
        Dtype::F32 => TypedResult::F32(Float32Array::new_with_length(len as u32)),
        Dtype::F16 => TypedResult::F16(Uint16Array::new_with_length(len as u32)),
    }
}

/// Copies `count` numbers from the mapped `buffer` into `dst` from element `start`: one copy
/// from the mapped range into the typed array, never through wasm memory.
pub fn read_mapped(
    buffer: &wgpu::Buffer,
    dst: &mut TypedResult,
    start: usize,
    count: usize,
    dtype: Dtype,
) {
    let range = mapped_range(buffer, count * dtype.bytes());
    match dst {
        TypedResult::F32(d) => d.set(&Float32Array::new(&range), start as u32),
        TypedResult::F16(d) => d.set(
            &Uint16Array::new_with_byte_offset_and_length(&range, 0, count as u32),
            start as u32,
        ),
    }
}

/// The first `count` words (`u32`) of the mapped `buffer`, copied into wasm memory.
pub fn read_words(buffer: &wgpu::Buffer, count: usize) -> Vec<u32> {
    let range = mapped_range(buffer, count * 4);
    Uint32Array::new_with_byte_offset_and_length(&range, 0, count as u32).to_vec()
}

/// The mapped range of `buffer`'s first `bytes`, in whole words.
fn mapped_range(buffer: &wgpu::Buffer, bytes: usize) -> ArrayBuffer {
    let Some(b) = buffer.as_webgpu() else {
        unreachable!("webgpu backend")
    };
    let b: &JsBuffer = b.unchecked_ref();
    b.get_mapped_range(0.0, bytes.next_multiple_of(4) as f64)
}
