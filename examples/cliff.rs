//! The 128 MiB cliff, through the package on wgpu/Vulkan: hidden 4096, rows 4096 → 8191 →
//! 8192 → 16384 in one process, called as an app calls it (host arrays: the call path's
//! pooled buffers), beside the same kernel in place on tensors uploaded before any call (the
//! buffers allocated once). GPU timestamps around one pass of `REPEAT` dispatches.
//!
//! ```text
//! cargo run --release --example cliff
//! ```
//! On an H200, buffers of 128 MiB and more allocated after others were freed can land in
//! memory that reads at ~40 %; a pool that frees and reallocates them as sizes vary falls off
//! that cliff (docs/PERFORMANCE.md).

// Native only (host slices are native arrays); `wasm-pack test` builds every example for
// wasm too, where this is an empty program.
#[cfg(target_arch = "wasm32")]
fn main() {}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    native::main()
}

#[cfg(not(target_arch = "wasm32"))]
mod native {
    use webgpu_rmsnorm::host::Arg;
    use webgpu_rmsnorm::shape::Destination;
    use webgpu_rmsnorm::{GpuContext, Inputs, Request};

    const HIDDEN: usize = 4096;
    const ROWS: [usize; 4] = [4096, 8191, 8192, 16384];
    const REPEAT: u32 = 50;

    pub fn main() {
        let ctx = pollster::block_on(GpuContext::new(wgpu::PowerPreference::HighPerformance))
            .unwrap_or_else(|e| {
                eprintln!("cliff: {e}");
                std::process::exit(1)
            });
        println!("adapter: {}", ctx.adapter().description);
        let largest = ROWS.iter().max().copied().unwrap_or(0) * HIDDEN;
        let data: Vec<f32> = (0..largest).map(|i| (i % 97) as f32 / 97.0 - 0.5).collect();
        let gamma = vec![1.0f32; HIDDEN];
        // Allocated once, first, before any call: the baseline the cliff is measured against.
        let up_front: Vec<_> = ROWS
            .iter()
            .map(|&rows| {
                let n = rows * HIDDEN;
                let up = |d: &[f32]| ctx.upload(&d).expect("upload");
                (up(&data[..n]), up(&data[..n]))
            })
            .collect();
        let timed = |x: &Inputs<Arg<&[f32]>>, to: Destination| {
            let request = Request {
                to,
                repeat: REPEAT,
                timed: true,
                sum: to == Destination::InPlace,
            };
            let pending = ctx.submit(x, request).expect("submit");
            let done = pollster::block_on(pending.finish()).expect("finish");
            done.ns.map_or(f64::NAN, |ns| ns / REPEAT as f64 / 1e3)
        };
        println!("| rows (MiB per array) | package, host arrays µs | kernel on buffers allocated once µs | ratio |");
        println!("|---|---|---|---|");
        for (i, &rows) in ROWS.iter().enumerate() {
            let n = rows * HIDDEN;
            let host = Inputs {
                input: Arg::Host(&data[..n]),
                residual: Arg::Host(&data[..n]),
                gamma: Arg::Host(&gamma[..]),
                beta: None,
                bias: None,
                hidden: HIDDEN,
                eps: 1e-6,
            };
            let resident = Inputs {
                input: Arg::Gpu(up_front[i].0.clone()),
                residual: Arg::Gpu(up_front[i].1.clone()),
                ..host.clone()
            };
            // Warm both paths (pipelines, pooled buffers), then time.
            timed(&host, Destination::Host);
            timed(&resident, Destination::InPlace);
            let (package, once) = (
                timed(&host, Destination::Host),
                timed(&resident, Destination::InPlace),
            );
            println!(
                "| {rows} ({:.1}) | {package:.1} | {once:.1} | {:.2}× |",
                (n * 4) as f64 / (1 << 20) as f64,
                package / once
            );
        }
    }
}
