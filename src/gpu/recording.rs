//! Where a call's commands are recorded, behind one interface ([`Recording`]) with two
//! implementations. [`WgpuRecording`] records into a wgpu command encoder: every call
//! natively, and on the web every call that is read back or timed. [`BrowserRecording`]
//! (wasm only) dispatches through the browser's WebGPU objects directly
//! (`browser_pipelines.rs`): on the web, a call whose results stay on the GPU, the decode
//! step, where the call's own cost is what an app waits for and wgpu's path costs it more
//! (docs/performance.md, "Dawn in Node").

use crate::call::dtype::Dtype;
use crate::call::error::Error;
use crate::call::plan::{Destination, Plan};
use crate::gpu::kernel::bindings::{slot, Bound};
use crate::gpu::kernel::Variant;
use crate::gpu::pending::{Chunk, Pending};
use crate::gpu::pool::Pooled;

use super::GpuContext;

/// A chunk of a call's rows: as many as one storage binding holds.
#[derive(Clone, Copy)]
pub(super) struct Rows {
    /// The chunk's first row in the call.
    pub first: usize,
    pub count: usize,
}

/// One chunk of a call, staged and ready to record.
pub(super) struct ChunkWork<'a> {
    pub ctx: &'a GpuContext,
    pub plan: &'a Plan,
    /// The kernel variant of every chunk of the call, chosen once for it.
    pub variant: Variant,
    pub rows: Rows,
    /// The buffers its dispatches bind; `output` and `sum` are the ones read back.
    pub bound: Bound<'a>,
}

impl ChunkWork<'_> {
    /// Elements in the chunk.
    fn len(&self) -> usize {
        self.rows.count * self.plan.shape().hidden
    }

    fn in_place(&self) -> bool {
        self.plan.request.to == Destination::InPlace
    }
}

/// Records a call's chunks one by one, then submits them.
pub(super) trait Recording {
    /// Records `chunk`'s dispatches and, where its call asks, the pass's timestamps and the
    /// copies its results are read back from (both kept in `pending`).
    fn record(&mut self, chunk: &ChunkWork<'_>, pending: &mut Pending) -> Result<(), Error>;

    /// Submits what was recorded and is not submitted yet.
    fn submit(self, ctx: &GpuContext);
}

/// A call recorded through wgpu: one command encoder for all its chunks, submitted once.
pub(super) struct WgpuRecording {
    pipeline: wgpu::ComputePipeline,
    encoder: wgpu::CommandEncoder,
}

impl WgpuRecording {
    pub(super) fn new(ctx: &GpuContext, variant: Variant) -> WgpuRecording {
        WgpuRecording {
            pipeline: ctx.pipeline(variant),
            encoder: ctx.dev.device.create_command_encoder(&Default::default()),
        }
    }

