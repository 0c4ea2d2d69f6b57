//! GPU-timed benchmark of the fused kernel, natively on Vulkan.
//!
//! ```text
//! cargo run --release --example bench -- [--quick] [--shapes 1x4096,16384x4096]
//!     [--set wg=512,slots=2,fan=32,preload=1,unroll=1] [--sweep [--sweep-options plain,bb]]
//!     [--check] [--reps N] [--warmup N] [--per-pass K] [--heat-ms MS] [--no-seed]
//!     [--json path] [--emit-wgsl path]
//! ```
//!
//! For every shape, in one run and on GPU-resident buffers: the kernel as the crate selects
//! it (plain, with bias and beta, with the `sum` output), the `out = a + b` roofline moving
//! the same 12 bytes per element, and a one-thread-per-row baseline. Times are the median of
//! the GPU's own timestamps at the begin and end of each compute pass. `--per-pass K` records
//! K dispatches into each timed pass and reports the pass over K: wgpu puts a barrier between
//! dispatches that write the same buffer, so they run one after another as a model's layers
//! do (as Dawn's bench times its chain), and a pass's own start and end are shared by K
//! dispatches rather than charged to one. `--sweep` also times
//! a grid of tiling variants per shape; `--set` overrides the crate's choice; `--check`
//! compares every timed variant against the f64 reference on a few rows. Odd widths (scalar
//! loads) are also compared with a scalar `out = a + b`. `--emit-wgsl` writes the WGSL of
//! the chosen and swept variants for `--shapes` as JSON (for `bench/dawn/bench.mjs sweep`)
//! and exits without a GPU.

use std::fmt::Write as _;
use std::time::Instant;

use webgpu_rmsnorm::device::Caps;
use webgpu_rmsnorm::dtype::Dtype;
use webgpu_rmsnorm::kernel::{grid, Options, Params, Variant};
use webgpu_rmsnorm::pipelines::{slot, Bound, BINDINGS};
use webgpu_rmsnorm::plan::Kernel;
use webgpu_rmsnorm::reference::{fused_rms_norm, worst_error, Inputs};
use webgpu_rmsnorm::tiling::max_slots;
use webgpu_rmsnorm::GpuContext;
use wgpu::util::DeviceExt;

const SHAPES: [(usize, usize); 10] = [
    (1, 896),
    (1, 4096),
    (16, 4096),
    (128, 4096),
    (2048, 4096),
    (16384, 4096),
    (4096, 8192),
    (32768, 896),
    (70000, 1024),
    (1000, 4099),
];

const ROOFLINE_WGSL: &str = include_str!("bench_roofline.wgsl");
const ROOFLINE_SUM_WGSL: &str = include_str!("bench_roofline_sum.wgsl");
const ROW_PER_THREAD_WGSL: &str = include_str!("bench_row_per_thread.wgsl");

/// Inputs are rotated among copies until they span this many bytes, so that a shape small
/// enough to sit in the L2 cache (60 MB on an H200) is still read from memory.
const ROTATE_BYTES: usize = 256 << 20;
const MAX_COPIES: usize = 16;
const EPS: f32 = 1e-6;
/// The same tolerance as the native tests.
const RTOL: f64 = 1e-5;

struct Args {
    json: Option<String>,
    quick: bool,
    shapes: Vec<(usize, usize)>,
    set: Vec<(String, String)>,
    sweep: bool,
    sweep_options: Vec<(&'static str, Options)>,
    check: bool,
    seed_baseline: bool,
    warmup: usize,
    reps: usize,
    per_pass: usize,
    heat_ms: f64,
    emit_wgsl: Option<String>,
}

const PLAIN: Options = Options {
    bias: false,
    beta: false,
    sum: false,
};
const BIAS_BETA: Options = Options {
    bias: true,
    beta: true,
    sum: false,
};
const SUM: Options = Options {
    bias: false,
    beta: false,
    sum: true,
};
const KERNELS: [(&str, Options); 3] = [("plain", PLAIN), ("bias+beta", BIAS_BETA), ("sum", SUM)];

fn usage(why: &str) -> ! {
    eprintln!(
        "bench: {why}\n\n{}",
        include_str!("bench.rs")
            .lines()
            .take(8)
            .collect::<Vec<_>>()
            .join("\n")
    );
    std::process::exit(2)
}

fn parse_args() -> Args {
    let mut a = Args {
        json: None,
        quick: false,
        shapes: Vec::new(),
        set: Vec::new(),
        sweep: false,
        sweep_options: vec![("plain", PLAIN)],
        check: false,
        seed_baseline: true,
        warmup: 10,
        reps: 100,
        per_pass: 1,
        heat_ms: 30.0,
        emit_wgsl: None,
    };
    let (mut warmup, mut reps) = (None, None);
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .unwrap_or_else(|| usage(&format!("{name} needs a value")))
        };
        match arg.as_str() {
            "--json" => a.json = Some(value("--json")),
            "--emit-wgsl" => a.emit_wgsl = Some(value("--emit-wgsl")),
            "--quick" => a.quick = true,
            "--sweep" => a.sweep = true,
            "--check" => a.check = true,
            "--no-seed" => a.seed_baseline = false,
            "--warmup" => {
                warmup = Some(
                    value("--warmup")
                        .parse()
                        .unwrap_or_else(|_| usage("--warmup: a count")),
                )
            }
            "--heat-ms" => {
                a.heat_ms = value("--heat-ms")
                    .parse()
                    .unwrap_or_else(|_| usage("--heat-ms: milliseconds"))
            }
            "--per-pass" => {
                a.per_pass = value("--per-pass")
                    .parse()
                    .ok()
                    .filter(|&k| k >= 1)
                    .unwrap_or_else(|| usage("--per-pass: a count of at least 1"))
            }
            "--reps" => {
                reps = Some(
                    value("--reps")
                        .parse()
                        .unwrap_or_else(|_| usage("--reps: a count")),
                )
            }
            "--shapes" => {
                a.shapes = value("--shapes")
                    .split(',')
                    .map(|s| {
                        let (r, h) = s
                            .split_once('x')
                            .unwrap_or_else(|| usage(&format!("--shapes: {s} is not ROWSxHIDDEN")));
                        match (r.trim().parse(), h.trim().parse()) {
                            (Ok(r), Ok(h)) if h > 0 => (r, h),
                            _ => usage(&format!("--shapes: {s} is not ROWSxHIDDEN")),
                        }
                    })
                    .collect()
            }
            "--set" => {
                for kv in value("--set").split(',') {
                    let (k, v) = kv
                        .split_once('=')
                        .unwrap_or_else(|| usage(&format!("--set: {kv} is not key=value")));
                    a.set.push((k.trim().to_string(), v.trim().to_string()));
                }
            }
            "--sweep-options" => {
                a.sweep_options = value("--sweep-options")
                    .split(',')
                    .map(|s| match s {
                        "plain" => ("plain", PLAIN),
                        "bb" | "bias+beta" => ("bias+beta", BIAS_BETA),
                        "sum" => ("sum", SUM),
                        _ => usage(&format!("--sweep-options: {s} is not plain, bb or sum")),
                    })
                    .collect()
            }
            "-h" | "--help" => usage("help"),
            other => usage(&format!("unknown argument {other}")),
        }
    }
    if a.quick {
        a.warmup = 2;
        a.reps = 5;
        a.heat_ms = 0.0;
    }
    a.warmup = warmup.unwrap_or(a.warmup);
    a.reps = reps.unwrap_or(a.reps).max(1);
    if a.shapes.is_empty() {
        a.shapes = SHAPES.to_vec();
        if a.quick {
            // A CPU adapter takes seconds per pass on the two largest.
            let mut by_size = a.shapes.clone();
            by_size.sort_by_key(|&(r, h)| std::cmp::Reverse(r * h));
            a.shapes.retain(|s| !by_size[..2].contains(s));
        }
    }
    for (k, v) in &a.set {
        apply_knob(Variant::for_shape(4096, PLAIN), k, v)
            .unwrap_or_else(|e| usage(&format!("--set: {e}")));
    }
    a
}

