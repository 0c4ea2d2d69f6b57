//! Where a call's numbers live on the host, and how they cross to and from the GPU.
//!
//! Natively they are Rust slices and vectors. In the browser they stay JavaScript
//! `Float32Array`s: uploads go through `GPUQueue.writeBuffer` straight from the caller's
//! array, and results are copied once from the mapped range into a fresh `Float32Array`.
//! Routing them through wasm memory would cost two extra copies per array and grow the
//! module's memory with every large call (it never shrinks).

use std::rc::Rc;

use crate::shape::Len;
use crate::tensor::Tensor;

/// An f32 array the driver can upload a range of.
pub trait HostArray: Len {
    /// Writes elements `start .. start + count` to the beginning of `buffer`.
    fn upload(&self, queue: &wgpu::Queue, buffer: &wgpu::Buffer, start: usize, count: usize);

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
    fn upload(&self, queue: &wgpu::Queue, buffer: &wgpu::Buffer, start: usize, count: usize) {
        match self {
            Arg::Host(h) => h.upload(queue, buffer, start, count),
            Arg::Gpu(t) => unreachable!("resident tensor {} is bound, not uploaded", t.len),
        }
    }

    fn resident(&self) -> Option<&Rc<Tensor>> {
        match self {
            Arg::Host(_) => None,
            Arg::Gpu(t) => Some(t),
        }
    }
}

#[cfg(not(target_arch = "wasm32"))]
mod imp {
    use super::HostArray;

    impl HostArray for &[f32] {
        fn upload(&self, queue: &wgpu::Queue, buffer: &wgpu::Buffer, start: usize, count: usize) {
            let bytes: Vec<u8> = self[start..start + count].iter().flat_map(|v| v.to_le_bytes()).collect();
            queue.write_buffer(buffer, 0, &bytes);
        }
    }

    /// A result under assembly, one mapped chunk after another.
    pub type HostVec = Vec<f32>;

    pub fn new_host_vec(len: usize) -> HostVec {
        Vec::with_capacity(len)
    }

    /// Appends `count` f32 read from the mapped `buffer` at element `start` of `dst`.
    pub fn read_mapped(buffer: &wgpu::Buffer, dst: &mut HostVec, _start: usize, count: usize) {
        let view = buffer.slice(..count as u64 * 4).get_mapped_range().expect("buffer was mapped");
        dst.extend(view.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])));
    }
}

#[cfg(target_arch = "wasm32")]
mod imp {
    use super::HostArray;
    use crate::shape::Len;
    use js_sys::{ArrayBuffer, Float32Array};
    use wasm_bindgen::prelude::*;
    use wasm_bindgen::JsCast;

    #[wasm_bindgen]
    extern "C" {
        type JsQueue;
        // With a TypedArray source, dataOffset and size count elements, not bytes.
        #[wasm_bindgen(method, js_name = writeBuffer)]
        fn write_buffer(this: &JsQueue, buffer: &JsValue, offset: f64, data: &Float32Array, data_offset: f64, size: f64);

        type JsBuffer;
        #[wasm_bindgen(method, js_name = getMappedRange)]
        fn get_mapped_range(this: &JsBuffer, offset: f64, size: f64) -> ArrayBuffer;
    }

    impl Len for Float32Array {
        fn len(&self) -> usize {
            self.length() as usize
        }
    }

    impl HostArray for Float32Array {
        fn upload(&self, queue: &wgpu::Queue, buffer: &wgpu::Buffer, start: usize, count: usize) {
            let (Some(q), Some(b)) = (queue.as_webgpu(), buffer.as_webgpu()) else {
                unreachable!("the webgpu backend is the only one in a wasm build")
            };
            let q: &JsQueue = q.unchecked_ref();
            q.write_buffer(b.as_ref(), 0.0, self, start as f64, count as f64);
        }
    }

    pub type HostVec = Float32Array;

    pub fn new_host_vec(len: usize) -> HostVec {
        Float32Array::new_with_length(len as u32)
    }

    pub fn read_mapped(buffer: &wgpu::Buffer, dst: &mut HostVec, start: usize, count: usize) {
        let Some(b) = buffer.as_webgpu() else { unreachable!("webgpu backend") };
        let b: &JsBuffer = b.unchecked_ref();
        let range = b.get_mapped_range(0.0, (count * 4) as f64);
        dst.set(&Float32Array::new(&range), start as u32);
    }
}

pub use imp::{new_host_vec, read_mapped, HostVec};
