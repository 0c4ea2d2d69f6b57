//! Reuse of GPU buffers across calls.
//!
//! An inference app calls with the same few shapes thousands of times; creating and
//! destroying five to eight buffers per call costs more than the kernel at small shapes and
//! churns GPU memory. Buffers go back to the pool when a call's results have been read and
//! are handed out again by (usage, size). Idle bytes are capped so that one huge call does
//! not pin its memory for the life of the instance.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

/// Idle buffers kept for reuse, in bytes, before the least recently returned are dropped.
const MAX_IDLE_BYTES: u64 = 256 << 20;

#[derive(Default)]
pub struct BufferPool {
    /// Most recently returned last.
    idle: RefCell<Vec<wgpu::Buffer>>,
    idle_bytes: Cell<u64>,
    /// Buffers created and not yet dropped, idle or in use: the figure that must stay flat
    /// over a long run.
    live: Rc<Cell<usize>>,
}

/// A buffer on loan from the pool. Dropping it destroys the buffer (when a call fails);
/// [`BufferPool::give_back`] returns it for reuse instead.
pub struct Pooled {
    buffer: Option<wgpu::Buffer>,
    live: Rc<Cell<usize>>,
}

impl std::ops::Deref for Pooled {
    type Target = wgpu::Buffer;
    fn deref(&self) -> &wgpu::Buffer {
        self.buffer
            .as_ref()
            .expect("a loaned buffer is present until given back")
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        if let Some(b) = self.buffer.take() {
            b.destroy();
            self.live.set(self.live.get() - 1);
        }
    }
}

impl BufferPool {
    /// A buffer of at least `size` bytes with exactly `usage`.
    pub fn take(&self, device: &wgpu::Device, usage: wgpu::BufferUsages, size: u64) -> Pooled {
        // Round up so that calls of nearby sizes share buffers; 16 keeps vec4 bindings whole.
        let size = size.max(16).next_multiple_of(16);
        let mut idle = self.idle.borrow_mut();
        // Best fit among the idle, and not more than twice the size asked for.
        let found = idle
            .iter()
            .enumerate()
            .filter(|(_, b)| b.usage() == usage && b.size() >= size && b.size() <= size * 2)
            .min_by_key(|(_, b)| b.size())
            .map(|(i, _)| i);
        let buffer = match found {
            Some(i) => {
                let b = idle.remove(i);
                self.idle_bytes.set(self.idle_bytes.get() - b.size());
                b
            }
            None => {
                self.live.set(self.live.get() + 1);
                device.create_buffer(&wgpu::BufferDescriptor {
                    label: None,
                    size,
                    usage,
                    mapped_at_creation: false,
                })
            }
        };
        Pooled {
            buffer: Some(buffer),
            live: self.live.clone(),
        }
    }

    /// Returns `b` for reuse. Only for buffers whose GPU work has finished and which are
    /// unmapped.
    pub fn give_back(&self, mut b: Pooled) {
        let Some(buffer) = b.buffer.take() else {
            return;
        };
        self.idle_bytes.set(self.idle_bytes.get() + buffer.size());
        let mut idle = self.idle.borrow_mut();
        idle.push(buffer);
        while self.idle_bytes.get() > MAX_IDLE_BYTES && !idle.is_empty() {
            let old = idle.remove(0);
            self.idle_bytes.set(self.idle_bytes.get() - old.size());
            old.destroy();
            self.live.set(self.live.get() - 1);
        }
    }

    /// Buffers alive now, idle or on loan.
    pub fn live(&self) -> usize {
        self.live.get()
    }

    /// Buffers waiting for reuse.
    pub fn idle(&self) -> usize {
        self.idle.borrow().len()
    }
}
