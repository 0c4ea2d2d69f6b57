//! A call's arguments ([`Arg`]): host data ([`HostArray`]), a GPU-resident tensor, or a
//! buffer of the app's on the device ([`AppBuffer`]).
//!
//! Host data is Rust slices and vectors natively (`native_arrays.rs`) and JavaScript typed
//! arrays in the browser (`js/array.rs`: `Float32Array`, and `Uint16Array` or
//! `Float16Array` for f16). An array uploads its own numbers through the driver's
//! [`Upload`]; in the browser straight from the caller's typed array with `writeBuffer`,
//! since routing them through wasm memory would cost two extra copies per array and grow the
//! module's memory with every large call (it never shrinks). The CPU backend copies them
//! into wasm memory instead ([`HostArray::to_cpu`]).

use std::any::Any;
use std::rc::Rc;

use crate::call::dtype::Dtype;
use crate::call::error::Error;
use crate::call::numbers::{CpuData, Len, Upload};
use crate::call::tensor::Tensor;

/// A private copy of host data, for a call or an upload that waits for a device before it
/// can upload (the caller may change its own array as soon as the call returns).
pub type OwnedArray = Rc<dyn HostArray>;

/// An array of numbers the driver can upload a range of.
pub trait HostArray: Len {
    /// Writes a range of the array to a buffer; the error says why the browser refused it.
    fn upload(&self, to: &dyn Upload) -> Result<(), String>;

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

    /// The numbers copied into wasm memory, for the CPU backend (`name`: the argument, for
    /// the error): a `TypeError` where the browser refused the array, a `RangeError` where wasm
    /// memory cannot hold it.
    fn to_cpu(&self, name: &str) -> Result<CpuData, Error>;
}

impl Len for OwnedArray {
    fn len(&self) -> usize {
        (**self).len()
    }
}

impl HostArray for OwnedArray {
    fn upload(&self, to: &dyn Upload) -> Result<(), String> {
        (**self).upload(to)
    }

    fn dtype(&self) -> Dtype {
        (**self).dtype()
    }

    fn detach(&self) -> Arg<OwnedArray> {
        Arg::Host(self.clone())
    }

    fn to_cpu(&self, name: &str) -> Result<CpuData, Error> {
        (**self).to_cpu(name)
    }
}

/// The app's buffer itself (a `GPUBuffer`), which only the GPU driver reads
/// (`gpu/app_buffer.rs`): a call compares two, nothing more.
pub trait BufferHandle: Any {
    /// Whether `other` is this same buffer.
    fn same(&self, other: &dyn BufferHandle) -> bool;
}

/// A buffer of the app's on the device, passed where an array goes: the GPU driver copies
/// from it on the GPU, never through the host.
#[derive(Clone)]
pub struct AppBuffer {
    /// Elements of `dtype` a call reads of it, from offset 0: all it holds, until fitted to a
    /// call (`shape::fit_buffers`).
    pub len: usize,
    pub dtype: Dtype,
    handle: Rc<dyn BufferHandle>,
}

impl AppBuffer {
    /// `handle`, of `size` bytes, read as elements of `dtype` from offset 0 to its end.
    pub fn new(handle: impl BufferHandle, size: u64, dtype: Dtype) -> AppBuffer {
        AppBuffer {
            len: (size / dtype.bytes() as u64) as usize,
            dtype,
            handle: Rc::new(handle),
        }
    }

    /// The buffer itself.
    pub fn handle(&self) -> &dyn BufferHandle {
        &*self.handle
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
            (Arg::Buffer(a), Arg::Buffer(b)) => a.handle().same(b.handle()),
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
    fn upload(&self, to: &dyn Upload) -> Result<(), String> {
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

    fn to_cpu(&self, name: &str) -> Result<CpuData, Error> {
        let never = |why: &str| Err(Error::Type(format!("{name}: {why}")));
        match self {
            Arg::Host(h) => h.to_cpu(name),
            Arg::Gpu(_) => never("a GpuTensor is used as it is, never copied"),
            Arg::Buffer(_) => never("a GPUBuffer is copied on the GPU, never to the host"),
        }
    }
}
