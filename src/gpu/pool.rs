//! Reuse of GPU buffers across calls.
//!
//! An inference app calls with the same few shapes over and over; creating and destroying
//! every buffer of every call costs more than the kernel at small shapes and churns GPU
//! memory. Buffers go back to the pool when a call's results have been read, and a
//! tensor's when it is freed, and are handed out again by (usage, size): a call whose
//! results stay on the GPU then makes its result tensors from freed ones' buffers, with no
//! new buffer, bind group or error scope (each a round trip to the GPU process in Chrome).
//!
//! Idle buffers are not evicted to meet a byte cap while calls keep coming: on an H200,
//! large buffers allocated after other large ones were freed can land in much slower memory
//! (docs/performance.md, "The 128 MiB cliff"), so a pool that frees and reallocates its
//! large buffers as call sizes vary (prefill lengths do) falls off a cliff.
//! Sizes are rounded up to classes (four per octave) so that calls of nearby sizes share
//! buffers, and a buffer idle for [`IDLE_RELEASE_MS`] is released (`trim_idle`), as are all
//! idle ones on [`trim`].
//! [`MAX_IDLE_BUFFERS`] bounds how many small buffers a burst of concurrent calls leaves.
//!
//! [`trim`]: BufferPool::trim

use std::cell::{Cell, RefCell};
use std::rc::Rc;

/// A buffer idle this long is released: long enough to stay across an app's decode steps
/// and between the layers of one forward pass, short enough to give memory back soon after
/// the app goes quiet.
pub const IDLE_RELEASE_MS: f64 = 5000.0;

/// Idle buffers kept at most; the least recently returned go first.
pub const MAX_IDLE_BUFFERS: usize = 256;

struct Idle {
    buffer: wgpu::Buffer,
    since_ms: f64,
}

#[derive(Default)]
pub struct BufferPool {
    /// Most recently returned last.
    idle: RefCell<Vec<Idle>>,
    /// A timer will trim the idle buffers (wasm: the app may go quiet with buffers idle).
    #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
    trim_armed: Cell<bool>,
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

/// `size` rounded up to its class: multiples of 16 (vec4 bindings stay whole) below 64 KiB,
/// above that four classes per power of two, so at most a quarter is unused.
pub fn size_class(size: u64) -> u64 {
    let size = size.max(16).next_multiple_of(16);
    if size <= 64 << 10 {
        return size;
    }
    let step = 1u64 << (63 - size.leading_zeros() - 2);
    size.next_multiple_of(step)
}

impl BufferPool {
    /// A buffer of at least `size` bytes with exactly `usage`; `creating` runs before a new
    /// one is made.
    pub fn take(
        &self,
        device: &wgpu::Device,
        usage: wgpu::BufferUsages,
        size: u64,
        creating: &dyn Fn(),
    ) -> Pooled {
        let size = size_class(size);
        // Best fit among the idle, and not more than twice the size asked for.
        self.take_within(device, usage, size..=size * 2, creating)
    }

