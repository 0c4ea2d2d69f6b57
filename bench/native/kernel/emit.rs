//! `--emit-wgsl`: the WGSL of the chosen and swept variants, as JSON for Dawn's bench.

use webgpu_rmsnorm::call::options::Options;

use crate::args::{Args, KERNELS};
use crate::json::esc;
use crate::variants::{chosen_for_web, short, sweep_candidates};

/// `--emit-wgsl`: the chosen and swept variants of every shape's row length, as JSON.
pub fn emit_wgsl(args: &Args, path: &str) {
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
