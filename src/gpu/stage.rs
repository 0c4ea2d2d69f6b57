//! A call's inputs on the GPU: each array bound as it is (a tensor), copied on the GPU into a
//! pooled buffer (an app's `GPUBuffer`), or uploaded into one (host data). The per-column
//! arrays are staged once per call, `input`, `residual` and `input2` once per chunk of rows.

use crate::call::dtype::Dtype;
use crate::call::error::Error;
use crate::call::host::HostArray;
use crate::call::plan::Plan;
use crate::call::rotary::Rotary;
use crate::call::shape::Inputs;
use crate::gpu::app_buffer::Check;
use crate::gpu::pending::StagedBuffer;
use crate::gpu::pool::Pooled;
use crate::gpu::recording::Rows;

use super::GpuContext;

/// A call's per-column arrays, staged once for all its chunks.
pub(super) struct Columns {
    pub gamma: Option<StagedBuffer>,
    pub beta: Option<StagedBuffer>,
    pub bias: Option<StagedBuffer>,
    pub post_gamma: Option<StagedBuffer>,
    /// A rotary stage's table (`Rotary::table`).
    pub rotary: Option<StagedBuffer>,
}

impl Columns {
    /// In the order the call keeps them until the GPU is done.
    pub fn into_kept(self) -> impl Iterator<Item = StagedBuffer> {
        self.gamma
            .into_iter()
            .chain(self.beta)
            .chain(self.bias)
            .chain(self.post_gamma)
            .chain(self.rotary)
    }
}

/// A chunk's rows of `input`, `residual` and `input2`.
pub(super) struct RowData {
    pub input: StagedBuffer,
    pub residual: Option<StagedBuffer>,
    pub input2: Option<StagedBuffer>,
}

impl RowData {
    pub fn into_kept(self) -> impl Iterator<Item = StagedBuffer> {
        std::iter::once(self.input)
            .chain(self.residual)
            .chain(self.input2)
    }
}

/// Stages one call's arrays, and collects the checks of its copies from app buffers.
pub(super) struct Staging<'a> {
    ctx: &'a GpuContext,
    dtype: Dtype,
    hidden: usize,
    rows: usize,
    copies: Vec<Check>,
}

impl<'a> Staging<'a> {
    pub fn new(ctx: &'a GpuContext, plan: &Plan) -> Staging<'a> {
        Staging {
            ctx,
            dtype: plan.kernel.dtype,
            hidden: plan.shape().hidden,
            rows: plan.shape().rows,
            copies: Vec::new(),
        }
    }

    /// `gamma`, `beta`, `bias`, `postGamma` and a rotary stage's table where given.
    pub fn columns<A: HostArray>(&mut self, x: &Inputs<A>) -> Result<Columns, Error> {
        let hidden = self.hidden;
        Ok(Columns {
            // A gamma a head holds several rows of weights (checked by `Shape::of`).
            gamma: self.optional(
                "gamma",
                x.gamma.as_ref(),
                0,
                x.gamma.as_ref().map_or(hidden, |g| g.len()),
            )?,
            beta: self.optional("beta", x.beta.as_ref(), 0, hidden)?,
            bias: self.optional("bias", x.bias.as_ref(), 0, hidden)?,
            post_gamma: self.optional("postGamma", x.post_gamma.as_ref(), 0, hidden)?,
            rotary: x
                .rotary
                .as_ref()
                .map(|r| self.rotary_table(r))
                .transpose()?,
        })
    }

    /// A rotary stage's frequencies (or the app's cos and sin) and positions as the kernel reads them: the
    /// context's kept table, or, where the positions are an app's buffer, a table of the
    /// call's own with them copied in on the GPU (a kept one would be shared by calls whose
    /// copies may run before another's kernel).
    fn rotary_table(&mut self, rotary: &Rotary) -> Result<StagedBuffer, Error> {
        let rotary_dim = rotary.kernel(self.hidden).rotary_dim as usize;
        let Some((app, tokens, to)) = rotary.buffer_positions(self.rows, rotary_dim) else {
            let table = self.ctx.rotary_table(rotary, self.rows, self.hidden);
            return Ok(StagedBuffer::Kept(table));
        };
        let ctx = self.ctx;
        let words = rotary.frequencies.words(rotary_dim);
        let b = ctx.pooled_storage(
            words.len() + tokens,
            Dtype::F32,
            wgpu::BufferUsages::COPY_DST,
        );
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        ctx.dev.queue.write_buffer(&b, 0, &bytes);
        let (device, queue) = (&ctx.dev.device, &ctx.dev.queue);
        let copy = app.copy_into("positions", device, queue, &b, (0, tokens), to)?;
        self.copies.push(copy);
        Ok(StagedBuffer::Pooled(b))
    }

    /// The chunk `rows` of `input`, and of `residual` and `input2` where given.
    pub fn rows<A: HostArray>(&mut self, x: &Inputs<A>, rows: Rows) -> Result<RowData, Error> {
        let (start, count) = (rows.first * self.hidden, rows.count * self.hidden);
        Ok(RowData {
            input: self.stage("input", &x.input, start, count)?,
            residual: self.optional("residual", x.residual.as_ref(), start, count)?,
            input2: self.optional("input2", x.input2.as_ref(), start, count)?,
        })
    }

    /// The checks of the copies from app buffers, which the call awaits before its own.
    pub fn into_copies(self) -> Vec<Check> {
        self.copies
    }

    fn optional<A: HostArray>(
        &mut self,
        name: &'static str,
        a: Option<&A>,
        start: usize,
        count: usize,
    ) -> Result<Option<StagedBuffer>, Error> {
        a.map(|a| self.stage(name, a, start, count)).transpose()
    }

    /// Elements `start .. start + count` of `a` on the GPU (`name` is the argument's).
    fn stage<A: HostArray>(
        &mut self,
        name: &'static str,
        a: &A,
        start: usize,
        count: usize,
    ) -> Result<StagedBuffer, Error> {
        if let Some(t) = a.resident() {
            return Ok(StagedBuffer::Resident(t.clone()));
        }
        let ctx = self.ctx;
        let b = ctx.pooled_storage(count, self.dtype, wgpu::BufferUsages::COPY_DST);
        match a.app_buffer() {
            Some(app) => self.copies.push(app.copy_into(
                name,
                &ctx.dev.device,
                &ctx.dev.queue,
                &b,
                (start, count),
                0,
            )?),
            None => a
                .upload(&ctx.upload_to(&b, start, count))
                .map_err(|e| Error::Type(format!("{name}: the browser refused the array ({e})")))?,
        }
        Ok(StagedBuffer::Pooled(b))
    }
}

impl GpuContext {
    /// A pooled storage buffer of `len` elements.
    pub(super) fn pooled_storage(
        &self,
        len: usize,
        dtype: Dtype,
        extra: wgpu::BufferUsages,
    ) -> Pooled {
        let usage = wgpu::BufferUsages::STORAGE | extra;
        self.pool.take(
            &self.dev.device,
            usage,
            (len * dtype.bytes()) as u64,
            &|| self.creating(),
        )
    }
}
