//! Timing passes on the GPU: the device, the timed loop (GPU timestamps, or the host clock
//! where the adapter has none), the heater that holds the clock up, and the buffers and bind
//! groups of the raw baseline kernels.

use std::time::Instant;

use webgpu_rmsnorm::gpu::kernel::grid;
use webgpu_rmsnorm::GpuContext;
use wgpu::util::DeviceExt;

use crate::args::Args;

#[derive(Clone, Copy, Default)]
pub struct Stats {
    pub median_us: f64,
    pub min_us: f64,
    pub max_us: f64,
}

impl Stats {
    fn of(mut samples: Vec<f64>) -> Stats {
        samples.sort_by(f64::total_cmp);
        let n = samples.len();
        let median = if n % 2 == 1 {
            samples[n / 2]
        } else {
            (samples[n / 2 - 1] + samples[n / 2]) / 2.0
        };
        Stats {
            median_us: median,
            min_us: samples[0],
            max_us: samples[n - 1],
        }
    }
}

/// A pipeline that is not the crate's, bound once per input copy, over a grid folded into
/// 2-D as the kernel's is.
pub struct RawDispatch {
    pipeline: wgpu::ComputePipeline,
    groups: Vec<wgpu::BindGroup>,
    grid: (u32, u32),
}

impl RawDispatch {
    /// Records the dispatch of the `i`th pass, on copy `i` modulo the copies.
    pub fn record(&self, pass: &mut wgpu::ComputePass, i: usize) {
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, &self.groups[i % self.groups.len()], &[]);
        pass.dispatch_workgroups(self.grid.0, self.grid.1, 1);
    }
}

/// Records one dispatch of a timed loop: `record(pass, i)` for its `i`th (`--per-pass` puts
/// several in a pass).
pub type Record<'a> = dyn FnMut(&mut wgpu::ComputePass, usize) + 'a;

/// The validation error `scope` caught, if any.
fn validated(scope: wgpu::ErrorScopeGuard) -> Result<(), String> {
    match pollster::block_on(scope.pop()) {
        Some(e) => Err(e.to_string()),
        None => Ok(()),
    }
}

/// A uniform whose first word is `n` (the element count of the roofline kernels).
pub fn count_uniform(n: u32) -> [[u8; 4]; 4] {
    [n.to_le_bytes(), [0; 4], [0; 4], [0; 4]]
}

/// Work that runs just before each timed batch, so that every kernel is timed at the clock a
/// busy GPU runs at: a GPU that has idled for a few milliseconds (the host preparing the
/// next batch) drops its clock, and a batch of microsecond passes is too short to raise it.
struct Heater {
    dispatch: RawDispatch,
    passes: usize,
    _buffers: Vec<wgpu::Buffer>,
}

pub struct Bench {
    pub ctx: GpuContext,
    heater: Option<Heater>,
    pub timestamps: bool,
    period_ns: f64,
    pub warmup: usize,
    pub reps: usize,
    /// Dispatches per timed pass (`--per-pass`).
    pub per_pass: usize,
}

