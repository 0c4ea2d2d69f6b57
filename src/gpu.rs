//! The GPU driver: a device, its pipelines and buffer pool, and the one path every call
//! takes through them: check ([`Plan`]) → encode → submit → resolve ([`Pending`]).
//!
//! The same code runs on the browser's WebGPU (wasm) and on Vulkan (native tests and
//! benchmarks). Uploads go through `writeBuffer`, every dispatch of a call goes into one
//! submission, and each result is read back once.

use std::rc::Rc;

use crate::device::{AdapterSummary, Caps, ContextId, Device};
use crate::dtype::Dtype;
use crate::error::Error;
use crate::host::{HostArray, OwnedArray, Upload};
use crate::kernel::{grid, Params};
use crate::pending::{map_read, Chunk, GpuOutput, Output, Pending, Staged};
use crate::pipelines::{slot, Bound, Pipelines, BINDINGS};
use crate::pool::{BufferPool, Pooled};
use crate::shape::{check_upload, Destination, Inputs, Plan, Request, Shape};
use crate::tensor::{Placed, Tensor};

pub struct GpuContext {
    dev: Device,
    pipelines: Pipelines,
    pool: Rc<BufferPool>,
}

/// Buffer counts for leak checks: `live` must stay flat over a long run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BufferStats {
    pub live: usize,
    pub idle: usize,
}

impl GpuContext {
    /// Finds an adapter and opens a device on it.
    pub async fn new(power_preference: wgpu::PowerPreference) -> Result<GpuContext, Error> {
        Ok(Self::on(Device::open(power_preference).await?))
    }

    /// Opens a device on `adapter` with any of `wanted` it supports.
    pub async fn from_adapter(
        adapter: &wgpu::Adapter,
        wanted: wgpu::Features,
    ) -> Result<GpuContext, Error> {
        Ok(Self::on(Device::on_adapter(adapter, wanted).await?))
    }

    fn on(dev: Device) -> GpuContext {
        GpuContext {
            pipelines: Pipelines::new(&dev.device),
            pool: Rc::new(BufferPool::default()),
            dev,
        }
    }

    pub fn adapter(&self) -> &AdapterSummary {
        &self.dev.adapter
    }

    pub fn device(&self) -> &wgpu::Device {
        &self.dev.device
    }

    pub fn queue(&self) -> &wgpu::Queue {
        &self.dev.queue
    }

    pub fn caps(&self) -> &Caps {
        &self.dev.caps
    }

    pub fn id(&self) -> ContextId {
        self.dev.id
    }

    /// Why the device is gone, if it is.
    pub fn lost_reason(&self) -> Option<String> {
        self.dev.lost_reason()
    }

    /// The pipeline for `variant`, compiled on first use.
    pub fn pipeline(&self, variant: crate::kernel::Variant) -> wgpu::ComputePipeline {
        self.pipelines.get(&self.dev.device, variant)
    }

    /// Binds one dispatch's buffers (see [`BINDINGS`]).
    pub fn bind_group(&self, in_place: bool, bound: &Bound) -> wgpu::BindGroup {
        self.pipelines.bind(&self.dev.device, in_place, bound)
    }

    /// A uniform buffer holding `params`, outside the pool (for benchmarks).
    pub fn params_buffer(&self, params: Params) -> wgpu::Buffer {
        let b = self.dev.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("params"),
            size: Params::SIZE as u64,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        self.dev.queue.write_buffer(&b, 0, &params.to_bytes());
        b
    }

    /// Records the dispatch of `rows` rows with `pipeline` into `pass`.
    pub fn dispatch(
        &self,
        pass: &mut wgpu::ComputePass,
        pipeline: &wgpu::ComputePipeline,
        group: &wgpu::BindGroup,
        rows: u32,
    ) {
        let (x, y) = grid(rows, self.dev.caps.max_groups_per_dim);
        pass.set_pipeline(pipeline);
        pass.set_bind_group(0, group, &[]);
        pass.dispatch_workgroups(x, y, 1);
    }

    /// Live and idle GPU buffers of this context.
    pub fn buffer_stats(&self) -> BufferStats {
        BufferStats {
            live: self.pool.live(),
            idle: self.pool.idle(),
        }
    }

    /// Whether f16 data goes through WGSL `shader-f16` (else packed u32s).
    pub fn uses_shader_f16(&self) -> bool {
        self.dev.caps.shader_f16
    }

