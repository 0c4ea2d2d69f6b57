//! One shape's data on the GPU, and the crate's kernel timed and checked on it.

use webgpu_rmsnorm::gpu::kernel::bindings::{slot, Bound, BINDINGS};
use webgpu_rmsnorm::gpu::kernel::params::Params;
use webgpu_rmsnorm::gpu::kernel::Variant;
use webgpu_rmsnorm::reference::{norm_family, worst_error, Inputs};

use crate::report::KernelResult;
use crate::timing::{Bench, Stats};

/// Inputs are rotated among copies until they span this many bytes, so that a shape small
/// enough to sit in the L2 cache (60 MB on an H200) is still read from memory.
const ROTATE_BYTES: usize = 256 << 20;
const MAX_COPIES: usize = 16;
pub const EPS: f32 = 1e-6;
/// The same tolerance as the native tests.
const RTOL: f64 = 1e-5;

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

/// One shape's data, uploaded.
pub struct Problem {
    pub rows: usize,
    pub hidden: usize,
    input: Vec<f32>,
    residual: Vec<f32>,
    gamma: Vec<f32>,
    beta: Vec<f32>,
    bias: Vec<f32>,
    pub inputs: Vec<wgpu::Buffer>,
    pub residuals: Vec<wgpu::Buffer>,
    pub gamma_buf: wgpu::Buffer,
    pub beta_buf: wgpu::Buffer,
    pub bias_buf: wgpu::Buffer,
    pub out: wgpu::Buffer,
    pub sum: wgpu::Buffer,
}

impl Problem {
    pub fn new(b: &Bench, rows: usize, hidden: usize) -> Problem {
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
            let buf = b.storage(len, wgpu::BufferUsages::COPY_DST);
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
        let out = b.storage(padded, wgpu::BufferUsages::COPY_SRC);
        let sum = b.storage(padded, wgpu::BufferUsages::COPY_SRC);
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

    pub fn elements(&self) -> usize {
        self.rows * self.hidden
    }

    /// The bind group lists of the input copies: `bound(copy)` for each.
    pub fn per_copy<'a>(
        &'a self,
        bound: impl Fn(usize) -> Vec<&'a wgpu::Buffer>,
    ) -> Vec<Vec<&'a wgpu::Buffer>> {
        (0..self.inputs.len()).map(bound).collect()
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
                beta: o.beta.then_some(&self.beta[..]),
                bias: o.bias.then_some(&self.bias[..]),
                eps: EPS,
                ..Inputs::plain(
                    &self.input[r.clone()],
                    &self.residual[r.clone()],
                    &self.gamma,
                    h,
                )
            };
            let (want_y, want_v) = norm_family(&x);
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
        Params::new(
            self.rows as u32,
            self.hidden as u32 / v.lanes,
            self.hidden as f32,
            EPS,
            0.0,
        )
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

    /// `variant` timed under `name`, and checked against the reference if `check`.
    pub fn measure(&self, b: &Bench, name: &str, variant: Variant, check: bool) -> KernelResult {
        let stats = self.time_kernel(b, variant);
        let check = check.then(|| self.check(b, variant));
        let per_element = if variant.options.sum { 16.0 } else { 12.0 };
        KernelResult {
            name: name.into(),
            variant,
            stats,
            bytes: self.elements() as f64 * per_element,
            check,
        }
    }
}
