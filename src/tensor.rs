//! GPU-resident tensors: data that stays on the GPU between calls, so a chain of layers
//! (each layer's `sum` feeding the next layer's `residual`) runs without readbacks.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Identifies the context a tensor belongs to: buffers of one device cannot be bound on
/// another, and a lost device's buffers hold nothing.
pub type ContextId = u64;

pub fn next_context_id() -> ContextId {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// How numbers are stored. Arithmetic is f32 either way.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Dtype {
    #[default]
    F32,
    /// IEEE half precision: half the memory traffic of f32.
    F16,
}

impl Dtype {
    pub fn bytes(self) -> usize {
        match self {
            Dtype::F32 => 4,
            Dtype::F16 => 2,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Dtype::F32 => "f32",
            Dtype::F16 => "f16",
        }
    }
}

/// A buffer of `len` numbers of `dtype` on one context's device.
pub struct Tensor {
    pub buffer: wgpu::Buffer,
    pub len: usize,
    pub dtype: Dtype,
    pub owner: ContextId,
    /// The owner's device-lost slot: a tensor outliving its device says why it is empty.
    pub(crate) lost: Arc<Mutex<Option<String>>>,
}

impl Tensor {
    pub fn lost_reason(&self) -> Option<String> {
        self.lost.lock().ok().and_then(|s| s.clone())
    }
}

impl Drop for Tensor {
    fn drop(&mut self) {
        // Now, not whenever the JavaScript wrapper is collected: GPU memory is the scarce
        // resource. WebGPU defers the release until submitted work using it is done.
        self.buffer.destroy();
    }
}