/// `variant` with one knob changed. `slots=full` covers the row; setting `wg` alone also
/// resets `slots` to cover the row at the new size.
fn apply_knob(mut v: Variant, key: &str, value: &str) -> Result<Variant, String> {
    let num = || {
        value
            .parse::<u32>()
            .map_err(|_| format!("{key}={value}: not a number"))
    };
    let flag = || match value {
        "1" | "true" | "yes" => Ok(true),
        "0" | "false" | "no" => Ok(false),
        _ => Err(format!("{key}={value}: not 0 or 1")),
    };
    match key {
        "wg" => {
            let wg = num()?;
            if !wg.is_power_of_two() || wg > 1024 {
                return Err(format!("wg={wg}: not a power of two up to 1024"));
            }
            v.workgroup = wg;
        }
        "slots" if value == "full" => v.slots = u32::MAX,
        "slots" => v.slots = num()?,
        "fan" if value == "bal" => v.fan = Variant::balanced_fan(v.workgroup),
        "fan" => v.fan = num()?,
        "flat" => v.flat = flag()?,
        "preload" => v.preload = flag()?,
        "unroll" => v.unroll = flag()?,
        "exact" => v.exact = flag()?,
        "split" => v.split = num()?.max(1),
        _ => {
            return Err(format!(
                "{key}: not one of wg, slots, fan, flat, preload, unroll, exact, split"
            ))
        }
    }
    Ok(v)
}

/// What the crate runs a call of `rows` rows of `hidden` as on this device (the tiling for
/// that many rows included), with the command line's overrides.
fn chosen(
    caps: &Caps,
    rows: usize,
    hidden: usize,
    options: Options,
    set: &[(String, String)],
) -> Variant {
    let kernel = Kernel {
        hidden,
        options,
        dtype: Dtype::F32,
        in_place: false,
    };
    overridden(kernel.variant(caps, rows), hidden, set)
}

/// The browser's choice for a row of `hidden` (Dawn's tiling, as for a decode-sized call
/// without the row split), with the command line's overrides: for `--emit-wgsl`.
fn chosen_for_web(
    hidden: usize,
    options: Options,
    set: &[(String, String)],
    max_wg: u32,
) -> Variant {
    let v = Variant::for_stack(hidden as u32, options, true).within(hidden as u32, max_wg);
    overridden(v, hidden, set)
}

/// `v` with `--set`'s knobs applied.
fn overridden(mut v: Variant, hidden: usize, set: &[(String, String)]) -> Variant {
    let mut slots_set = false;
    for (k, val) in set {
        v = apply_knob(v, k, val).expect("checked when parsed");
        slots_set |= k == "slots";
    }
    let full = width(hidden, v)
        .div_ceil(v.workgroup)
        .clamp(1, max_slots(v.lanes));
    if v.slots == u32::MAX || (!slots_set && set.iter().any(|(k, _)| k == "wg")) {
        v.slots = full;
    }
    // Dropping the bounds checks is only right where the row fills the cache exactly.
    v.exact &= v.slots * v.workgroup == width(hidden, v);
    v
}

fn width(hidden: usize, v: Variant) -> u32 {
    hidden as u32 / v.lanes
}

