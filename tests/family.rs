//! The normalization family on the GPU (Vulkan; lavapipe on a CPU machine) against the f64
//! reference: LayerNorm, no residual, the sandwich, a parallel block's second input, a gamma
//! offset and f16 outputs, through
//! host arrays, tensors and in place, including the rows that need care (a LayerNorm mean
//! 10⁴ times the spread, rows of ~1e30 and ~1e-30, QK-norm's short rows).
#![cfg(not(target_arch = "wasm32"))]

use webgpu_rmsnorm::call::dtype::{f16_bits, f16_value, Dtype};
use webgpu_rmsnorm::call::host::Arg;
use webgpu_rmsnorm::call::shape::{Norm, NormKind};
use webgpu_rmsnorm::reference::{
    from_sum, norm_family, same_sum, worst_error, worst_error_at, Inputs,
};
use webgpu_rmsnorm::GpuContext;

mod common;
use common::Rng;

const RTOL: f64 = 1e-5;

fn context() -> GpuContext {
    pollster::block_on(GpuContext::new(wgpu::PowerPreference::HighPerformance))
        .expect("a Vulkan adapter (lavapipe: apt-get install mesa-vulkan-drivers)")
}

/// One call's host data: what `Inputs` borrows.
struct Data {
    input: Vec<f32>,
    residual: Vec<f32>,
    gamma: Vec<f32>,
    beta: Vec<f32>,
    bias: Vec<f32>,
    post: Vec<f32>,
    input2: Vec<f32>,
    hidden: usize,
}

impl Data {
    /// `rows × hidden` values of size `scale` around `mean`.
    fn new(rng: &mut Rng, rows: usize, hidden: usize, mean: f32, scale: f32) -> Data {
        let around = |rng: &mut Rng, n| rng.vec(n, scale).iter().map(|v| v + mean).collect();
        Data {
            input: around(rng, rows * hidden),
            residual: around(rng, rows * hidden),
            gamma: rng.vec(hidden, 2.0),
            beta: rng.vec(hidden, 1.0),
            bias: rng.vec(hidden, scale),
            post: rng.vec(hidden, 2.0),
            input2: around(rng, rows * hidden),
            hidden,
        }
    }
}

/// Which options a case turns on.
#[derive(Clone, Copy, Debug)]
struct Form {
    kind: NormKind,
    residual: bool,
    post: bool,
    /// A parallel block's `input2`.
    parallel: bool,
    offset: f32,
    bias: bool,
    beta: bool,
}

impl Form {
    /// `kind` with no optional array and no offset.
    fn of(kind: NormKind) -> Form {
        Form {
            kind,
            residual: false,
            post: false,
            parallel: false,
            offset: 0.0,
            bias: false,
            beta: false,
        }
    }

    /// LayerNorm with or without a residual and the sandwich, and beta where it has a residual
    /// (without beta nothing but the centering's own allowance covers the elements near the
    /// mean: src/reference.rs).
    fn layer(residual: bool, post: bool) -> Form {
        Form {
            residual,
            post,
            beta: residual,
            ..Form::of(NormKind::Layer)
        }
    }

    fn inputs<'a>(&self, d: &'a Data) -> Inputs<'a> {
        Inputs {
            input: &d.input,
            residual: self.residual.then_some(&d.residual[..]),
            input2: self.parallel.then_some(&d.input2[..]),
            gamma: Some(&d.gamma),
            beta: self.beta.then_some(&d.beta[..]),
            bias: self.bias.then_some(&d.bias[..]),
            post_gamma: self.post.then_some(&d.post[..]),
            hidden: d.hidden,
            eps: 1e-5,
            norm: Norm {
                kind: self.kind,
                gamma_offset: self.offset,
                output_dtype: None,
            },
            rotary: None,
        }
    }

    /// Every combination of the family's options.
    fn all() -> Vec<Form> {
        let mut all = vec![];
        for kind in [NormKind::Rms, NormKind::Layer] {
            for bits in 0..16u32 {
                let form = Form {
                    kind,
                    residual: bits & 1 != 0,
                    post: bits & 2 != 0,
                    parallel: false,
                    offset: if bits & 4 != 0 { 1.0 } else { 0.0 },
                    bias: bits & 8 != 0,
                    beta: bits & 8 != 0,
                };
                all.push(form);
                // A parallel block has no post-norm (`Kernel::check`).
                if !form.post {
                    all.push(Form {
                        parallel: true,
                        ..form
                    });
                }
            }
        }
        all
    }
}