    /// Runs one call and reads its results back: `y`, and `v` too when `want_sum`.
    pub async fn run<A: HostArray>(&self, x: &Inputs<A>, want_sum: bool) -> Result<Output, Error> {
        self.submit(x, Request::host(want_sum))?.read().await
    }

    /// As [`submit`](Self::submit), leaving the results on the GPU as new tensors.
    pub fn submit_to_gpu<A: HostArray>(
        &self,
        x: &Inputs<A>,
        want_sum: bool,
    ) -> Result<Pending, Error> {
        self.submit(x, Request::to_gpu(want_sum))
    }

    /// In place on tensors: `residual ← v`, `input ← y`; no new memory.
    pub fn submit_in_place<A: HostArray>(&self, x: &Inputs<A>) -> Result<Pending, Error> {
        self.submit(x, Request::in_place())
    }

    /// The kernel dispatched `repeat` times in one pass, timed with GPU timestamps where
    /// the device has them ([`Pending::read_timed`]).
    pub fn submit_timed<A: HostArray>(&self, x: &Inputs<A>, repeat: u32) -> Result<Pending, Error> {
        self.submit(x, Request::repeated(repeat, true))
    }

    /// Checks, uploads and submits one call without waiting for it: the one path of every
    /// call. The inputs are read before this returns, so a caller may reuse its arrays as
    /// soon as it has the pending call.
    pub fn submit<A: HostArray>(&self, x: &Inputs<A>, request: Request) -> Result<Pending, Error> {
        let plan = Plan::new(x, request, &self.dev.caps, self.dev.id)?;
        self.dev.check_live()?;
        let mut pending = self.pending(
            plan.shape,
            request.sum,
            plan.dtype,
            request.to == Destination::Host,
        );
        if request.to == Destination::Gpu {
            pending.gpu = Some(GpuOutput {
                y: self.tensor(plan.shape.len(), plan.dtype),
                sum: request
                    .sum
                    .then(|| self.tensor(plan.shape.len(), plan.dtype)),
            });
        }
        if plan.shape.is_empty() {
            return Ok(pending);
        }
        // Everything between the pushes and the pops is synchronous, so calls that
        // interleave at their awaits never share a scope.
        let oom_scope = self
            .dev
            .device
            .push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation_scope = self
            .dev
            .device
            .push_error_scope(wgpu::ErrorFilter::Validation);
        let encoded = self.encode(x, &plan, &mut pending);
        pending.scopes.push((
            "the GPU rejected the work",
            Box::pin(validation_scope.pop()),
        ));
        pending
            .scopes
            .push(("the GPU ran out of memory", Box::pin(oom_scope.pop())));
        encoded?;
        Ok(pending)
    }