/// The tiling grid `--sweep` times for rows of `hidden`, in workgroups of up to `max_wg`.
fn sweep_candidates(hidden: usize, options: Options, max_wg: u32) -> Vec<Variant> {
    let base = Variant::for_shape(hidden as u32, options);
    let width = width(hidden, base);
    let mut out = Vec::new();
    for wg in [32u32, 64, 128, 256, 512, 1024]
        .into_iter()
        .filter(|&wg| wg <= max_wg)
    {
        let full = width.div_ceil(wg);
        let fan = Variant::balanced_fan(wg);
        let exact = full * wg == width;
        let at = |slots, fan, preload, unroll, exact| Variant {
            workgroup: wg,
            slots,
            fan,
            preload,
            unroll,
            exact,
            ..base
        };
        // A workgroup of one warp only pays where the row is short.
        if full <= max_slots(base.lanes) && (wg > 32 || full <= 8) {
            for preload in [false, true] {
                out.push(at(full, fan, preload, true, false));
                if exact {
                    out.push(at(full, fan, preload, true, true));
                }
            }
            // The pairwise tree, and the cache as an array indexed in a loop, for comparison.
            out.push(at(full, 0, false, true, exact));
            if full > 1 {
                out.push(at(full, fan, false, false, false));
            }
        }
        // One barrier and every lane folding every partial: for small workgroups, where
        // the tree's barriers are most of a short row's reduction.
        if full <= max_slots(base.lanes) && wg <= 256 {
            for preload in [false, true] {
                out.push(Variant {
                    flat: true,
                    ..at(full, 0, preload, true, exact)
                });
            }
        }
        if wg >= 128 {
            // Nothing held: the write phase reads the row again (from L2, mostly).
            out.push(at(0, fan, false, false, false));
        }
    }
    out
}

fn short(v: &Variant) -> String {
    format!(
        "wg={} slots={} fan={} flat={} preload={} unroll={} exact={}{}",
        v.workgroup,
        v.slots,
        v.fan,
        v.flat as u8,
        v.preload as u8,
        v.unroll as u8,
        v.exact as u8,
        match v.split_in() {
            1 => String::new(),
            k => format!(" split={k}"),
        }
    )
}

/// SplitMix64, as in the native tests: the same numbers on every machine.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn vec(&mut self, n: usize, center: f32) -> Vec<f32> {
        (0..n)
            .map(|_| center + (self.next() >> 40) as f32 / (1u64 << 23) as f32 - 1.0)
            .collect()
    }
}

fn bytes_of(v: &[f32], padded: usize) -> Vec<u8> {
    let mut out: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    out.resize(padded * 4, 0);
    out
}

#[derive(Clone, Copy, Default)]
struct Stats {
    median_us: f64,
    min_us: f64,
    max_us: f64,
}

/// Work that runs just before each timed batch, so that every kernel is timed at the clock a
/// busy GPU runs at: a GPU that has idled for a few milliseconds (the host preparing the
/// next batch) drops its clock, and a batch of microsecond passes is too short to raise it.
struct Heater {
    pipeline: wgpu::ComputePipeline,
    group: wgpu::BindGroup,
    grid: (u32, u32),
    passes: usize,
    _buffers: Vec<wgpu::Buffer>,
}

struct Bench {
    ctx: GpuContext,
    heater: Option<Heater>,
    timestamps: bool,
    period_ns: f64,
    warmup: usize,
    reps: usize,
    /// Dispatches per timed pass (`--per-pass`).
    per_pass: usize,
}

impl Bench {
    /// Times `reps` passes (after `warmup` untimed ones), each recorded by `record(pass, i)`.
    /// Passes that write the same buffer are serialized by the barrier wgpu puts between
    /// them, so each pass's timestamps bracket that pass alone.
    fn time(&self, record: &mut dyn FnMut(&mut wgpu::ComputePass, usize)) -> Result<Stats, String> {
        let device = self.ctx.device();
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let mut samples = Vec::with_capacity(self.reps);
        if self.timestamps {
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
                    pass.set_pipeline(&h.pipeline);
                    pass.set_bind_group(0, &h.group, &[]);
                    pass.dispatch_workgroups(h.grid.0, h.grid.1, 1);
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
            if let Some(e) = pollster::block_on(scope.pop()) {
                return Err(e.to_string());
            }
            readback.map_async(wgpu::MapMode::Read, .., |_| {});
            device
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
            for pair in ticks.chunks_exact(2) {
                samples.push(
                    pair[1].wrapping_sub(pair[0]) as f64 * self.period_ns
                        / 1000.0
                        / self.per_pass as f64,
                );
            }
        } else {
            // No timestamps on this adapter: one submission per pass, timed by the host.
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
            if let Some(e) = pollster::block_on(scope.pop()) {
                return Err(e.to_string());
            }
        }
        samples.sort_by(f64::total_cmp);
        let n = samples.len();
        let median = if n % 2 == 1 {
            samples[n / 2]
        } else {
            (samples[n / 2 - 1] + samples[n / 2]) / 2.0
        };
        Ok(Stats {
            median_us: median,
            min_us: samples[0],
            max_us: samples[n - 1],
        })
    }

    fn plain_pipeline(&self, label: &str, wgsl: &str) -> wgpu::ComputePipeline {
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

    fn uniform(&self, bytes: &[u8]) -> wgpu::Buffer {
        self.ctx
            .device()
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: None,
                contents: bytes,
                usage: wgpu::BufferUsages::UNIFORM,
            })
    }

    fn bind(&self, pipeline: &wgpu::ComputePipeline, buffers: &[&wgpu::Buffer]) -> wgpu::BindGroup {
        let entries: Vec<wgpu::BindGroupEntry> = buffers
            .iter()
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
                layout: &pipeline.get_bind_group_layout(0),
                entries: &entries,
            })
    }

    /// Reads `len` f32 at element `offset` of `buffer`.
    fn read(&self, buffer: &wgpu::Buffer, offset: usize, len: usize) -> Vec<f32> {
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
}

/// A storage buffer of `len` f32 that lives as long as the benchmark holds it (the
/// context's own buffers are the driver's, recycled between calls).
fn storage(b: &Bench, len: usize, extra: wgpu::BufferUsages) -> wgpu::Buffer {
    b.ctx.device().create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: (len * 4) as u64,
        usage: wgpu::BufferUsages::STORAGE | extra,
        mapped_at_creation: false,
    })
}

