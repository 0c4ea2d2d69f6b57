//! One call through the driver: check ([`Plan`]) → stage the inputs → record the
//! dispatches (through wgpu, or on the web through the browser's WebGPU directly) → submit
//! → a [`Pending`] that resolves to the results. Every entry point (arrays, tensors, in
//! place, `output: "gpu"`, f16, the timing calls) comes through [`GpuContext::submit`].

use std::cell::RefCell;

use crate::call::dtype::Dtype;
use crate::call::error::Error;
use crate::call::host::HostArray;
use crate::call::plan::{Destination, Plan, Request};
use crate::call::results::{GpuOutput, Output};
use crate::call::shape::{Inputs, Shape};
use crate::gpu::app_buffer::GpuAppBuffer;
use crate::gpu::bindings::{slot, Bound, BINDINGS};
use crate::gpu::params::Params;
use crate::gpu::pending::{Chunk, Pending, Staged};
use crate::gpu::pool::Pooled;

use super::GpuContext;

/// Distinct uniform blocks kept before the cache starts over.
const MAX_UNIFORMS: usize = 64;

impl GpuContext {
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
        self.trim_now_and_then();
        let mut pending = self.pending(
            plan.shape(),
            request.sum,
            (plan.kernel.dtype, plan.kernel.out_dtype),
            request.to == Destination::Host,
        );
        self.in_call.set(true);
        // Everything from the first push to the pops is synchronous, so calls that
        // interleave at their awaits never share a scope.
        let encoded = self.encode(x, &plan, &mut pending);
        self.in_call.set(false);
        // Popped in the order pushed's reverse, as scopes nest.
        if let Some((oom, validation)) = self.scopes.take() {
            pending
                .scopes
                .push(("the GPU rejected the work", Box::pin(validation.pop())));
            pending
                .scopes
                .push(("the GPU ran out of memory", Box::pin(oom.pop())));
        }
        encoded?;
        Ok(pending)
    }

    /// Pushes the call's error scopes, if not yet pushed, before it creates a GPU object.
    /// A call that creates nothing (every object cached, every buffer from the pool: in
    /// place, results left on the GPU as tensors whose buffers freed ones had, host arrays
    /// once warm) pushes none and resolves without waiting on them: on Dawn on an H200,
    /// awaiting two scopes cost a call 12 µs; in Chromium 153 on an H200 a call that created
    /// its result buffers and awaited their scopes cost 280–320 µs against 47–49 in place.
    /// Such a call records the same commands on the same objects as an earlier call that
    /// was checked, and a lost device is caught by the next call.
    pub(super) fn creating(&self) {
        if self.in_call.get() && self.scopes.borrow().is_none() {
            let device = &self.dev.device;
            let oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
            let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
            *self.scopes.borrow_mut() = Some((oom, validation));
        }
    }

    /// Makes `plan`'s new tensors, records and submits its dispatches, chunk by chunk of rows.
    fn encode<A: HostArray>(
        &self,
        x: &Inputs<A>,
        plan: &Plan,
        pending: &mut Pending,
    ) -> Result<(), Error> {
        if plan.request.to == Destination::Gpu {
            let tensor = |dtype| self.tensor(plan.shape().len(), dtype);
            pending.gpu = Some(GpuOutput {
                y: tensor(plan.kernel.out_dtype),
                sum: plan.request.sum.then(|| tensor(plan.kernel.dtype)),
            });
        }
        if plan.shape().is_empty() {
            return Ok(());
        }
        let Shape { rows, hidden } = plan.shape();
        let Request {
            to, repeat, timed, ..
        } = plan.request;
        let variant = plan.kernel.variant(&self.dev.caps, plan.rows);
        let in_place = to == Destination::InPlace;
        // On the web, a call whose results stay on the GPU is dispatched through the
        // browser's WebGPU directly (`Recorder::submit`): the decode step, where the call's
        // own cost is what an app waits for. Readbacks and timed calls go through wgpu.
        let direct = cfg!(target_arch = "wasm32")
            && !timed
            && to != Destination::Host
            && rows <= plan.rows_per_chunk;
        let mut through_wgpu = (!direct).then(|| {
            (
                self.pipeline(variant),
                self.dev.device.create_command_encoder(&Default::default()),
            )
        });
        let copies = RefCell::new(Vec::new());
        let stage = |name: &'static str, a: &A, start: usize, count: usize| {
            if let Some(t) = a.resident() {
                return Ok(Staged::Resident(t.clone()));
            }
            let b = self.pooled_storage(count, plan.kernel.dtype, wgpu::BufferUsages::COPY_DST);
            match a.app_buffer() {
                Some(app) => copies.borrow_mut().push(app.copy_into(
                    name,
                    &self.dev.device,
                    &self.dev.queue,
                    &b,
                    start,
                    count,
                )?),
                None => a.upload(&self.upload_to(&b, start, count)).map_err(|e| {
                    Error::Type(format!("{name}: the browser refused the array ({e})"))
                })?,
            }
            Ok(Staged::Pooled(b))
        };
        let per_row = |name, a: Option<&A>| a.map(|a| stage(name, a, 0, hidden)).transpose();
        let gamma = stage("gamma", &x.gamma, 0, hidden)?;
        let beta = per_row("beta", x.beta.as_ref())?;
        let bias = per_row("bias", x.bias.as_ref())?;
        let post_gamma = per_row("postGamma", x.post_gamma.as_ref())?;

        for first in (0..rows).step_by(plan.rows_per_chunk) {
            let n_rows = plan.rows_per_chunk.min(rows - first);
            let n = n_rows * hidden;
            let input = stage("input", &x.input, first * hidden, n)?;
            let residual = x
                .residual
                .as_ref()
                .map(|r| stage("residual", r, first * hidden, n))
                .transpose()?;
            let params = self.uniform(Params {
                rows: n_rows as u32,
                width: (hidden as u32) / variant.lanes,
                hidden: hidden as f32,
                eps: x.eps,
                gamma_offset: x.norm.gamma_offset,
            });
            let (output, sum) = match (to, &pending.gpu) {
                (Destination::InPlace, _) => (None, None),
                (_, Some(out)) => (
                    Some(Staged::Resident(out.y.clone())),
                    out.sum.clone().map(Staged::Resident),
                ),
                (_, None) => {
                    let out = |dtype| {
                        Staged::Pooled(self.pooled_storage(n, dtype, wgpu::BufferUsages::COPY_SRC))
                    };
                    (
                        Some(out(plan.kernel.out_dtype)),
                        plan.request.sum.then(|| out(plan.kernel.dtype)),
                    )
                }
            };
            let mut bound: Bound = [None; BINDINGS.len()];
            bound[slot::INPUT] = Some(&input);
            bound[slot::RESIDUAL] = residual.as_deref();
            bound[slot::GAMMA] = Some(&gamma);
            bound[slot::BETA] = beta.as_deref();
            bound[slot::BIAS] = bias.as_deref();
            bound[slot::POST_GAMMA] = post_gamma.as_deref();
            bound[slot::OUTPUT] = output.as_deref();
            bound[slot::SUM] = sum.as_deref();
            bound[slot::PARAMS] = Some(&params);
            let Some((pipeline, encoder)) = &mut through_wgpu else {
                #[cfg(target_arch = "wasm32")]
                self.recorder()?.submit(
                    variant,
                    self.pipelines.binding(in_place, &bound),
                    n_rows as u32,
                    self.caps().max_groups_per_dim,
                    &|| self.creating(),
                )?;
                pending.kept.extend(std::iter::once(input).chain(residual));
                pending.kept.extend(output.into_iter().chain(sum));
                continue;
            };
            let group = self.bind_group(in_place, &bound);
            // The first chunk's pass is the one timed (a timed call is one chunk in practice).
            let query = (timed && self.dev.caps.timestamps && first == 0).then(|| {
                self.creating();
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
                    self.dispatch(&mut pass, (variant, pipeline), &group, n_rows as u32);
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
                let staging = self.readback(encoder, &resolved, 4, Dtype::F32);
                pending.timestamps = Some((staging, self.dev.queue.get_timestamp_period()));
            }
            if let (Destination::Host, Some(output)) = (to, &output) {
                let y = self.readback(encoder, output, n, plan.kernel.out_dtype);
                let sum = sum
                    .as_ref()
                    .map(|s| self.readback(encoder, s, n, plan.kernel.dtype));
                pending.chunks.push(Chunk {
                    start: first * hidden,
                    len: n,
                    y,
                    sum,
                });
            }
            pending.kept.extend(std::iter::once(input).chain(residual));
            pending.kept.extend(output.into_iter().chain(sum));
        }
        pending.kept.push(gamma);
        pending
            .kept
            .extend(beta.into_iter().chain(bias).chain(post_gamma));
        pending.copies.extend(copies.take());
        if let Some((_, encoder)) = through_wgpu {
            self.dev.queue.submit([encoder.finish()]);
        }
        Ok(())
    }

    pub(crate) fn pending(
        &self,
        shape: Shape,
        want_sum: bool,
        (dtype, out_dtype): (Dtype, Dtype),
        read_back: bool,
    ) -> Pending {
        Pending {
            shape,
            want_sum,
            read_back,
            dtype,
            out_dtype,
            lost: self.dev.lost.clone(),
            device: self.dev.device.clone(),
            pool: self.pool.clone(),
            chunks: Vec::new(),
            scopes: Vec::new(),
            copies: Vec::new(),
            mapped: Vec::new(),
            kept: Vec::new(),
            holds: Vec::new(),
            reads_a_tensor: false,
            gpu: None,
            timestamps: None,
        }
    }

    /// A pooled storage buffer of `len` elements.
    fn pooled_storage(&self, len: usize, dtype: Dtype, extra: wgpu::BufferUsages) -> Pooled {
        let usage = wgpu::BufferUsages::STORAGE | extra;
        self.pool.take(
            &self.dev.device,
            usage,
            (len * dtype.bytes()) as u64,
            &|| self.creating(),
        )
    }

    /// The uniform buffer holding `params`: one per distinct block, written once. An app
    /// calls with few shapes, so this saves a buffer and a `writeBuffer` per call.
    pub(crate) fn uniform(&self, params: Params) -> wgpu::Buffer {
        let bytes = params.to_bytes();
        if let Some(b) = self.uniforms.borrow().get(&bytes) {
            return b.clone();
        }
        let mut uniforms = self.uniforms.borrow_mut();
        if uniforms.len() >= MAX_UNIFORMS {
            uniforms.clear();
        }
        self.creating();
        let b = self.params_buffer(params);
        uniforms.insert(bytes, b.clone());
        b
    }

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
