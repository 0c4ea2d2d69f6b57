//! The command line: the shapes and option sets timed, the flags, and the usage message.

use webgpu_rmsnorm::call::options::Options;
use webgpu_rmsnorm::gpu::kernel::tiling::fused::FusedTiling;

use crate::variants::apply_knob;

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

pub struct Args {
    pub json: Option<String>,
    pub quick: bool,
    pub shapes: Vec<(usize, usize)>,
    pub set: Vec<(String, String)>,
    pub sweep: bool,
    pub sweep_options: Vec<(&'static str, Options)>,
    pub check: bool,
    pub seed_baseline: bool,
    pub warmup: usize,
    pub reps: usize,
    pub per_pass: usize,
    pub heat_ms: f64,
    pub emit_wgsl: Option<String>,
}

pub const PLAIN: Options = Options {
    bias: false,
    beta: false,
    sum: false,
    ..Options::PRE_NORM
};
const BIAS_BETA: Options = Options {
    bias: true,
    beta: true,
    sum: false,
    ..Options::PRE_NORM
};
const SUM: Options = Options {
    bias: false,
    beta: false,
    sum: true,
    ..Options::PRE_NORM
};
/// The option sets timed for every shape, by the names the tables and JSON use.
pub const KERNELS: [(&str, Options); 3] =
    [("plain", PLAIN), ("bias+beta", BIAS_BETA), ("sum", SUM)];

/// Prints `why` and the synopsis at the top of `main.rs`, and exits.
fn usage(why: &str) -> ! {
    eprintln!(
        "bench: {why}\n\n{}",
        include_str!("main.rs")
            .lines()
            .take(8)
            .collect::<Vec<_>>()
            .join("\n")
    );
    std::process::exit(2)
}

/// `value` parsed, or the usage with `what` it should have been.
fn parsed<T: std::str::FromStr>(value: String, what: &str) -> T {
    value.parse().unwrap_or_else(|_| usage(what))
}

fn parse_shape(s: &str) -> (usize, usize) {
    let bad = || -> ! { usage(&format!("--shapes: {s} is not ROWSxHIDDEN")) };
    let (r, h) = s.split_once('x').unwrap_or_else(|| bad());
    match (r.trim().parse(), h.trim().parse()) {
        (Ok(r), Ok(h)) if h > 0 => (r, h),
        _ => bad(),
    }
}

fn parse_options(s: &str) -> (&'static str, Options) {
    match s {
        "plain" => ("plain", PLAIN),
        "bb" | "bias+beta" => ("bias+beta", BIAS_BETA),
        "sum" => ("sum", SUM),
        _ => usage(&format!("--sweep-options: {s} is not plain, bb or sum")),
    }
}

pub fn parse_args() -> Args {
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
            "--warmup" => warmup = Some(parsed(value("--warmup"), "--warmup: a count")),
            "--heat-ms" => a.heat_ms = parsed(value("--heat-ms"), "--heat-ms: milliseconds"),
            "--per-pass" => {
                a.per_pass = value("--per-pass")
                    .parse()
                    .ok()
                    .filter(|&k| k >= 1)
                    .unwrap_or_else(|| usage("--per-pass: a count of at least 1"))
            }
            "--reps" => reps = Some(parsed(value("--reps"), "--reps: a count")),
            "--shapes" => a.shapes = value("--shapes").split(',').map(parse_shape).collect(),
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
                    .map(parse_options)
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
        let any = FusedTiling {
            workgroup: 256,
            slots: 4,
            fan: 0,
            preload: false,
            exact: true,
            split: 1,
        };
        apply_knob(any, k, v).unwrap_or_else(|e| usage(&format!("--set: {e}")));
    }
    a
}
