//! Where a call's numbers live on the host, and how they cross to and from the GPU.
//!
//! Natively they are Rust slices and vectors. In the browser they stay JavaScript
//! `Float32Array`s: uploads go through `GPUQueue.writeBuffer` straight from the caller's
//! array, and results are copied once from the mapped range into a fresh `Float32Array`.
//! Routing them through wasm memory would cost two extra copies per array and grow the
//! module's memory with every large call (it never shrinks).

use std::rc::Rc;

use crate::shape::Len;
use crate::tensor::{Dtype, Tensor};

/// An array of numbers the driver can upload a range of.
pub trait HostArray: Len {
    /// Writes elements `start .. start + count` to the beginning of `buffer`; the error says
    /// why the browser refused the array.
    fn upload(
        &self,
        queue: &wgpu::Queue,
        buffer: &wgpu::Buffer,
        start: usize,
        count: usize,
    ) -> Result<(), String>;

    fn dtype(&self) -> Dtype {
        Dtype::F32
    }

    /// The tensor holding this array on the GPU already, if it is one: bound as it is.
    fn resident(&self) -> Option<&Rc<Tensor>> {
        None
    }
}

/// An argument that is either host data or a GPU-resident tensor.
#[derive(Clone)]
pub enum Arg<H> {
    Host(H),
    Gpu(Rc<Tensor>),
}

impl<H: Len> Len for Arg<H> {
    fn len(&self) -> usize {
        match self {
            Arg::Host(h) => h.len(),
            Arg::Gpu(t) => t.len,
        }
    }
}

impl<H: HostArray> HostArray for Arg<H> {
    fn upload(
        &self,
        queue: &wgpu::Queue,
        buffer: &wgpu::Buffer,
        start: usize,
        count: usize,
    ) -> Result<(), String> {
        match self {
            Arg::Host(h) => h.upload(queue, buffer, start, count),
            Arg::Gpu(_) => Err("a GpuTensor is bound as it is, never uploaded".into()),
        }
    }

    fn resident(&self) -> Option<&Rc<Tensor>> {
        match self {
            Arg::Host(_) => None,
            Arg::Gpu(t) => Some(t),
        }
    }

    fn dtype(&self) -> Dtype {
        match self {
            Arg::Host(h) => h.dtype(),
            Arg::Gpu(t) => t.dtype,
        }
    }
}

#[cfg(not(target_arch = "wasm32"))]
mod imp {
    use super::HostArray;
    use crate::shape::Len;
    use crate::tensor::Dtype;

    impl HostArray for &[f32] {
        fn upload(
            &self,
            queue: &wgpu::Queue,
            buffer: &wgpu::Buffer,
            start: usize,
            count: usize,
        ) -> Result<(), String> {
            let bytes: Vec<u8> = self[start..start + count]
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect();
            queue.write_buffer(buffer, 0, &bytes);
            Ok(())
        }
    }

    impl Len for &[u16] {
        fn len(&self) -> usize {
            <[u16]>::len(self)
        }
    }

    /// Half-precision numbers as their bits.
    impl HostArray for &[u16] {
        fn upload(
            &self,
            queue: &wgpu::Queue,
            buffer: &wgpu::Buffer,
            start: usize,
            count: usize,
        ) -> Result<(), String> {
            let mut bytes: Vec<u8> = self[start..start + count]
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect();
            // writeBuffer moves whole 4-byte words.
            bytes.resize(bytes.len().next_multiple_of(4), 0);
            queue.write_buffer(buffer, 0, &bytes);
            Ok(())
        }

        fn dtype(&self) -> Dtype {
            Dtype::F16
        }
    }

    /// A result under assembly, one mapped chunk after another; f16 results are widened to
    /// f32, which is exact.
    pub type HostVec = Vec<f32>;

    /// The bits of an f32 result (for words that are not numbers, like timestamps).
    pub fn host_f32_bits(v: HostVec) -> Vec<u32> {
        v.into_iter().map(f32::to_bits).collect()
    }

    pub fn new_host_vec(len: usize, _dtype: Dtype) -> HostVec {
        Vec::with_capacity(len)
    }

    /// Appends `count` numbers read from the mapped `buffer` at element `start` of `dst`.
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
                    .map(|b| crate::reference::f16_value(u16::from_le_bytes([b[0], b[1]]))),
            ),
        }
    }
}