    /// The query set the chunk's pass writes its timestamps to: the first chunk's pass of a
    /// timed call, on a device with timestamps (a timed call is one chunk in practice).
    fn timer(ctx: &GpuContext, chunk: &ChunkWork<'_>) -> Option<wgpu::QuerySet> {
        let timed = chunk.plan.request.timed && ctx.dev.caps.timestamps && chunk.rows.first == 0;
        timed.then(|| {
            ctx.creating();
            ctx.dev.device.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("pass time"),
                ty: wgpu::QueryType::Timestamp,
                count: 2,
            })
        })
    }

    /// Records the chunk's dispatches (`repeat` of them) over `group` as one compute pass.
    fn pass(
        &mut self,
        ctx: &GpuContext,
        chunk: &ChunkWork<'_>,
        group: &wgpu::BindGroup,
        timer: Option<&wgpu::QuerySet>,
    ) {
        let mut pass = self
            .encoder
            .begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: None,
                timestamp_writes: timer.map(|query_set| wgpu::ComputePassTimestampWrites {
                    query_set,
                    beginning_of_pass_write_index: Some(0),
                    end_of_pass_write_index: Some(1),
                }),
            });
        let variant = chunk.variant;
        for _ in 0..chunk.plan.request.repeat {
            ctx.dispatch(
                &mut pass,
                (variant, &self.pipeline),
                group,
                chunk.rows.count as u32,
            );
        }
    }

    /// The pass's two timestamps, resolved into a mappable buffer, and ns per tick.
    fn resolve_time(&mut self, ctx: &GpuContext, timer: &wgpu::QuerySet) -> (Pooled, f32) {
        let resolved = ctx.dev.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("pass time"),
            size: 16,
            usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        self.encoder.resolve_query_set(timer, 0..2, &resolved, 0);
        let staging = ctx.readback(&mut self.encoder, &resolved, 4, Dtype::F32);
        (staging, ctx.dev.queue.get_timestamp_period())
    }

    /// The copies the chunk's `output` and `sum` are read back from (no `output` for a
    /// post-norm's sum alone).
    fn read_back(&mut self, ctx: &GpuContext, chunk: &ChunkWork<'_>) -> Option<Chunk> {
        let plan = chunk.plan;
        let len = chunk.len();
        let y = chunk.bound[slot::OUTPUT]
            .filter(|_| plan.kernel.options.output)
            .map(|y| ctx.readback(&mut self.encoder, y, len, plan.kernel.out_dtype));
        let sum = chunk.bound[slot::SUM]
            .map(|s| ctx.readback(&mut self.encoder, s, len, plan.kernel.dtype));
        if y.is_none() && sum.is_none() {
            return None;
        }
        Some(Chunk {
            start: chunk.rows.first * plan.shape().hidden,
            len,
            y,
            sum,
        })
    }
}

impl Recording for WgpuRecording {
    fn record(&mut self, chunk: &ChunkWork<'_>, pending: &mut Pending) -> Result<(), Error> {
        let ctx = chunk.ctx;
        let group = ctx.bind_group(chunk.in_place(), &chunk.bound);
        let timer = Self::timer(ctx, chunk);
        self.pass(ctx, chunk, &group, timer.as_ref());
        if let Some(timer) = timer {
            pending.timestamps = Some(self.resolve_time(ctx, &timer));
        }
        if chunk.plan.request.to == Destination::Host {
            pending.chunks.extend(self.read_back(ctx, chunk));
        }
        Ok(())
    }

    fn submit(self, ctx: &GpuContext) {
        ctx.dev.queue.submit([self.encoder.finish()]);
    }
}

/// A call dispatched through the browser's WebGPU objects: each chunk submitted as it is
/// recorded. Only for calls that are neither read back nor timed (see [`takes`](Self::takes)).
#[cfg(target_arch = "wasm32")]
pub(super) struct BrowserRecording;

#[cfg(target_arch = "wasm32")]
impl BrowserRecording {
    /// Whether `plan` is recorded this way: its results stay on the GPU, it is not timed, and
    /// it is one chunk.
    pub(super) fn takes(plan: &Plan) -> bool {
        !plan.request.timed
            && plan.request.to != Destination::Host
            && plan.shape().rows <= plan.rows_per_chunk
    }
}

#[cfg(target_arch = "wasm32")]
impl Recording for BrowserRecording {
    fn record(&mut self, chunk: &ChunkWork<'_>, _: &mut Pending) -> Result<(), Error> {
        let ctx = chunk.ctx;
        ctx.browser_pipelines()?.submit(
            chunk.variant,
            ctx.pipelines.binding(chunk.in_place(), &chunk.bound),
            chunk.rows.count as u32,
            ctx.caps().max_groups_per_dim,
            &|| ctx.creating(),
        )
    }

    fn submit(self, _: &GpuContext) {}
}

impl GpuContext {
    /// A mappable copy of the first `n` elements of `src`, recorded into `encoder`.
    pub(crate) fn readback(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        src: &wgpu::Buffer,
        n: usize,
        dtype: Dtype,
    ) -> Pooled {
        let usage = wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST;
        let bytes = dtype.copy_bytes(n);
        let staging = self
            .pool
            .take(&self.dev.device, usage, bytes, &|| self.creating());
        encoder.copy_buffer_to_buffer(src, 0, &staging, 0, bytes);
        staging
    }
}
