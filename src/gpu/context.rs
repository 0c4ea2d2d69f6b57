//! The GPU driver: a device, its pipelines and buffer pool (this file); the one path every
//! call takes through them (`submit.rs`: plan → stage (`stage.rs`) → record (`recording.rs`)
//! → submit → a `Pending`); and tensors' uploads and readback (`resident.rs`).
//!
//! The same code runs on the browser's WebGPU (wasm) and on Vulkan (native tests and
//! benchmarks). Uploads go through `writeBuffer`, every dispatch of a call goes into one
//! submission, and each result is read back once.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::future::Future;
use std::rc::Rc;

use crate::call::device::{Caps, ContextId};
use crate::call::error::Error;
use crate::call::plan::Kernel;
use crate::call::plan::Plan;
use crate::call::rotary::{Positions, Rotary};
#[cfg(target_arch = "wasm32")]
use crate::gpu::browser_pipelines::BrowserPipelines;
use crate::gpu::device::{AdapterSummary, Device};
use crate::gpu::kernel::bindings::Bound;
use crate::gpu::kernel::params::Params;
use crate::gpu::kernel::Variant;
use crate::gpu::pipelines::Pipelines;
use crate::gpu::pool::BufferPool;
use crate::support::clock::now_ms;

/// Rotary tables a context keeps at most (`rotary_table`): past it, it starts again.
const MAX_TABLES: usize = 64;

pub struct GpuContext {
    pub(crate) dev: Device,
    pub(super) pipelines: Pipelines,
    pub(crate) pool: Rc<BufferPool>,
    /// When the pool was last trimmed of buffers idle too long (ms, `clock::now_ms`).
    pub(super) trimmed_at: Cell<f64>,
    /// The error scopes of the call being encoded, once it has pushed them (`creating`, in `submit.rs`).
    pub(super) scopes: RefCell<Option<(wgpu::ErrorScopeGuard, wgpu::ErrorScopeGuard)>>,
    pub(super) in_call: Cell<bool>,
    /// Uniform blocks by content (see `uniform` in `submit.rs`).
    pub(super) uniforms: RefCell<HashMap<[u8; Params::SIZE], wgpu::Buffer>>,
    /// Rotary stages' tables by content (`rotary_table`).
    /// Those whose positions an app's buffer fills on the GPU are apart (`true`): their
    /// words are zeros where the positions go.
    pub(super) tables: RefCell<HashMap<(Vec<u32>, bool), wgpu::Buffer>>,
    /// The kernel's objects made on the browser's WebGPU directly: for `norm.encode`
    /// (`encode.rs`), and for this context's calls whose results stay on the GPU
    /// (`BrowserRecording` in `recording.rs`).
    #[cfg(target_arch = "wasm32")]
    pub(super) browser_pipelines: RefCell<Option<BrowserPipelines>>,
}

