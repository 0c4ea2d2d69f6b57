//! Native tests on Vulkan (lavapipe on a CPU machine): the WGSL through naga, and the
//! kernel against the f64 reference over the shape matrix, extreme values and random cases.
#![cfg(not(target_arch = "wasm32"))]

use std::rc::Rc;
use webgpu_rmsnorm::call::device::Caps;
use webgpu_rmsnorm::call::dtype::Dtype;
use webgpu_rmsnorm::call::dtype::{f16_bits, f16_value};
use webgpu_rmsnorm::call::host::Arg;
use webgpu_rmsnorm::call::options::Options;
use webgpu_rmsnorm::call::plan::Kernel;
use webgpu_rmsnorm::call::tensor::Tensor;
use webgpu_rmsnorm::gpu::kernel::params::Params;
use webgpu_rmsnorm::gpu::kernel::tiling::fused::FusedTiling;
use webgpu_rmsnorm::gpu::kernel::tiling::{max_slots, FEW_ROWS, MANY_ROWS};
use webgpu_rmsnorm::gpu::kernel::{Storage, Tiling, Variant};
use webgpu_rmsnorm::gpu::tensor_buffer::TensorBuffer;
use webgpu_rmsnorm::reference::{
    chain, norm_family, same_sum, worst_error, worst_error_at, worst_relative, Inputs,
};
use webgpu_rmsnorm::{Error, GpuContext};

/// Relative tolerance against the f64 reference (f32 math; see `worst_error`).
const RTOL: f64 = 1e-5;

mod common;
use common::{assert_within, matrix, Case, Rng};

fn context() -> GpuContext {
    pollster::block_on(GpuContext::new(wgpu::PowerPreference::HighPerformance))
        .expect("a Vulkan adapter (lavapipe: apt-get install mesa-vulkan-drivers)")
}

/// The native side of a case: a run on the GPU checked against the reference.
trait Check {
    fn check(&self, ctx: &GpuContext, what: &str);
}

impl Check for Case {
    /// Runs on the GPU with the `sum` output and checks `y` and `v` against the reference.
    fn check(&self, ctx: &GpuContext, what: &str) {
        let x = self.inputs();
        let out = pollster::block_on(ctx.run(&x, true)).unwrap_or_else(|e| panic!("{what}: {e}"));
        let (want_y, want_v) = norm_family(&x);
        let err = worst_error(out.y.as_ref().unwrap(), &want_y, &x, RTOL);
        let gpu_v = out.sum.clone().unwrap_or_default();
        if err > 1.0 {
            // Name the element, so a failure on a new GPU says what went wrong.
            let (_, v) = norm_family(&x);
            let (_, at) = worst_error_at(out.y.as_ref().unwrap(), &want_y, &x, RTOL);
            panic!(
                "{}",
                format!("{what}: y is {err:.2} tolerances off the f64 reference; worst at {at}: got {}, want {}, \
                 v {:e} (GPU {:e}), input {:e}, residual {:e}, row v {:?}",
                out.y.as_ref().unwrap()[at],
                want_y[at],
                v[at],
                gpu_v.get(at).copied().unwrap_or(f32::NAN),
                x.input[at],
                x.residual.map_or(0.0, |r| r[at]),
                &v[at / x.hidden * x.hidden..(at / x.hidden + 1) * x.hidden].iter().take(8).collect::<Vec<_>>()
            ) + &short_row_dump(&x, out.y.as_ref().unwrap(), at));
        }
        let sum = out.sum.expect("sum was asked for");
        assert!(
            same_sum(&x, &sum, &want_v),
            "{what}: sum differs from input + residual (+ bias)"
        );
    }
}

/// `x` with its input and residual made tensors by `upload`, as an in-place call needs them;
/// gamma, beta and bias stay host arrays.
fn resident<'a, T>(
    x: &webgpu_rmsnorm::Inputs<&'a [T]>,
    upload: impl Fn(&'a [T]) -> Rc<Tensor>,
) -> webgpu_rmsnorm::Inputs<Arg<&'a [T]>> {
    webgpu_rmsnorm::Inputs {
        input: Arg::Gpu(upload(x.input)),
        residual: x.residual.map(|r| Arg::Gpu(upload(r))),
        input2: x.input2.map(|r| Arg::Gpu(upload(r))),
        gamma: x.gamma.map(Arg::Host),
        beta: x.beta.map(Arg::Host),
        bias: x.bias.map(Arg::Host),
        post_gamma: x.post_gamma.map(Arg::Host),
        hidden: x.hidden,
        eps: x.eps,
        norm: x.norm,
        rotary: x.rotary.clone(),
    }
}

/// A call with neither beta nor bias and the default eps.
fn bare<A>(input: A, residual: A, gamma: A, hidden: usize) -> webgpu_rmsnorm::Inputs<A> {
    webgpu_rmsnorm::Inputs::plain(input, residual, gamma, hidden)
}

/// The tensor of an argument that is one.
fn tensor<H>(a: &Arg<H>) -> &Rc<Tensor> {
    let Arg::Gpu(t) = a else {
        panic!("a host array where a tensor was meant")
    };
    t
}

/// What a tensor argument holds now, read back from the GPU.
fn read<H>(ctx: &GpuContext, a: &Arg<H>) -> Vec<f32> {
    pollster::block_on(ctx.read_tensor(tensor(a)).unwrap().read())
        .unwrap()
        .y
        .expect("y")
}

/// A short row in full, every input and output, for a failure on a GPU not at hand.
fn short_row_dump(x: &Inputs, y: &[f32], at: usize) -> String {
    let h = x.hidden;
    if h > 16 {
        return String::new();
    }
    let r = at / h * h..at / h * h + h;
    format!(
        "\n  input {:?}\n  residual {:?}\n  bias {:?}\n  gamma {:?}\n  beta {:?}\n  y {:?}",
        &x.input[r.clone()],
        x.residual.map(|res| &res[r.clone()]),
        x.bias,
        x.gamma,
        x.beta,
        &y[r]
    )
}