/// One shape's data, uploaded.
struct Problem {
    rows: usize,
    hidden: usize,
    input: Vec<f32>,
    residual: Vec<f32>,
    gamma: Vec<f32>,
    beta: Vec<f32>,
    bias: Vec<f32>,
    inputs: Vec<wgpu::Buffer>,
    residuals: Vec<wgpu::Buffer>,
    gamma_buf: wgpu::Buffer,
    beta_buf: wgpu::Buffer,
    bias_buf: wgpu::Buffer,
    out: wgpu::Buffer,
    sum: wgpu::Buffer,
}

impl Problem {
    fn new(b: &Bench, rows: usize, hidden: usize) -> Problem {
        let n = rows * hidden;
        let padded = n.next_multiple_of(4).max(4);
        let mut rng = Rng(0x5EED_BE4C ^ (rows as u64) << 32 ^ hidden as u64);
        let input = rng.vec(n, 0.0);
        let residual = rng.vec(n, 0.0);
        let gamma = rng.vec(hidden, 1.0);
        let beta = rng.vec(hidden, 0.0);
        let bias = rng.vec(hidden, 0.0);
        let copies = ROTATE_BYTES.div_ceil(8 * n).clamp(1, MAX_COPIES);
        let upload = |data: &[u8], len: usize| {
            let buf = storage(b, len, wgpu::BufferUsages::COPY_DST);
            b.ctx.queue().write_buffer(&buf, 0, data);
            buf
        };
        let (input_bytes, residual_bytes) = (bytes_of(&input, padded), bytes_of(&residual, padded));
        let inputs = (0..copies).map(|_| upload(&input_bytes, padded)).collect();
        let residuals = (0..copies)
            .map(|_| upload(&residual_bytes, padded))
            .collect();
        let hp = hidden.next_multiple_of(4);
        let gamma_buf = upload(&bytes_of(&gamma, hp), hp);
        let beta_buf = upload(&bytes_of(&beta, hp), hp);
        let bias_buf = upload(&bytes_of(&bias, hp), hp);
        let out = storage(b, padded, wgpu::BufferUsages::COPY_SRC);
        let sum = storage(b, padded, wgpu::BufferUsages::COPY_SRC);
        b.ctx.queue().submit([]);
        let _ = b.ctx.device().poll(wgpu::PollType::wait_indefinitely());
        Problem {
            rows,
            hidden,
            input,
            residual,
            gamma,
            beta,
            bias,
            inputs,
            residuals,
            gamma_buf,
            beta_buf,
            bias_buf,
            out,
            sum,
        }
    }

    fn elements(&self) -> usize {
        self.rows * self.hidden
    }

    /// Rows compared against the reference: the first and the last few (the last ones sit in
    /// the folded part of the grid when there are more than 65535).
    fn check_rows(&self) -> Vec<usize> {
        let mut rows: Vec<usize> = (0..3.min(self.rows))
            .chain(self.rows.saturating_sub(2)..self.rows)
            .collect();
        rows.dedup();
        rows
    }

    /// Runs `variant` once on the first copy and compares the check rows with the reference.
    fn check(&self, b: &Bench, variant: Variant) -> String {
        let o = variant.options;
        let pipeline = b.ctx.pipeline(variant);
        let params = b.ctx.params_buffer(self.params(variant));
        let group = self.group(b, variant, 0, &params);
        let mut encoder = b.ctx.device().create_command_encoder(&Default::default());
        {
            let mut pass = encoder.begin_compute_pass(&Default::default());
            b.ctx
                .dispatch(&mut pass, (variant, &pipeline), &group, self.rows as u32);
        }
        b.ctx.queue().submit([encoder.finish()]);
        let h = self.hidden;
        let mut worst = 0.0f64;
        for row in self.check_rows() {
            let r = row * h..(row + 1) * h;
            let x = Inputs {
                input: &self.input[r.clone()],
                residual: &self.residual[r.clone()],
                gamma: &self.gamma,
                beta: o.beta.then_some(&self.beta[..]),
                bias: o.bias.then_some(&self.bias[..]),
                hidden: h,
                eps: EPS,
            };
            let (want_y, want_v) = fused_rms_norm(&x);
            worst = worst.max(worst_error(
                &b.read(&self.out, row * h, h),
                &want_y,
                &x,
                RTOL,
            ));
            if o.sum
                && b.read(&self.sum, row * h, h)
                    .iter()
                    .zip(&want_v)
                    .any(|(a, w)| a.to_bits() != w.to_bits())
            {
                return format!("FAIL: sum of row {row} differs");
            }
        }
        if worst <= 1.0 {
            "ok".into()
        } else {
            format!("FAIL: {worst:.1} tolerances off")
        }
    }

    fn params(&self, v: Variant) -> Params {
        Params {
            rows: self.rows as u32,
            width: self.hidden as u32 / v.lanes,
            hidden: self.hidden as f32,
            eps: EPS,
        }
    }

    fn group(&self, b: &Bench, v: Variant, copy: usize, params: &wgpu::Buffer) -> wgpu::BindGroup {
        let o = v.options;
        let mut bound: Bound = [None; BINDINGS.len()];
        bound[slot::INPUT] = Some(&self.inputs[copy]);
        bound[slot::RESIDUAL] = Some(&self.residuals[copy]);
        bound[slot::GAMMA] = Some(&self.gamma_buf);
        bound[slot::BETA] = o.beta.then_some(&self.beta_buf);
        bound[slot::BIAS] = o.bias.then_some(&self.bias_buf);
        bound[slot::OUTPUT] = Some(&self.out);
        bound[slot::SUM] = o.sum.then_some(&self.sum);
        bound[slot::PARAMS] = Some(params);
        b.ctx.bind_group(false, &bound)
    }

    fn time_kernel(&self, b: &Bench, variant: Variant) -> Result<Stats, String> {
        let pipeline = b.ctx.pipeline(variant);
        let params = b.ctx.params_buffer(self.params(variant));
        let groups: Vec<_> = (0..self.inputs.len())
            .map(|c| self.group(b, variant, c, &params))
            .collect();
        b.time(&mut |pass, i| {
            b.ctx.dispatch(
                pass,
                (variant, &pipeline),
                &groups[i % groups.len()],
                self.rows as u32,
            )
        })
    }