/// Buffer counts for leak checks: `live` must stay flat over a long run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BufferStats {
    pub live: usize,
    pub idle: usize,
    pub idle_bytes: u64,
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
            trimmed_at: Cell::new(0.0),
            uniforms: RefCell::new(HashMap::new()),
            tables: RefCell::new(HashMap::new()),
            scopes: RefCell::new(None),
            in_call: Cell::new(false),
            #[cfg(target_arch = "wasm32")]
            browser_pipelines: RefCell::new(None),
            dev,
        }
    }

    /// This context's [`BrowserPipelines`], made on first use; `Err` if an
    /// argument's getter calls back into the package from inside a call that holds it.
    #[cfg(target_arch = "wasm32")]
    pub(crate) fn browser_pipelines(
        &self,
    ) -> Result<std::cell::RefMut<'_, BrowserPipelines>, Error> {
        let mut slot = self.browser_pipelines.try_borrow_mut().map_err(|_| {
            Error::InvalidState(
                "encode: expected no call of encode from inside an argument of encode".into(),
            )
        })?;
        if slot.is_none() {
            *slot = Some(BrowserPipelines::new(&self.dev.device, &self.dev.queue)?);
        }
        std::cell::RefMut::filter_map(slot, Option::as_mut)
            .map_err(|_| Error::InvalidState("encode: no recorder".into()))
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

    /// The kernel variant this device runs `plan` with.
    pub fn variant(&self, plan: &Plan) -> Variant {
        plan.kernel.variant(&self.dev.caps, plan.rows)
    }

    /// Why the device is gone, if it is.
    pub fn lost_reason(&self) -> Option<String> {
        self.dev.lost_reason()
    }

    /// The pipeline for `variant`, compiled on first use.
    pub fn pipeline(&self, variant: crate::gpu::kernel::Variant) -> wgpu::ComputePipeline {
        self.pipelines
            .get(&self.dev.device, variant, &|| self.creating())
    }

    /// Bound in place of an absent optional binding `b` (by `encode.rs`, wasm only).
    #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
    pub(crate) fn stub(
        &self,
        b: &crate::gpu::kernel::bindings::Binding,
        in_place: bool,
    ) -> &wgpu::Buffer {
        self.pipelines.stub(b, in_place)
    }

    /// Binds one dispatch's buffers (see [`BINDINGS`](crate::gpu::kernel::bindings::BINDINGS)).
    pub fn bind_group(&self, in_place: bool, bound: &Bound) -> wgpu::BindGroup {
        self.pipelines
            .bind(&self.dev.device, in_place, bound, &|| self.creating())
    }

    /// A uniform buffer holding `params`, outside the pool (for benchmarks).
    /// The storage buffer of a rotary stage's table (`Rotary::table`) for a call of `rows` ×
    /// `hidden`: one per distinct table, written once, as uniform blocks are (`uniform`). A
    /// decode step from a start position keeps the same table (the start is in the uniform
    /// block), so a model's steps reuse one buffer, and a recorded dispatch stays valid.
    /// Where an app's buffer holds the positions, each recording copies them in before its
    /// kernel, in the same command buffer (`encode.rs`).
    pub(crate) fn rotary_table(&self, rotary: &Rotary, rows: usize, hidden: usize) -> wgpu::Buffer {
        let words = rotary.table(rows, rotary.kernel(hidden).rotary_dim as usize);
        let key = (words, matches!(rotary.positions, Positions::Buffer(_)));
        if let Some(b) = self.tables.borrow().get(&key) {
            return b.clone();
        }
        let mut tables = self.tables.borrow_mut();
        if tables.len() >= MAX_TABLES {
            tables.clear();
        }
        let b = self.dev.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("rotary table"),
            size: (key.0.len() * 4) as u64,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let bytes: Vec<u8> = key.0.iter().flat_map(|w| w.to_le_bytes()).collect();
        self.dev.queue.write_buffer(&b, 0, &bytes);
        tables.insert(key, b.clone());
        b
    }

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

    /// Records the dispatch of `rows` rows of `variant` (compiled as `pipeline`) into `pass`.
    pub fn dispatch(
        &self,
        pass: &mut wgpu::ComputePass,
        (variant, pipeline): (Variant, &wgpu::ComputePipeline),
        group: &wgpu::BindGroup,
        rows: u32,
    ) {
        let (x, y) = variant.grid(rows, self.dev.caps.max_groups_per_dim);
        pass.set_pipeline(pipeline);
        pass.set_bind_group(0, group, &[]);
        pass.dispatch_workgroups(x, y, 1);
    }

    /// Live and idle GPU buffers of this context.
    pub fn buffer_stats(&self) -> BufferStats {
        BufferStats {
            live: self.pool.live(),
            idle: self.pool.idle(),
            idle_bytes: self.pool.idle_bytes(),
        }
    }

    /// Compiles the pipelines of `kernels` now, and resolves once the device has them, so
    /// that the first calls that need them do not wait for the compiler.
    pub fn prepare(&self, kernels: &[Kernel]) -> Result<impl Future<Output = ()> + 'static, Error> {
        self.dev.check_live()?;
        for k in kernels {
            k.check()?;
            for variant in k.variants(&self.dev.caps) {
                // On the web, calls whose results stay on the GPU dispatch the browser's own
                // pipeline (`browser_pipelines.rs`), and in place is always such a call: its kernel
                // needs no wgpu pipeline there.
                if !(cfg!(target_arch = "wasm32") && variant.in_place) {
                    self.pipeline(variant);
                }
                #[cfg(target_arch = "wasm32")]
                self.browser_pipelines()?.prepare(variant)?;
            }
        }
        // The browser compiles in the GPU process, in order with the queue's work: once an
        // empty submission is done, so are the pipelines made before it.
        let (tx, rx) = futures_channel::oneshot::channel();
        self.dev.queue.submit([]);
        self.dev.queue.on_submitted_work_done(move || {
            let _ = tx.send(());
        });
        #[cfg(not(target_arch = "wasm32"))]
        let _ = self.dev.device.poll(wgpu::PollType::wait_indefinitely());
        Ok(async move {
            let _ = rx.await;
        })
    }

    /// Pipelines compiled so far.
    pub fn pipeline_count(&self) -> usize {
        // Kernels, not objects: on the web a variant may be compiled for wgpu's path and for
        // the direct dispatch both.
        #[allow(unused_mut)]
        let mut variants: std::collections::HashSet<_> =
            self.pipelines.variants().into_iter().collect();
        #[cfg(target_arch = "wasm32")]
        if let Ok(r) = self.browser_pipelines.try_borrow() {
            variants.extend(r.iter().flat_map(|r| r.variants()));
        }
        variants.len()
    }

    /// Releases every idle pooled buffer.
    pub fn trim(&self) {
        self.pool.trim();
    }

    /// Releases the pooled buffers idle since before `now_ms - pool::IDLE_RELEASE_MS`;
    /// returns how many stay idle.
    pub fn trim_idle(&self, now_ms: f64) -> usize {
        self.pool.trim_idle(now_ms)
    }

    /// Releases the buffers idle too long; a second or so apart, since each call comes here.
    pub(super) fn trim_now_and_then(&self) {
        let now = now_ms();
        if now - self.trimmed_at.get() >= 1000.0 {
            self.trimmed_at.set(now);
            self.pool.trim_idle(now);
        }
    }

    /// Whether f16 data goes through WGSL `shader-f16` (else packed u32s).
    pub fn uses_shader_f16(&self) -> bool {
        self.dev.caps.shader_f16
    }
}
