//! The baselines the kernel is measured against: the `out = a + b` bandwidth roofline (on
//! vec4, on scalars, and with a second output as the `sum` kernel writes) and the
//! one-thread-per-row kernel the fused one replaces.

use crate::problem::{Problem, EPS};
use crate::timing::{count_uniform, Bench, Stats};

const ROOFLINE_WGSL: &str = include_str!("roofline.wgsl");
const ROOFLINE_SUM_WGSL: &str = include_str!("roofline_sum.wgsl");
const ROW_PER_THREAD_WGSL: &str = include_str!("row_per_thread.wgsl");

/// The baselines' pipelines, compiled once for every shape.
pub struct Baselines {
    pub roofline: wgpu::ComputePipeline,
    roofline_sum: wgpu::ComputePipeline,
    roofline_scalar: wgpu::ComputePipeline,
    row_per_thread: wgpu::ComputePipeline,
}

impl Baselines {
    pub fn new(b: &Bench) -> Baselines {
        Baselines {
            roofline: b.plain_pipeline("roofline", ROOFLINE_WGSL),
            roofline_sum: b.plain_pipeline("roofline sum", ROOFLINE_SUM_WGSL),
            roofline_scalar: b.plain_pipeline(
                "roofline scalar",
                &ROOFLINE_WGSL.replace("array<vec4<f32>>", "array<f32>"),
            ),
            row_per_thread: b.plain_pipeline("row per thread", ROW_PER_THREAD_WGSL),
        }
    }

    /// `out = a + b`: two reads and a write, the 12 bytes per element the kernel moves.
    pub fn roofline(&self, p: &Problem, b: &Bench) -> Result<Stats, String> {
        let vec4s = p.elements().div_ceil(4) as u32;
        elementwise(p, b, &self.roofline, vec4s, false)
    }

    /// `out = a + b, out2 = a - b`: two reads and two writes, as the kernel with `sum` moves.
    pub fn roofline_sum(&self, p: &Problem, b: &Bench) -> Result<Stats, String> {
        let vec4s = p.elements().div_ceil(4) as u32;
        elementwise(p, b, &self.roofline_sum, vec4s, true)
    }

    /// `out = a + b` on scalars: what an odd width's scalar loads are measured against.
    pub fn roofline_scalar(&self, p: &Problem, b: &Bench) -> Result<Stats, String> {
        elementwise(p, b, &self.roofline_scalar, p.elements() as u32, false)
    }

    /// The one-thread-per-row kernel the fused one replaces.
    pub fn row_per_thread(&self, p: &Problem, b: &Bench) -> Result<Stats, String> {
        let rows = p.rows as u32;
        let shape = [
            rows.to_le_bytes(),
            (p.hidden as u32).to_le_bytes(),
            EPS.to_le_bytes(),
            [0; 4],
        ];
        let copies = p.per_copy(|c| {
            vec![
                &p.inputs[c],
                &p.residuals[c],
                &p.gamma_buf,
                &p.beta_buf,
                &p.bias_buf,
                &p.out,
            ]
        });
        time(b, &self.row_per_thread, shape, &copies, rows.div_ceil(64))
    }
}

/// A roofline `pipeline` over `count` elements (of its own width), reading the inputs and
/// writing `out`, and `sum` too with `sum`.
fn elementwise(
    p: &Problem,
    b: &Bench,
    pipeline: &wgpu::ComputePipeline,
    count: u32,
    sum: bool,
) -> Result<Stats, String> {
    let copies = p.per_copy(|c| {
        let mut bound = vec![&p.inputs[c], &p.residuals[c], &p.out];
        bound.extend(sum.then_some(&p.sum));
        bound
    });
    time(
        b,
        pipeline,
        count_uniform(count),
        &copies,
        count.div_ceil(256),
    )
}

/// `pipeline` over `groups` workgroups, on each input copy's `copies` in turn.
fn time(
    b: &Bench,
    pipeline: &wgpu::ComputePipeline,
    uniform: [[u8; 4]; 4],
    copies: &[Vec<&wgpu::Buffer>],
    groups: u32,
) -> Result<Stats, String> {
    let d = b.raw(pipeline, uniform, copies, groups);
    b.time(&mut |pass, i| d.record(pass, i))
}