    fn time_roofline(&self, b: &Bench, pipeline: &wgpu::ComputePipeline) -> Result<Stats, String> {
        let vec4s = self.elements().div_ceil(4) as u32;
        let count = b.uniform(&[vec4s.to_le_bytes(), [0; 4], [0; 4], [0; 4]].concat());
        let groups: Vec<_> = (0..self.inputs.len())
            .map(|c| {
                b.bind(
                    pipeline,
                    &[&self.inputs[c], &self.residuals[c], &self.out, &count],
                )
            })
            .collect();
        let (x, y) = grid(vec4s.div_ceil(256), b.ctx.caps().max_groups_per_dim);
        b.time(&mut |pass, i| {
            pass.set_pipeline(pipeline);
            pass.set_bind_group(0, &groups[i % groups.len()], &[]);
            pass.dispatch_workgroups(x, y, 1);
        })
    }

    /// `out = a + b, out2 = a - b`: two reads and two writes, as the kernel with `sum` moves.
    fn time_roofline_sum(
        &self,
        b: &Bench,
        pipeline: &wgpu::ComputePipeline,
    ) -> Result<Stats, String> {
        let vec4s = self.elements().div_ceil(4) as u32;
        let count = b.uniform(&[vec4s.to_le_bytes(), [0; 4], [0; 4], [0; 4]].concat());
        let groups: Vec<_> = (0..self.inputs.len())
            .map(|c| {
                b.bind(
                    pipeline,
                    &[
                        &self.inputs[c],
                        &self.residuals[c],
                        &self.out,
                        &self.sum,
                        &count,
                    ],
                )
            })
            .collect();
        let (x, y) = grid(vec4s.div_ceil(256), b.ctx.caps().max_groups_per_dim);
        b.time(&mut |pass, i| {
            pass.set_pipeline(pipeline);
            pass.set_bind_group(0, &groups[i % groups.len()], &[]);
            pass.dispatch_workgroups(x, y, 1);
        })
    }

    /// `out = a + b` on scalars: what an odd width's scalar loads are measured against.
    fn time_roofline_scalar(
        &self,
        b: &Bench,
        pipeline: &wgpu::ComputePipeline,
    ) -> Result<Stats, String> {
        let n = self.elements() as u32;
        let count = b.uniform(&[n.to_le_bytes(), [0; 4], [0; 4], [0; 4]].concat());
        let groups: Vec<_> = (0..self.inputs.len())
            .map(|c| {
                b.bind(
                    pipeline,
                    &[&self.inputs[c], &self.residuals[c], &self.out, &count],
                )
            })
            .collect();
        let (x, y) = grid(n.div_ceil(256), b.ctx.caps().max_groups_per_dim);
        b.time(&mut |pass, i| {
            pass.set_pipeline(pipeline);
            pass.set_bind_group(0, &groups[i % groups.len()], &[]);
            pass.dispatch_workgroups(x, y, 1);
        })
    }

    fn time_row_per_thread(
        &self,
        b: &Bench,
        pipeline: &wgpu::ComputePipeline,
    ) -> Result<Stats, String> {
        let shape = b.uniform(
            &[
                (self.rows as u32).to_le_bytes(),
                (self.hidden as u32).to_le_bytes(),
                EPS.to_le_bytes(),
                [0; 4],
            ]
            .concat(),
        );
        let groups: Vec<_> = (0..self.inputs.len())
            .map(|c| {
                b.bind(
                    pipeline,
                    &[
                        &self.inputs[c],
                        &self.residuals[c],
                        &self.gamma_buf,
                        &self.beta_buf,
                        &self.bias_buf,
                        &self.out,
                        &shape,
                    ],
                )
            })
            .collect();
        let (x, y) = grid(
            (self.rows as u32).div_ceil(64),
            b.ctx.caps().max_groups_per_dim,
        );
        b.time(&mut |pass, i| {
            pass.set_pipeline(pipeline);
            pass.set_bind_group(0, &groups[i % groups.len()], &[]);
            pass.dispatch_workgroups(x, y, 1);
        })
    }
}

struct KernelResult {
    name: String,
    variant: Variant,
    stats: Result<Stats, String>,
    bytes: f64,
    check: Option<String>,
}

struct ShapeResult {
    rows: usize,
    hidden: usize,
    copies: usize,
    roofline: Result<Stats, String>,
    /// Odd widths only: `out = a + b` on scalars.
    roofline_scalar: Option<Result<Stats, String>>,
    /// `out = a + b, out2 = a - b`, the `sum` kernel's own roofline.
    roofline_sum: Result<Stats, String>,
    row_per_thread: Option<Result<Stats, String>>,
    kernels: Vec<KernelResult>,
    sweep: Vec<KernelResult>,
}

fn gbps(bytes: f64, us: f64) -> f64 {
    bytes / us / 1e3
}

/// `--emit-wgsl`: the chosen and swept variants of every shape's row length, as JSON.
fn emit_wgsl(args: &Args, path: &str) {
    // Dawn's devices on an H200 allow 1024 invocations; the harness skips what its device
    // does not.
    const MAX_WG: u32 = 1024;
    let mut hiddens: Vec<usize> = args.shapes.iter().map(|&(_, h)| h).collect();
    hiddens.sort_unstable();
    hiddens.dedup();
    let mut items = Vec::new();
    for hidden in hiddens {
        let options: Vec<(&str, Options)> = if args.sweep {
            args.sweep_options.clone()
        } else {
            KERNELS.to_vec()
        };
        for (name, o) in options {
            // The browser's choice first: this list is for Dawn.
            let mut vs = vec![chosen_for_web(hidden, o, &args.set, MAX_WG)];
            if args.sweep {
                vs.extend(sweep_candidates(hidden, o, MAX_WG));
            }
            for (i, v) in vs.into_iter().enumerate() {
                items.push(format!(
                    "  {{\"hidden\": {hidden}, \"options\": \"{name}\", \"chosen\": {}, \"knobs\": \"{}\", \"code\": \"{}\"}}",
                    i == 0,
                    short(&v),
                    esc(&v.wgsl())
                ));
            }
        }
    }
    let json = format!("[\n{}\n]\n", items.join(",\n"));
    std::fs::write(path, json).unwrap_or_else(|e| {
        eprintln!("bench: writing {path}: {e}");
        std::process::exit(1)
    });
    println!("wrote {} variants to {path}", items.len());
}