#[cfg(target_arch = "wasm32")]
mod imp {
    use super::HostArray;
    use crate::shape::Len;
    use crate::tensor::Dtype;
    use js_sys::{ArrayBuffer, Float32Array, Reflect, Uint16Array};
    use wasm_bindgen::prelude::*;
    use wasm_bindgen::JsCast;

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

    /// A JavaScript typed array: `Float32Array` for f32; `Uint16Array` (the bits) or
    /// `Float16Array` for f16.
    #[derive(Clone)]
    pub struct JsArray {
        pub array: JsValue,
        pub dtype: Dtype,
        pub len: usize,
    }

    impl JsArray {
        /// A private copy, for calls that must wait before uploading.
        pub fn copy(&self) -> JsArray {
            let slice: js_sys::Function = Reflect::get(&self.array, &"slice".into())
                .unwrap_or(JsValue::UNDEFINED)
                .unchecked_into();
            let array = slice
                .call0(&self.array)
                .unwrap_or_else(|_| self.array.clone());
            JsArray { array, ..*self }
        }
    }

    impl Len for JsArray {
        fn len(&self) -> usize {
            self.len
        }
    }

    impl HostArray for JsArray {
        fn upload(
            &self,
            queue: &wgpu::Queue,
            buffer: &wgpu::Buffer,
            start: usize,
            count: usize,
        ) -> Result<(), String> {
            let (Some(q), Some(b)) = (queue.as_webgpu(), buffer.as_webgpu()) else {
                return Err("WebGPU objects expected in a wasm build".into());
            };
            let q: &JsQueue = q.unchecked_ref();
            let written = if (count * self.dtype.bytes()) % 4 == 0 {
                q.write_buffer(b.as_ref(), 0.0, &self.array, start as f64, count as f64)
            } else {
                // writeBuffer moves whole 4-byte words: pad an odd count of halves.
                let padded = Uint16Array::new_with_length(count as u32 + 1);
                // A view of the same bits (`new Uint16Array(array)` would convert values).
                let get = |k: &str| {
                    js_sys::Reflect::get(&self.array, &k.into()).unwrap_or(JsValue::UNDEFINED)
                };
                let bits = Uint16Array::new_with_byte_offset_and_length(
                    &get("buffer"),
                    get("byteOffset").as_f64().unwrap_or(0.0) as u32,
                    self.len as u32,
                );
                padded.set(&bits.subarray(start as u32, (start + count) as u32), 0);
                q.write_buffer(b.as_ref(), 0.0, &padded, 0.0, (count + 1) as f64)
            };
            written.map_err(|e| {
                js_sys::Reflect::get(&e, &"message".into())
                    .ok()
                    .and_then(|m| m.as_string())
                    .unwrap_or_else(|| "writeBuffer failed".into())
            })
        }

        fn dtype(&self) -> Dtype {
            self.dtype
        }
    }

    /// A result under assembly: a fresh typed array owned by JavaScript.
    pub enum HostVec {
        F32(Float32Array),
        F16(Uint16Array),
    }

    impl From<HostVec> for JsValue {
        fn from(v: HostVec) -> JsValue {
            match v {
                HostVec::F32(a) => a.into(),
                // Always the bits: every browser has Uint16Array and every TypeScript lib
                // types it (`new Float16Array(bits.buffer)` views it where that exists).
                HostVec::F16(a) => a.into(),
            }
        }
    }

    /// The bits of an f32 result (for words that are not numbers, like timestamps). Typed
    /// array copies move bytes, so no NaN pattern is canonicalized on the way.
    pub fn host_f32_bits(v: HostVec) -> Vec<u32> {
        match v {
            HostVec::F32(a) => js_sys::Uint32Array::new(&a.buffer()).to_vec(),
            HostVec::F16(a) => a.to_vec().into_iter().map(u32::from).collect(),
        }
    }

    pub fn new_host_vec(len: usize, dtype: Dtype) -> HostVec {
        match dtype {
            Dtype::F32 => HostVec::F32(Float32Array::new_with_length(len as u32)),
            Dtype::F16 => HostVec::F16(Uint16Array::new_with_length(len as u32)),
        }
    }

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
}

pub use imp::*;
