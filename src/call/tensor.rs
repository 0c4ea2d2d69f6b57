//! GPU-resident tensors: data that stays on the GPU between calls, so a chain of layers
//! (each layer's `sum` feeding the next layer's `residual`) runs without readbacks.
//!
//! A tensor is made on a device, or, when it is uploaded while a lost device is being
//! replaced, waits with a host copy of its data until the new device exists (see
//! `instance.rs`); either way it is placed once and never moves. On the CPU backend a
//! tensor's numbers live in wasm memory instead, so an app's pipeline code is the same on
//! both backends. A placed tensor's buffer is the GPU driver's ([`DeviceStorage`]).

use std::any::Any;
use std::cell::{OnceCell, RefCell};

use crate::call::device::ContextId;
use crate::call::dtype::Dtype;
use crate::call::error::Error;
use crate::call::numbers::{CpuData, DeferredUpload};

/// Where a placed tensor's numbers live: a buffer of the GPU driver's
/// (`gpu/tensor_buffer.rs`), on loan from its context's pool and back there when the tensor is
/// dropped. A call needs to know of it only whether its device is gone.
pub trait DeviceStorage: Any {
    /// Why its device is gone, if it is.
    fn lost_reason(&self) -> Option<String>;

    /// Keeps the buffer from being reused once the tensor is dropped ([`Tensor::discard`]).
    fn discard(&self);
}

/// A tensor placed on a device.
pub struct Placed {
    /// The context whose device made it: buffers of one device cannot be bound on another.
    pub owner: ContextId,
    pub storage: Box<dyn DeviceStorage>,
}

/// `len` numbers of `dtype` on one device.
pub struct Tensor {
    pub len: usize,
    pub dtype: Dtype,
    placed: OnceCell<Placed>,
    /// The data of a tensor uploaded while no device was live, until one is.
    waiting: RefCell<Option<DeferredUpload>>,
    /// On the CPU backend: the context that made it, and its numbers.
    cpu: Option<(ContextId, RefCell<CpuData>)>,
}

impl Tensor {
    pub fn placed(len: usize, dtype: Dtype, placed: Placed) -> Tensor {
        let t = Tensor::waiting(len, dtype, None);
        let _ = t.placed.set(placed);
        t
    }

    pub fn waiting(len: usize, dtype: Dtype, data: Option<DeferredUpload>) -> Tensor {
        Tensor {
            len,
            dtype,
            placed: OnceCell::new(),
            waiting: RefCell::new(data),
            cpu: None,
        }
    }

    /// A tensor of the CPU backend's context `owner`.
    pub fn on_cpu(data: CpuData, owner: ContextId) -> Tensor {
        let (len, dtype) = match &data {
            CpuData::F32(v) => (v.len(), Dtype::F32),
            CpuData::F16(v) => (v.len(), Dtype::F16),
        };
        Tensor {
            len,
            dtype,
            placed: OnceCell::new(),
            waiting: RefCell::new(None),
            cpu: Some((owner, RefCell::new(data))),
        }
    }

    /// The numbers of a CPU backend tensor.
    pub fn cpu_data(&self) -> Option<&RefCell<CpuData>> {
        self.cpu.as_ref().map(|(_, d)| d)
    }

    /// Where its numbers live on the device, once placed.
    pub fn storage(&self) -> Option<&dyn DeviceStorage> {
        self.placed.get().map(|p| &*p.storage)
    }

    pub fn owner(&self) -> Option<ContextId> {
        self.placed.get().map(|p| p.owner)
    }

    /// Why the tensor's device is gone, if it is.
    pub fn lost_reason(&self) -> Option<String> {
        self.placed.get().and_then(|p| p.storage.lost_reason())
    }

    /// Places a waiting tensor: `make` creates its storage and uploads the kept data.
    pub fn place(&self, make: impl FnOnce(&DeferredUpload) -> Placed) {
        if let Some(data) = self.waiting.borrow_mut().take() {
            let _ = self.placed.set(make(&data));
        }
    }

    /// Keeps the buffer out of the pool when the tensor is dropped: the call that made it
    /// failed on the GPU, which may have left the buffer invalid, and a later call that
    /// makes nothing new checks nothing.
    pub fn discard(&self) {
        if let Some(p) = self.placed.get() {
            p.storage.discard();
        }
    }

    /// A tensor argument must be context `owner`'s, and if on a device, on a live one.
    pub fn check(&self, name: &str, owner: ContextId) -> Result<(), Error> {
        let foreign = || {
            Error::Type(format!(
                "{name}: expected a GpuTensor of this FusedRmsNorm, got one of another instance"
            ))
        };
        if let Some((cpu_owner, _)) = &self.cpu {
            return if *cpu_owner == owner {
                Ok(())
            } else {
                Err(foreign())
            };
        }
        let Some(p) = self.placed.get() else {
            return Err(Error::GpuDevice(format!(
                "{name}: expected a GpuTensor on a live device, got one uploaded while the \
                 device was lost and no new device could be opened"
            )));
        };
        if let Some(why) = p.storage.lost_reason() {
            return Err(Error::GpuDevice(format!(
                "{name}: expected a GpuTensor on a live device, got one whose device was lost ({why})"
            )));
        }
        if p.owner != owner {
            return Err(foreign());
        }
        Ok(())
    }
}