fn main() {
    let args = parse_args();
    if let Some(path) = &args.emit_wgsl {
        emit_wgsl(&args, path);
        return;
    }
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
    let mut bench = Bench {
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
    println!("adapter: {adapter_line}");
    println!(
        "timing: {}, median of {} passes after {} warm-up, {} dispatch(es) a pass",
        if timestamps {
            "GPU timestamps at compute pass begin/end"
        } else {
            "host clock per submission (no TIMESTAMP_QUERY)"
        },
        bench.reps,
        bench.warmup,
        bench.per_pass
    );
    let roofline = bench.plain_pipeline("roofline", ROOFLINE_WGSL);
    let roofline_sum = bench.plain_pipeline("roofline sum", ROOFLINE_SUM_WGSL);
    let roofline_scalar = bench.plain_pipeline(
        "roofline scalar",
        &ROOFLINE_WGSL.replace("array<vec4<f32>>", "array<f32>"),
    );
    let row_per_thread = bench.plain_pipeline("row per thread", ROW_PER_THREAD_WGSL);

    settle(&mut bench, &roofline, args.heat_ms);

    let mut results = Vec::new();
    for &(rows, hidden) in &args.shapes {
        if rows == 0 || (rows * hidden * 4) as u64 > bench.ctx.caps().max_binding {
            println!("{rows}x{hidden}: skipped (empty, or larger than one storage binding here)");
            continue;
        }
        let started = Instant::now();
        let p = Problem::new(&bench, rows, hidden);
        let n = p.elements() as f64;
        let roof = p.time_roofline(&bench, &roofline);
        let roof_sum = p.time_roofline_sum(&bench, &roofline_sum);
        let roof_scalar =
            (hidden % 4 != 0).then(|| p.time_roofline_scalar(&bench, &roofline_scalar));
        let seed = args
            .seed_baseline
            .then(|| p.time_row_per_thread(&bench, &row_per_thread));
        let mut kernels = Vec::new();
        for (name, options) in KERNELS {
            let variant = chosen(bench.ctx.caps(), rows, hidden, options, &args.set);
            let stats = p.time_kernel(&bench, variant);
            let check = args.check.then(|| p.check(&bench, variant));
            let bytes = n * if options.sum { 16.0 } else { 12.0 };
            kernels.push(KernelResult {
                name: name.into(),
                variant,
                stats,
                bytes,
                check,
            });
        }
        let mut sweep = Vec::new();
        if args.sweep {
            for &(name, options) in &args.sweep_options {
                // The device's largest workgroup, as the crate shrinks its own choice to it.
                for variant in sweep_candidates(hidden, options, bench.ctx.caps().max_workgroup) {
                    let stats = p.time_kernel(&bench, variant);
                    let check = args.check.then(|| p.check(&bench, variant));
                    let bytes = n * if options.sum { 16.0 } else { 12.0 };
                    sweep.push(KernelResult {
                        name: name.into(),
                        variant,
                        stats,
                        bytes,
                        check,
                    });
                }
            }
            print_sweep(rows, hidden, &roof, &sweep);
        }
        let r = ShapeResult {
            rows,
            hidden,
            copies: p.inputs.len(),
            roofline: roof,
            roofline_scalar: roof_scalar,
            roofline_sum: roof_sum,
            row_per_thread: seed,
            kernels,
            sweep,
        };
        eprintln!(
            "{rows}x{hidden}: done in {:.1} s",
            started.elapsed().as_secs_f64()
        );
        results.push(r);
        drop(p);
        let _ = bench.ctx.device().poll(wgpu::PollType::wait_indefinitely());
    }
    print_table(&results);
    if let Some(path) = &args.json {
        let json = to_json(&adapter_line, &args, &bench, &results);
        std::fs::write(path, json).unwrap_or_else(|e| eprintln!("bench: writing {path}: {e}"));
        println!("wrote {path}");
    }
    let failed = results
        .iter()
        .flat_map(|r| r.kernels.iter().chain(&r.sweep))
        .any(|k| k.stats.is_err() || k.check.as_deref().is_some_and(|c| c != "ok"));
    if failed {
        eprintln!("bench: some kernels failed (see the table)");
        std::process::exit(1);
    }
}

/// Sizes the heater to `ms` of GPU time (none for 0) and runs it once.
fn settle(b: &mut Bench, roofline: &wgpu::ComputePipeline, ms: f64) {
    if ms <= 0.0 || !b.timestamps {
        return;
    }
    let n = 8usize << 20;
    let buffers: Vec<wgpu::Buffer> = (0..3)
        .map(|_| storage(b, n, wgpu::BufferUsages::empty()))
        .collect();
    let count = b.uniform(&[((n / 4) as u32).to_le_bytes(), [0; 4], [0; 4], [0; 4]].concat());
    let group = b.bind(roofline, &[&buffers[0], &buffers[1], &buffers[2], &count]);
    let grid = grid(
        (n as u32 / 4).div_ceil(256),
        b.ctx.caps().max_groups_per_dim,
    );
    let mut heater = Heater {
        pipeline: roofline.clone(),
        group,
        grid,
        passes: 0,
        _buffers: buffers,
    };
    let one = b
        .time(&mut |pass, _| {
            pass.set_pipeline(&heater.pipeline);
            pass.set_bind_group(0, &heater.group, &[]);
            pass.dispatch_workgroups(grid.0, grid.1, 1);
        })
        .map_or(100.0, |s| s.median_us);
    heater.passes = ((ms * 1000.0 / one).ceil() as usize).clamp(1, 20_000);
    b.heater = Some(heater);
    let _ = b.time(&mut |_, _| {});
}

fn fmt_us(s: &Result<Stats, String>) -> String {
    match s {
        Ok(s) => format!("{:.2}", s.median_us),
        Err(_) => "error".into(),
    }
}

/// The kernel's share of the roofline's bandwidth, each counted at its own bytes.
fn bw_ratio(k: &KernelResult, roof: &Result<Stats, String>, n: f64) -> Option<f64> {
    let (Ok(s), Ok(r)) = (&k.stats, roof) else {
        return None;
    };
    Some(gbps(k.bytes, s.median_us) / gbps(12.0 * n, r.median_us))
}

fn print_sweep(rows: usize, hidden: usize, roof: &Result<Stats, String>, sweep: &[KernelResult]) {
    let n = (rows * hidden) as f64;
    println!("\nsweep {rows}x{hidden} (roofline {} µs):", fmt_us(roof));
    let mut order: Vec<&KernelResult> = sweep.iter().collect();
    let t = |k: &KernelResult| k.stats.as_ref().map_or(f64::INFINITY, |s| s.median_us);
    // Grouped by option set (in the order swept), fastest first within each.
    let rank = |k: &KernelResult| sweep.iter().position(|x| x.name == k.name).unwrap_or(0);
    order.sort_by(|a, b| rank(a).cmp(&rank(b)).then(t(a).total_cmp(&t(b))));
    for k in order {
        let ratio = bw_ratio(k, roof, n).map_or("-".into(), |r| format!("{:.1}%", 100.0 * r));
        let check = k
            .check
            .as_deref()
            .map_or(String::new(), |c| format!("  {c}"));
        let err = k
            .stats
            .as_ref()
            .err()
            .map_or(String::new(), |e| format!("  {e}"));
        println!(
            "  {:<10} {:<44} {:>10} µs {:>7}{check}{err}",
            k.name,
            short(&k.variant),
            fmt_us(&k.stats),
            ratio
        );
    }
}

fn print_table(results: &[ShapeResult]) {
    println!();
    println!(
        "{:>12} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7} {:>7} {:>7} {:>6} {:>11} {:>9}",
        "shape",
        "roof µs",
        "roof GB/s",
        "plain µs",
        "b+b µs",
        "sum µs",
        "seed µs",
        "plain",
        "b+b",
        "sum",
        "t/roof",
        "plain GB/s",
        "seed/roof"
    );
    for r in results {
        let n = (r.rows * r.hidden) as f64;
        let k = |name: &str| {
            r.kernels
                .iter()
                .find(|k| k.name == name)
                .expect("every kernel is timed")
        };
        let pct = |name: &str| {
            bw_ratio(k(name), &r.roofline, n).map_or("-".into(), |x| format!("{:.1}%", 100.0 * x))
        };
        let roof_gbps = r.roofline.as_ref().map_or("-".into(), |s| {
            format!("{:.0}", gbps(12.0 * n, s.median_us))
        });
        let plain = k("plain");
        let t_ratio = match (&plain.stats, &r.roofline) {
            (Ok(a), Ok(b)) => format!("{:.2}x", a.median_us / b.median_us),
            _ => "-".into(),
        };
        let plain_gbps = plain.stats.as_ref().map_or("-".into(), |s| {
            format!("{:.0}", gbps(plain.bytes, s.median_us))
        });
        let seed_ratio = match (&r.row_per_thread, &r.roofline) {
            (Some(Ok(a)), Ok(b)) => format!("{:.1}x", a.median_us / b.median_us),
            _ => "-".into(),
        };
        println!(
            "{:>12} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7} {:>7} {:>7} {:>6} {:>11} {:>9}",
            format!("{}x{}", r.rows, r.hidden),
            fmt_us(&r.roofline),
            roof_gbps,
            fmt_us(&plain.stats),
            fmt_us(&k("bias+beta").stats),
            fmt_us(&k("sum").stats),
            r.row_per_thread.as_ref().map_or("-".into(), fmt_us),
            pct("plain"),
            pct("bias+beta"),
            pct("sum"),
            t_ratio,
            plain_gbps,
            seed_ratio,
        );
    }
    println!(
        "\nplain / b+b / sum: share of the roofline's bandwidth (12 bytes per element; 16 with sum). \
         t/roof: plain kernel's time over the roofline's. seed/roof: one-thread-per-row time over the roofline's."
    );
    for r in results {
        for k in &r.kernels {
            let check = k
                .check
                .as_deref()
                .map_or(String::new(), |c| format!(", check {c}"));
            if let Err(e) = &k.stats {
                println!("{}x{} {}: {e}", r.rows, r.hidden, k.name);
            } else if !check.is_empty() && check != ", check ok" {
                println!("{}x{} {}{check}", r.rows, r.hidden, k.name);
            }
        }
    }
    for r in results {
        let n = (r.rows * r.hidden) as f64;
        let sum = r.kernels.iter().find(|k| k.name == "sum");
        if let (Some(k), Ok(roof)) = (sum, &r.roofline_sum) {
            // Both move 16 bytes per element.
            let share = bw_ratio(k, &r.roofline_sum, n).map(|x| x * 12.0 / 16.0);
            println!(
                "{}x{} sum against `a + b, a - b` (2 reads, 2 writes: {:.2} µs): {}",
                r.rows,
                r.hidden,
                roof.median_us,
                share.map_or("-".into(), |x| format!("{:.1}%", 100.0 * x))
            );
        }
    }
    for r in results {
        let Some(scalar) = &r.roofline_scalar else {
            continue;
        };
        let n = (r.rows * r.hidden) as f64;
        let shares: Vec<String> = r
            .kernels
            .iter()
            .map(|k| {
                bw_ratio(k, scalar, n).map_or(format!("{} -", k.name), |x| {
                    format!("{} {:.1}%", k.name, 100.0 * x)
                })
            })
            .collect();
        println!(
            "{}x{} against a scalar `a + b` ({} µs): {}",
            r.rows,
            r.hidden,
            fmt_us(scalar),
            shares.join(", ")
        );
    }
    // Per shape, each option's kernel where it differs from plain's.
    let variants: Vec<String> = results
        .iter()
        .map(|r| {
            let plain = &r.kernels[0];
            let others: Vec<String> = r.kernels[1..]
                .iter()
                .filter(|k| short(&k.variant) != short(&plain.variant))
                .map(|k| format!("; {} {}", k.name, short(&k.variant)))
                .collect();
            format!(
                "{}x{}: {}{}",
                r.rows,
                r.hidden,
                short(&plain.variant),
                others.concat()
            )
        })
        .collect();
    println!(
        "variants (plain, and the others where they differ): {}",
        variants.join(" | ")
    );
}

fn esc(s: &str) -> String {
    s.chars()
        .flat_map(|c| match c {
            '"' => vec!['\\', '"'],
            '\\' => vec!['\\', '\\'],
            c if (c as u32) < 0x20 => format!("\\u{:04x}", c as u32).chars().collect(),
            c => vec![c],
        })
        .collect()
}

fn stats_json(s: &Result<Stats, String>) -> String {
    match s {
        Ok(s) => format!(
            "{{\"median_us\": {:.3}, \"min_us\": {:.3}, \"max_us\": {:.3}}}",
            s.median_us, s.min_us, s.max_us
        ),
        Err(e) => format!("{{\"error\": \"{}\"}}", esc(e)),
    }
}

fn kernel_json(k: &KernelResult, roof: &Result<Stats, String>, n: f64) -> String {
    let v = &k.variant;
    let mut s = format!(
        "{{\"name\": \"{}\", \"variant\": {{\"lanes\": {}, \"workgroup\": {}, \"slots\": {}, \"fan\": {}, \"flat\": {}, \"preload\": {}, \"unroll\": {}, \"exact\": {}, \
         \"bias\": {}, \"beta\": {}, \"sum\": {}}}, \"bytes\": {}, \"time\": {}",
        esc(&k.name),
        v.lanes,
        v.workgroup,
        v.slots,
        v.fan,
        v.flat,
        v.preload,
        v.unroll,
        v.exact,
        v.options.bias,
        v.options.beta,
        v.options.sum,
        k.bytes,
        stats_json(&k.stats)
    );
    if let Ok(st) = &k.stats {
        let _ = write!(s, ", \"gbps\": {:.1}", gbps(k.bytes, st.median_us));
    }
    if let Some(r) = bw_ratio(k, roof, n) {
        let _ = write!(s, ", \"bw_ratio\": {r:.4}");
    }
    if let (Ok(a), Ok(b)) = (&k.stats, roof) {
        let _ = write!(s, ", \"time_ratio\": {:.4}", a.median_us / b.median_us);
    }
    if let Some(c) = &k.check {
        let _ = write!(s, ", \"check\": \"{}\"", esc(c));
    }
    s.push('}');
    s
}

fn to_json(adapter: &str, args: &Args, b: &Bench, results: &[ShapeResult]) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "{{\n  \"date\": \"{}\",\n  \"adapter\": \"{}\",\n  \"timing\": \"{}\",\n  \"warmup\": {},\n  \"reps\": {},\n  \"quick\": {},\n  \"shapes\": [",
        today(),
        esc(adapter),
        if b.timestamps { "timestamp" } else { "host" },
        b.warmup,
        b.reps,
        args.quick
    );
    for (i, r) in results.iter().enumerate() {
        let n = (r.rows * r.hidden) as f64;
        let _ = write!(
            s,
            "{}\n    {{\"rows\": {}, \"hidden\": {}, \"elements\": {}, \"input_copies\": {}, \"roofline\": {}",
            if i > 0 { "," } else { "" },
            r.rows,
            r.hidden,
            r.rows * r.hidden,
            r.copies,
            stats_json(&r.roofline)
        );
        if let Ok(st) = &r.roofline {
            let _ = write!(
                s,
                ", \"roofline_gbps\": {:.1}",
                gbps(12.0 * n, st.median_us)
            );
        }
        let _ = write!(s, ", \"roofline_sum\": {}", stats_json(&r.roofline_sum));
        let sum = r.kernels.iter().find(|k| k.name == "sum");
        if let (Some(Ok(st)), Ok(roof)) = (sum.map(|k| &k.stats), &r.roofline_sum) {
            // Both move 16 bytes per element: the share is the ratio of times.
            let _ = write!(
                s,
                ", \"sum_vs_roofline_sum\": {:.4}",
                roof.median_us / st.median_us
            );
        }
        if let Some(scalar) = &r.roofline_scalar {
            let _ = write!(s, ", \"roofline_scalar\": {}", stats_json(scalar));
            for k in &r.kernels {
                if let Some(x) = bw_ratio(k, scalar, n) {
                    let _ = write!(s, ", \"{}_vs_scalar\": {x:.4}", esc(&k.name));
                }
            }
        }
        if let Some(seed) = &r.row_per_thread {
            let _ = write!(s, ", \"row_per_thread\": {}", stats_json(seed));
        }
        let list = |ks: &[KernelResult]| {
            ks.iter()
                .map(|k| kernel_json(k, &r.roofline, n))
                .collect::<Vec<_>>()
                .join(",\n        ")
        };
        let _ = write!(
            s,
            ",\n      \"kernels\": [\n        {}\n      ]",
            list(&r.kernels)
        );
        if !r.sweep.is_empty() {
            let _ = write!(
                s,
                ",\n      \"sweep\": [\n        {}\n      ]",
                list(&r.sweep)
            );
        }
        s.push('}');
    }
    s.push_str("\n  ]\n}\n");
    s
}

/// Today's UTC date, from the system clock (days to civil date, Howard Hinnant's method).
fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs()) as i64;
    let z = secs.div_euclid(86_400) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + if m <= 2 { 1 } else { 0 };
    format!("{y:04}-{m:02}-{d:02}")
}