    /// The smallest idle buffer of exactly `usage` whose size is in `sizes`, else a new one
    /// of the smallest size; `creating` runs before a new one is made.
    pub fn take_within(
        &self,
        device: &wgpu::Device,
        usage: wgpu::BufferUsages,
        sizes: std::ops::RangeInclusive<u64>,
        creating: &dyn Fn(),
    ) -> Pooled {
        let mut idle = self.idle.borrow_mut();
        let found = idle
            .iter()
            .enumerate()
            .filter(|(_, b)| b.buffer.usage() == usage && sizes.contains(&b.buffer.size()))
            .min_by_key(|(_, b)| b.buffer.size())
            .map(|(i, _)| i);
        let buffer = match found {
            Some(i) => idle.remove(i).buffer,
            None => {
                creating();
                self.live.set(self.live.get() + 1);
                device.create_buffer(&wgpu::BufferDescriptor {
                    label: None,
                    size: *sizes.start(),
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

    /// Returns `b` for reuse at time `now_ms`. Only for unmapped buffers that no later
    /// submission still needs: work already submitted on them may be in flight, since the
    /// queue runs in order whatever is done with the buffer next (a `writeBuffer`, a copy or
    /// a dispatch that writes it is queued after that work); a mappable buffer maps only
    /// once its work is done.
    pub fn give_back(&self, mut b: Pooled, now_ms: f64) {
        let Some(buffer) = b.buffer.take() else {
            return;
        };
        let mut idle = self.idle.borrow_mut();
        idle.push(Idle {
            buffer,
            since_ms: now_ms,
        });
        let excess = idle.len().saturating_sub(MAX_IDLE_BUFFERS);
        for old in idle.drain(..excess) {
            self.release(old.buffer);
        }
    }

    /// Releases the buffers idle since before `now_ms - IDLE_RELEASE_MS`; returns how many
    /// stay idle.
    pub fn trim_idle(&self, now_ms: f64) -> usize {
        let mut idle = self.idle.borrow_mut();
        let (stale, fresh): (Vec<Idle>, Vec<Idle>) = idle
            .drain(..)
            .partition(|b| now_ms - b.since_ms >= IDLE_RELEASE_MS);
        *idle = fresh;
        for b in stale {
            self.release(b.buffer);
        }
        idle.len()
    }

    /// Releases every idle buffer.
    pub fn trim(&self) {
        for b in self.idle.take() {
            self.release(b.buffer);
        }
    }

    /// Makes sure idle buffers are trimmed once they have been idle long enough, even if no
    /// call comes: in the browser a timer; natively the next call's `trim_idle`.
    pub fn schedule_trim(self: &Rc<Self>) {
        #[cfg(target_arch = "wasm32")]
        if let Some(delay) = self.next_release_in(crate::support::clock::now_ms()) {
            self.arm_trim(delay);
        }
    }

    /// Milliseconds until the oldest idle buffer is due for release, if any is idle.
    #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
    fn next_release_in(&self, now_ms: f64) -> Option<f64> {
        let idle = self.idle.borrow();
        let oldest = idle.iter().map(|b| b.since_ms).reduce(f64::min)?;
        Some((oldest + IDLE_RELEASE_MS - now_ms).max(0.0))
    }

    #[cfg(target_arch = "wasm32")]
    fn arm_trim(self: &Rc<Self>, delay_ms: f64) {
        if !self.trim_armed.replace(true) {
            use wasm_bindgen::{JsCast, JsValue};
            let pool = Rc::downgrade(self);
            let fire = wasm_bindgen::closure::Closure::once_into_js(move || {
                if let Some(pool) = pool.upgrade() {
                    pool.trim_armed.set(false);
                    pool.trim_idle(crate::support::clock::now_ms());
                    pool.schedule_trim();
                }
            });
            let global = js_sys::global();
            let armed = js_sys::Reflect::get(&global, &JsValue::from_str("setTimeout"))
                .ok()
                .and_then(|f| f.dyn_into::<js_sys::Function>().ok())
                .map(|f| f.call2(&global, &fire, &JsValue::from_f64(delay_ms + 50.0)));
            if !matches!(armed, Some(Ok(_))) {
                self.trim_armed.set(false);
            }
        }
    }

    fn release(&self, buffer: wgpu::Buffer) {
        buffer.destroy();
        self.live.set(self.live.get() - 1);
    }

    /// Buffers alive now, idle or on loan.
    pub fn live(&self) -> usize {
        self.live.get()
    }

    /// Buffers waiting for reuse.
    pub fn idle(&self) -> usize {
        self.idle.borrow().len()
    }

    /// Bytes of the buffers waiting for reuse.
    pub fn idle_bytes(&self) -> u64 {
        self.idle.borrow().iter().map(|b| b.buffer.size()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::size_class;

    #[test]
    fn size_classes_waste_at_most_a_quarter() {
        for size in [
            1u64,
            16,
            17,
            4096,
            65536,
            65537,
            100_000,
            128 << 20,
            (128 << 20) + 1,
            3 << 30,
        ] {
            let c = size_class(size);
            assert!(c >= size && c.is_multiple_of(16), "{size} -> {c}");
            assert!(c <= (size.max(16) + 15) * 5 / 4 + 16, "{size} -> {c}");
        }
        // Nearby sizes share a class, so calls of varying length reuse one buffer.
        assert_eq!(size_class(8191 * 4096 * 4), size_class(8000 * 4096 * 4));
    }
}
