//! Where a call's numbers live on the host, and how they cross to and from the GPU.
//!
//! Natively they are Rust slices and vectors. In the browser they stay JavaScript
//! `Float32Array`s: uploads go through `GPUQueue.writeBuffer` straight from the caller's
//! array, and results are copied once from the mapped range into a fresh `Float32Array`.
//! Routing them through wasm memory would cost two extra copies per array and grow the
//! module's memory with every large call (it never shrinks).

use std::rc::Rc;

use crate::app_buffer::AppBuffer;
use crate::dtype::Dtype;
use crate::shape::Len;
use crate::tensor::Tensor;

/// A private copy of host data, for a call or an upload that waits for a device before it
/// can upload (the caller may change its own array as soon as the call returns).
pub type OwnedArray = Rc<dyn HostArray>;

/// Where an upload goes: elements `start .. start + count` of an array, to the beginning
/// of `buffer`.
#[derive(Clone, Copy)]
pub struct Upload<'a> {
    pub queue: &'a wgpu::Queue,
    pub buffer: &'a wgpu::Buffer,
    pub start: usize,
    pub count: usize,
}

/// An array of numbers the driver can upload a range of.
pub trait HostArray: Len {
    /// Writes a range of the array to a buffer; the error says why the browser refused it.
    fn upload(&self, to: Upload) -> Result<(), String>;

    fn dtype(&self) -> Dtype {
        Dtype::F32
    }

    /// The tensor holding this array on the GPU already, if it is one: bound as it is.
    fn resident(&self) -> Option<&Rc<Tensor>> {
        None
    }

    /// The app's GPU buffer holding this array, if it is one: copied on the GPU, never
    /// through the host.
    fn app_buffer(&self) -> Option<&AppBuffer> {
        None
    }

    /// This argument with any host data copied (tensors stay as they are).
    fn detach(&self) -> Arg<OwnedArray>;

    /// The numbers copied into wasm memory, for the CPU backend; the error says why the
    /// browser refused the array.
    fn to_cpu(&self) -> Result<CpuData, String>;
}

/// Numbers in wasm memory (natively: in Rust vectors): the CPU backend's arrays and tensors.
#[derive(Clone, Debug, PartialEq)]
pub enum CpuData {
    F32(Vec<f32>),
    /// Half-precision bits.
    F16(Vec<u16>),
}

impl Len for OwnedArray {
    fn len(&self) -> usize {
        (**self).len()
    }
}

impl HostArray for OwnedArray {
    fn upload(&self, to: Upload) -> Result<(), String> {
        (**self).upload(to)
    }

    fn dtype(&self) -> Dtype {
        (**self).dtype()
    }

    fn detach(&self) -> Arg<OwnedArray> {
        Arg::Host(self.clone())
    }

    fn to_cpu(&self) -> Result<CpuData, String> {
        (**self).to_cpu()
    }
}

/// An argument: host data, a GPU-resident tensor, or a buffer of the app's on the device.
#[derive(Clone)]
pub enum Arg<H> {
    Host(H),
    Gpu(Rc<Tensor>),
    Buffer(AppBuffer),
}

impl<H> Arg<H> {
    /// Whether `self` and `other` are the same memory on the GPU (host data never is).
    pub fn same_storage(&self, other: &Arg<H>) -> bool {
        match (self, other) {
            (Arg::Gpu(a), Arg::Gpu(b)) => Rc::ptr_eq(a, b),
            (Arg::Buffer(a), Arg::Buffer(b)) => a.handle() == b.handle(),
            _ => false,
        }
    }
}

impl<H: Len> Len for Arg<H> {
    fn len(&self) -> usize {
        match self {
            Arg::Host(h) => h.len(),
            Arg::Gpu(t) => t.len,
            Arg::Buffer(b) => b.len,
        }
    }
}

impl<H: HostArray> HostArray for Arg<H> {
    fn upload(&self, to: Upload) -> Result<(), String> {
        match self {
            Arg::Host(h) => h.upload(to),
            Arg::Gpu(_) => Err("a GpuTensor is bound as it is, never uploaded".into()),
            Arg::Buffer(_) => Err("a GPUBuffer is copied on the GPU, never uploaded".into()),
        }
    }