impl Bench {
    /// The high-performance Vulkan adapter with timestamps where it has them, and a line
    /// naming it; exits where there is none.
    pub fn open(args: &Args) -> (Bench, String) {
        let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
            backends: wgpu::Backends::VULKAN,
            ..wgpu::InstanceDescriptor::new_without_display_handle()
        });
        let adapter = pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
            power_preference: wgpu::PowerPreference::HighPerformance,
            ..Default::default()
        }))
        .unwrap_or_else(|e| {
            eprintln!(
                "bench: no Vulkan adapter ({e}); on a CPU machine: apt-get install mesa-vulkan-drivers"
            );
            std::process::exit(1)
        });
        let info = adapter.get_info();
        let ctx = pollster::block_on(GpuContext::from_adapter(
            &adapter,
            wgpu::Features::TIMESTAMP_QUERY,
        ))
        .unwrap_or_else(|e| {
            eprintln!("bench: {e}");
            std::process::exit(1)
        });
        let timestamps = ctx
            .device()
            .features()
            .contains(wgpu::Features::TIMESTAMP_QUERY);
        let bench = Bench {
            heater: None,
            period_ns: ctx.queue().get_timestamp_period() as f64,
            timestamps,
            warmup: args.warmup,
            reps: args.reps,
            per_pass: args.per_pass,
            ctx,
        };
        let adapter_line = format!(
            "{} ({:?}, {:?}; {} {})",
            info.name, info.backend, info.device_type, info.driver, info.driver_info
        );
        (bench, adapter_line)
    }

    /// Times `reps` passes (after `warmup` untimed ones), each recorded by `record(pass, i)`.
    /// Passes that write the same buffer are serialized by the barrier wgpu puts between
    /// them, so each pass's timestamps bracket that pass alone.
    pub fn time(&self, record: &mut Record) -> Result<Stats, String> {
        let scope = self
            .ctx
            .device()
            .push_error_scope(wgpu::ErrorFilter::Validation);
        let samples = if self.timestamps {
            let readback = self.submit_timestamped(record);
            validated(scope)?;
            self.read_timestamps(&readback)?
        } else {
            let samples = self.samples_on_host(record)?;
            validated(scope)?;
            samples
        };
        Ok(Stats::of(samples))
    }

    /// Submits the heater and the passes, with the timed ones' timestamps resolved into the
    /// buffer returned.
    fn submit_timestamped(&self, record: &mut Record) -> wgpu::Buffer {
        let device = self.ctx.device();
        let queries = device.create_query_set(&wgpu::QuerySetDescriptor {
            label: Some("bench"),
            ty: wgpu::QueryType::Timestamp,
            count: 2 * self.reps as u32,
        });
        let size = 16 * self.reps as u64;
        let resolve = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("resolve"),
            size,
            usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let readback = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("timestamps"),
            size,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder = device.create_command_encoder(&Default::default());
        if let Some(h) = &self.heater {
            for _ in 0..h.passes {
                let mut pass = encoder.begin_compute_pass(&Default::default());
                h.dispatch.record(&mut pass, 0);
            }
        }
        for i in 0..self.warmup + self.reps {
            let timed = i
                .checked_sub(self.warmup)
                .map(|k| wgpu::ComputePassTimestampWrites {
                    query_set: &queries,
                    beginning_of_pass_write_index: Some(2 * k as u32),
                    end_of_pass_write_index: Some(2 * k as u32 + 1),
                });
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: None,
                timestamp_writes: timed,
            });
            for j in 0..self.per_pass {
                record(&mut pass, i * self.per_pass + j);
            }
        }
        encoder.resolve_query_set(&queries, 0..2 * self.reps as u32, &resolve, 0);
        encoder.copy_buffer_to_buffer(&resolve, 0, &readback, 0, size);
        self.ctx.queue().submit([encoder.finish()]);
        readback
    }

    /// µs per dispatch of each timed pass, from the timestamps at its begin and end.
    fn read_timestamps(&self, readback: &wgpu::Buffer) -> Result<Vec<f64>, String> {
        readback.map_async(wgpu::MapMode::Read, .., |_| {});
        self.ctx
            .device()
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| e.to_string())?;
        let view = readback
            .slice(..)
            .get_mapped_range()
            .map_err(|e| e.to_string())?;
        let ticks: Vec<u64> = view
            .chunks_exact(8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap()))
            .collect();
        drop(view);
        readback.unmap();
        Ok(ticks
            .chunks_exact(2)
            .map(|pair| {
                pair[1].wrapping_sub(pair[0]) as f64 * self.period_ns
                    / 1000.0
                    / self.per_pass as f64
            })
            .collect())
    }

    /// No timestamps on this adapter: one submission per pass, timed by the host.
    fn samples_on_host(&self, record: &mut Record) -> Result<Vec<f64>, String> {
        let device = self.ctx.device();
        let mut samples = Vec::with_capacity(self.reps);
        for i in 0..self.warmup + self.reps {
            let mut encoder = device.create_command_encoder(&Default::default());
            {
                let mut pass = encoder.begin_compute_pass(&Default::default());
                for j in 0..self.per_pass {
                    record(&mut pass, i * self.per_pass + j);
                }
            }
            let start = Instant::now();
            self.ctx.queue().submit([encoder.finish()]);
            device
                .poll(wgpu::PollType::wait_indefinitely())
                .map_err(|e| e.to_string())?;
            if i >= self.warmup {
                samples.push(start.elapsed().as_secs_f64() * 1e6 / self.per_pass as f64);
            }
        }
        Ok(samples)
    }

    /// A pipeline of `wgsl`'s `main`, with the layout the shader implies.
    pub fn plain_pipeline(&self, label: &str, wgsl: &str) -> wgpu::ComputePipeline {
        let device = self.ctx.device();
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some(label),
            source: wgpu::ShaderSource::Wgsl(wgsl.into()),
        });
        device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(label),
            layout: None,
            module: &module,
            entry_point: Some("main"),
            compilation_options: Default::default(),
            cache: None,
        })
    }

    /// `pipeline` bound to each of `copies` in turn (bindings 0, 1, … in order) with a
    /// uniform of `uniform` bound last, over `groups` workgroups.
    pub fn raw(
        &self,
        pipeline: &wgpu::ComputePipeline,
        uniform: [[u8; 4]; 4],
        copies: &[Vec<&wgpu::Buffer>],
        groups: u32,
    ) -> RawDispatch {
        let uniform = self
            .ctx
            .device()
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: None,
                contents: &uniform.concat(),
                usage: wgpu::BufferUsages::UNIFORM,
            });
        let layout = pipeline.get_bind_group_layout(0);
        let groups_per_copy = copies
            .iter()
            .map(|buffers| {
                let entries: Vec<wgpu::BindGroupEntry> = buffers
                    .iter()
                    .copied()
                    .chain([&uniform])
                    .enumerate()
                    .map(|(i, b)| wgpu::BindGroupEntry {
                        binding: i as u32,
                        resource: b.as_entire_binding(),
                    })
                    .collect();
                self.ctx
                    .device()
                    .create_bind_group(&wgpu::BindGroupDescriptor {
                        label: None,
                        layout: &layout,
                        entries: &entries,
                    })
            })
            .collect();
        RawDispatch {
            pipeline: pipeline.clone(),
            groups: groups_per_copy,
            grid: grid(groups, self.ctx.caps().max_groups_per_dim),
        }
    }

    /// Reads `len` f32 at element `offset` of `buffer`.
    pub fn read(&self, buffer: &wgpu::Buffer, offset: usize, len: usize) -> Vec<f32> {
        let device = self.ctx.device();
        let staging = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("check"),
            size: (len * 4) as u64,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder = device.create_command_encoder(&Default::default());
        encoder.copy_buffer_to_buffer(buffer, (offset * 4) as u64, &staging, 0, (len * 4) as u64);
        self.ctx.queue().submit([encoder.finish()]);
        staging.map_async(wgpu::MapMode::Read, .., |_| {});
        let _ = device.poll(wgpu::PollType::wait_indefinitely());
        let view = staging.slice(..).get_mapped_range().expect("mapped");
        view.chunks_exact(4)
            .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
            .collect()
    }

    /// A storage buffer of `len` f32 that lives as long as the benchmark holds it (the
    /// context's own buffers are the driver's, recycled between calls).
    pub fn storage(&self, len: usize, extra: wgpu::BufferUsages) -> wgpu::Buffer {
        self.ctx.device().create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size: (len * 4) as u64,
            usage: wgpu::BufferUsages::STORAGE | extra,
            mapped_at_creation: false,
        })
    }

    /// Sizes the heater to `ms` of GPU time (none for 0) on `roofline` and runs it once.
    pub fn settle(&mut self, roofline: &wgpu::ComputePipeline, ms: f64) {
        if ms <= 0.0 || !self.timestamps {
            return;
        }
        let n = 8usize << 20;
        let buffers: Vec<wgpu::Buffer> = (0..3)
            .map(|_| self.storage(n, wgpu::BufferUsages::empty()))
            .collect();
        let vec4s = (n / 4) as u32;
        let dispatch = self.raw(
            roofline,
            count_uniform(vec4s),
            &[buffers.iter().collect()],
            vec4s.div_ceil(256),
        );
        let one = self
            .time(&mut |pass, i| dispatch.record(pass, i))
            .map_or(100.0, |s| s.median_us);
        self.heater = Some(Heater {
            dispatch,
            passes: ((ms * 1000.0 / one).ceil() as usize).clamp(1, 20_000),
            _buffers: buffers,
        });
        let _ = self.time(&mut |_, _| {});
    }
}
