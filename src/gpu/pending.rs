//! A call in flight: what it submitted, what it holds, and how its results come back.
//!
//! Results come back through `map_async`'s callback, awaited through a oneshot channel,
//! never by blocking: the browser delivers that callback from its event loop.

use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use futures_channel::oneshot;

use crate::call::dtype::Dtype;
use crate::call::error::Error;
use crate::call::results::{Finished, Given, GpuOutput, Output, ResultArray};
use crate::call::shape::Shape;
use crate::call::tensor::Tensor;
use crate::gpu::device::{lost_error, LostSlot};
use crate::gpu::pool::{BufferPool, Pooled};
use crate::gpu::tensor_buffer::TensorBuffer;
#[cfg(not(target_arch = "wasm32"))]
use crate::gpu::transfer::native::{new_result, read_mapped, read_words};
#[cfg(target_arch = "wasm32")]
use crate::gpu::transfer::web::{new_result, read_mapped, read_words};
use crate::support::clock::now_ms;

/// A buffer bound by a call: pooled for the call, or a tensor that outlives it.
pub enum StagedBuffer {
    Pooled(Pooled),
    Resident(Rc<Tensor>),
    /// A buffer the context keeps for calls alike (a rotary stage's table).
    Kept(wgpu::Buffer),
}

impl std::ops::Deref for StagedBuffer {
    type Target = wgpu::Buffer;
    fn deref(&self) -> &wgpu::Buffer {
        match self {
            StagedBuffer::Pooled(p) => p,
            // The plan checked that every tensor it binds is placed.
            StagedBuffer::Resident(t) => t.buffer().expect("a bound tensor is placed"),
            StagedBuffer::Kept(b) => b,
        }
    }
}

/// One chunk of rows read back.
pub struct Chunk {
    /// Where the chunk's first element goes in the result.
    pub start: usize,
    pub len: usize,
    /// `y`'s copy: none for a post-norm's sum alone.
    pub y: Option<Pooled>,
    pub sum: Option<Pooled>,
}

type MapResult = Result<(), wgpu::BufferAsyncError>;

type ScopeFuture = Pin<Box<dyn Future<Output = Option<wgpu::Error>>>>;

/// A submitted call. Owns everything it needs, so the context that made it may be dropped
/// (JavaScript's `free()`) while it is in flight.
pub struct Pending {
    pub(crate) shape: Shape,
    /// `y` is a result (not for a post-norm's sum alone).
    pub(crate) want_y: bool,
    pub(crate) want_sum: bool,
    /// Results are read back into host arrays (else they stay on the GPU).
    pub(crate) read_back: bool,
    /// The data's dtype, which `sum` is read back as.
    pub(crate) dtype: Dtype,
    /// `y`'s (outputDtype).
    pub(crate) out_dtype: Dtype,
    pub(crate) lost: LostSlot,
    pub(crate) device: wgpu::Device,
    pub(crate) pool: Rc<BufferPool>,
    pub(crate) chunks: Vec<Chunk>,
    pub(crate) scopes: Vec<(&'static str, ScopeFuture)>,
    /// The copies from the app's buffers, checked before the call's own scopes: their
    /// errors name the argument.
    pub(crate) copies: Vec<crate::gpu::app_buffer::Check>,
    /// Each buffer asked to be mapped, and where its callback's result arrives.
    pub(crate) mapped: Vec<(wgpu::Buffer, oneshot::Receiver<MapResult>)>,
    /// The call's other buffers, returned to the pool once the GPU is done with them.
    pub(crate) kept: Vec<StagedBuffer>,
    /// Tensors the call reads, kept alive until it is done (their JavaScript owner may
    /// free them meanwhile).
    pub(crate) holds: Vec<Rc<Tensor>>,
    /// A tensor's `read()`: work of the app's may be queued before its copy.
    #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
    pub(crate) reads_a_tensor: bool,
    /// Where results stay on the GPU.
    pub(crate) gpu: Option<GpuOutput>,
    /// The timed pass's two timestamps (mapped with the results), and ns per tick.
    pub(crate) timestamps: Option<(Pooled, f32)>,
    /// The caller's arrays the results are read back into, where it gave them.
    pub(crate) given: Given,
}

/// Asks for `buffer` to be mapped once the GPU is done with it.
pub(crate) fn map_read(buffer: &wgpu::Buffer) -> oneshot::Receiver<MapResult> {
    let (tx, rx) = oneshot::channel();
    buffer.map_async(wgpu::MapMode::Read, .., move |r| {
        let _ = tx.send(r);
    });
    rx
}

impl Pending {
    /// Waits for the GPU and hands back what the call asked for.
    pub async fn finish(mut self) -> Result<Finished, Error> {
        if let Err(e) = self.check_scopes().await {
            for t in self.gpu.iter().flat_map(|g| g.y.iter().chain(&g.sum)) {
                t.discard();
            }
            return Err(e);
        }
        let gpu = self.gpu.take();
        // Results left on the GPU resolve at once, unless the pass was timed: its
        // timestamps are read back like a result.
        if !self.read_back && self.timestamps.is_none() {
            // Results stay on the GPU: the work is accepted, and later work on the same
            // queue sees it. The call's staged inputs go back to the pool at once: the GPU
            // may still be reading them, but whatever next writes them is queued after.
            self.pool_kept(now_ms());
            return Ok(Finished {
                host: None,
                gpu,
                ns: None,
            });
        }
        self.wait_mapped().await?;
        let now = now_ms();
        let ns = self.timestamps.take().map(|(staging, period)| {
            let (start, end) = read_u64_pair(&staging);
            staging.unmap();
            self.pool.give_back(staging, now);
            end.saturating_sub(start) as f64 * period as f64
        });
        Ok(Finished {
            host: Some(self.copy_out(now)?),
            gpu,
            ns,
        })
    }

