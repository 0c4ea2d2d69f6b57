//! What was measured for each shape, and the tables printed from it.

use webgpu_rmsnorm::gpu::kernel::Variant;

use crate::timing::Stats;
use crate::variants::short;

pub struct KernelResult {
    pub name: String,
    pub variant: Variant,
    pub stats: Result<Stats, String>,
    pub bytes: f64,
    pub check: Option<String>,
}

impl KernelResult {
    pub fn failed(&self) -> bool {
        self.stats.is_err() || self.check.as_deref().is_some_and(|c| c != "ok")
    }
}

pub struct ShapeResult {
    pub rows: usize,
    pub hidden: usize,
    pub copies: usize,
    pub roofline: Result<Stats, String>,
    /// Odd widths only: `out = a + b` on scalars.
    pub roofline_scalar: Option<Result<Stats, String>>,
    /// `out = a + b, out2 = a - b`, the `sum` kernel's own roofline.
    pub roofline_sum: Result<Stats, String>,
    pub row_per_thread: Option<Result<Stats, String>>,
    pub kernels: Vec<KernelResult>,
    pub sweep: Vec<KernelResult>,
}

impl ShapeResult {
    pub fn elements(&self) -> f64 {
        (self.rows * self.hidden) as f64
    }

    /// The kernel of the option set `name` (KERNELS).
    pub fn kernel(&self, name: &str) -> Option<&KernelResult> {
        self.kernels.iter().find(|k| k.name == name)
    }

    /// The roofline's bandwidth, at the 12 bytes per element the plain kernel moves.
    pub fn roofline_gbps(&self) -> Option<f64> {
        let s = self.roofline.as_ref().ok()?;
        Some(gbps(12.0 * self.elements(), s.median_us))
    }
}

pub fn gbps(bytes: f64, us: f64) -> f64 {
    bytes / us / 1e3
}

fn fmt_us(s: &Result<Stats, String>) -> String {
    match s {
        Ok(s) => format!("{:.2}", s.median_us),
        Err(_) => "error".into(),
    }
}

fn pct(share: Option<f64>) -> String {
    share.map_or("-".into(), |x| format!("{:.1}%", 100.0 * x))
}

/// The kernel's share of the roofline's bandwidth, each counted at its own bytes.
pub fn bw_ratio(k: &KernelResult, roof: &Result<Stats, String>, n: f64) -> Option<f64> {
    let (Ok(s), Ok(r)) = (&k.stats, roof) else {
        return None;
    };
    Some(gbps(k.bytes, s.median_us) / gbps(12.0 * n, r.median_us))
}

pub fn print_sweep(
    rows: usize,
    hidden: usize,
    roof: &Result<Stats, String>,
    sweep: &[KernelResult],
) {
    let n = (rows * hidden) as f64;
    println!("\nsweep {rows}x{hidden} (roofline {} µs):", fmt_us(roof));
    let mut order: Vec<&KernelResult> = sweep.iter().collect();
    let t = |k: &KernelResult| k.stats.as_ref().map_or(f64::INFINITY, |s| s.median_us);
    // Grouped by option set (in the order swept), fastest first within each.
    let rank = |k: &KernelResult| sweep.iter().position(|x| x.name == k.name).unwrap_or(0);
    order.sort_by(|a, b| rank(a).cmp(&rank(b)).then(t(a).total_cmp(&t(b))));
    for k in order {
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
            pct(bw_ratio(k, roof, n))
        );
    }
}

pub fn print_table(results: &[ShapeResult]) {
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
        let n = r.elements();
        let k = |name: &str| r.kernel(name).expect("every kernel is timed");
        let share = |name: &str| pct(bw_ratio(k(name), &r.roofline, n));
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
            r.roofline_gbps().map_or("-".into(), |g| format!("{g:.0}")),
            fmt_us(&plain.stats),
            fmt_us(&k("bias+beta").stats),
            fmt_us(&k("sum").stats),
            r.row_per_thread.as_ref().map_or("-".into(), fmt_us),
            share("plain"),
            share("bias+beta"),
            share("sum"),
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
        if let (Some(k), Ok(roof)) = (r.kernel("sum"), &r.roofline_sum) {
            // Both move 16 bytes per element.
            let share = bw_ratio(k, &r.roofline_sum, r.elements()).map(|x| x * 12.0 / 16.0);
            println!(
                "{}x{} sum against `a + b, a - b` (2 reads, 2 writes: {:.2} µs): {}",
                r.rows,
                r.hidden,
                roof.median_us,
                pct(share)
            );
        }
    }
    for r in results {
        let Some(scalar) = &r.roofline_scalar else {
            continue;
        };
        let shares: Vec<String> = r
            .kernels
            .iter()
            .map(|k| format!("{} {}", k.name, pct(bw_ratio(k, scalar, r.elements()))))
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
