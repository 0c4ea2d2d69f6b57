//! One call through the driver, as a list of steps: check ([`Plan`]) → stage the inputs
//! (`stage.rs`) → allocate the outputs → record each chunk's dispatches, timing and readback
//! copies (`recording.rs`: through wgpu, or on the web through the browser's WebGPU directly)
//! → submit → a [`Pending`] that resolves to the results (`pending.rs`). Every entry point
//! (arrays, tensors, in place, `output: "gpu"`, f16, the timing calls) comes through
//! [`GpuContext::submit`].

use crate::call::dtype::Dtype;
use crate::call::error::Error;
use crate::call::host::HostArray;
use crate::call::plan::{Destination, Plan, Request};
use crate::call::results::{Given, GpuOutput, Output};
use crate::call::shape::{Inputs, Shape};
use crate::gpu::kernel::bindings::{slot, Bound, BINDINGS};
use crate::gpu::kernel::params::Params;
use crate::gpu::kernel::Variant;
use crate::gpu::pending::{Pending, StagedBuffer};
#[cfg(target_arch = "wasm32")]
use crate::gpu::recording::BrowserRecording;
use crate::gpu::recording::{ChunkWork, Recording, Rows, WgpuRecording};
use crate::gpu::stage::{Columns, RowData, Staging};

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
        pending.want_y = plan.kernel.options.output;
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
    /// once warm) pushes none and resolves without waiting on them: in a browser, a small call
    /// that awaits its scopes costs much more than one that does not (measured in
    /// docs/performance.md, "Chrome on a real GPU").
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

    /// Records and submits `plan`'s dispatches, chunk by chunk of rows: through the
    /// browser's WebGPU objects where [`BrowserRecording`] takes the call, else through wgpu.
    fn encode<A: HostArray>(
        &self,
        x: &Inputs<A>,
        plan: &Plan,
        pending: &mut Pending,
    ) -> Result<(), Error> {
        pending.gpu = self.gpu_results(plan);
        if plan.shape().is_empty() {
            return Ok(());
        }
        let variant = self.variant(plan);
        #[cfg(target_arch = "wasm32")]
        if BrowserRecording::takes(plan) {
            return self.record_chunks(x, (plan, variant), pending, BrowserRecording);
        }
        let recording = WgpuRecording::new(self, variant);
        self.record_chunks(x, (plan, variant), pending, recording)
    }

    /// The steps of a call with rows: stage its arrays, allocate each chunk's outputs,
    /// record (and time, and copy for readback) each chunk, submit. `pending` keeps every
    /// buffer until the GPU is done with it.
    fn record_chunks<A: HostArray>(
        &self,
        x: &Inputs<A>,
        (plan, variant): (&Plan, Variant),
        pending: &mut Pending,
        mut recording: impl Recording,
    ) -> Result<(), Error> {
        let mut staging = Staging::new(self, plan);
        let columns = staging.columns(x)?;
        for rows in chunks(plan) {
            let data = staging.rows(x, rows)?;
            let (output, sum) = self.outputs(plan, rows, pending);
            let params = self.uniform(call_params(x, plan, rows.count));
            let bound = bind(&columns, &data, (&output, &sum), &params);
            let chunk = ChunkWork {
                ctx: self,
                plan,
                variant,
                rows,
                bound,
            };
            recording.record(&chunk, pending)?;
            pending
                .kept
                .extend(data.into_kept().chain(output).chain(sum));
        }
        pending.kept.extend(columns.into_kept());
        pending.copies.extend(staging.into_copies());
        recording.submit(self);
        Ok(())
    }

    /// The new tensors a call whose results stay on the GPU resolves with.
    fn gpu_results(&self, plan: &Plan) -> Option<GpuOutput> {
        let tensor = |dtype| self.tensor(plan.shape().len(), dtype);
        (plan.request.to == Destination::Gpu).then(|| GpuOutput {
            y: plan
                .kernel
                .options
                .output
                .then(|| tensor(plan.kernel.out_dtype)),
            sum: plan.request.sum.then(|| tensor(plan.kernel.dtype)),
        })
    }

    /// Where a chunk's `y` and `v` are written: nowhere new in place (over `input` and
    /// `residual`), into the call's new tensors, or into pooled buffers to read back.
    fn outputs(
        &self,
        plan: &Plan,
        rows: Rows,
        pending: &Pending,
    ) -> (Option<StagedBuffer>, Option<StagedBuffer>) {
        match (plan.request.to, &pending.gpu) {
            (Destination::InPlace, _) => (None, None),
            (_, Some(out)) => (
                out.y.clone().map(StagedBuffer::Resident),
                out.sum.clone().map(StagedBuffer::Resident),
            ),
            (_, None) => {
                let n = rows.count * plan.shape().hidden;
                let out = |dtype| {
                    StagedBuffer::Pooled(self.pooled_storage(
                        n,
                        dtype,
                        wgpu::BufferUsages::COPY_SRC,
                    ))
                };
                (
                    plan.kernel
                        .options
                        .output
                        .then(|| out(plan.kernel.out_dtype)),
                    plan.request.sum.then(|| out(plan.kernel.dtype)),
                )
            }
        }
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
            want_y: true,
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
            given: Given::default(),
        }
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
}

/// The chunks of `plan`'s rows, each as many rows as one storage binding holds.
fn chunks(plan: &Plan) -> impl Iterator<Item = Rows> {
    let (all, per_chunk) = (plan.shape().rows, plan.rows_per_chunk);
    (0..all).step_by(per_chunk).map(move |first| Rows {
        first,
        count: per_chunk.min(all - first),
    })
}

/// The buffers a chunk's dispatches bind, by the binding table's slots.
fn bind<'a>(
    columns: &'a Columns,
    data: &'a RowData,
    (output, sum): (&'a Option<StagedBuffer>, &'a Option<StagedBuffer>),
    params: &'a wgpu::Buffer,
) -> Bound<'a> {
    let mut bound: Bound = [None; BINDINGS.len()];
    bound[slot::INPUT] = Some(&data.input);
    bound[slot::RESIDUAL] = data.residual.as_deref();
    bound[slot::GAMMA] = columns.gamma.as_deref();
    bound[slot::BETA] = columns.beta.as_deref();
    bound[slot::BIAS] = columns.bias.as_deref();
    bound[slot::POST_GAMMA] = columns.post_gamma.as_deref();
    if columns.rotary.is_some() {
        bound[slot::ROTARY] = columns.rotary.as_deref();
    }
    if data.input2.is_some() {
        bound[slot::INPUT2] = data.input2.as_deref();
    }
    bound[slot::OUTPUT] = output.as_deref();
    bound[slot::SUM] = sum.as_deref();
    bound[slot::PARAMS] = Some(params);
    bound
}

/// The uniform block of a dispatch of `rows` rows of `x` as `plan` runs it.
pub(crate) fn call_params<A>(x: &Inputs<A>, plan: &Plan, rows: usize) -> Params {
    let hidden = plan.shape().hidden;
    let rotary = x.rotary.as_ref();
    let shape = rotary.map(|r| r.shape(plan.shape().rows, hidden));
    Params {
        rotary_start: rotary.map_or(0, |r| r.start()),
        rotary_heads: shape.map_or(1, |s| s.heads as u32),
        rotary_pass: shape.map_or(0, |s| (s.heads - s.turned) as u32),
        rotary_scaling: rotary.map_or(1.0, |r| r.attention_scaling),
        ..Params::new(
            rows as u32,
            hidden as u32 / plan.kernel.lanes(),
            hidden as f32,
            x.eps,
            x.norm.gamma_offset,
        )
    }
}