    /// The results read back.
    pub async fn read(self) -> Result<Output, Error> {
        let done = self.finish().await?;
        done.host
            .ok_or_else(|| Error::Type("read: the call left its results on the GPU".into()))
    }

    /// The results left on the GPU: new tensors for `Destination::Gpu`, none in place.
    pub async fn read_gpu(self) -> Result<Option<GpuOutput>, Error> {
        Ok(self.finish().await?.gpu)
    }

    /// The results read back, with the timed pass's GPU time in nanoseconds.
    pub async fn read_timed(self) -> Result<(Output, Option<f64>), Error> {
        let done = self.finish().await?;
        let out = done
            .host
            .ok_or_else(|| Error::Type("read: the call left its results on the GPU".into()))?;
        Ok((out, done.ns))
    }

    async fn check_scopes(&mut self) -> Result<(), Error> {
        for copy in std::mem::take(&mut self.copies) {
            copy.await?;
        }
        for (what, scope) in std::mem::take(&mut self.scopes) {
            if let Some(e) = scope.await {
                return Err(match self.lost.reason() {
                    Some(why) => lost_error(&why),
                    None => Error::GpuDevice(format!("{what} ({e})")),
                });
            }
        }
        Ok(())
    }

    async fn wait_mapped(&mut self) -> Result<(), Error> {
        #[cfg(target_arch = "wasm32")]
        self.map_when_short_work_is_done().await;
        // Natively nothing delivers callbacks unless the device is polled; the browser
        // delivers them from its event loop.
        #[cfg(not(target_arch = "wasm32"))]
        {
            self.request_maps();
            let _ = self.device.poll(wgpu::PollType::wait_indefinitely());
        }
        for (_, ready) in std::mem::take(&mut self.mapped) {
            if !matches!(ready.await, Ok(Ok(()))) {
                return Err(self.lost.reason().map_or_else(
                    || {
                        Error::GpuDevice(
                            "readback: expected the result, the GPU returned none".into(),
                        )
                    },
                    |w| lost_error(&w),
                ));
            }
        }
        Ok(())
    }