#[test]
fn every_variant_validates_with_naga_and_params_match_the_wgsl() {
    let mut checked = 0;
    for hidden in [1u32, 3, 4, 768, 896, 4096, 16384, 1 << 20] {
        for bits in 0..8u8 {
            let options = Options::with_flags(bits);
            for (storage, in_place) in [
                (Storage::F32, false),
                (Storage::F32, true),
                (Storage::F16, false),
                (Storage::F16Packed, true),
            ] {
                if storage != Storage::F32 && hidden % 4 != 0 {
                    continue;
                }
                let kernel = Kernel {
                    hidden: hidden as usize,
                    options,
                    dtype: if storage == Storage::F32 {
                        Dtype::F32
                    } else {
                        Dtype::F16
                    },
                    out_dtype: if storage == Storage::F32 {
                        Dtype::F32
                    } else {
                        Dtype::F16
                    },
                    in_place,
                };
                let caps = Caps {
                    max_binding: 1 << 30,
                    max_groups_per_dim: 65535,
                    max_workgroup: 1024,
                    shader_f16: storage == Storage::F16,
                    timestamps: false,
                    cpu_tiling: false,
                };
                let v = kernel.variant(&caps, 1);
                assert_eq!((v.storage, v.in_place), (storage, in_place));
                let module = naga::front::wgsl::parse_str(&v.wgsl())
                    .unwrap_or_else(|e| panic!("{}: {}", v.label(), e.emit_to_string(&v.wgsl())));
                let caps = match storage {
                    Storage::F32 => naga::valid::Capabilities::empty(),
                    Storage::F16 => naga::valid::Capabilities::SHADER_FLOAT16,
                    // WebGPU core has (un)pack2x16float; naga calls it a capability.
                    Storage::F16Packed => naga::valid::Capabilities::SHADER_FLOAT16_IN_FLOAT32,
                };
                naga::valid::Validator::new(naga::valid::ValidationFlags::all(), caps)
                    .validate(&module)
                    .unwrap_or_else(|e| panic!("{}: {e:?}", v.label()));
                let params = module
                    .types
                    .iter()
                    .find(|(_, t)| t.name.as_deref() == Some("Params"))
                    .expect("struct Params in the WGSL")
                    .1;
                let naga::TypeInner::Struct { members, span } = &params.inner else {
                    panic!("Params is a struct")
                };
                assert_eq!(
                    *span as usize,
                    Params::SIZE,
                    "Params size drifted from the WGSL"
                );
                let names: Vec<_> = members
                    .iter()
                    .take(Params::FIELDS.len())
                    .map(|m| (m.name.as_deref().unwrap_or(""), m.offset))
                    .collect();
                let want: Vec<_> = Params::FIELDS.iter().map(|&(n, o, _)| (n, o)).collect();
                assert_eq!(names, want, "Params fields drifted");
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 64 * 2 + 48 * 2);
}

#[test]
fn shape_matrix_matches_the_reference() {
    let ctx = context();
    let mut rng = Rng(0x5EED_0001);
    let cells = matrix();
    for c in &cells {
        let case = Case::random(&mut rng, c.rows, c.hidden, c.bias, c.beta, c.eps, 1.0);
        case.check(&ctx, &c.to_string());
    }
    assert_eq!(cells.len(), 480);
}

#[test]
fn more_than_65535_rows_fold_into_a_2d_grid() {
    let ctx = context();
    let mut rng = Rng(0x5EED_0002);
    for hidden in [3usize, 4, 16] {
        let case = Case::random(&mut rng, 70_000, hidden, true, true, 1e-6, 1.0);
        case.check(&ctx, &format!("70000x{hidden}"));
    }
}

#[test]
fn huge_and_tiny_rows_normalize_like_rows_of_one() {
    let ctx = context();
    let mut rng = Rng(0x5EED_0003);
    for hidden in [4usize, 7, 4096, 4099] {
        for scale in [1.0f32, 1e30, 1e-30, 3e18, 1e-18, 1e36, 1e-36] {
            for eps in [0.0f32, 1e-6] {
                // Without beta too: a beta of ~1 would dominate each element's tolerance
                // (|v·inv·gamma| + |beta|) and could hide a wrong normalized term.
                for beta in [true, false] {
                    let case = Case::random(&mut rng, 5, hidden, true, beta, eps, scale);
                    case.check(
                        &ctx,
                        &format!("5x{hidden} at scale {scale:e}, eps {eps}, beta {beta}"),
                    );
                }
            }
        }
    }
}

#[test]
fn nan_and_inf_poison_only_their_own_row() {
    let ctx = context();
    let mut rng = Rng(0x5EED_0004);
    for hidden in [4usize, 5, 4096] {
        let case = Case::poisoned(&mut rng, hidden);
        case.check(&ctx, &format!("4x{hidden} with NaN/Inf"));
        let out = pollster::block_on(ctx.run(&case.inputs(), false)).unwrap();
        assert!(
            out.y.as_ref().unwrap()[3 * hidden..]
                .iter()
                .all(|y| y.is_finite()),
            "clean row stayed clean"
        );
        assert!(
            out.y.as_ref().unwrap()[..hidden].iter().all(|y| y.is_nan()),
            "NaN row is NaN"
        );
    }
}

#[test]
fn random_shapes_and_options_match_the_reference() {
    let ctx = context();
    for (case, what) in Case::sweep(0x5EED_0005, 1000) {
        case.check(&ctx, &what);
    }
}

#[test]
fn bad_shapes_are_named_errors_and_the_context_keeps_working() {
    let ctx = context();
    let a = [1.0f32; 12];
    let mut x = bare(&a[..], &a[..], &a[..4], 5);
    let e = pollster::block_on(ctx.run(&x, false))
        .err()
        .expect("12 is not a multiple of 5");
    assert!(matches!(e, Error::Shape(_)), "{e}");
    x.hidden = 4;
    x.eps = f32::NAN;
    assert_eq!(
        pollster::block_on(ctx.run(&x, false))
            .err()
            .map(|e| e.name()),
        Some("ShapeError")
    );
    x.eps = 1e-6;
    let out = pollster::block_on(ctx.run(&x, false)).expect("the context survived");
    let (want, y) = (norm_family(&x).0, out.y.unwrap());
    assert_within(&y, &want, &x, RTOL, "after the rejections");
}

#[test]
fn splits_rows_across_bindings_when_one_cannot_hold_them() {
    let mut ctx = context();
    // 64 KiB bindings: 4 rows of 4096, so 83 rows take 21 dispatches; 4099 (scalar path)
    // takes 3 rows per dispatch.
    ctx.set_binding_limit(64 << 10);
    let mut rng = Rng(0x5EED_0006);
    for hidden in [4096usize, 4099, 7] {
        let case = Case::random(&mut rng, 83, hidden, true, true, 1e-6, 1.0);
        case.check(&ctx, &format!("83x{hidden} split across 64 KiB bindings"));
    }
    let a = vec![1.0f32; 16385];
    let x = bare(&a[..], &a[..], &a[..], 16385);
    let e = pollster::block_on(ctx.run(&x, false))
        .err()
        .expect("a row larger than a binding");
    assert_eq!(e.name(), "ShapeError");
    assert!(
        e.message().starts_with("hidden:") && e.message().contains("maxStorageBufferBindingSize"),
        "{e}"
    );
}

#[test]
fn buffers_are_reused_not_leaked() {
    let ctx = context();
    let cases = Case::seeded(0x5EED_0007, 4, |rng, i| {
        Case::random(rng, 1 + i, 64 << i, i % 2 == 0, true, 1e-6, 1.0)
    });
    let mut live_after_warmup = 0;
    for round in 0..50 {
        for (i, case) in cases.iter().enumerate() {
            let want_sum = i % 2 == 1;
            let out = pollster::block_on(ctx.run(&case.inputs(), want_sum)).unwrap();
            assert_eq!(out.y.as_ref().unwrap().len(), case.input.len());
        }
        if round == 1 {
            live_after_warmup = ctx.buffer_stats().live;
        }
    }
    let stats = ctx.buffer_stats();
    assert_eq!(
        stats.live, live_after_warmup,
        "live GPU buffers grew: {stats:?}"
    );
    assert_eq!(
        stats.idle, stats.live,
        "every buffer is back in the pool between calls"
    );
}

#[test]
fn gpu_resident_chain_matches_layer_by_layer_reference() {
    let ctx = context();
    let mut rng = Rng(0x5EED_0008);
    let (rows, hidden, layers) = (3usize, 256usize, 4);
    let input0 = rng.vec(rows * hidden, 1.0);
    let residual0 = rng.vec(rows * hidden, 1.0);
    let gammas: Vec<Vec<f32>> = (0..layers).map(|_| rng.vec(hidden, 2.0)).collect();

    let (input, _) = chain(&input0, &residual0, &gammas, hidden, 1e-6);

    let up = |a: &Vec<f32>| Arg::<&[f32]>::Gpu(ctx.upload(&a.as_slice()).unwrap());
    let (mut x_in, mut x_res) = (up(&input0), up(&residual0));
    let gamma_tensors: Vec<_> = gammas.iter().map(up).collect();
    for g in &gamma_tensors {
        let x = bare(x_in.clone(), x_res.clone(), g.clone(), hidden);
        let out = pollster::block_on(ctx.submit_to_gpu(&x, true).unwrap().read_gpu()).unwrap();
        let out = out.expect("new tensors");
        x_in = Arg::Gpu(out.y.unwrap());
        x_res = Arg::Gpu(out.sum.expect("sum"));
    }
    let got = read(&ctx, &x_in);
    let worst = worst_relative(&got, &input);
    assert!(
        worst < 1e-4,
        "after {layers} layers, worst relative error {worst}"
    );
}

#[test]
fn gpu_results_take_freed_tensors_buffers_never_a_live_ones_and_stay_right() {
    use webgpu_rmsnorm::Request;
    let ctx = context();
    let cases = Case::seeded(0x5EED_0019, 6, |rng, i| {
        Case::random(rng, 3, 256, i % 2 == 0, i % 3 == 0, 1e-6, 1.0)
    });
    let to_gpu = |c: &Case| {
        let out = pollster::block_on(
            ctx.submit(&c.inputs(), Request::to_gpu(true))
                .unwrap()
                .read_gpu(),
        );
        let out = out.unwrap().expect("new tensors");
        (
            Arg::<&[f32]>::Gpu(out.y.unwrap()),
            Arg::<&[f32]>::Gpu(out.sum.expect("sum")),
        )
    };
    let check = |c: &Case, (y, sum): &(Arg<&[f32]>, Arg<&[f32]>), what: &str| {
        let x = c.inputs();
        let (want_y, want_v) = norm_family(&x);
        let err = worst_error(&read(&ctx, y), &want_y, &x, RTOL);
        assert!(
            err <= 1.0,
            "{what}: y is {err:.2} tolerances off the f64 reference"
        );
        assert!(
            same_sum(&x, &read(&ctx, sum), &want_v),
            "{what}: sum differs"
        );
    };
    let buffers = |(y, sum): &(Arg<&[f32]>, Arg<&[f32]>)| {
        [y, sum].map(|t| tensor(t).buffer().expect("placed").clone())
    };
    let a = to_gpu(&cases[0]);
    let b = to_gpu(&cases[1]);
    let freed = buffers(&b);
    drop(b);
    let c = to_gpu(&cases[2]);
    let (of_a, of_c) = (buffers(&a), buffers(&c));
    assert!(
        of_c.iter().all(|buf| freed.contains(buf)),
        "the freed tensors' buffers were not reused"
    );
    assert!(
        of_c.iter().all(|buf| !of_a.contains(buf)),
        "a result took a live tensor's buffer"
    );
    check(&cases[0], &a, "a, alive while b was freed and c made");
    check(&cases[2], &c, "c, on b's buffers");
    // Calls in flight together, half their results freed before the next round.
    let mut live = vec![(0, a), (2, c)];
    for round in 0..4 {
        let pending: Vec<_> = (3..6)
            .map(|i| {
                (
                    i,
                    ctx.submit(&cases[i].inputs(), Request::to_gpu(true))
                        .unwrap(),
                )
            })
            .collect();
        for (i, p) in pending {
            let out = pollster::block_on(p.read_gpu())
                .unwrap()
                .expect("new tensors");
            let made = (Arg::Gpu(out.y.unwrap()), Arg::Gpu(out.sum.expect("sum")));
            check(&cases[i], &made, &format!("round {round}, case {i}"));
            live.push((i, made));
        }
        let all: Vec<wgpu::Buffer> = live.iter().flat_map(|(_, t)| buffers(t)).collect();
        let distinct = all.iter().enumerate().all(|(k, b)| !all[..k].contains(b));
        assert!(distinct, "round {round}: two live tensors share a buffer");
        for (i, t) in &live {
            check(&cases[*i], t, &format!("round {round}, live case {i}"));
        }
        let keep: Vec<bool> = (0..live.len()).map(|k| k < 2 || k % 2 == 0).collect();
        let mut k = 0;
        live.retain(|_| (keep[k], k += 1).0);
    }
    drop(live);
    let stats = ctx.buffer_stats();
    assert_eq!(
        stats.live, stats.idle,
        "every freed tensor's buffer is idle in the pool: {stats:?}"
    );
}

#[test]
fn tensors_of_another_context_are_refused() {
    let (a, b) = (context(), context());
    let data = vec![1.0f32; 8];
    let foreign = Arg::<&[f32]>::Gpu(b.upload(&data.as_slice()).unwrap());
    let own = Arg::Host(data.as_slice());
    let x = bare(foreign, own.clone(), Arg::Host(&data[..4]), 4);
    let e = pollster::block_on(a.run(&x, false))
        .err()
        .expect("a foreign tensor");
    assert_eq!(e.name(), "TypeError");
    assert!(e.message().starts_with("input:"), "{e}");
}

#[test]
fn f16_conversions_round_trip() {
    for x in [
        0.0f32,
        1.0,
        -2.5,
        65504.0,
        6.1035156e-5,
        5.9604645e-8,
        0.333,
    ] {
        let h = f16_bits(x);
        assert!(
            (f16_value(h) - x).abs() <= x.abs() * 4.9e-4 + 6e-8,
            "{x} -> {h:#x} -> {}",
            f16_value(h)
        );
    }
    assert_eq!(f16_bits(1.0), 0x3c00);
    assert_eq!(f16_bits(-2.0), 0xc000);
    assert_eq!(f16_bits(1e6), 0x7c00);
}

/// f16 storage on both paths (WGSL shader-f16 where the device has it, and packed u32
/// everywhere) against the f64 reference of the same halves.
#[test]
fn f16_storage_matches_the_reference_on_both_paths() {
    let mut native = context();
    let mut paths = vec![native.uses_shader_f16()];
    native.set_shader_f16(false);
    paths.push(native.uses_shader_f16());
    assert!(!paths[1], "the packed path can always be forced");
    // Where the device offers shader-f16, the default context takes it: both paths run here.
    let offered = native
        .device()
        .features()
        .contains(wgpu::Features::SHADER_F16);
    assert_eq!(paths[0], offered, "shader-f16 used exactly where offered");
    // The suite's adapter, lavapipe, offers it: there both paths must run, not the packed
    // one twice.
    if native.adapter().device.contains("llvmpipe") {
        assert!(offered, "lavapipe offers shader-f16");
    }
    let mut packed = context();
    packed.set_shader_f16(false);
    let mut rng = Rng(0x5EED_0009);
    for ctx in [&context(), &packed] {
        for (rows, hidden, bias, beta) in [
            (3usize, 4usize, false, false),
            (5, 768, true, true),
            (2, 4096, true, false),
            (7, 132, false, true),
        ] {
            let halves = Case::random(&mut rng, rows, hidden, bias, beta, 1e-6, 1.0).halves();
            let out = pollster::block_on(ctx.run(&halves.inputs(), true)).unwrap();
            // The reference sees exactly the halves the GPU saw, widened to f32.
            let widened = halves.widened();
            let r = widened.inputs();
            let (want_y, want_v) = norm_family(&r);
            let path = if ctx.uses_shader_f16() {
                "shader-f16"
            } else {
                "packed"
            };
            eprintln!("f16 {rows}x{hidden} on the {path} path");
            // One f16 rounding of the result: 2^-11 relative, and 1e-3 leaves room for f32.
            assert_within(
                out.y.as_ref().unwrap(),
                &want_y,
                &r,
                1e-3,
                &format!("{path} {rows}x{hidden}"),
            );
            let sum = out.sum.unwrap();
            for (got, want) in sum.iter().zip(&want_v) {
                assert!(
                    (got - want).abs() <= want.abs() * 4.9e-4 + 6e-8,
                    "{path}: sum {got} vs {want}"
                );
            }
        }
    }
}

#[test]
fn in_place_overwrites_input_with_y_and_residual_with_v() {
    let ctx = context();
    let mut rng = Rng(0x5EED_000A);
    for (rows, hidden) in [(3usize, 4096usize), (4, 4099), (2, 20000), (5, 7)] {
        let case = Case::random(&mut rng, rows, hidden, true, true, 1e-6, 1.0);
        let x = resident(&case.inputs(), |a| ctx.upload(&a).unwrap());
        let none = pollster::block_on(ctx.submit_in_place(&x).unwrap().read_gpu()).unwrap();
        assert!(none.is_none(), "in place makes no new tensors");
        let (y, v) = (
            read(&ctx, &x.input),
            read(&ctx, x.residual.as_ref().expect("a residual")),
        );
        let r = case.inputs();
        let (want_y, want_v) = norm_family(&r);
        assert_within(&y, &want_y, &r, RTOL, &format!("{rows}x{hidden}, in input"));
        assert_eq!(v, want_v, "{rows}x{hidden}: residual holds v");
    }
    // Host data cannot be written in place, and input and residual must differ.
    let a = vec![1.0f32; 8];
    let t = Arg::<&[f32]>::Gpu(ctx.upload(&a.as_slice()).unwrap());
    let host = bare(Arg::Host(a.as_slice()), t.clone(), Arg::Host(&a[..4]), 4);
    assert_eq!(
        ctx.submit_in_place(&host).err().map(|e| e.name()),
        Some("TypeError")
    );
    let same = webgpu_rmsnorm::Inputs {
        input: t.clone(),
        residual: Some(t),
        ..host
    };
    assert_eq!(
        ctx.submit_in_place(&same).err().map(|e| e.name()),
        Some("TypeError")
    );
}

#[test]
fn small_workgroups_as_on_cpu_adapters_match_the_reference() {
    let mut ctx = context();
    ctx.set_cpu_tiling(true);
    let mut rng = Rng(0x5EED_000B);
    for hidden in [1usize, 5, 768, 896, 4096, 4099, 16384] {
        for (bias, beta, sum_scale) in [
            (false, false, 1.0f32),
            (true, true, 1e30),
            (true, false, 1e-30),
        ] {
            let case = Case::random(&mut rng, 3, hidden, bias, beta, 0.0, sum_scale);
            case.check(
                &ctx,
                &format!("workgroup 4: 3x{hidden} bias={bias} beta={beta} scale {sum_scale:e}"),
            );
        }
    }
}

#[test]
fn timed_dispatches_report_gpu_time_where_the_device_has_timestamps() {
    let ctx = context();
    let case = Case::new(16, 1024, true, true, 1e-6, 701);
    let x = case.inputs();
    let (out, ns) = pollster::block_on(ctx.submit_timed(&x, 4).unwrap().read_timed()).unwrap();
    let (want, _) = norm_family(&x);
    assert_within(out.y.as_ref().unwrap(), &want, &x, RTOL, "a timed call");
    if ctx
        .device()
        .features()
        .contains(wgpu::Features::TIMESTAMP_QUERY)
    {
        let ns = ns.expect("timestamps on a device that has them");
        assert!(ns > 0.0 && ns < 1e10, "{ns} ns");
    } else {
        assert!(ns.is_none());
    }
}

/// In place gives the out-of-place results bit for bit, f16 included (one rounding of each
/// result), also for columns past the ones a thread caches (CPU tiling caches 64 per row).
#[test]
fn in_place_equals_out_of_place_bit_for_bit_on_every_storage() {
    let mut rng = Rng(0x5EED_000C);
    for (packed, cpu_tiling) in [(false, false), (true, false), (false, true), (true, true)] {
        let mut ctx = context();
        ctx.set_shader_f16(!packed);
        ctx.set_cpu_tiling(cpu_tiling);
        for (rows, hidden) in [(4usize, 768usize), (3, 4096), (2, 132)] {
            let halves = Case::random(&mut rng, rows, hidden, true, true, 1e-6, 1.0).halves();
            let host = halves.inputs();
            let want = pollster::block_on(ctx.run(&host, true)).unwrap();
            let x = resident(&host, |a| ctx.upload(&a).unwrap());
            pollster::block_on(ctx.submit_in_place(&x).unwrap().read_gpu()).unwrap();
            let what = format!("f16 {rows}x{hidden} packed={packed} cpu_tiling={cpu_tiling}");
            let same = |a: &[f32], b: &[f32]| {
                a.iter()
                    .zip(b)
                    .filter(|(x, y)| x.to_bits() != y.to_bits())
                    .count()
            };
            assert_eq!(
                same(&read(&ctx, &x.input), want.y.as_ref().unwrap()),
                0,
                "{what}: y in place differs"
            );
            assert_eq!(
                same(
                    &read(&ctx, x.residual.as_ref().expect("a residual")),
                    want.sum.as_deref().unwrap()
                ),
                0,
                "{what}: v in place differs"
            );
        }
    }
}

/// Idle buffers are bounded in number after a burst, released once idle long enough, and all
/// released by `trim`; the context keeps working after each.
#[test]
fn idle_buffers_are_bounded_released_when_idle_and_trimmed() {
    use webgpu_rmsnorm::gpu::pool::{IDLE_RELEASE_MS, MAX_IDLE_BUFFERS};
    use webgpu_rmsnorm::support::clock::now_ms;
    use webgpu_rmsnorm::Request;
    let ctx = context();
    let case = Case::new(8, 768, true, true, 1e-6, 0x5EED_000D);
    let x = case.inputs();
    // 200 calls in flight at once hold ~1,000 buffers; when they are done, the pool keeps
    // at most MAX_IDLE_BUFFERS of them.
    // Every buffer is returned after this moment, so none has been idle long at it, however
    // slowly the calls run.
    let before_returns = now_ms();
    let pending: Vec<_> = (0..200)
        .map(|_| ctx.submit(&x, Request::host(true)).unwrap())
        .collect();
    for p in pending {
        pollster::block_on(p.read()).unwrap();
    }
    let stats = ctx.buffer_stats();
    assert!(
        stats.idle <= MAX_IDLE_BUFFERS && stats.live == stats.idle,
        "{stats:?}"
    );
    assert!(
        ctx.trim_idle(before_returns) > 0,
        "just returned: not idle long enough"
    );
    assert_eq!(ctx.trim_idle(now_ms() + IDLE_RELEASE_MS), 0);
    assert_eq!(ctx.buffer_stats().live, 0, "released buffers are destroyed");
    case.check(&ctx, "after the idle release");
    assert!(ctx.buffer_stats().idle > 0);
    ctx.trim();
    let stats = ctx.buffer_stats();
    assert_eq!(
        (stats.live, stats.idle, stats.idle_bytes),
        (0, 0, 0),
        "{stats:?}"
    );
    case.check(&ctx, "after trim");
}

/// The CPU backend's driver against the same case matrix and reference as the GPU, with host
/// arrays, tensors, in place and f16, through the same checks.
#[test]
fn cpu_backend_runs_the_case_matrix_and_every_kind_of_call() {
    use webgpu_rmsnorm::cpu::driver::CpuContext;
    use webgpu_rmsnorm::Request;
    let cpu = CpuContext::default();
    let mut rng = Rng(0x5EED_000E);
    for c in matrix() {
        let case = Case::random(&mut rng, c.rows, c.hidden, c.bias, c.beta, c.eps, 1.0);
        let x = case.inputs();
        let out = cpu.submit(&x, Request::host(true)).unwrap().host.unwrap();
        let (want_y, want_v) = norm_family(&x);
        let y = out.y.as_ref().unwrap();
        assert_within(y, &want_y, &x, RTOL, &format!("cpu {c}"));
        assert_eq!(out.sum.unwrap(), want_v, "cpu {c}: sum");
    }
    // Tensors: out of place to new tensors, then in place, read back.
    let case = Case::new(3, 768, true, true, 1e-6, 0x5EED_000F);
    let up = |a: &[f32]| cpu.upload(&a).unwrap();
    let x = webgpu_rmsnorm::Inputs {
        gamma: Some(Arg::Gpu(up(&case.gamma))),
        ..resident(&case.inputs(), up)
    };
    let gpu = cpu.submit(&x, Request::to_gpu(true)).unwrap().gpu.unwrap();
    cpu.submit(&x, Request::in_place()).unwrap();
    let read = |t: &Rc<Tensor>| cpu.read(t).unwrap().host.unwrap().y.unwrap();
    let (want_y, want_v) = norm_family(&case.inputs());
    for (what, y, v) in [
        (
            "new tensors",
            read(gpu.y.as_ref().unwrap()),
            read(gpu.sum.as_ref().unwrap()),
        ),
        (
            "in place",
            read(tensor(&x.input)),
            read(tensor(x.residual.as_ref().expect("a residual"))),
        ),
    ] {
        assert_within(&y, &want_y, &case.inputs(), RTOL, what);
        assert_eq!(v, want_v, "{what}: v");
    }
    // The same checks as the GPU path: a foreign tensor, a bad length, host data in place.
    let rejection = |x: &webgpu_rmsnorm::Inputs<Arg<&[f32]>>, request| {
        cpu.submit(x, request).err().map(|e| e.name())
    };
    let other = CpuContext::default();
    let foreign = webgpu_rmsnorm::Inputs {
        input: Arg::Gpu(other.upload(&case.input.as_slice()).unwrap()),
        ..x.clone()
    };
    assert_eq!(rejection(&foreign, Request::host(false)), Some("TypeError"));
    let short = webgpu_rmsnorm::Inputs {
        gamma: Some(Arg::Host(&case.gamma[..5])),
        ..x.clone()
    };
    assert_eq!(rejection(&short, Request::host(false)), Some("ShapeError"));
    let host = webgpu_rmsnorm::Inputs {
        input: Arg::Host(case.input.as_slice()),
        ..x.clone()
    };
    assert_eq!(rejection(&host, Request::in_place()), Some("TypeError"));
}

/// The CPU backend's driver with every option of the family (kind, no residual, the
/// sandwich, gamma offset) and `y` in f32 or f16 from f32 or f16 data, to host arrays (with
/// and without `sum`, and timing repeats), to new tensors and in place (with and without a
/// residual): each result the kernel's bit for bit, and those of f32 data the reference's.
#[test]
fn cpu_backend_runs_the_whole_family_through_the_driver() {
    use webgpu_rmsnorm::call::dtype::Dtype;
    use webgpu_rmsnorm::call::shape::{Norm, NormKind};
    use webgpu_rmsnorm::cpu::driver::CpuContext;
    use webgpu_rmsnorm::reference::from_sum;
    let cpu = CpuContext::default();
    let mut rng = Rng(0x5EED_0010);
    for i in 0..16usize {
        let norm = |output_dtype| Norm {
            kind: [NormKind::Rms, NormKind::Layer][i & 1],
            gamma_offset: [0.0, 1.0][i >> 3],
            output_dtype,
        };
        let (residual, post) = (i & 2 == 0, i & 4 != 0);
        let case = Case::random(&mut rng, 5, 768, i % 3 == 0, i % 2 == 0, 1e-6, 1.0);
        let post_gamma = rng.vec(768, 2.0);
        let x = webgpu_rmsnorm::Inputs {
            residual: residual.then_some(&case.residual[..]),
            post_gamma: post.then_some(&post_gamma[..]),
            norm: norm(None),
            ..case.inputs()
        };
        let what = format!("cpu family {i} ({:?})", x.norm);
        // The f32 path against the reference, which every other result is then held to.
        let (y, v) = cpu_call(&cpu, &x, Dtype::F32, &what);
        let (_, want_v) = norm_family(&x);
        assert!(same_sum(&x, &v, &want_v), "{what}: sum");
        let r = if post { from_sum(&x, &v) } else { x.clone() };
        assert_within(&y, &norm_family(&r).0, &r, RTOL, &what);
        let halves = case.halves();
        let post_halves: Vec<u16> = post_gamma.iter().map(|&g| f16_bits(g)).collect();
        let h = webgpu_rmsnorm::Inputs {
            residual: residual.then_some(&halves.residual[..]),
            post_gamma: post.then_some(&post_halves[..]),
            ..halves.inputs()
        };
        for out in [Dtype::F32, Dtype::F16] {
            let with = |norm| webgpu_rmsnorm::Inputs { norm, ..x.clone() };
            cpu_call(
                &cpu,
                &with(norm(Some(out))),
                out,
                &format!("{what} to {out:?}"),
            );
            let h = webgpu_rmsnorm::Inputs {
                norm: norm(Some(out)),
                ..h.clone()
            };
            cpu_call(&cpu, &h, out, &format!("f16 {what} to {out:?}"));
        }
    }
}

/// `x` through the CPU driver every way a call can go, each result checked bit for bit
/// against the kernel's, `y` in `out`; returns `(y, v)` (f16 widened).
fn cpu_call<T: webgpu_rmsnorm::cpu::Element + Default>(
    cpu: &webgpu_rmsnorm::cpu::driver::CpuContext,
    x: &webgpu_rmsnorm::Inputs<&[T]>,
    out: webgpu_rmsnorm::call::dtype::Dtype,
    what: &str,
) -> (Vec<f32>, Vec<f32>)
where
    for<'a> &'a [T]: webgpu_rmsnorm::call::host::HostArray,
{
    use webgpu_rmsnorm::call::dtype::Dtype;
    use webgpu_rmsnorm::call::host::HostArray;
    use webgpu_rmsnorm::cpu::{norm, Element};
    use webgpu_rmsnorm::Request;
    fn kernel<T: Element + Default, O: Element + Default>(
        x: &webgpu_rmsnorm::Inputs<&[T]>,
    ) -> (Vec<f32>, Vec<f32>) {
        let n = x.input.len();
        let (mut y, mut v) = (vec![O::default(); n], vec![T::default(); n]);
        norm(x, &mut y, Some(&mut v)).unwrap();
        fn widen<E: Element>(a: &[E]) -> Vec<f32> {
            a.iter().map(|e| e.widen()).collect()
        }
        (widen(&y), widen(&v))
    }
    let (y, v) = match out {
        Dtype::F32 => kernel::<T, f32>(x),
        Dtype::F16 => kernel::<T, u16>(x),
    };
    let bits = |a: &[f32]| a.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    let same = |got: &[f32], want: &[f32], how: &str| {
        assert!(
            bits(got) == bits(want),
            "{what}: {how} differs from the kernel's"
        );
    };
    for request in [
        Request::host(true),
        Request::host(false),
        Request::repeated(3, false),
    ] {
        let got = cpu.submit(x, request).unwrap().host.unwrap();
        same(got.y.as_ref().unwrap(), &y, &format!("y of {request:?}"));
        if request.sum {
            same(&got.sum.unwrap(), &v, "sum");
        }
    }
    let read = |t: &Rc<Tensor>| cpu.read(t).unwrap().host.unwrap().y.unwrap();
    let up = |a: &[T]| cpu.upload(&a).unwrap();
    let tensors = resident(x, up);
    let gpu = cpu
        .submit(&tensors, Request::to_gpu(true))
        .unwrap()
        .gpu
        .unwrap();
    same(&read(gpu.y.as_ref().unwrap()), &y, "y tensor");
    same(&read(gpu.sum.as_ref().unwrap()), &v, "sum tensor");
    let in_place = cpu.submit(&tensors, Request::in_place());
    if x.norm.output_dtype.is_some_and(|o| o != x.input.dtype()) {
        let e = in_place
            .err()
            .expect("in place to another dtype is refused");
        assert_eq!(e.name(), "TypeError", "{what}: {e}");
    } else {
        in_place.unwrap();
        same(&read(tensor(&tensors.input)), &y, "y in place");
        if let Some(r) = &tensors.residual {
            same(&read(tensor(r)), &v, "v in place");
        }
    }
    (y, v)
}

/// Runs `variant` on `case` through the
/// context's pipelines, and returns `y` and `v`.
fn run_variant(ctx: &GpuContext, variant: Variant, case: &Case) -> (Vec<f32>, Vec<f32>) {
    use webgpu_rmsnorm::gpu::kernel::bindings::{slot, Bound, BINDINGS};
    let x = case.inputs();
    let n = x.input.len();
    let up = |d: &[f32]| ctx.upload(&d).expect("upload");
    let (input, residual, gamma) = (
        up(x.input),
        up(x.residual.expect("a residual")),
        up(x.gamma.unwrap()),
    );
    let beta = x.beta.map(up);
    let bias = x.bias.map(up);
    let zeros = vec![0f32; n];
    let (output, sum) = (up(&zeros), up(&zeros));
    let params = ctx.params_buffer(Params::new(
        (n / x.hidden) as u32,
        x.hidden as u32 / variant.lanes,
        x.hidden as f32,
        x.eps,
        0.0,
    ));
    let buffer = |t: &Rc<Tensor>| t.buffer().expect("a placed tensor").clone();
    let o = variant.options;
    let owned = [
        buffer(&input),
        buffer(&residual),
        buffer(&gamma),
        buffer(&output),
        buffer(&sum),
    ];
    let (beta_b, bias_b) = (beta.as_ref().map(buffer), bias.as_ref().map(buffer));
    let mut bound: Bound = [None; BINDINGS.len()];
    bound[slot::INPUT] = Some(&owned[0]);
    bound[slot::RESIDUAL] = Some(&owned[1]);
    bound[slot::GAMMA] = Some(&owned[2]);
    bound[slot::OUTPUT] = Some(&owned[3]);
    bound[slot::SUM] = o.sum.then_some(&owned[4]);
    bound[slot::BETA] = if o.beta { beta_b.as_ref() } else { None };
    bound[slot::BIAS] = if o.bias { bias_b.as_ref() } else { None };
    bound[slot::PARAMS] = Some(&params);
    let pipeline = ctx.pipeline(variant);
    let group = ctx.bind_group(false, &bound);
    let mut encoder = ctx.device().create_command_encoder(&Default::default());
    {
        let mut pass = encoder.begin_compute_pass(&Default::default());
        ctx.dispatch(
            &mut pass,
            (variant, &pipeline),
            &group,
            (n / x.hidden) as u32,
        );
    }
    ctx.queue().submit([encoder.finish()]);
    let read = |t: &Rc<Tensor>| {
        pollster::block_on(ctx.read_tensor(t).unwrap().read())
            .unwrap()
            .y
            .expect("y")
    };
    (read(&output), read(&sum))
}

/// The fused kernel's tiling of `rows` rows of `hidden` for the browser (`web`) or natively,
/// on the context's device as a GPU tiles it.
fn tiled(ctx: &GpuContext, hidden: u32, options: Options, rows: usize, web: bool) -> FusedTiling {
    let kernel = Kernel::f32(hidden as usize, options);
    let caps = Caps {
        cpu_tiling: false,
        ..*ctx.caps()
    };
    FusedTiling::choose(&kernel, &caps, rows, web)
}

/// The browser's tiling (two-step fan-in, gamma and beta loaded before the reduction), and
/// the tree with and without `preload` at the tilings the crate picks and at small workgroups,
/// on ordinary rows and on rows that take the rescaled path (huge and tiny), whose barriers
/// must stay in uniform control flow.
#[test]
fn web_tiling_and_preload_variants_match_the_reference() {
    let ctx = context();
    let mut rng = Rng(0x5EED_000D);
    let mut checked = 0;
    let mut split_cases = 0;
    for hidden in [1u32, 5, 896, 1024, 4096, 4099, 8192] {
        let base = tiled(&ctx, hidden, Options::default(), FEW_ROWS + 1, false);
        let lanes = if hidden % 4 == 0 { 4 } else { 1 };
        let width = hidden / lanes;
        let tilings = [
            (base.workgroup, base.slots),
            (64, width.div_ceil(64).min(max_slots(lanes))),
            (2, width.div_ceil(2).min(max_slots(lanes))),
        ];
        // Beyond the tilings: the browser's own, for decode-sized calls and for many rows,
        // wgpu/Vulkan's for many rows, and the browser's decode tiling with each row spread
        // over workgroups: two parts (as a call of a few rows of 4096 runs), and three
        // (parts of unequal numbers of slots).
        for k in 0..tilings.len() + 5 {
            for (bits, scale) in [(0u8, 1.0f32), (7, 1e30), (3, 1e-30), (4, 1.0)] {
                let options = Options::with_flags(bits);
                let web = |rows| tiled(&ctx, hidden, options, rows, true);
                let tiling = match tilings.get(k) {
                    Some(&(workgroup, slots)) => FusedTiling {
                        workgroup,
                        slots,
                        fan: 0,
                        preload: (k + bits as usize).is_multiple_of(2),
                        exact: slots * workgroup == width,
                        split: 1,
                    },
                    None if k == tilings.len() => web(FEW_ROWS + 1),
                    None if k == tilings.len() + 1 => web(MANY_ROWS),
                    None if k == tilings.len() + 2 => {
                        tiled(&ctx, hidden, options, MANY_ROWS, false)
                    }
                    None => FusedTiling {
                        split: if k == tilings.len() + 3 { 2 } else { 3 },
                        ..web(FEW_ROWS + 1)
                    },
                };
                let v = Variant {
                    options,
                    storage: Storage::F32,
                    out_storage: Storage::F32,
                    in_place: false,
                    lanes,
                    tiling: Tiling::Fused(tiling),
                };
                let case = Case::random(
                    &mut rng,
                    3,
                    hidden as usize,
                    options.bias,
                    options.beta,
                    1e-6,
                    scale,
                );
                let x = case.inputs();
                let (y, v_out) = run_variant(&ctx, v, &case);
                let (want_y, want_v) = norm_family(&x);
                assert_within(
                    &y,
                    &want_y,
                    &x,
                    RTOL,
                    &format!("{} scale {scale:e}", v.label()),
                );
                if options.sum {
                    assert!(
                        same_sum(&x, &v_out, &want_v),
                        "{}: sum differs from input + residual (+ bias)",
                        v.label()
                    );
                }
                checked += 1;
                split_cases += usize::from(v.workgroups_per_row() > 1);
            }
        }
    }
    assert_eq!(checked, 7 * 8 * 4);
    // 896, 1024, 4096 and 8192 fill the cache exactly: their split cases ran split.
    assert!(split_cases >= 4 * 2 * 4, "{split_cases}");
}

/// Uploads of `STAGED_UPLOAD_BYTES` and more go through staging buffers kept in the pool
/// (natively): the results are right, as tensors and as a call's host arrays (f32 and f16),
/// and the staging buffers are reused, not made anew per upload.
#[test]
fn large_uploads_are_staged_through_reused_buffers() {
    use webgpu_rmsnorm::gpu::transfer::native::STAGED_UPLOAD_BYTES;
    let ctx = context();
    let hidden = 1024;
    let rows = STAGED_UPLOAD_BYTES / (4 * hidden) + 3;
    let case = Case::new(rows, hidden, true, true, 1e-6, 0x5EED_000E);
    let x = case.inputs();
    let (want_y, want_v) = norm_family(&x);
    let mut live = Vec::new();
    for round in 0..3 {
        let out = pollster::block_on(ctx.run(&x, true)).unwrap();
        assert_within(
            out.y.as_ref().unwrap(),
            &want_y,
            &x,
            RTOL,
            &format!("staged call {round}"),
        );
        let sum = out.sum.expect("sum was asked for");
        assert!(
            same_sum(&x, &sum, &want_v),
            "staged call {round}: sum differs from input + residual (+ bias)"
        );
        let t = ctx.upload(&x.input).unwrap();
        assert_eq!(
            read(&ctx, &Arg::<&[f32]>::Gpu(t)),
            case.input,
            "staged tensor {round}"
        );
        live.push(ctx.buffer_stats().live);
    }
    assert_eq!(
        live[1], live[2],
        "staging buffers were not reused: {live:?}"
    );
    // f16 (2-byte elements) through the same path, an odd count padded to whole words.
    let halves = case.halves();
    let big: Vec<u16> = halves
        .input
        .iter()
        .chain(&halves.residual)
        .copied()
        .collect();
    let big = &big[..big.len() - 1];
    assert!(big.len() * 2 >= STAGED_UPLOAD_BYTES);
    let t = ctx.upload(&big).unwrap();
    let back = read(&ctx, &Arg::<&[u16]>::Gpu(t));
    assert_eq!(back.len(), big.len());
    assert!(
        back.iter()
            .zip(big)
            .all(|(&a, &h)| a.to_bits() == f16_value(h).to_bits()),
        "staged f16 tensor"
    );
}
