//! The GPU driver: one device, its pipelines, and the path of a call through them.
//!
//! The same code runs on the browser's WebGPU (wasm) and on Vulkan (native tests and
//! benchmarks). A call is: checks, uploads with `writeBuffer`, one submission holding every
//! dispatch, one readback per result, awaited through `map_async`'s callback (never by
//! blocking: the browser delivers that callback from its event loop).

use std::cell::RefCell;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::{Arc, Mutex};

use futures_channel::oneshot;

use crate::error::Error;
use crate::host::{host_f32_bits, new_host_vec, read_mapped, HostArray, HostVec};
use crate::kernel::{grid, Options, Params, Storage, Variant};
use crate::pool::{BufferPool, Pooled};
use crate::shape::{Inputs, Shape};
use crate::tensor::{next_context_id, ContextId, Dtype, Tensor};

/// What the adapter says about itself, in the shape of WebGPU's `GPUAdapterInfo`.
#[derive(Clone, Debug, Default)]
pub struct AdapterSummary {
    pub vendor: String,
    pub architecture: String,
    pub device: String,
    pub description: String,
    pub is_fallback: bool,
}

/// A call's results: `y`, and `v` when the `sum` output was asked for.
pub struct Output {
    pub y: HostVec,
    pub sum: Option<HostVec>,
}

/// Where each binding of the kernel comes from; the bind group layout is its signature.
const BINDINGS: [(u32, bool); 8] = [
    (0, true),  // input
    (1, true),  // residual
    (2, true),  // gamma
    (3, true),  // beta (or the stub)
    (4, true),  // bias (or the stub)
    (5, false), // output
    (6, false), // sum (or the stub)
    (7, true),  // params (uniform)
];

/// In place, `y` goes to `input` and `v` to `residual`, which are therefore writable, and
/// there are no output bindings.
const BINDINGS_IN_PLACE: [(u32, bool); 6] = [
    (0, false),
    (1, false),
    (2, true),
    (3, true),
    (4, true),
    (7, true),
];

