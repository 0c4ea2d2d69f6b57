//! In the browser, numbers cross between the caller's typed arrays and WebGPU's buffers
//! directly, never through wasm memory: `writeBuffer` from the typed array, and one copy from
//! a mapped range into the result's typed array.

use std::any::Any;
use std::ops::Range;

use js_sys::{ArrayBuffer, Float32Array, Reflect, Uint16Array};
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::{JsCast, JsValue};

use crate::call::dtype::Dtype;
use crate::call::numbers::Upload;
use crate::call::results::HostVec;

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

/// Copies `count` numbers from the mapped `buffer` into `dst` from element `start`: one copy
/// from the mapped range into the typed array, never through wasm memory.
pub fn read_mapped(
    buffer: &wgpu::Buffer,
    dst: &mut HostVec,
    start: usize,
    count: usize,
    dtype: Dtype,
) {
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
