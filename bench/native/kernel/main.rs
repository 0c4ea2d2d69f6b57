//! GPU-timed benchmark of the fused kernel, natively on Vulkan.
//!
//! ```text
//! cargo run --release --example bench -- [--quick] [--shapes 1x4096,16384x4096]
//!     [--set wg=512,slots=2,fan=32,preload=1,exact=1] [--sweep [--sweep-options plain,bb]]
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
//!
//! Hardware: any Vulkan GPU (the current figures: `docs/performance.md`, "wgpu on Vulkan");
//! on lavapipe, with `--quick`, a check that it runs. Prints a table per run (µs, share of the
//! roofline's bandwidth and time over the roofline's, per shape and option set).

mod args;
mod emit;
mod json;
mod problem;
mod report;
mod roofline;
mod timing;
mod variants;

use std::time::Instant;

use args::{parse_args, Args, KERNELS};
use problem::Problem;
use report::{print_sweep, print_table, ShapeResult};
use roofline::Baselines;
use timing::Bench;
use variants::{chosen, sweep_candidates};

fn main() {
    let args = parse_args();
    if let Some(path) = &args.emit_wgsl {
        emit::emit_wgsl(&args, path);
        return;
    }
    let (mut bench, adapter_line) = Bench::open(&args);
    println!("adapter: {adapter_line}");
    println!(
        "timing: {}, median of {} passes after {} warm-up, {} dispatch(es) a pass",
        if bench.timestamps {
            "GPU timestamps at compute pass begin/end"
        } else {
            "host clock per submission (no TIMESTAMP_QUERY)"
        },
        bench.reps,
        bench.warmup,
        bench.per_pass
    );
    let baselines = Baselines::new(&bench);
    bench.settle(&baselines.roofline, args.heat_ms);

    let mut results = Vec::new();
    for &(rows, hidden) in &args.shapes {
        if rows == 0 || (rows * hidden * 4) as u64 > bench.ctx.caps().max_binding {
            println!("{rows}x{hidden}: skipped (empty, or larger than one storage binding here)");
            continue;
        }
        let started = Instant::now();
        results.push(measure_shape(&args, &bench, &baselines, rows, hidden));
        eprintln!(
            "{rows}x{hidden}: done in {:.1} s",
            started.elapsed().as_secs_f64()
        );
        let _ = bench.ctx.device().poll(wgpu::PollType::wait_indefinitely());
    }
    print_table(&results);
    if let Some(path) = &args.json {
        let json = json::to_json(&adapter_line, &args, &bench, &results);
        std::fs::write(path, json).unwrap_or_else(|e| eprintln!("bench: writing {path}: {e}"));
        println!("wrote {path}");
    }
    let failed = results
        .iter()
        .flat_map(|r| r.kernels.iter().chain(&r.sweep))
        .any(|k| k.failed());
    if failed {
        eprintln!("bench: some kernels failed (see the table)");
        std::process::exit(1);
    }
}

/// Everything timed for one shape: the baselines, the crate's choice for each option set,
/// and the sweep (printed as it ends).
fn measure_shape(
    args: &Args,
    bench: &Bench,
    baselines: &Baselines,
    rows: usize,
    hidden: usize,
) -> ShapeResult {
    let p = Problem::new(bench, rows, hidden);
    let roofline = baselines.roofline(&p, bench);
    let roofline_sum = baselines.roofline_sum(&p, bench);
    let roofline_scalar = (!hidden.is_multiple_of(4)).then(|| baselines.roofline_scalar(&p, bench));
    let row_per_thread = args
        .seed_baseline
        .then(|| baselines.row_per_thread(&p, bench));
    let kernels = KERNELS
        .iter()
        .map(|&(name, options)| {
            let variant = chosen(bench.ctx.caps(), rows, hidden, options, &args.set);
            p.measure(bench, name, variant, args.check)
        })
        .collect();
    let mut sweep = Vec::new();
    if args.sweep {
        for &(name, options) in &args.sweep_options {
            // The device's largest workgroup, as the crate shrinks its own choice to it.
            for variant in sweep_candidates(hidden, options, bench.ctx.caps().max_workgroup) {
                sweep.push(p.measure(bench, name, variant, args.check));
            }
        }
        print_sweep(rows, hidden, &roofline, &sweep);
    }
    ShapeResult {
        rows,
        hidden,
        copies: p.inputs.len(),
        roofline,
        roofline_scalar,
        roofline_sum,
        row_per_thread,
        kernels,
        sweep,
    }
}
