//! Prints the WGSL of the variant a call gets: the kernel's file of `shaders/` assembled with
//! the variant's constants, as a pipeline compiles it (and `kernelSource` returns it). No GPU.
//!
//! ```text
//! cargo run --example wgsl -- --hidden 4096 [--rows 1] [--kind rms|layer] [--post-gamma]
//!     [--bias] [--beta] [--sum] [--no-residual] [--gamma-offset] [--dtype f32|f16]
//!     [--out-dtype f32|f16] [--in-place] [--web] [--cpu] [--max-workgroup 256]
//!     [--no-shader-f16] [--constants]
//! ```
//!
//! `--web` tiles for the browser's stack (Dawn) rather than wgpu/Vulkan's, `--cpu` for a CPU
//! adapter; `--no-shader-f16` stores f16 packed in `u32`s. The first line is the pipeline's
//! label, as a comment; `--constants` prints the variant's constants alone.

use webgpu_rmsnorm::call::device::Caps;
use webgpu_rmsnorm::call::dtype::Dtype;
use webgpu_rmsnorm::call::options::Options;
use webgpu_rmsnorm::call::plan::Kernel;
use webgpu_rmsnorm::call::shape::NormKind;

/// Prints the synopsis at the top of this file with `why`, and exits.
fn usage(why: &str) -> ! {
    let synopsis: Vec<&str> = include_str!("wgsl.rs").lines().take(12).collect();
    eprintln!("wgsl: {why}\n\n{}", synopsis.join("\n"));
    std::process::exit(2)
}

fn dtype(name: &str) -> Dtype {
    match name {
        "f32" => Dtype::F32,
        "f16" => Dtype::F16,
        _ => usage(&format!("{name}: not f32 or f16")),
    }
}

fn main() {
    let mut options = Options::PRE_NORM;
    let (mut hidden, mut rows, mut in_place) = (None, 1usize, false);
    let (mut dtypes, mut web, mut only_constants) = ((Dtype::F32, None), false, false);
    let mut caps = Caps {
        max_binding: 1 << 30,
        max_groups_per_dim: 65535,
        max_workgroup: 1024,
        shader_f16: true,
        timestamps: false,
        cpu_tiling: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || {
            args.next()
                .unwrap_or_else(|| usage(&format!("{arg} needs a value")))
        };
        let mut number = |what: &str| -> usize {
            value()
                .parse()
                .unwrap_or_else(|_| usage(&format!("{what}: a number")))
        };
        match arg.as_str() {
            "--hidden" => hidden = Some(number("--hidden")),
            "--rows" => rows = number("--rows"),
            "--max-workgroup" => caps.max_workgroup = number("--max-workgroup") as u32,
            "--kind" => {
                options.kind = match value().as_str() {
                    "rms" => NormKind::Rms,
                    "layer" => NormKind::Layer,
                    other => usage(&format!("--kind {other}: not rms or layer")),
                }
            }
            "--post-gamma" => options.post_gamma = true,
            "--bias" => options.bias = true,
            "--beta" => options.beta = true,
            "--sum" => options.sum = true,
            "--no-residual" => options.residual = false,
            "--gamma-offset" => options.gamma_offset = true,
            "--dtype" => dtypes.0 = dtype(&value()),
            "--out-dtype" => dtypes.1 = Some(dtype(&value())),
            "--in-place" => in_place = true,
            "--web" => web = true,
            "--cpu" => caps.cpu_tiling = true,
            "--no-shader-f16" => caps.shader_f16 = false,
            "--constants" => only_constants = true,
            "-h" | "--help" => usage("help"),
            other => usage(&format!("unknown argument {other}")),
        }
    }
    let kernel = Kernel {
        hidden: hidden.unwrap_or_else(|| usage("--hidden is required")),
        options,
        dtype: dtypes.0,
        out_dtype: dtypes.1.unwrap_or(dtypes.0),
        in_place,
    };
    if let Err(e) = kernel.check() {
        usage(&format!("{e:?}"))
    }
    let variant = kernel.variant_on(&caps, rows, web);
    println!("// {}", variant.label());
    if only_constants {
        for (name, value) in variant.constants() {
            println!("{name} = {value:?}");
        }
    } else {
        print!("{}", variant.wgsl());
    }
}