    /// Records and submits `plan`'s dispatches, chunk by chunk of rows.
    fn encode<A: HostArray>(
        &self,
        x: &Inputs<A>,
        plan: &Plan,
        pending: &mut Pending,
    ) -> Result<(), Error> {
        let Shape { rows, hidden } = plan.shape;
        let Request {
            to, repeat, timed, ..
        } = plan.request;
        let variant = plan.variant;
        let in_place = to == Destination::InPlace;
        let pipeline = self.pipeline(variant);
        let stage = |name: &str, a: &A, start: usize, count: usize| match a.resident() {
            Some(t) => Ok(Staged::Resident(t.clone())),
            None => {
                let b = self.pooled_storage(count, plan.dtype, wgpu::BufferUsages::COPY_DST);
                a.upload(self.upload_to(&b, start, count)).map_err(|e| {
                    Error::Type(format!("{name}: the browser refused the array ({e})"))
                })?;
                Ok(Staged::Pooled(b))
            }
        };
        let per_row = |name, a: Option<&A>| a.map(|a| stage(name, a, 0, hidden)).transpose();
        let gamma = stage("gamma", &x.gamma, 0, hidden)?;
        let beta = per_row("beta", x.beta.as_ref())?;
        let bias = per_row("bias", x.bias.as_ref())?;

        let mut encoder = self.dev.device.create_command_encoder(&Default::default());
        for first in (0..rows).step_by(plan.rows_per_chunk) {
            let n_rows = plan.rows_per_chunk.min(rows - first);
            let n = n_rows * hidden;
            let input = stage("input", &x.input, first * hidden, n)?;
            let residual = stage("residual", &x.residual, first * hidden, n)?;
            let params = self.pooled_params(Params {
                rows: n_rows as u32,
                width: (hidden as u32) / variant.lanes,
                hidden: hidden as f32,
                eps: x.eps,
            });
            let (output, sum) = match (to, &pending.gpu) {
                (Destination::InPlace, _) => (None, None),
                (_, Some(out)) => (
                    Some(Staged::Resident(out.y.clone())),
                    out.sum.clone().map(Staged::Resident),
                ),
                (_, None) => {
                    let out = || {
                        Staged::Pooled(self.pooled_storage(
                            n,
                            plan.dtype,
                            wgpu::BufferUsages::COPY_SRC,
                        ))
                    };
                    (Some(out()), plan.request.sum.then(out))
                }
            };
            let mut bound: Bound = [None; BINDINGS.len()];
            bound[slot::INPUT] = Some(&input);
            bound[slot::RESIDUAL] = Some(&residual);
            bound[slot::GAMMA] = Some(&gamma);
            bound[slot::BETA] = beta.as_deref();
            bound[slot::BIAS] = bias.as_deref();
            bound[slot::OUTPUT] = output.as_deref();
            bound[slot::SUM] = sum.as_deref();
            bound[slot::PARAMS] = Some(&params);
            let group = self.bind_group(in_place, &bound);
            // The first chunk's pass is the one timed (a timed call is one chunk in practice).
            let query = (timed && self.dev.caps.timestamps && first == 0).then(|| {
                self.dev.device.create_query_set(&wgpu::QuerySetDescriptor {
                    label: Some("pass time"),
                    ty: wgpu::QueryType::Timestamp,
                    count: 2,
                })
            });
            {
                let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: None,
                    timestamp_writes: query.as_ref().map(|query_set| {
                        wgpu::ComputePassTimestampWrites {
                            query_set,
                            beginning_of_pass_write_index: Some(0),
                            end_of_pass_write_index: Some(1),
                        }
                    }),
                });
                for _ in 0..repeat {
                    self.dispatch(&mut pass, &pipeline, &group, n_rows as u32);
                }
            }
            if let Some(query) = query {
                let resolved = self.dev.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("pass time"),
                    size: 16,
                    usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                    mapped_at_creation: false,
                });
                encoder.resolve_query_set(&query, 0..2, &resolved, 0);
                let staging = self.readback(&mut encoder, &resolved, 4, Dtype::F32);
                pending.timestamps = Some((staging, self.dev.queue.get_timestamp_period()));
            }
            if let (Destination::Host, Some(output)) = (to, &output) {
                let y = self.readback(&mut encoder, output, n, plan.dtype);
                let sum = sum
                    .as_ref()
                    .map(|s| self.readback(&mut encoder, s, n, plan.dtype));
                pending.chunks.push(Chunk {
                    start: first * hidden,
                    len: n,
                    y,
                    sum,
                });
            }
            pending
                .kept
                .extend([input, residual, Staged::Pooled(params)]);
            pending.kept.extend(output.into_iter().chain(sum));
        }
        pending.kept.push(gamma);
        pending.kept.extend(beta.into_iter().chain(bias));
        self.dev.queue.submit([encoder.finish()]);
        self.map_results(pending);
        Ok(())
    }

    /// Asks for every staging buffer of `pending` to be mapped once the GPU is done.
    fn map_results(&self, pending: &mut Pending) {
        if let Some((staging, _)) = &pending.timestamps {
            pending.mapped.push(map_read(staging));
        }
        for chunk in &pending.chunks {
            pending.mapped.push(map_read(&chunk.y));
            if let Some(s) = &chunk.sum {
                pending.mapped.push(map_read(s));
            }
        }
    }

    /// Uploads `data` as a tensor of this context.
    pub fn upload<A: HostArray>(&self, data: &A) -> Result<Rc<Tensor>, Error> {
        let (len, dtype) = (data.len(), data.dtype());
        check_upload(len, dtype, &self.dev.caps)?;
        self.dev.check_live()?;
        let buffer = self.tensor_buffer(len, dtype);
        data.upload(self.upload_to(&buffer, 0, len))
            .map_err(|e| Error::Type(format!("data: the browser refused the array ({e})")))?;
        Ok(Rc::new(Tensor::placed(len, dtype, self.placed(buffer))))
    }

    /// Places a tensor uploaded while no device was live, on this context.
    pub fn place(&self, t: &Tensor) {
        t.place(|data: &OwnedArray| {
            let buffer = self.tensor_buffer(t.len, t.dtype);
            // A refusal here has no caller left to tell; the tensor then holds zeros.
            let _ = data.upload(self.upload_to(&buffer, 0, t.len));
            self.placed(buffer)
        });
    }

    fn placed(&self, buffer: wgpu::Buffer) -> Placed {
        Placed::new(buffer, self.dev.id, self.dev.lost.clone())
    }

    fn upload_to<'a>(&'a self, buffer: &'a wgpu::Buffer, start: usize, count: usize) -> Upload<'a> {
        Upload {
            queue: &self.dev.queue,
            buffer,
            start,
            count,
        }
    }

    fn tensor_buffer(&self, len: usize, dtype: Dtype) -> wgpu::Buffer {
        self.dev.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("tensor"),
            size: (len.max(4) * dtype.bytes()).next_multiple_of(16) as u64,
            usage: wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_DST
                | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        })
    }

    /// An uninitialised tensor of `len` elements on this context.
    fn tensor(&self, len: usize, dtype: Dtype) -> Rc<Tensor> {
        let buffer = self.tensor_buffer(len, dtype);
        Rc::new(Tensor::placed(len, dtype, self.placed(buffer)))
    }

    /// Copies a tensor of this context back to the host.
    pub fn read_tensor(&self, t: &Rc<Tensor>) -> Result<Pending, Error> {
        let buffer = t.check("tensor", self.dev.id)?;
        let shape = Shape {
            rows: usize::from(t.len > 0),
            hidden: t.len.max(1),
        };
        let mut pending = self.pending(shape, false, t.dtype, true);
        if t.len == 0 {
            return Ok(pending);
        }
        let mut encoder = self.dev.device.create_command_encoder(&Default::default());
        let y = self.readback(&mut encoder, buffer, t.len, t.dtype);
        self.dev.queue.submit([encoder.finish()]);
        pending.chunks.push(Chunk {
            start: 0,
            len: t.len,
            y,
            sum: None,
        });
        pending.holds.push(t.clone());
        self.map_results(&mut pending);
        Ok(pending)
    }

    fn pending(&self, shape: Shape, want_sum: bool, dtype: Dtype, read_back: bool) -> Pending {
        Pending {
            shape,
            want_sum,
            read_back,
            dtype,
            lost: self.dev.lost.clone(),
            device: self.dev.device.clone(),
            pool: self.pool.clone(),
            chunks: Vec::new(),
            scopes: Vec::new(),
            mapped: Vec::new(),
            kept: Vec::new(),
            holds: Vec::new(),
            gpu: None,
            timestamps: None,
        }
    }

    /// A pooled storage buffer of `len` elements.
    fn pooled_storage(&self, len: usize, dtype: Dtype, extra: wgpu::BufferUsages) -> Pooled {
        let usage = wgpu::BufferUsages::STORAGE | extra;
        self.pool
            .take(&self.dev.device, usage, (len * dtype.bytes()) as u64)
    }

    fn pooled_params(&self, params: Params) -> Pooled {
        let usage = wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST;
        let b = self.pool.take(&self.dev.device, usage, Params::SIZE as u64);
        self.dev.queue.write_buffer(&b, 0, &params.to_bytes());
        b
    }

    /// A mappable copy of the first `n` elements of `src`, recorded into `encoder`.
    fn readback(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        src: &wgpu::Buffer,
        n: usize,
        dtype: Dtype,
    ) -> Pooled {
        let usage = wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST;
        let bytes = dtype.copy_bytes(n);
        let staging = self.pool.take(&self.dev.device, usage, bytes);
        encoder.copy_buffer_to_buffer(src, 0, &staging, 0, bytes);
        staging
    }
}

/// Settings that tests and benchmarks change to reach paths a device would not take.
impl GpuContext {
    /// Uses packed u32 storage for f16 even where `shader-f16` is available (to test that
    /// path, or to work around a driver).
    pub fn set_shader_f16(&mut self, on: bool) {
        self.dev.caps.shader_f16 = on
            && self
                .dev
                .device
                .features()
                .contains(wgpu::Features::SHADER_F16);
    }

    /// Tiles kernels as for a CPU adapter in the browser, so native tests cover that tiling.
    pub fn set_cpu_tiling(&mut self, on: bool) {
        self.dev.caps.cpu_tiling = on;
    }

    /// Caps storage bindings below the device's limit, so tests can reach the row-splitting
    /// path and the row-too-large error without allocating gigabytes.
    pub fn set_binding_limit(&mut self, bytes: u64) {
        self.dev.caps.max_binding = self.dev.caps.max_binding.min(bytes.max(16));
    }

    /// Destroys the device, as a driver reset would; for tests of device loss.
    pub fn destroy_device(&self) {
        self.dev.destroy();
    }
}