    /// Asks for the maps so that they reach the browser's GPU process after a short call's
    /// work is done. A call of the package's own (its work is what it just submitted): at
    /// once and, for each map still pending one task later, unmapped and asked again. A
    /// tensor's `read()` (the app may have queued a whole chain before it): after one round
    /// trip that waits on no GPU work (an empty error scope, pushed and popped).
    ///
    /// Chrome's GPU process notices finished GPU work when a wait arrives after it, or on a
    /// timer that each message from the page pushes away
    /// (gpu/ipc/service/command_buffer_stub.cc, kHandleMoreWorkPeriodMs). A map sent with
    /// its submission arrives before the GPU is done and waits for that timer, unless asked
    /// again; asking again on every task until mapped hangs the page, since each request
    /// pushes the timer away, so the package asks again once (docs/performance.md, "Waiting
    /// for results"). Where the work outlasts the wait, the timer finds it as before.
    #[cfg(target_arch = "wasm32")]
    async fn map_when_short_work_is_done(&mut self) {
        use crate::gpu::webgpu_raw;
        if !self.reads_a_tensor {
            self.request_maps();
            webgpu_raw::next_task().await;
            for (buffer, ready) in &mut self.mapped {
                match ready.try_recv() {
                    Ok(None) => {
                        // Aborts the pending map: its callback reports into a channel
                        // nobody reads any more.
                        buffer.unmap();
                        *ready = map_read(buffer);
                    }
                    Ok(Some(r)) => {
                        let (tx, rx) = oneshot::channel();
                        let _ = tx.send(r);
                        *ready = rx;
                    }
                    // Awaited below, as no result.
                    Err(_) => {}
                }
            }
            return;
        }
        if let Some(device) = webgpu_raw::device(&self.device) {
            if device.push_error_scope("validation").is_ok() {
                if let Ok(popped) = device.pop_error_scope() {
                    // Its finding is nothing: the scope holds no call.
                    let _ = wasm_bindgen_futures::JsFuture::from(popped).await;
                }
            }
        }
        self.request_maps();
    }

    /// Asks for every staging buffer to be mapped once the GPU is done with it.
    fn request_maps(&mut self) {
        let buffers = self
            .timestamps
            .iter()
            .map(|(staging, _)| staging)
            .chain(self.chunks.iter().flat_map(|c| c.y.iter().chain(&c.sum)));
        self.mapped = buffers
            .map(|b| {
                let b: wgpu::Buffer = (**b).clone();
                let ready = map_read(&b);
                (b, ready)
            })
            .collect();
    }

    /// Copies the mapped chunks into the caller's arrays (or fresh ones) and pools every
    /// buffer again. Every chunk is mapped by now, so a given array is written whole or,
    /// where the caller detached or shrank it meanwhile, not at all.
    fn copy_out(mut self, now: f64) -> Result<Output, Error> {
        // A timed call whose results stay on the GPU reads back its timestamps only.
        let total = if self.read_back { self.shape.len() } else { 0 };
        let intact = self.given.check_intact(total);
        if intact.is_err() {
            self.given = Given::default();
        }
        let mut y = self
            .want_y
            .then(|| given_or_new(self.given.y.take(), total, self.out_dtype));
        let mut sum = self
            .want_sum
            .then(|| given_or_new(self.given.sum.take(), total, self.dtype));
        for chunk in std::mem::take(&mut self.chunks) {
            let copies = [
                (y.as_mut(), chunk.y, self.out_dtype),
                (sum.as_mut(), chunk.sum, self.dtype),
            ];
            for (dst, copy, dtype) in copies {
                if let (Some(dst), Some(copy)) = (dst, copy) {
                    read_mapped(&copy, dst, chunk.start, chunk.len, dtype);
                    copy.unmap();
                    self.pool.give_back(copy, now);
                }
            }
        }
        self.pool_kept(now);
        intact.map(|()| Output { y, sum })
    }

    /// Returns the call's own buffers (not its tensors) to the pool.
    fn pool_kept(&mut self, now: f64) {
        for b in std::mem::take(&mut self.kept) {
            if let StagedBuffer::Pooled(p) = b {
                self.pool.give_back(p, now);
            }
        }
        self.pool.schedule_trim();
    }
}

/// The array a result goes into: the one given, else a fresh one of `len` elements of
/// `dtype`.
fn given_or_new(given: Option<ResultArray>, len: usize, dtype: Dtype) -> ResultArray {
    given.unwrap_or_else(|| new_result(len, dtype))
}

/// The two u64 timestamps at the start of a mapped buffer.
fn read_u64_pair(buffer: &wgpu::Buffer) -> (u64, u64) {
    let bits = read_words(buffer, 4);
    let at = |i: usize| bits[i] as u64 | (bits[i + 1] as u64) << 32;
    (at(0), at(2))
}
