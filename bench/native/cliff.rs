//! The 128 MiB cliff, through the package on wgpu/Vulkan: hidden 4096, rows 4096 → 8191 →
//! 8192 → 16384 in one process, called as an app calls it (host arrays: the call path's
//! pooled buffers), beside the same kernel dispatched directly on buffers allocated before
//! anything else (the buffers allocated once), out of place as the call is. GPU timestamps
//! around one pass of `REPEAT` dispatches.
//!
//! ```text
//! cargo run --release --example cliff
//! CLIFF_ROWS=16,32 cargo run --release --example cliff    # other row counts (a CPU check)
//! ```
//! Prints µs per dispatch for each row count, the package's and the directly dispatched
//! kernel's, and their ratio. Hardware: a Vulkan GPU with 256 MiB storage bindings; on an
//! H200, buffers of 128 MiB and more allocated after others were freed can land in
//! memory that reads at ~40 %; a pool that frees and reallocates them as sizes vary falls off
//! that cliff (docs/performance.md, "The 128 MiB cliff").

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
    use std::rc::Rc;

    use webgpu_rmsnorm::call::dtype::Dtype;
    use webgpu_rmsnorm::call::host::Arg;
    use webgpu_rmsnorm::call::options::Options;
    use webgpu_rmsnorm::call::plan::{Destination, Kernel};
    use webgpu_rmsnorm::call::tensor::Tensor;
    use webgpu_rmsnorm::gpu::kernel::bindings::{slot, Bound, BINDINGS};
    use webgpu_rmsnorm::gpu::kernel::params::Params;
    use webgpu_rmsnorm::gpu::kernel::tiling::MANY_ROWS;
    use webgpu_rmsnorm::gpu::kernel::Variant;
    use webgpu_rmsnorm::gpu::tensor_buffer::TensorBuffer;
    use webgpu_rmsnorm::{GpuContext, Inputs, Request};

    const HIDDEN: usize = 4096;
    const ROWS: [usize; 4] = [4096, 8191, 8192, 16384];
    const REPEAT: u32 = 50;

    /// µs per dispatch of `variant` over `rows` rows of the buffers allocated up front.
    fn direct(ctx: &GpuContext, variant: Variant, bufs: &[Rc<Tensor>; 4], rows: usize) -> f64 {
        let device = ctx.device();
        let buffer = |i: usize| bufs[i].buffer().expect("placed").clone();
        let (input, residual, gamma, output) = (buffer(0), buffer(1), buffer(2), buffer(3));
        let params = ctx.params_buffer(Params::new(
            rows as u32,
            HIDDEN as u32 / variant.lanes,
            HIDDEN as f32,
            1e-6,
            0.0,
        ));
        let mut bound: Bound = [None; BINDINGS.len()];
        bound[slot::INPUT] = Some(&input);
        bound[slot::RESIDUAL] = Some(&residual);
        bound[slot::GAMMA] = Some(&gamma);
        bound[slot::OUTPUT] = Some(&output);
        bound[slot::PARAMS] = Some(&params);
        let pipeline = ctx.pipeline(variant);
        let group = ctx.bind_group(false, &bound);
        let queries = device.create_query_set(&wgpu::QuerySetDescriptor {
            label: None,
            ty: wgpu::QueryType::Timestamp,
            count: 2,
        });
        let resolve = device.create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size: 16,
            usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let read = device.create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size: 16,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder = device.create_command_encoder(&Default::default());
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: None,
                timestamp_writes: Some(wgpu::ComputePassTimestampWrites {
                    query_set: &queries,
                    beginning_of_pass_write_index: Some(0),
                    end_of_pass_write_index: Some(1),
                }),
            });
            for _ in 0..REPEAT {
                ctx.dispatch(&mut pass, (variant, &pipeline), &group, rows as u32);
            }
        }
        encoder.resolve_query_set(&queries, 0..2, &resolve, 0);
        encoder.copy_buffer_to_buffer(&resolve, 0, &read, 0, 16);
        ctx.queue().submit([encoder.finish()]);
        read.map_async(wgpu::MapMode::Read, .., |_| {});
        let _ = device.poll(wgpu::PollType::wait_indefinitely());
        let ticks: Vec<u64> = read
            .slice(..)
            .get_mapped_range()
            .expect("mapped")
            .chunks_exact(8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap()))
            .collect();
        let ns = ticks[1].wrapping_sub(ticks[0]) as f64 * ctx.queue().get_timestamp_period() as f64;
        ns / REPEAT as f64 / 1e3
    }

    pub fn main() {
        let ctx = pollster::block_on(GpuContext::new(wgpu::PowerPreference::HighPerformance))
            .unwrap_or_else(|e| {
                eprintln!("cliff: {e}");
                std::process::exit(1)
            });
        println!("adapter: {}", ctx.adapter().description);
        let rows_list: Vec<usize> = std::env::var("CLIFF_ROWS")
            .ok()
            .map(|s| s.split(',').filter_map(|r| r.trim().parse().ok()).collect())
            .unwrap_or_else(|| ROWS.to_vec());
        let largest = rows_list.iter().max().copied().unwrap_or(0) * HIDDEN;
        let data: Vec<f32> = (0..largest).map(|i| (i % 97) as f32 / 97.0 - 0.5).collect();
        let gamma = vec![1.0f32; HIDDEN];
        // The first buffers of the process, for the largest size: the baseline the cliff is
        // measured against (each size dispatches over its first rows).
        let up = |d: &[f32]| ctx.upload(&d).expect("upload");
        let up_front = [up(&data), up(&data), up(&gamma), up(&data)];
        // The tiling every call here gets (plain, many rows).
        let kernel = Kernel {
            hidden: HIDDEN,
            options: Options::default(),
            dtype: Dtype::F32,
            out_dtype: Dtype::F32,
            in_place: false,
        };
        let variant = kernel.variant(ctx.caps(), MANY_ROWS);
        let timed = |x: &Inputs<Arg<&[f32]>>| {
            let request = Request {
                to: Destination::Host,
                repeat: REPEAT,
                timed: true,
                sum: false,
            };
            let pending = ctx.submit(x, request).expect("submit");
            let done = pollster::block_on(pending.finish()).expect("finish");
            done.ns.map_or(f64::NAN, |ns| ns / REPEAT as f64 / 1e3)
        };
        println!("| rows (MiB per array) | package, host arrays µs | kernel on buffers allocated once µs | ratio |");
        println!("|---|---|---|---|");
        for &rows in &rows_list {
            let n = rows * HIDDEN;
            let host = Inputs::plain(
                Arg::Host(&data[..n]),
                Arg::Host(&data[..n]),
                Arg::Host(&gamma[..]),
                HIDDEN,
            );
            // Warm both paths (pipelines, pooled buffers), then time.
            timed(&host);
            direct(&ctx, variant, &up_front, rows);
            let (package, once) = (timed(&host), direct(&ctx, variant, &up_front, rows));
            println!(
                "| {rows} ({:.1}) | {package:.1} | {once:.1} | {:.2}× |",
                (n * 4) as f64 / (1 << 20) as f64,
                package / once
            );
        }
    }
}