/// Runs `x` with the `sum` output and checks both against the reference: `v` against its
/// `v`, and `y` against `N(v)` of the `v` the kernel formed (see `from_sum`).
fn check(ctx: &GpuContext, x: &Inputs, what: &str) {
    let out = pollster::block_on(ctx.run(x, true)).unwrap_or_else(|e| panic!("{what}: {e}"));
    let (_, want_v) = norm_family(x);
    let sum = out.sum.expect("sum was asked for");
    assert!(
        same_sum(x, &sum, &want_v),
        "{what}: sum differs from the reference's v"
    );
    assert_y_of_sum(x, &out.y.expect("y"), Some(&sum), what);
}

/// `y` against the reference of the `v` the kernel formed (`from_sum`), where it wrote one;
/// else against the reference of `x`.
fn assert_y_of_sum(x: &Inputs, y: &[f32], v: Option<&[f32]>, what: &str) {
    let second = v.map_or(x.clone(), |v| from_sum(x, v));
    let (want_y, _) = norm_family(&second);
    let (err, at) = worst_error_at(y, &want_y, &second, RTOL);
    assert!(
        err <= 1.0,
        "{what}: y is {err:.2} tolerances off the f64 reference; at {at} got {}, want {}",
        y[at],
        want_y[at]
    );
}

#[test]
fn every_option_of_the_family_matches_the_reference_across_row_lengths() {
    let ctx = context();
    let mut rng = Rng(0xFA_0001);
    // Scalar and vec4 rows; rows longer than the registers hold (20000: formed again from
    // memory); GPT-2's and BERT's 768.
    for (rows, hidden) in [(3, 7), (5, 64), (2, 768), (3, 1001), (2, 4096), (1, 20000)] {
        let d = Data::new(&mut rng, rows, hidden, 0.0, 1.0);
        for form in Form::all() {
            check(&ctx, &form.inputs(&d), &format!("{rows}x{hidden} {form:?}"));
        }
    }
}

#[test]
fn the_checks_can_fail_a_wrong_offset_or_kind() {
    let ctx = context();
    let d = Data::new(&mut Rng(0xFA_0002), 4, 256, 0.5, 1.0);
    let form = Form {
        residual: true,
        post: true,
        offset: 1.0,
        bias: true,
        beta: true,
        ..Form::of(NormKind::Layer)
    };
    let x = form.inputs(&d);
    let out = pollster::block_on(ctx.run(&x, false)).expect("run");
    let wrong_offset = Inputs {
        norm: Norm {
            gamma_offset: 0.0,
            ..x.norm
        },
        ..x.clone()
    };
    let wrong_kind = Inputs {
        norm: Norm {
            kind: NormKind::Rms,
            ..x.norm
        },
        ..x.clone()
    };
    for wrong in [wrong_offset, wrong_kind] {
        let (want, _) = norm_family(&wrong);
        assert!(worst_error(out.y.as_ref().unwrap(), &want, &wrong, RTOL) > 1.0);
    }
}

#[test]
fn layer_norm_is_exact_where_the_mean_is_ten_thousand_times_the_spread() {
    let ctx = context();
    let mut rng = Rng(0xFA_0003);
    for hidden in [1024, 4096] {
        let d = Data::new(&mut rng, 3, hidden, 1e4, 1.0);
        let every = [(false, false), (false, true), (true, false), (true, true)];
        let forms = every.map(|(residual, post)| Form::layer(residual, post));
        check_forms(&ctx, &d, forms, &format!("mean 1e4 x{hidden}"));
    }
}