pub struct GpuContext {
    device: wgpu::Device,
    queue: wgpu::Queue,
    layout: wgpu::BindGroupLayout,
    pipeline_layout: wgpu::PipelineLayout,
    layout_in_place: wgpu::BindGroupLayout,
    pipeline_layout_in_place: wgpu::PipelineLayout,
    /// f16 data through WGSL `shader-f16`; otherwise packed in u32s.
    shader_f16: bool,
    pipelines: RefCell<HashMap<Variant, wgpu::ComputePipeline>>,
    /// Bound in place of an absent optional input: WebGPU has no null binding.
    stub_in: wgpu::Buffer,
    /// The same for the `sum` output; a buffer cannot be bound read-only and writable in
    /// one dispatch, so the two stubs cannot be one.
    stub_out: wgpu::Buffer,
    /// Set by the device-lost callback; every later call fails fast with it.
    lost: Arc<Mutex<Option<String>>>,
    adapter: AdapterSummary,
    /// Largest storage binding in bytes: a chunk of rows never exceeds it.
    max_binding: u64,
    max_groups_per_dim: u32,
    /// Largest workgroup the device runs (invocations, and the x dimension).
    max_workgroup: u32,
    /// Kernels tiled for a CPU adapter.
    cpu_tiling: bool,
    pool: Rc<BufferPool>,
    /// Which context a tensor belongs to.
    id: ContextId,
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
        #[cfg(target_arch = "wasm32")]
        if !wgpu::util::is_browser_webgpu_supported().await {
            return Err(Error::WebGpuUnavailable(
                "navigator.gpu: expected WebGPU in this browser, got none (Chrome/Edge 113+, \
                 Safari 26+, Firefox 141+; headless Chromium needs --enable-unsafe-webgpu)"
                    .into(),
            ));
        }
        let backends = if cfg!(target_arch = "wasm32") {
            wgpu::Backends::BROWSER_WEBGPU
        } else {
            wgpu::Backends::VULKAN
        };
        let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
            backends,
            ..wgpu::InstanceDescriptor::new_without_display_handle()
        });
        let adapter = instance
            .request_adapter(&wgpu::RequestAdapterOptions {
                power_preference,
                ..Default::default()
            })
            .await
            .map_err(|e| {
                Error::WebGpuUnavailable(format!(
                    "requestAdapter: expected an adapter, got none ({e})"
                ))
            })?;
        // Timestamps only for `submit_timed`; both features are taken only where offered.
        Self::from_adapter(
            &adapter,
            wgpu::Features::SHADER_F16 | wgpu::Features::TIMESTAMP_QUERY,
        )
        .await
    }

    /// Opens a device on `adapter` with its full limits (the defaults cap a storage binding
    /// at 128 MiB even where the hardware allows more) and any of `wanted` it supports.
    pub async fn from_adapter(
        adapter: &wgpu::Adapter,
        wanted: wgpu::Features,
    ) -> Result<GpuContext, Error> {
        let limits = adapter.limits();
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("webgpu-rmsnorm"),
                required_features: wanted & adapter.features(),
                required_limits: limits.clone(),
                ..Default::default()
            })
            .await
            .map_err(|e| {
                Error::GpuDevice(format!(
                    "requestDevice: expected a device, got an error ({e})"
                ))
            })?;

        // Errors outside an error scope would otherwise reach wgpu's default handler, which
        // panics; a panic in wasm kills the instance for good.
        device.on_uncaptured_error(Arc::new(|_e: wgpu::Error| {}));
        let lost = Arc::new(Mutex::new(None));
        let on_lost = lost.clone();
        device.set_device_lost_callback(move |reason, message| {
            if let Ok(mut slot) = on_lost.lock() {
                *slot = Some(format!("{reason:?}: {message}"));
            }
        });

        let layouts = |bindings: &[(u32, bool)], label| {
            let entries: Vec<wgpu::BindGroupLayoutEntry> = bindings
                .iter()
                .map(|&(binding, read_only)| wgpu::BindGroupLayoutEntry {
                    binding,
                    visibility: wgpu::ShaderStages::COMPUTE,
                    ty: wgpu::BindingType::Buffer {
                        ty: if binding == 7 {
                            wgpu::BufferBindingType::Uniform
                        } else {
                            wgpu::BufferBindingType::Storage { read_only }
                        },
                        has_dynamic_offset: false,
                        min_binding_size: None,
                    },
                    count: None,
                })
                .collect();
            let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                label: Some(label),
                entries: &entries,
            });
            let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                label: Some(label),
                bind_group_layouts: &[Some(&layout)],
                immediate_size: 0,
            });
            (layout, pipeline_layout)
        };
        let (layout, pipeline_layout) = layouts(&BINDINGS, "fused_rms_norm");
        let (layout_in_place, pipeline_layout_in_place) =
            layouts(&BINDINGS_IN_PLACE, "fused_rms_norm in place");
        let stub = |label| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: 16,
                usage: wgpu::BufferUsages::STORAGE,
                mapped_at_creation: false,
            })
        };
        let (stub_in, stub_out) = (stub("absent input"), stub("absent output"));
        let shader_f16 = device.features().contains(wgpu::Features::SHADER_F16);
        let summary = summarize(adapter, &device);
        // CPU adapters in the browser (SwiftShader) get their own tiling (`Variant::for_cpu`).
        // Natively, lavapipe keeps the GPU tiling so that the tests there cover what GPUs run.
        let cpu_tiling = cfg!(target_arch = "wasm32") && summary.is_fallback;
        Ok(GpuContext {
            adapter: summary,
            device,
            queue,
            layout,
            pipeline_layout,
            layout_in_place,
            pipeline_layout_in_place,
            shader_f16,
            pipelines: RefCell::new(HashMap::new()),
            stub_in,
            stub_out,
            lost,
            max_binding: limits
                .max_storage_buffer_binding_size
                .min(limits.max_buffer_size),
            max_groups_per_dim: limits.max_compute_workgroups_per_dimension,
            max_workgroup: limits
                .max_compute_invocations_per_workgroup
                .min(limits.max_compute_workgroup_size_x),
            cpu_tiling,
            pool: Rc::new(BufferPool::default()),
            id: next_context_id(),
        })
    }

    pub fn adapter(&self) -> &AdapterSummary {
        &self.adapter
    }

    pub fn device(&self) -> &wgpu::Device {
        &self.device
    }

    pub fn queue(&self) -> &wgpu::Queue {
        &self.queue
    }

    /// Why the device is gone, if it is.
    pub fn lost_reason(&self) -> Option<String> {
        self.lost.lock().ok().and_then(|s| s.clone())
    }

    /// The pipeline for `variant`, compiled on first use.
    pub fn pipeline(&self, variant: Variant) -> wgpu::ComputePipeline {
        if let Some(p) = self.pipelines.borrow().get(&variant) {
            return p.clone();
        }
        let label = variant.label();
        let module = self
            .device
            .create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some(&label),
                source: wgpu::ShaderSource::Wgsl(variant.wgsl().into()),
            });
        let pipeline = self
            .device
            .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(&label),
                layout: Some(if variant.in_place {
                    &self.pipeline_layout_in_place
                } else {
                    &self.pipeline_layout
                }),
                module: &module,
                entry_point: Some("main"),
                compilation_options: Default::default(),
                cache: None,
            });
        self.pipelines
            .borrow_mut()
            .insert(variant, pipeline.clone());
        pipeline
    }

    /// Binds one dispatch's buffers; `None` for an absent optional one.
    #[allow(clippy::too_many_arguments)]
    pub fn bind_group(
        &self,
        input: &wgpu::Buffer,
        residual: &wgpu::Buffer,
        gamma: &wgpu::Buffer,
        beta: Option<&wgpu::Buffer>,
        bias: Option<&wgpu::Buffer>,
        output: &wgpu::Buffer,
        sum: Option<&wgpu::Buffer>,
        params: &wgpu::Buffer,
    ) -> wgpu::BindGroup {
        let buffers = [
            input,
            residual,
            gamma,
            beta.unwrap_or(&self.stub_in),
            bias.unwrap_or(&self.stub_in),
            output,
            sum.unwrap_or(&self.stub_out),
            params,
        ];
        let entries: Vec<wgpu::BindGroupEntry> = buffers
            .iter()
            .enumerate()
            .map(|(i, b)| wgpu::BindGroupEntry {
                binding: i as u32,
                resource: b.as_entire_binding(),
            })
            .collect();
        self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("fused_rms_norm"),
            layout: &self.layout,
            entries: &entries,
        })
    }

    /// Binds an in-place dispatch: `input` receives `y`, `residual` receives `v`.
    pub fn bind_group_in_place(
        &self,
        input: &wgpu::Buffer,
        residual: &wgpu::Buffer,
        gamma: &wgpu::Buffer,
        beta: Option<&wgpu::Buffer>,
        bias: Option<&wgpu::Buffer>,
        params: &wgpu::Buffer,
    ) -> wgpu::BindGroup {
        let buffers = [
            input,
            residual,
            gamma,
            beta.unwrap_or(&self.stub_in),
            bias.unwrap_or(&self.stub_in),
            params,
        ];
        let entries: Vec<wgpu::BindGroupEntry> = BINDINGS_IN_PLACE
            .iter()
            .zip(buffers)
            .map(|(&(binding, _), b)| wgpu::BindGroupEntry {
                binding,
                resource: b.as_entire_binding(),
            })
            .collect();
        self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("fused_rms_norm in place"),
            layout: &self.layout_in_place,
            entries: &entries,
        })
    }

    /// Uses packed u32 storage for f16 even where `shader-f16` is available (to test that
    /// path, or to work around a driver).
    pub fn set_shader_f16(&mut self, on: bool) {
        self.shader_f16 = on && self.device.features().contains(wgpu::Features::SHADER_F16);
    }

    /// Whether f16 data goes through WGSL `shader-f16` (else packed u32s).
    pub fn uses_shader_f16(&self) -> bool {
        self.shader_f16
    }

    /// A uniform buffer holding `params`.
    pub fn params_buffer(&self, params: Params) -> wgpu::Buffer {
        let b = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("params"),
            size: Params::SIZE as u64,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        self.queue.write_buffer(&b, 0, &params.to_bytes());
        b
    }

    /// A storage buffer of `len` f32, outside the pool (for benchmarks' long-lived data).
    pub fn storage(&self, len: usize, extra: wgpu::BufferUsages) -> wgpu::Buffer {
        self.device.create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size: (len * 4) as u64,
            usage: wgpu::BufferUsages::STORAGE | extra,
            mapped_at_creation: false,
        })
    }

    fn pooled_params(&self, params: Params) -> Pooled {
        let b = self.pool.take(
            &self.device,
            wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            Params::SIZE as u64,
        );
        self.queue.write_buffer(&b, 0, &params.to_bytes());
        b
    }

    /// Live and idle GPU buffers of this context.
    pub fn buffer_stats(&self) -> BufferStats {
        BufferStats {
            live: self.pool.live(),
            idle: self.pool.idle(),
        }
    }

    /// Tiles kernels as for a CPU adapter in the browser, so native tests cover that tiling.
    pub fn set_cpu_tiling(&mut self, on: bool) {
        self.cpu_tiling = on;
    }

    /// Caps storage bindings below the device's limit, so tests can reach the row-splitting
    /// path and the row-too-large error without allocating gigabytes.
    pub fn set_binding_limit(&mut self, bytes: u64) {
        self.max_binding = self.max_binding.min(bytes.max(16));
    }

    /// A storage buffer of `len` f32.
    fn pooled_storage(&self, len: usize, dtype: Dtype, extra: wgpu::BufferUsages) -> Pooled {
        self.pool.take(
            &self.device,
            wgpu::BufferUsages::STORAGE | extra,
            (len * dtype.bytes()) as u64,
        )
    }

    /// Records the dispatch of `rows` rows with `pipeline` into `pass`.
    pub fn dispatch(
        &self,
        pass: &mut wgpu::ComputePass,
        pipeline: &wgpu::ComputePipeline,
        group: &wgpu::BindGroup,
        rows: u32,
    ) {
        let (x, y) = grid(rows, self.max_groups_per_dim);
        pass.set_pipeline(pipeline);
        pass.set_bind_group(0, group, &[]);
        pass.dispatch_workgroups(x, y, 1);
    }

    /// Rows per dispatch for rows of `hidden`: as many as one storage binding holds.
    pub fn rows_per_chunk(&self, hidden: usize) -> Result<usize, Error> {
        let row_bytes = hidden as u64 * 4;
        if row_bytes > self.max_binding {
            return Err(Error::Shape(format!(
                "hidden: expected a row this device can bind (at most {} f32, its \
                 maxStorageBufferBindingSize is {} bytes), got {hidden}",
                self.max_binding / 4,
                self.max_binding
            )));
        }
        Ok((self.max_binding / row_bytes) as usize)
    }

    /// Runs one call: `y`, and `v` too when `want_sum`.
    pub async fn run<A: HostArray>(&self, x: &Inputs<A>, want_sum: bool) -> Result<Output, Error> {
        self.submit(x, want_sum)?.read().await
    }

    /// Checks, uploads and submits one call without waiting for it. The inputs are read
    /// before this returns, so a caller may reuse its arrays as soon as it has the pending.
    pub fn submit<A: HostArray>(&self, x: &Inputs<A>, want_sum: bool) -> Result<Pending, Error> {
        self.submit_repeated(x, want_sum, 1)
    }

    /// As [`submit`](Self::submit), with the kernel dispatched `repeat` times in the one
    /// submission (same result; each dispatch reads the same inputs). The slope of the call's
    /// time over `repeat` is the kernel's cost on GPU-resident buffers, without uploads and
    /// readback: the figure benchmarks compare where timestamp queries are not available.
    pub fn submit_repeated<A: HostArray>(
        &self,
        x: &Inputs<A>,
        want_sum: bool,
        repeat: u32,
    ) -> Result<Pending, Error> {
        self.submit_with(x, want_sum, repeat, Destination::Host, false)
    }

    /// Runs in place on GPU tensors: `residual ← v`, `input ← y`; no new memory.
    /// `Pending::read_gpu` reports completion (its tensors are the arguments themselves).
    pub fn submit_in_place<A: HostArray>(&self, x: &Inputs<A>) -> Result<Pending, Error> {
        self.submit_with(x, true, 1, Destination::InPlace, false)
    }

    /// As [`submit`](Self::submit), leaving the results on the GPU as tensors of this
    /// context: no readback. `Pending::read_gpu` hands them over.
    pub fn submit_to_gpu<A: HostArray>(
        &self,
        x: &Inputs<A>,
        want_sum: bool,
    ) -> Result<Pending, Error> {
        self.submit_with(x, want_sum, 1, Destination::Gpu, false)
    }

    /// Uploads `data` as a tensor of this context.
    pub fn upload<A: HostArray>(&self, data: &A) -> Result<Rc<Tensor>, Error> {
        if let Some(why) = self.lost_reason() {
            return Err(lost_error(&why));
        }
        let len = data.len();
        if len as u64 * 4 > self.max_binding {
            return Err(Error::Shape(format!(
                "data: expected at most {} elements (this device's maxStorageBufferBindingSize is {} bytes), got {len}",
                self.max_binding / 4,
                self.max_binding
            )));
        }
        let t = self.tensor(len, data.dtype());
        data.upload(&self.queue, &t.buffer, 0, len)
            .map_err(|e| Error::Type(format!("data: the browser refused the array ({e})")))?;
        Ok(t)
    }

    /// An uninitialised tensor of `len` f32 on this context.
    fn tensor(&self, len: usize, dtype: Dtype) -> Rc<Tensor> {
        let usage = wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_DST
            | wgpu::BufferUsages::COPY_SRC;
        let buffer = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("tensor"),
            size: (len.max(4) * dtype.bytes()).next_multiple_of(16) as u64,
            usage,
            mapped_at_creation: false,
        });
        Rc::new(Tensor {
            buffer,
            len,
            dtype,
            owner: self.id,
            lost: self.lost.clone(),
        })
    }

    /// Copies a tensor of this context back to the host.
    pub fn read_tensor(&self, t: &Rc<Tensor>) -> Result<Pending, Error> {
        self.check_tensor("tensor", t)?;
        let mut pending = self.pending(
            Shape {
                rows: usize::from(t.len > 0),
                hidden: t.len.max(1),
            },
            false,
            t.dtype,
        );
        if t.len == 0 {
            return Ok(pending);
        }
        let mut encoder = self.device.create_command_encoder(&Default::default());
        let y = self.readback(&mut encoder, &t.buffer, t.len, t.dtype);
        self.queue.submit([encoder.finish()]);
        pending.mapped.push(map_read(&y));
        pending.chunks.push(Chunk {
            start: 0,
            len: t.len,
            y,
            sum: None,
        });
        pending.holds.push(t.clone());
        Ok(pending)
    }

    /// A tensor argument must be this context's and its device alive.
    fn check_tensor(&self, name: &str, t: &Tensor) -> Result<(), Error> {
        if let Some(why) = t.lost_reason() {
            return Err(Error::GpuDevice(format!("{name}: expected a GpuTensor on a live device, got one whose device was lost ({why})")));
        }
        if t.owner != self.id {
            return Err(Error::Type(format!(
                "{name}: expected a GpuTensor of this FusedRmsNorm, got one of another instance"
            )));
        }
        Ok(())
    }

    fn pending(&self, shape: Shape, want_sum: bool, dtype: Dtype) -> Pending {
        Pending {
            shape,
            want_sum,
            dtype,
            lost: self.lost.clone(),
            device: self.device.clone(),
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

    /// As [`submit_repeated`](Self::submit_repeated), also timing the dispatches with GPU
    /// timestamps where the device has them: [`Pending::read_timed`] gives the nanoseconds.
    pub fn submit_timed<A: HostArray>(&self, x: &Inputs<A>, repeat: u32) -> Result<Pending, Error> {
        let timed = self
            .device
            .features()
            .contains(wgpu::Features::TIMESTAMP_QUERY);
        self.submit_with(x, false, repeat, Destination::Host, timed)
    }

    fn submit_with<A: HostArray>(
        &self,
        x: &Inputs<A>,
        want_sum: bool,
        repeat: u32,
        to: Destination,
        timed: bool,
    ) -> Result<Pending, Error> {
        let to_gpu = to != Destination::Host;
        let shape = Shape::of(x)?;
        if let Some(why) = self.lost_reason() {
            return Err(lost_error(&why));
        }
        let named = [
            ("input", Some(&x.input)),
            ("residual", Some(&x.residual)),
            ("gamma", Some(&x.gamma)),
            ("beta", x.beta.as_ref()),
            ("bias", x.bias.as_ref()),
        ];
        let mut any_resident = false;
        let dtype = x.input.dtype();
        for (name, a) in named {
            let Some(a) = a else { continue };
            if let Some(t) = a.resident() {
                self.check_tensor(name, t)?;
                any_resident = true;
            }
            if a.dtype() != dtype {
                return Err(Error::Type(format!(
                    "{name}: expected {} data like input, got {}",
                    dtype.name(),
                    a.dtype().name()
                )));
            }
        }
        if to == Destination::InPlace {
            match (x.input.resident(), x.residual.resident()) {
                (Some(a), Some(b)) if Rc::ptr_eq(a, b) => {
                    return Err(Error::Type("residual: expected a GpuTensor other than input (both are written in place)".into()));
                }
                (Some(_), Some(_)) => {}
                (None, _) => {
                    return Err(Error::Type(
                        "input: expected a GpuTensor with inPlace: true, got host data".into(),
                    ))
                }
                (_, None) => {
                    return Err(Error::Type(
                        "residual: expected a GpuTensor with inPlace: true, got host data".into(),
                    ))
                }
            }
        }
        if dtype == Dtype::F16 && shape.hidden % 4 != 0 {
            // Halves are moved four at a time (two 32-bit words); a row must not end mid-word.
            return Err(Error::Shape(format!(
                "hidden: expected a multiple of 4 for f16 data, got {}",
                shape.hidden
            )));
        }
        let mut per_chunk = self.rows_per_chunk(shape.hidden)?;
        if (to_gpu || any_resident) && shape.rows > per_chunk {
            // Tensors are single bindings; splitting them would need offset-aligned views.
            return Err(Error::Shape(format!(
                "input: expected GPU-resident data to fit one storage binding ({} bytes), got {} rows of {}",
                self.max_binding, shape.rows, shape.hidden
            )));
        }
        if to_gpu || any_resident {
            per_chunk = shape.rows.max(1);
        }
        let mut pending = self.pending(shape, want_sum, dtype);
        if to == Destination::Gpu {
            pending.gpu = Some(GpuOutput {
                y: self.tensor(shape.len(), dtype),
                sum: want_sum.then(|| self.tensor(shape.len(), dtype)),
            });
        }
        if shape.is_empty() {
            return Ok(pending);
        }
        let Shape { rows, hidden } = shape;
        let options = Options {
            bias: x.bias.is_some(),
            beta: x.beta.is_some(),
            sum: want_sum,
        };
        let storage = match dtype {
            Dtype::F32 => Storage::F32,
            Dtype::F16 if self.shader_f16 => Storage::F16,
            Dtype::F16 => Storage::F16Packed,
        };
        let tiled =
            Variant::for_shape(hidden as u32, options).within(hidden as u32, self.max_workgroup);
        let variant = Variant {
            storage,
            in_place: to == Destination::InPlace,
            ..if self.cpu_tiling {
                tiled.for_cpu(hidden as u32)
            } else {
                tiled
            }
        };

        // Everything between the pushes and the pops is synchronous, so calls that interleave
        // at their awaits never share a scope.
        let oom_scope = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation_scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let pipeline = self.pipeline(variant);
        let stage = |name: &str, a: &A, start: usize, count: usize| match a.resident() {
            Some(t) => Ok(Staged::Resident(t.clone())),
            None => {
                let b = self.pooled_storage(count, dtype, wgpu::BufferUsages::COPY_DST);
                a.upload(&self.queue, &b, start, count).map_err(|e| {
                    Error::Type(format!("{name}: the browser refused the array ({e})"))
                })?;
                Ok(Staged::Pooled(b))
            }
        };
        let gamma = stage("gamma", &x.gamma, 0, hidden)?;
        let beta = x
            .beta
            .as_ref()
            .map(|a| stage("beta", a, 0, hidden))
            .transpose()?;
        let bias = x
            .bias
            .as_ref()
            .map(|a| stage("bias", a, 0, hidden))
            .transpose()?;

        let mut encoder = self.device.create_command_encoder(&Default::default());
        for first in (0..rows).step_by(per_chunk) {
            let n_rows = per_chunk.min(rows - first);
            let n = n_rows * hidden;
            let input = stage("input", &x.input, first * hidden, n)?;
            let residual = stage("residual", &x.residual, first * hidden, n)?;
            let params = self.pooled_params(Params {
                rows: n_rows as u32,
                width: (hidden as u32) / variant.lanes,
                hidden: hidden as f32,
                eps: x.eps,
            });
            if to == Destination::InPlace {
                let group = self.bind_group_in_place(
                    &input,
                    &residual,
                    &gamma,
                    beta.as_deref(),
                    bias.as_deref(),
                    &params,
                );
                let mut pass = encoder.begin_compute_pass(&Default::default());
                self.dispatch(&mut pass, &pipeline, &group, n_rows as u32);
                drop(pass);
                pending
                    .kept
                    .extend([input, residual, Staged::Pooled(params)]);
                continue;
            }
            let (output, sum) = match &pending.gpu {
                Some(out) => (
                    Staged::Resident(out.y.clone()),
                    out.sum.clone().map(Staged::Resident),
                ),
                None => (
                    Staged::Pooled(self.pooled_storage(n, dtype, wgpu::BufferUsages::COPY_SRC)),
                    want_sum.then(|| {
                        Staged::Pooled(self.pooled_storage(n, dtype, wgpu::BufferUsages::COPY_SRC))
                    }),
                ),
            };
            let group = self.bind_group(
                &input,
                &residual,
                &gamma,
                beta.as_deref(),
                bias.as_deref(),
                &output,
                sum.as_deref(),
                &params,
            );
            // The first chunk's pass is the one timed (a timed call is one chunk in practice).
            let query = (timed && first == 0).then(|| {
                self.device.create_query_set(&wgpu::QuerySetDescriptor {
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
                for _ in 0..repeat.max(1) {
                    self.dispatch(&mut pass, &pipeline, &group, n_rows as u32);
                }
            }
            if let Some(query) = query {
                let resolved = self.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("pass time"),
                    size: 16,
                    usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                    mapped_at_creation: false,
                });
                encoder.resolve_query_set(&query, 0..2, &resolved, 0);
                let staging = self.readback(&mut encoder, &resolved, 4, Dtype::F32);
                pending.timestamps = Some((staging, self.queue.get_timestamp_period()));
            }
            if !to_gpu {
                let y = self.readback(&mut encoder, &output, n, dtype);
                let staged_sum = sum
                    .as_ref()
                    .map(|s| self.readback(&mut encoder, s, n, dtype));
                pending.chunks.push(Chunk {
                    start: first * hidden,
                    len: n,
                    y,
                    sum: staged_sum,
                });
            }
            pending
                .kept
                .extend([input, residual, output, Staged::Pooled(params)]);
            pending.kept.extend(sum);
        }
        pending.kept.push(gamma);
        pending.kept.extend(beta.into_iter().chain(bias));
        self.queue.submit([encoder.finish()]);
        pending.scopes.push((
            "the GPU rejected the work",
            Box::pin(validation_scope.pop()),
        ));
        pending
            .scopes
            .push(("the GPU ran out of memory", Box::pin(oom_scope.pop())));
        if let Some((staging, _)) = &pending.timestamps {
            pending.mapped.push(map_read(staging));
        }
        for chunk in &pending.chunks {
            pending.mapped.push(map_read(&chunk.y));
            if let Some(s) = &chunk.sum {
                pending.mapped.push(map_read(s));
            }
        }
        Ok(pending)
    }

    /// A mappable copy of the first `n` f32 of `src`, recorded into `encoder`.
    fn readback(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        src: &wgpu::Buffer,
        n: usize,
        dtype: Dtype,
    ) -> Pooled {
        let usage = wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST;
        // Copies move whole 4-byte words: an odd count of halves takes one more.
        let bytes = (n * dtype.bytes()).next_multiple_of(4) as u64;
        let staging = self.pool.take(&self.device, usage, bytes);
        encoder.copy_buffer_to_buffer(src, 0, &staging, 0, bytes);
        staging
    }

    /// Destroys the device, as a driver reset would; for tests of device loss.
    pub fn destroy_device(&self) {
        self.device.destroy();
    }
}

fn lost_error(why: &str) -> Error {
    Error::GpuDevice(format!(
        "device: expected a live GPU device, got a lost one ({why})"
    ))
}

type MapResult = Result<(), wgpu::BufferAsyncError>;

/// Asks for `buffer` to be mapped once the GPU is done with it.
fn map_read(buffer: &wgpu::Buffer) -> oneshot::Receiver<MapResult> {
    let (tx, rx) = oneshot::channel();
    buffer.map_async(wgpu::MapMode::Read, .., move |r| {
        let _ = tx.send(r);
    });
    rx
}

struct Chunk {
    /// Where the chunk's first element goes in the result.
    start: usize,
    len: usize,
    y: Pooled,
    sum: Option<Pooled>,
}

type ScopeFuture = Pin<Box<dyn Future<Output = Option<wgpu::Error>>>>;

/// A submitted call. Owns everything it needs, so the context that made it may be dropped
/// (JavaScript's `free()`) while it is in flight.
pub struct Pending {
    shape: Shape,
    want_sum: bool,
    dtype: Dtype,
    lost: Arc<Mutex<Option<String>>>,
    #[cfg_attr(target_arch = "wasm32", allow(dead_code))]
    device: wgpu::Device,
    chunks: Vec<Chunk>,
    scopes: Vec<(&'static str, ScopeFuture)>,
    mapped: Vec<oneshot::Receiver<MapResult>>,
    pool: Rc<BufferPool>,
    /// The call's other buffers, returned to the pool once the GPU is done with them.
    kept: Vec<Staged>,
    /// Tensors the call reads, kept alive until it is done (their JavaScript owner may
    /// free them meanwhile).
    holds: Vec<Rc<Tensor>>,
    /// Where results stay on the GPU.
    gpu: Option<GpuOutput>,
    /// The timed pass's two timestamps (mapped with the results), and ns per tick.
    timestamps: Option<(Pooled, f32)>,
}

/// The two u64 timestamps at the start of a mapped buffer.
fn read_u64_pair(buffer: &wgpu::Buffer) -> (u64, u64) {
    let mut words = new_host_vec(4, Dtype::F32);
    read_mapped(buffer, &mut words, 0, 4, Dtype::F32);
    let bits: Vec<u32> = host_f32_bits(words);
    let at = |i: usize| bits[i] as u64 | (bits[i + 1] as u64) << 32;
    (at(0), at(2))
}

/// Where a call's results go.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Destination {
    /// Read back into host arrays.
    Host,
    /// New tensors.
    Gpu,
    /// Over the `input` and `residual` tensors.
    InPlace,
}

/// Results left on the GPU.
pub struct GpuOutput {
    pub y: Rc<Tensor>,
    pub sum: Option<Rc<Tensor>>,
}

/// A buffer bound by a call: pooled for the call, or a tensor that outlives it.
enum Staged {
    Pooled(Pooled),
    Resident(Rc<Tensor>),
}

impl std::ops::Deref for Staged {
    type Target = wgpu::Buffer;
    fn deref(&self) -> &wgpu::Buffer {
        match self {
            Staged::Pooled(p) => p,
            Staged::Resident(t) => &t.buffer,
        }
    }
}

impl Pending {
    /// Waits until the GPU has accepted the work and hands over the results left on it:
    /// new tensors for [`GpuContext::submit_to_gpu`], none for
    /// [`GpuContext::submit_in_place`]. Later work on the same queue sees them.
    pub async fn read_gpu(mut self) -> Result<Option<GpuOutput>, Error> {
        self.check_scopes().await?;
        // The call's pooled buffers may still be in use by the GPU, so they are not pooled
        // again: dropping destroys them, which WebGPU defers until the work is done.
        Ok(self.gpu.take())
    }

    /// As [`read`](Self::read), with the GPU time of the timed pass in nanoseconds where the
    /// device has timestamps (see [`GpuContext::submit_timed`]).
    pub async fn read_timed(mut self) -> Result<(Output, Option<f64>), Error> {
        let timestamps = self.timestamps.take();
        let pool = self.pool.clone();
        let out = self.read().await?;
        let ns = timestamps.map(|(staging, period)| {
            let ticks = read_u64_pair(&staging);
            staging.unmap();
            pool.give_back(staging);
            ticks.1.saturating_sub(ticks.0) as f64 * period as f64
        });
        Ok((out, ns))
    }

    async fn check_scopes(&mut self) -> Result<(), Error> {
        for (what, scope) in std::mem::take(&mut self.scopes) {
            if let Some(e) = scope.await {
                return Err(match self.lost.lock().ok().and_then(|s| s.clone()) {
                    Some(why) => lost_error(&why),
                    None => Error::GpuDevice(format!("{what} ({e})")),
                });
            }
        }
        Ok(())
    }

    fn release(self) {
        for b in self.kept {
            if let Staged::Pooled(p) = b {
                self.pool.give_back(p);
            }
        }
    }

    /// Waits for the GPU and copies the results out.
    pub async fn read(mut self) -> Result<Output, Error> {
        self.check_scopes().await?;
        let lost = || self.lost.lock().ok().and_then(|s| s.clone());
        // Natively nothing delivers callbacks unless the device is polled; the browser
        // delivers them from its event loop.
        #[cfg(not(target_arch = "wasm32"))]
        let _ = self.device.poll(wgpu::PollType::wait_indefinitely());
        for ready in std::mem::take(&mut self.mapped) {
            if !matches!(ready.await, Ok(Ok(()))) {
                return Err(lost().map_or_else(
                    || {
                        Error::GpuDevice(
                            "readback: expected the result, the GPU returned none".into(),
                        )
                    },
                    |w| lost_error(&w),
                ));
            }
        }
        let total = self.shape.len();
        let mut y = new_host_vec(total, self.dtype);
        let mut sum = self.want_sum.then(|| new_host_vec(total, self.dtype));
        for chunk in std::mem::take(&mut self.chunks) {
            read_mapped(&chunk.y, &mut y, chunk.start, chunk.len, self.dtype);
            chunk.y.unmap();
            self.pool.give_back(chunk.y);
            if let (Some(dst), Some(s)) = (sum.as_mut(), chunk.sum) {
                read_mapped(&s, dst, chunk.start, chunk.len, self.dtype);
                s.unmap();
                self.pool.give_back(s);
            }
        }
        self.release();
        Ok(Output { y, sum })
    }
}

#[cfg(not(target_arch = "wasm32"))]
fn summarize(adapter: &wgpu::Adapter, _device: &wgpu::Device) -> AdapterSummary {
    let info = adapter.get_info();
    AdapterSummary {
        vendor: format!("0x{:04x}", info.vendor),
        architecture: format!("{:?}", info.device_type),
        device: info.name.clone(),
        description: format!(
            "{} ({:?}; {} {})",
            info.name, info.backend, info.driver, info.driver_info
        ),
        is_fallback: info.device_type == wgpu::DeviceType::Cpu,
    }
}

#[cfg(target_arch = "wasm32")]
fn summarize(adapter: &wgpu::Adapter, device: &wgpu::Device) -> AdapterSummary {
    use wasm_bindgen::JsValue;
    // wgpu's AdapterInfo drops WebGPU's vendor and architecture strings; read them from
    // GPUDevice.adapterInfo instead.
    let info = device
        .as_webgpu()
        .and_then(|d| js_sys::Reflect::get(d.as_ref(), &JsValue::from_str("adapterInfo")).ok())
        .unwrap_or(JsValue::UNDEFINED);
    let field = |name: &str| {
        js_sys::Reflect::get(&info, &JsValue::from_str(name))
            .ok()
            .and_then(|v| v.as_string())
            .unwrap_or_default()
    };
    let is_fallback = js_sys::Reflect::get(&info, &JsValue::from_str("isFallbackAdapter"))
        .ok()
        .and_then(|v| v.as_bool())
        .unwrap_or(adapter.get_info().device_type == wgpu::DeviceType::Cpu);
    AdapterSummary {
        vendor: field("vendor"),
        architecture: field("architecture"),
        device: field("device"),
        description: field("description"),
        is_fallback,
    }
}
