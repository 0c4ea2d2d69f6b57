//! A tensor's buffer on the GPU ([`Loaned`], the driver's [`DeviceStorage`]), and how the
//! driver binds a tensor ([`TensorBuffer`]).

use std::any::Any;
use std::cell::Cell;
use std::rc::Weak;

use crate::call::tensor::{DeviceStorage, Tensor};
use crate::gpu::device::LostSlot;
use crate::gpu::pool::{BufferPool, Pooled};
use crate::support::clock::now_ms;

/// A tensor's buffer: on loan from its context's pool, and back there when the tensor is
/// dropped (why: `pool.rs`); placed by `resident.rs`.
pub struct Loaned {
    /// Present until dropped.
    buffer: Option<Pooled>,
    /// `None` once the buffer must not be reused ([`Tensor::discard`]).
    pool: Cell<Option<Weak<BufferPool>>>,
    /// The device-lost slot of the device that made it: a tensor outliving its device says
    /// why it is empty.
    lost: LostSlot,
}

impl Loaned {
    pub fn new(buffer: Pooled, pool: Weak<BufferPool>, lost: LostSlot) -> Loaned {
        Loaned {
            buffer: Some(buffer),
            pool: Cell::new(Some(pool)),
            lost,
        }
    }
}

impl DeviceStorage for Loaned {
    fn lost_reason(&self) -> Option<String> {
        self.lost.reason()
    }

    fn discard(&self) {
        self.pool.take();
    }
}

impl Drop for Loaned {
    fn drop(&mut self) {
        // Now, not whenever the JavaScript wrapper is collected: GPU memory is the scarce
        // resource. The last holder of a tensor is gone (calls hold theirs until submitted),
        // so nothing binds the buffer after this; work already queued on it runs first.
        let Some(buffer) = self.buffer.take() else {
            return;
        };
        match self.pool.take().and_then(|pool| pool.upgrade()) {
            Some(pool) if self.lost.reason().is_none() => {
                pool.give_back(buffer, now_ms());
                pool.schedule_trim();
            }
            // Dropping a loaned buffer destroys it; WebGPU defers that until submitted work
            // using it is done.
            _ => drop(buffer),
        }
    }
}

/// A tensor as the GPU driver binds it.
pub trait TensorBuffer {
    /// Its buffer, once placed on a device.
    fn buffer(&self) -> Option<&wgpu::Buffer>;
}

impl TensorBuffer for Tensor {
    fn buffer(&self) -> Option<&wgpu::Buffer> {
        let storage: &dyn Any = self.storage()?;
        storage.downcast_ref::<Loaned>()?.buffer.as_deref()
    }
}