/// `d` through each of `forms`, against the reference.
fn check_forms(ctx: &GpuContext, d: &Data, forms: impl IntoIterator<Item = Form>, what: &str) {
    for form in forms {
        check(ctx, &form.inputs(d), &format!("{what} {form:?}"));
    }
}

/// Means 10⁵, 10⁶ and 10⁷ times the spread, in workgroups of one row and of several. The f32
/// shift the rows are centered on is off the mean by about a thousandth (10⁵) and a few
/// percent (10⁶) of the spread, which the plain path's one reduction of x - s must still
/// center exactly, and at 10⁷ by more than that path takes (`CENTER` in norm_family.wgsl):
/// the rows take the exact path's two more reductions.
#[test]
fn layer_norm_is_exact_where_the_shift_is_off_the_mean() {
    let ctx = context();
    let mut rng = Rng(0xFA_0008);
    for mean in [1e5, 1e6, 1e7] {
        for (rows, hidden) in [(3, 4096), (5, 1024), (300, 128)] {
            let d = Data::new(&mut rng, rows, hidden, mean, 1.0);
            let forms = [(true, false), (true, true), (false, false)];
            let forms = forms.map(|(residual, post)| Form::layer(residual, post));
            check_forms(&ctx, &d, forms, &format!("mean {mean:e} {rows}x{hidden}"));
        }
    }
}

/// Rows of one value just below 2²⁴, some with an element one ulp off: the f32 partial sums
/// of the shift round (3 · (2²⁴ - 1) is not an f32; 4000 and 120 columns leave threads
/// uneven shares) by far more than the row's spread, which
/// is none or a fraction of an ulp, so that the plain path's d and var = mean((x - s)²) - d²
/// would be the rounding's; the exact path must take them (a constant row is beta alone), in
/// workgroups of one row and of several.
#[test]
fn layer_norm_is_exact_where_the_rows_spread_is_below_the_shifts_rounding() {
    let ctx = context();
    let mut rng = Rng(0xFA_0009);
    for (rows, hidden) in [(3, 4000), (300, 120)] {
        let mut d = Data::new(&mut rng, rows, hidden, 0.0, 1.0);
        for (at, x) in d.input.iter_mut().enumerate() {
            let (row, i) = (at / hidden, at % hidden);
            *x = 16777215.0
                + if row % 2 == 1 && i == row % hidden {
                    1.0
                } else {
                    0.0
                };
        }
        let forms = [false, true].map(|beta| Form {
            beta,
            ..Form::of(NormKind::Layer)
        });
        check_forms(&ctx, &d, forms, &format!("2^24 - 1 {rows}x{hidden}"));
    }
}

#[test]
fn huge_and_tiny_rows_normalize_in_both_reductions_of_the_sandwich() {
    let ctx = context();
    let mut rng = Rng(0xFA_0004);
    for scale in [1e30f32, 1e-30, 3e-38] {
        let d = Data::new(&mut rng, 3, 512, 0.0, scale);
        for kind in [NormKind::Rms, NormKind::Layer] {
            for post in [false, true] {
                let form = Form {
                    residual: true,
                    post,
                    offset: 1.0,
                    bias: true,
                    ..Form::of(kind)
                };
                check(&ctx, &form.inputs(&d), &format!("scale {scale:e} {form:?}"));
            }
        }
    }
}

#[test]
fn qk_norm_shapes_without_a_residual() {
    let ctx = context();
    let mut rng = Rng(0xFA_0005);
    // Enough rows that several share a workgroup (the last one part-filled), every option.
    for (rows, hidden) in [(301, 64), (259, 128), (300, 30)] {
        let d = Data::new(&mut rng, rows, hidden, 0.0, 3.0);
        for form in Form::all() {
            check(&ctx, &form.inputs(&d), &format!("{rows}x{hidden} {form:?}"));
        }
    }
    for (rows, hidden) in [(4096, 64), (2048, 128)] {
        let d = Data::new(&mut rng, rows, hidden, 0.0, 3.0);
        let forms = [NormKind::Rms, NormKind::Layer].map(Form::of);
        check_forms(&ctx, &d, forms, &format!("qk {rows}x{hidden}"));
    }
}