    fn resident(&self) -> Option<&Rc<Tensor>> {
        match self {
            Arg::Gpu(t) => Some(t),
            Arg::Host(_) | Arg::Buffer(_) => None,
        }
    }

    fn app_buffer(&self) -> Option<&AppBuffer> {
        match self {
            Arg::Buffer(b) => Some(b),
            Arg::Host(_) | Arg::Gpu(_) => None,
        }
    }

    fn dtype(&self) -> Dtype {
        match self {
            Arg::Host(h) => h.dtype(),
            Arg::Gpu(t) => t.dtype,
            Arg::Buffer(b) => b.dtype,
        }
    }

    fn detach(&self) -> Arg<OwnedArray> {
        match self {
            Arg::Host(h) => h.detach(),
            Arg::Gpu(t) => Arg::Gpu(t.clone()),
            Arg::Buffer(b) => Arg::Buffer(b.clone()),
        }
    }

    fn to_cpu(&self) -> Result<CpuData, String> {
        match self {
            Arg::Host(h) => h.to_cpu(),
            Arg::Gpu(_) => Err("a GpuTensor is used as it is, never copied".into()),
            Arg::Buffer(_) => Err("a GPUBuffer is copied on the GPU, never to the host".into()),
        }
    }
}

#[cfg(not(target_arch = "wasm32"))]
mod imp {
    use std::rc::Rc;

    use super::{Arg, CpuData, HostArray, OwnedArray, Upload};
    use crate::dtype::Dtype;
    use crate::shape::Len;

    /// Numbers whose little-endian bytes are uploaded as they are: f32, or f16 as its bits.
    trait Element: Copy + 'static {
        const DTYPE: Dtype;
        fn cpu(v: Vec<Self>) -> CpuData;
        fn le_bytes(self) -> impl IntoIterator<Item = u8>;
    }

    macro_rules! element {
        ($t:ty, $dtype:ident) => {
            impl Element for $t {
                const DTYPE: Dtype = Dtype::$dtype;
                fn cpu(v: Vec<$t>) -> CpuData {
                    CpuData::$dtype(v)
                }
                fn le_bytes(self) -> impl IntoIterator<Item = u8> {
                    self.to_le_bytes()
                }
            }
        };
    }
    element!(f32, F32);
    element!(u16, F16);

    fn upload<E: Element>(elements: &[E], queue: &wgpu::Queue, buffer: &wgpu::Buffer) {
        let mut bytes: Vec<u8> = elements.iter().flat_map(|v| v.le_bytes()).collect();
        // writeBuffer moves whole 4-byte words.
        bytes.resize(bytes.len().next_multiple_of(4), 0);
        queue.write_buffer(buffer, 0, &bytes);
    }

    impl Len for &[u16] {
        fn len(&self) -> usize {
            <[u16]>::len(self)
        }
    }

    impl<E: Element> Len for Vec<E> {
        fn len(&self) -> usize {
            Vec::len(self)
        }
    }

    macro_rules! host_array {
        ($t:ty, $e:ty) => {
            impl HostArray for $t {
                fn upload(&self, to: Upload) -> Result<(), String> {
                    upload(&self[to.start..to.start + to.count], to.queue, to.buffer);
                    Ok(())
                }

                fn dtype(&self) -> Dtype {
                    <$e as Element>::DTYPE
                }

                fn detach(&self) -> Arg<OwnedArray> {
                    Arg::Host(Rc::new(self.to_vec()))
                }

                fn to_cpu(&self) -> Result<CpuData, String> {
                    Ok(<$e as Element>::cpu(self.to_vec()))
                }
            }
        };
    }
    host_array!(&[f32], f32);
    host_array!(&[u16], u16);
    host_array!(Vec<f32>, f32);
    host_array!(Vec<u16>, u16);

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

    /// A result computed in memory, as the host receives it.
    pub fn host_vec(data: &CpuData) -> HostVec {
        match data {
            CpuData::F32(v) => v.clone(),
            CpuData::F16(v) => v.iter().map(|&h| crate::dtype::f16_value(h)).collect(),
        }
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
                    .map(|b| crate::dtype::f16_value(u16::from_le_bytes([b[0], b[1]]))),
            ),
        }
    }
}

#[cfg(target_arch = "wasm32")]
pub use crate::js_array::*;
#[cfg(not(target_arch = "wasm32"))]
pub use imp::*;
