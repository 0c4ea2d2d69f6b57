//! The results as JSON (`--json`), and the string escaping the WGSL JSON shares.

use std::fmt::Write as _;

use crate::args::Args;
use crate::report::{bw_ratio, gbps, KernelResult, ShapeResult};
use crate::timing::{Bench, Stats};
use crate::variants::short;

/// `s` as the inside of a JSON string.
pub fn esc(s: &str) -> String {
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
        "{{\"name\": \"{}\", \"variant\": {{\"kernel\": \"{}\", \"lanes\": {}, \"workgroup\": {}, \"knobs\": \"{}\", \
         \"bias\": {}, \"beta\": {}, \"sum\": {}}}, \"bytes\": {}, \"time\": {}",
        esc(&k.name),
        if v.is_family() { "family" } else { "fused" },
        v.lanes,
        v.workgroup(),
        esc(&short(v)),
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

pub fn to_json(adapter: &str, args: &Args, b: &Bench, results: &[ShapeResult]) -> String {
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
        let n = r.elements();
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
        if let Some(g) = r.roofline_gbps() {
            let _ = write!(s, ", \"roofline_gbps\": {g:.1}");
        }
        let _ = write!(s, ", \"roofline_sum\": {}", stats_json(&r.roofline_sum));
        if let (Some(Ok(st)), Ok(roof)) = (r.kernel("sum").map(|k| &k.stats), &r.roofline_sum) {
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