#[test]
fn f16_outputs_from_f32_data_are_one_f16_rounding_of_the_reference() {
    let ctx = context();
    let mut rng = Rng(0xFA_0006);
    let d = Data::new(&mut rng, 5, 1024, 0.0, 1.0);
    for form in Form::all() {
        let x = Inputs {
            norm: Norm {
                output_dtype: Some(Dtype::F16),
                ..form.inputs(&d).norm
            },
            ..form.inputs(&d)
        };
        let out = pollster::block_on(ctx.run(&x, true)).unwrap_or_else(|e| panic!("{form:?}: {e}"));
        let (want_y, want_v) = norm_family(&x);
        // The f16 result must be the reference's value rounded once to f16: within half an
        // f16 ulp of it, plus the f32 tolerance before the rounding.
        for (at, (&got, &want)) in out.y.unwrap().iter().zip(&want_y).enumerate() {
            let rounded = f16_value(f16_bits(want as f32)) as f64;
            let half_ulp = (want.abs().max(6.1e-5) * 2f64.powi(-11)) * 1.01;
            assert!(
                (got as f64 - rounded).abs() <= 2.0 * half_ulp + 1e-5 * want.abs(),
                "{form:?} at {at}: got {got}, want {want} (f16 {rounded})"
            );
        }
        let sum = out.sum.expect("sum");
        assert!(
            same_sum(&x, &sum, &want_v),
            "{form:?}: sum is the data's dtype, f32"
        );
    }
}

#[test]
fn tensors_and_in_place_take_the_family_too() {
    let ctx = context();
    let d = Data::new(&mut Rng(0xFA_0007), 6, 768, 0.0, 1.0);
    for form in Form::all() {
        check_in_place(&ctx, &form.inputs(&d), &format!("{form:?}"));
    }
}

/// Rows that take the exact path beside rows that do not, through arrays and in place: rows
/// of ~1e30 and ~1e-30, LayerNorm rows whose mean is 10⁷ times their spread, and plain rows,
/// in turn. Where rows share a workgroup of the family kernel (QK-norm's heads, folded flat;
/// rows of 256, the fan-in) each decides alone and sums its exact path lane by lane from
/// memory (`row_totals` in norm_family.wgsl), and in place the kernel waits for such rows
/// before it stores; 3 rows of 4096, a decode call, load their weights and the sandwich's
/// residual with the row. In place the RMSNorm kernel (67 rows of 64, 5 of 4096) scales a
/// huge row's v from the residual before v goes over it.
#[test]
fn rows_take_the_exact_path_each_alone_through_arrays_and_in_place() {
    let ctx = context();
    let mut rng = Rng(0xFA_000A);
    for (rows, hidden) in [
        (67, 64),
        (259, 64),
        (257, 128),
        (257, 256),
        (3, 4096),
        (5, 4096),
    ] {
        let mut d = Data::new(&mut rng, rows, hidden, 0.0, 1.0);
        for (at, (x, r)) in d.input.iter_mut().zip(&mut d.residual).enumerate() {
            let (scale, mean) = match (at / hidden) % 4 {
                0 => (1e30, 0.0),
                1 => (1e-30, 0.0),
                2 => (1.0, 1e7),
                _ => (1.0, 0.0),
            };
            *x = *x * scale + mean;
            *r = *r * scale + mean;
        }
        for form in Form::all() {
            let what = format!("mixed rows {rows}x{hidden} {form:?}");
            check(&ctx, &form.inputs(&d), &what);
            check_in_place(&ctx, &form.inputs(&d), &what);
        }
    }
}

/// Runs `x` in place on tensors and checks `y` (over input) against the reference, and `v`
/// (over the residual, where there is one) against its `v`.
fn check_in_place(ctx: &GpuContext, x: &Inputs, what: &str) {
    let (_, want_v) = norm_family(x);
    let up = |a: &[f32]| Arg::Gpu(ctx.upload(&a).expect("upload"));
    let on_gpu = x.map(|a| up(a));
    let read = |a: &Arg<&[f32]>| match a {
        Arg::Gpu(t) => pollster::block_on(ctx.read_tensor(t).expect("read").read())
            .expect("read")
            .y
            .expect("a tensor's values"),
        _ => unreachable!("uploaded"),
    };
    pollster::block_on(ctx.submit_in_place(&on_gpu).expect("in place").finish())
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let y = read(&on_gpu.input);
    // With a residual, v came back over it: y is checked against N(v) of that v, as `check`
    // does; without one, v = w has no cancellation to amplify w's rounding.
    let v = on_gpu.residual.as_ref().map(read);
    if let Some(v) = &v {
        assert!(same_sum(x, v, &want_v), "{what}: v in place");
    }
    assert_y_of_sum(x, &y, v.as_deref(), &format!("{what}, in place"));
}

/// A post-norm's sum alone (no `gamma`: OLMo 2's `h = x + N(attn(x)) · w`): the sandwich's
/// `v` bit for bit, with no `y`, through host arrays, new tensors and in place over the
/// residual (the input left as it was); refused without a sum to write.
#[test]
fn a_post_norms_sum_alone_is_the_sandwichs_sum() {
    let sandwiches: Vec<Form> = Form::all().into_iter().filter(|f| f.post).collect();
    let (ctx, mut rng) = (context(), Rng(0x5EED_50A1));
    for (rows, hidden) in [(3, 64), (2, 4096), (40, 128)] {
        let d = Data::new(&mut rng, rows, hidden, 0.0, 1.0);
        for &form in &sandwiches {
            let what = format!("{rows}x{hidden} {form:?}");
            let full = form.inputs(&d);
            let alone = Inputs {
                gamma: None,
                beta: None,
                ..full.clone()
            };
            let want = pollster::block_on(ctx.run(&full, true)).expect("the sandwich");
            let want_v = want.sum.expect("sum");
            let got =
                pollster::block_on(ctx.run(&alone, true)).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert!(got.y.is_none(), "{what}: a y without gamma");
            let v = got.sum.expect("sum");
            assert!(
                v.iter()
                    .zip(&want_v)
                    .all(|(a, b)| a.to_bits() == b.to_bits()),
                "{what}: v"
            );
            assert!(
                same_sum(&alone, &v, &norm_family(&alone).1),
                "{what}: v against the reference"
            );
            let gpu = ctx.submit_to_gpu(&alone, true).expect("to tensors");
            let out = pollster::block_on(gpu.finish())
                .expect("tensors")
                .gpu
                .expect("tensors");
            assert!(out.y.is_none(), "{what}: a y tensor without gamma");
            let read = |t: &std::rc::Rc<webgpu_rmsnorm::call::tensor::Tensor>| {
                pollster::block_on(ctx.read_tensor(t).unwrap().read())
                    .unwrap()
                    .y
                    .unwrap()
            };
            assert_eq!(read(out.sum.as_ref().unwrap()), v, "{what}: the sum tensor");
            if form.residual {
                let up = |a: &[f32]| Arg::Gpu(ctx.upload(&a).expect("upload"));
                let on_gpu = alone.map(|a| up(a));
                let pending = ctx
                    .submit_in_place(&on_gpu)
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
                pollster::block_on(pending.finish()).expect("in place");
                let tensor = |a: &Arg<&[f32]>| match a {
                    Arg::Gpu(t) => read(t),
                    _ => unreachable!("uploaded"),
                };
                assert_eq!(
                    tensor(on_gpu.residual.as_ref().unwrap()),
                    v,
                    "{what}: v over the residual"
                );
                assert_eq!(tensor(&on_gpu.input), d.input, "{what}: the input in place");
            }
            let err = pollster::block_on(ctx.run(&alone, false))
                .err()
                .expect("run without a sum");
            assert!(err.message().starts_with("gamma: missing"), "{what}: {err}");
        }
    }
}
