//! Browser tests through the real WebGPU adapter (`wasm-pack test --headless --chrome`):
//! the JavaScript-facing `FusedRmsNorm` against the f64 reference, and its errors.
#![cfg(target_arch = "wasm32")]

use js_sys::{Float32Array, Object, Promise, Reflect};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;
use webgpu_rmsnorm::call::dtype::{f16_bits, f16_value};
use webgpu_rmsnorm::call::plan::Kernel;
use webgpu_rmsnorm::call::shape::{Norm, NormKind};
use webgpu_rmsnorm::gpu::kernel::Tiling;
use webgpu_rmsnorm::js::facade::FusedRmsNorm;
use webgpu_rmsnorm::reference::{
    chain, from_sum, norm_family, same_sum, worst_relative, Inputs as RefInputs,
};
use webgpu_rmsnorm::support::typed_result::TypedResult;

wasm_bindgen_test_configure!(run_in_browser);

const RTOL: f64 = 1e-5;

mod common;
use common::{assert_f16_rounding, assert_within, matrix, Case, Rng};

/// Fixed pseudo-random test data in [-1, 1).
fn data(n: usize, seed: u32) -> Vec<f32> {
    Rng(seed as u64).vec(n, 1.0)
}

/// The JavaScript side of a case: its argument object and the check of a result.
trait JsCase {
    fn args(&self) -> JsValue;
    fn assert_output(&self, got: &JsValue, what: &str);
}

impl JsCase for Case {
    fn args(&self) -> JsValue {
        js_args(self, |v| Float32Array::from(v).into())
    }

    fn assert_output(&self, got: &JsValue, what: &str) {
        let got = got
            .dyn_ref::<Float32Array>()
            .unwrap_or_else(|| panic!("{what}: a Float32Array"))
            .to_vec();
        let x = self.inputs();
        let (want, _) = norm_family(&x);
        assert_within(&got, &want, &x, RTOL, what);
    }
}

/// Asserts that `norm` still computes `case` right: after a rejected call, it must.
async fn assert_still_works(norm: &FusedRmsNorm, case: &Case, what: &str) {
    let y = resolve(norm.run(case.args()))
        .await
        .expect("the instance still works");
    case.assert_output(&y, what);
}

/// A case's argument object, its arrays made typed arrays by `array`.
fn js_args<T>(case: &Case<T>, array: impl Fn(&[T]) -> JsValue) -> JsValue {
    let o = Object::new();
    let set = |k: &str, v: &JsValue| Reflect::set(&o, &k.into(), v).unwrap();
    set("input", &array(&case.input));
    set("residual", &array(&case.residual));
    set("gamma", &array(&case.gamma));
    if let Some(b) = &case.beta {
        set("beta", &array(b));
    }
    if let Some(b) = &case.bias {
        set("bias", &array(b));
    }
    set("hidden", &(case.hidden as f64).into());
    set("eps", &(case.eps as f64).into());
    o.into()
}

/// The argument object of an f16 call: its halves as Uint16Arrays.
fn f16_args(case: &Case<u16>) -> JsValue {
    js_args(case, |v| js_sys::Uint16Array::from(v).into())
}

/// An instance made to take the packed f16 path (f16 in u32 words) even where the adapter
/// offers shader-f16.
async fn packed_norm() -> FusedRmsNorm {
    let options = Object::new();
    Reflect::set(&options, &"shaderF16".into(), &false.into()).unwrap();
    FusedRmsNorm::create(Some(JsValue::from(options).unchecked_into()))
        .await
        .unwrap()
}

/// Whether the browser's default adapter has a WebGPU feature.
async fn adapter_has(feature: &str) -> bool {
    let gpu = Reflect::get(&js_sys::global(), &"navigator".into())
        .and_then(|n| Reflect::get(&n, &"gpu".into()))
        .unwrap();
    let request: js_sys::Function = Reflect::get(&gpu, &"requestAdapter".into())
        .unwrap()
        .dyn_into()
        .unwrap();
    let adapter = resolve(request.call0(&gpu).unwrap().dyn_into().unwrap())
        .await
        .unwrap();
    let features = Reflect::get(&adapter, &"features".into()).unwrap();
    let has: js_sys::Function = Reflect::get(&features, &"has".into())
        .unwrap()
        .dyn_into()
        .unwrap();
    has.call1(&features, &feature.into())
        .unwrap()
        .as_bool()
        .unwrap_or(false)
}

/// A tensor of `norm` holding `data`.
fn upload(norm: &FusedRmsNorm, data: &[f32]) -> JsValue {
    norm.upload(Float32Array::from(data).into(), None).unwrap()
}

/// What a tensor holds, read back (`read()`) as the typed array `A` of its dtype.
async fn read<A: JsCast>(tensor: &JsValue) -> A {
    resolve(call(tensor, "read", &[]).into())
        .await
        .unwrap()
        .dyn_into()
        .unwrap()
}

async fn resolve(p: Promise) -> Result<JsValue, JsValue> {
    JsFuture::from(p).await
}

async fn norm() -> FusedRmsNorm {
    FusedRmsNorm::create(None)
        .await
        .expect("WebGPU adapter (headless Chromium needs --enable-unsafe-webgpu)")
}

fn error_name(e: &JsValue) -> String {
    Reflect::get(e, &"name".into())
        .ok()
        .and_then(|n| n.as_string())
        .unwrap_or_default()
}

fn error_message(e: &JsValue) -> String {
    Reflect::get(e, &"message".into())
        .ok()
        .and_then(|n| n.as_string())
        .unwrap_or_default()
}

#[wasm_bindgen_test]
async fn matrix_subset_matches_the_reference() {
    let norm = norm().await;
    // The native suite's matrix, sampled: SwiftShader runs the kernel on the CPU, so every
    // fifth cell of up to 7 rows (every row length, option and eps still comes up).
    let cells: Vec<_> = matrix()
        .into_iter()
        .filter(|c| c.rows <= 7)
        .step_by(5)
        .collect();
    assert!(cells.len() >= 60);
    for (i, c) in cells.iter().enumerate() {
        let case = Case::new(c.rows, c.hidden, c.bias, c.beta, c.eps, 11 + i as u64);
        let y = resolve(norm.run(case.args()))
            .await
            .unwrap_or_else(|e| panic!("{c}: {}", error_message(&e)));
        case.assert_output(&y, &c.to_string());
    }
}

#[wasm_bindgen_test]
async fn run_with_sum_returns_the_residual_stream() {
    let norm = norm().await;
    let case = Case::new(5, 768, true, true, 1e-6, 77);
    let r = resolve(norm.run_with_sum(case.args())).await.unwrap();
    case.assert_output(
        &Reflect::get(&r, &"output".into()).unwrap(),
        "runWithSum output",
    );
    let sum = Reflect::get(&r, &"sum".into())
        .unwrap()
        .dyn_into::<Float32Array>()
        .unwrap()
        .to_vec();
    let (_, want) = norm_family(&case.inputs());
    assert_eq!(sum, want, "sum is input + residual + bias in f32");
}

#[wasm_bindgen_test]
async fn sixty_four_concurrent_calls_of_different_shapes() {
    let norm = norm().await;
    let cases: Vec<Case> = (0..64)
        .map(|i| {
            Case::new(
                1 + i % 9,
                1 + (i * 37) % 700,
                i % 2 == 0,
                i % 3 == 0,
                1e-6,
                1000 + i as u64,
            )
        })
        .collect();
    let promises: Vec<Promise> = cases.iter().map(|c| norm.run(c.args())).collect();
    for (i, (case, p)) in cases.iter().zip(promises).enumerate() {
        let y = resolve(p)
            .await
            .unwrap_or_else(|e| panic!("call {i}: {}", error_message(&e)));
        case.assert_output(&y, &format!("concurrent call {i}"));
    }
}

#[wasm_bindgen_test]
async fn bad_arguments_reject_with_named_errors_and_the_instance_keeps_working() {
    let norm = norm().await;
    let good = Case::new(2, 4, false, false, 1e-6, 5);
    let with = |key: &str, value: JsValue| {
        let a = good.args();
        Reflect::set(&a, &key.into(), &value).unwrap();
        a
    };
    let cases: Vec<(JsValue, &str, &str)> = vec![
        (JsValue::NULL, "TypeError", "args"),
        (JsValue::from_str("x"), "TypeError", "args"),
        (
            with("input", js_sys::Array::new().into()),
            "TypeError",
            "input",
        ),
        (
            with("input", js_sys::Float64Array::new_with_length(8).into()),
            "TypeError",
            "input",
        ),
        // Absent, residual is optional (QK-norm, a final norm); null is no array.
        (with("residual", JsValue::NULL), "TypeError", "residual"),
        (
            with("kind", JsValue::from_str("batch")),
            "TypeError",
            "kind",
        ),
        (
            with("gammaOffset", JsValue::from_f64(f64::INFINITY)),
            "ShapeError",
            "gammaOffset",
        ),
        (
            with("gammaOffset", JsValue::from_str("1")),
            "TypeError",
            "gammaOffset",
        ),
        (
            with("postGamma", Float32Array::new_with_length(3).into()),
            "ShapeError",
            "postGamma",
        ),
        (
            with("outputDtype", JsValue::from_str("f64")),
            "TypeError",
            "outputDtype",
        ),
        (with("gamma", JsValue::NULL), "TypeError", "gamma"),
        (with("beta", JsValue::from_f64(1.0)), "TypeError", "beta"),
        (
            with("hidden", JsValue::from_str("4")),
            "TypeError",
            "hidden",
        ),
        (with("eps", JsValue::from_str("small")), "TypeError", "eps"),
        (
            with("hidden", JsValue::from_f64(3.0)),
            "ShapeError",
            "input",
        ),
        (
            with("hidden", JsValue::from_f64(0.0)),
            "ShapeError",
            "hidden",
        ),
        (
            with("hidden", JsValue::from_f64(2.5)),
            "ShapeError",
            "hidden",
        ),
        (
            with("hidden", JsValue::from_f64(f64::NAN)),
            "ShapeError",
            "hidden",
        ),
        (
            with("hidden", JsValue::from_f64(-4.0)),
            "ShapeError",
            "hidden",
        ),
        (with("eps", JsValue::from_f64(-1.0)), "ShapeError", "eps"),
        (
            with("eps", JsValue::from_f64(f64::INFINITY)),
            "ShapeError",
            "eps",
        ),
        (
            with("residual", Float32Array::new_with_length(7).into()),
            "ShapeError",
            "residual",
        ),
        (
            with("gamma", Float32Array::new_with_length(3).into()),
            "ShapeError",
            "gamma",
        ),
        (
            with("bias", Float32Array::new_with_length(5).into()),
            "ShapeError",
            "bias",
        ),
    ];
    for (args, name, arg) in cases {
        let e = resolve(norm.run(args)).await.expect_err("a rejection");
        assert!(e.is_instance_of::<js_sys::Error>(), "{name}: a real Error");
        assert_eq!(error_name(&e), name, "{}", error_message(&e));
        assert!(
            error_message(&e).starts_with(arg),
            "message names {arg}: {}",
            error_message(&e)
        );
        assert_still_works(&norm, &good, "after a rejection").await;
    }
}

#[wasm_bindgen_test]
async fn inputs_are_left_untouched_and_outputs_are_fresh() {
    let norm = norm().await;
    let case = Case::new(3, 8, true, true, 1e-6, 9);
    let args = case.args();
    let input = Reflect::get(&args, &"input".into())
        .unwrap()
        .dyn_into::<Float32Array>()
        .unwrap();
    let a = resolve(norm.run(args.clone()))
        .await
        .unwrap()
        .dyn_into::<Float32Array>()
        .unwrap();
    let b = resolve(norm.run(args))
        .await
        .unwrap()
        .dyn_into::<Float32Array>()
        .unwrap();
    assert_eq!(input.to_vec(), case.input);
    assert!(a.buffer() != b.buffer(), "each call has its own buffer");
    assert_eq!(a.to_vec(), b.to_vec());
}

#[wasm_bindgen_test]
async fn device_loss_rejects_then_recovers() {
    let norm = norm().await;
    let case = Case::new(4, 64, false, true, 1e-6, 21);
    norm.simulate_device_loss();
    // The loss is reported asynchronously; whichever way this call races it, the next
    // one after the loss is known must work on a fresh device.
    let _ = resolve(norm.run(case.args())).await;
    let mut recovered = false;
    for _ in 0..3 {
        if let Ok(y) = resolve(norm.run(case.args())).await {
            case.assert_output(&y, "after device loss");
            recovered = true;
            break;
        }
    }
    assert!(
        recovered,
        "a call after device loss succeeds on a new device"
    );
}

fn web_sys_log(message: &str) {
    wasm_bindgen_test::console_log!("{message}");
}

/// Calls a method of a JS object by name (for objects the tests hold as `JsValue`).
fn call(obj: &JsValue, method: &str, args: &[JsValue]) -> JsValue {
    let f: js_sys::Function = Reflect::get(obj, &method.into())
        .unwrap()
        .dyn_into()
        .unwrap();
    f.apply(obj, &args.iter().collect()).unwrap()
}

#[wasm_bindgen_test]
async fn gpu_resident_chain_runs_without_readback_and_matches_the_reference() {
    let norm = norm().await;
    let (rows, hidden, layers) = (2usize, 96usize, 3);
    let first = Case::new(rows, hidden, false, false, 1e-6, 300);
    let gammas: Vec<Vec<f32>> = (0..layers).map(|l| data(hidden, 310 + l as u32)).collect();

    let (input, residual) = chain(&first.input, &first.residual, &gammas, hidden, 1e-6);

    let up = |v: &[f32]| upload(&norm, v);
    let (mut x_in, mut x_res) = (up(&first.input), up(&first.residual));
    for g in &gammas {
        let args = Object::new();
        Reflect::set(&args, &"input".into(), &x_in).unwrap();
        Reflect::set(&args, &"residual".into(), &x_res).unwrap();
        Reflect::set(&args, &"gamma".into(), &up(g)).unwrap();
        Reflect::set(&args, &"hidden".into(), &(hidden as f64).into()).unwrap();
        Reflect::set(&args, &"output".into(), &"gpu".into()).unwrap();
        let r = resolve(norm.run_with_sum(args.into()))
            .await
            .unwrap_or_else(|e| panic!("{}", error_message(&e)));
        x_in = Reflect::get(&r, &"output".into()).unwrap();
        x_res = Reflect::get(&r, &"sum".into()).unwrap();
        assert_eq!(
            Reflect::get(&x_in, &"length".into()).unwrap().as_f64(),
            Some((rows * hidden) as f64)
        );
    }
    let got = read::<Float32Array>(&x_in).await.to_vec();
    let worst = worst_relative(&got, &input);
    assert!(
        worst < 1e-4,
        "after {layers} layers: worst relative error {worst}"
    );
    let sum = read::<Float32Array>(&x_res).await.to_vec();
    // Not bit-exact: each layer's v includes the previous layer's y, itself within f32
    // rounding of the reference.
    let worst = worst_relative(&sum, &residual);
    assert!(
        worst < 1e-4,
        "the sum tensor is the last layer's v: worst relative error {worst}"
    );
}

#[wasm_bindgen_test]
async fn freed_and_foreign_tensors_are_named_errors() {
    let (a, b) = (norm().await, norm().await);
    let case = Case::new(2, 8, false, false, 1e-6, 400);
    let args = case.args();
    let foreign = upload(&b, &case.input);
    Reflect::set(&args, &"input".into(), &foreign).unwrap();
    let e = resolve(a.run(args.clone()))
        .await
        .expect_err("a tensor of another instance");
    assert_eq!(error_name(&e), "TypeError", "{}", error_message(&e));
    assert!(error_message(&e).starts_with("input:"));

    call(&foreign, "free", &[]);
    let e = resolve(b.run(args)).await.expect_err("a freed tensor");
    // A bug in the caller, not a device loss: a retry-on-loss handler must not retry it.
    assert_eq!(error_name(&e), "InvalidStateError", "{}", error_message(&e));
    assert_still_works(&b, &case, "after a freed tensor").await;
}

#[wasm_bindgen_test]
async fn f16_arrays_on_both_paths_match_the_reference() {
    let packed = packed_norm().await;
    let stats = |n: &FusedRmsNorm| {
        Reflect::get(&n.debug_stats(), &"shaderF16".into())
            .unwrap()
            .as_bool()
    };
    assert_eq!(
        stats(&packed),
        Some(false),
        "shaderF16: false forces the packed path"
    );
    let default = norm().await;
    // Where the adapter offers shader-f16, the default instance must take that path, so that
    // this test runs both paths rather than the packed one twice.
    let offered = adapter_has("shader-f16").await;
    web_sys_log(&format!("adapter offers shader-f16: {offered}"));
    assert_eq!(
        stats(&default),
        Some(offered),
        "the default instance uses shader-f16 exactly where the adapter offers it"
    );
    for (path, norm) in [("default", default), ("packed", packed)] {
        for (rows, hidden, bias, beta) in [
            (3usize, 4usize, false, false),
            (4, 768, true, true),
            (2, 4096, false, true),
        ] {
            let halves = Case::new(rows, hidden, bias, beta, 1e-6, 500 + hidden as u64).halves();
            let r = resolve(norm.run_with_sum(f16_args(&halves)))
                .await
                .unwrap_or_else(|e| panic!("{path}: {}", error_message(&e)));
            let out: js_sys::Uint16Array = Reflect::get(&r, &"output".into())
                .unwrap()
                .dyn_into()
                .expect("f16 results are Uint16Array bits");
            let widened = halves.widened();
            let x = widened.inputs();
            let (want, _) = norm_family(&x);
            let got: Vec<f32> = out.to_vec().into_iter().map(f16_value).collect();
            assert_within(
                &got,
                &want,
                &x,
                1e-3,
                &format!("{path} f16 {rows}x{hidden}"),
            );
        }
        // hidden must be a multiple of 4 for f16.
        let odd = js_sys::Uint16Array::new_with_length(6);
        let args = Object::new();
        for k in ["input", "residual"] {
            Reflect::set(&args, &k.into(), &odd).unwrap();
        }
        Reflect::set(
            &args,
            &"gamma".into(),
            &js_sys::Uint16Array::new_with_length(3),
        )
        .unwrap();
        Reflect::set(&args, &"hidden".into(), &3.0.into()).unwrap();
        let e = resolve(norm.run(args.into()))
            .await
            .expect_err("f16 with hidden 3");
        assert_eq!(error_name(&e), "ShapeError", "{}", error_message(&e));
    }
}

#[wasm_bindgen_test]
async fn in_place_update_writes_y_into_input_and_v_into_residual() {
    let norm = norm().await;
    let case = Case::new(3, 4096, true, true, 1e-6, 600);
    let (input, residual) = (upload(&norm, &case.input), upload(&norm, &case.residual));
    let args = case.args();
    Reflect::set(&args, &"input".into(), &input).unwrap();
    Reflect::set(&args, &"residual".into(), &residual).unwrap();
    Reflect::set(&args, &"inPlace".into(), &true.into()).unwrap();
    let r = resolve(norm.run(args))
        .await
        .unwrap_or_else(|e| panic!("{}", error_message(&e)));
    assert!(r.is_undefined(), "in place resolves with nothing");
    let y = resolve(call(&input, "read", &[]).into()).await.unwrap();
    case.assert_output(&y, "input after the in-place update");
    let v = read::<Float32Array>(&residual).await.to_vec();
    assert_eq!(v, norm_family(&case.inputs()).1, "residual holds v");
    // Host arrays cannot be updated in place.
    let bad = case.args();
    Reflect::set(&bad, &"inPlace".into(), &true.into()).unwrap();
    let e = resolve(norm.run(bad))
        .await
        .expect_err("in place on host arrays");
    assert_eq!(error_name(&e), "TypeError");
}

#[wasm_bindgen_test]
async fn gpu_time_comes_from_timestamps_where_the_adapter_has_them() {
    let norm = norm().await;
    let case = Case::new(16, 1024, true, true, 1e-6, 700);
    let t = resolve(norm.gpu_time(case.args(), JsValue::from(8)))
        .await
        .unwrap_or_else(|e| panic!("{}", error_message(&e)));
    // SwiftShader offers timestamp-query; an adapter without it answers undefined.
    if adapter_has("timestamp-query").await {
        let ms = t.as_f64().expect("a number of milliseconds");
        assert!(
            ms > 0.0 && ms < 10_000.0,
            "GPU time of 8 dispatches: {ms} ms"
        );
    } else {
        assert!(t.is_undefined());
    }
    let e = resolve(norm.gpu_time(JsValue::NULL, JsValue::from(1)))
        .await
        .expect_err("bad args");
    assert_eq!(error_name(&e), "TypeError");
}

/// f16 in place rounds each result once, as the out-of-place call does: bit for bit the same,
/// on both f16 paths, for a row longer than the columns a thread caches on this adapter.
#[wasm_bindgen_test]
async fn f16_in_place_equals_run_with_sum_bit_for_bit_on_both_paths() {
    for norm in [norm().await, packed_norm().await] {
        let args = f16_args(&Case::new(4, 768, true, true, 1e-6, 640).halves());
        let want = resolve(norm.run_with_sum(args.clone())).await.unwrap();
        let bits = |v: JsValue| v.dyn_into::<js_sys::Uint16Array>().unwrap().to_vec();
        let (want_y, want_v) = (
            bits(Reflect::get(&want, &"output".into()).unwrap()),
            bits(Reflect::get(&want, &"sum".into()).unwrap()),
        );
        let tensor = |k: &str| {
            norm.upload(Reflect::get(&args, &k.into()).unwrap(), None)
                .unwrap()
        };
        let (input, residual) = (tensor("input"), tensor("residual"));
        Reflect::set(&args, &"input".into(), &input).unwrap();
        Reflect::set(&args, &"residual".into(), &residual).unwrap();
        Reflect::set(&args, &"inPlace".into(), &true.into()).unwrap();
        resolve(norm.run(args)).await.unwrap();
        let (y, v) = (bits(read(&input).await), bits(read(&residual).await));
        let differ = |a: &[u16], b: &[u16]| a.iter().zip(b).filter(|(x, y)| x != y).count();
        assert_eq!(
            differ(&y, &want_y),
            0,
            "y in place differs from runWithSum's output"
        );
        assert_eq!(
            differ(&v, &want_v),
            0,
            "v in place differs from runWithSum's sum"
        );
    }
}

/// A context whose kernels take the tilings of a browser on a real GPU, forced on this
/// adapter (whose own are the CPU adapter's).
async fn gpu_tiled_context() -> webgpu_rmsnorm::GpuContext {
    let mut ctx = webgpu_rmsnorm::GpuContext::new(wgpu::PowerPreference::default())
        .await
        .unwrap();
    ctx.set_cpu_tiling(false);
    ctx
}

/// `v` as the context's host array (a JS `Float32Array`).
fn array(v: &[f32]) -> webgpu_rmsnorm::js::array::JsArray {
    webgpu_rmsnorm::js::array::JsArray::from_value(&Float32Array::from(v).into())
        .unwrap()
        .unwrap()
}

/// A result the context read back, as f32s: its bits, so that no NaN pattern is
/// canonicalized on the way.
fn floats(v: TypedResult) -> Vec<f32> {
    let bits: Vec<u32> = match v {
        TypedResult::F32(a) => js_sys::Uint32Array::new(&a.buffer()).to_vec(),
        TypedResult::F16(a) => a.to_vec().into_iter().map(u32::from).collect(),
    };
    bits.into_iter().map(f32::from_bits).collect()
}

/// The tilings a browser on a real GPU runs (rows spread over two workgroups for a call of a
/// few long rows; the tilings of one row and of many), forced on this adapter, whose own
/// tiling is the CPU adapter's: through both of the context's dispatch paths in wasm, read
/// back through wgpu and left on the GPU through the direct dispatch, against the f64
/// reference and bit for bit against each other.
#[wasm_bindgen_test]
async fn gpu_tilings_with_split_rows_match_the_reference_on_both_dispatch_paths() {
    use webgpu_rmsnorm::call::host::Arg;
    use webgpu_rmsnorm::call::options::Options;
    use webgpu_rmsnorm::Inputs;

    let ctx = gpu_tiled_context().await;
    let mut rng = Rng(0x5EED_0020);
    let mut split = 0;
    for (rows, hidden, bias, beta) in [
        (1, 4096, false, false),
        (3, 4096, true, true),
        (4, 1024, false, true),
        (5, 4096, true, false),
    ] {
        let kernel = Kernel::f32(
            hidden,
            Options {
                bias,
                beta,
                sum: true,
                ..Options::default()
            },
        );
        split += usize::from(kernel.variant(ctx.caps(), rows).workgroups_per_row() > 1);
        for scale in [1.0f32, 1e-30] {
            let case = Case::random(&mut rng, rows, hidden, bias, beta, 1e-6, scale);
            let x = case.inputs();
            let (want_y, want_v) = norm_family(&x);
            let host = Inputs {
                beta: case.beta.as_deref().map(array),
                bias: case.bias.as_deref().map(array),
                eps: case.eps,
                ..Inputs::plain(
                    array(&case.input),
                    array(&case.residual),
                    array(&case.gamma),
                    hidden,
                )
            };
            let what = format!("{rows}x{hidden} bias {bias} beta {beta} scale {scale:e}");
            let out = ctx.run(&host, true).await.unwrap();
            let (y, v) = (floats(out.y.unwrap()), floats(out.sum.unwrap()));
            assert_within(&y, &want_y, &x, RTOL, &format!("{what}: read back"));
            assert!(
                same_sum(&x, &v, &want_v),
                "{what}: sum differs from input + residual (+ bias)"
            );
            let on_gpu = Inputs {
                beta: host.beta.as_ref().map(|b| Arg::Host(b.copy())),
                bias: host.bias.as_ref().map(|b| Arg::Host(b.copy())),
                eps: case.eps,
                ..Inputs::plain(
                    Arg::Gpu(ctx.upload(&host.input).unwrap()),
                    Arg::Gpu(ctx.upload(host.residual.as_ref().unwrap()).unwrap()),
                    Arg::Host(host.gamma.as_ref().unwrap().copy()),
                    hidden,
                )
            };
            let gpu = ctx
                .submit_to_gpu(&on_gpu, true)
                .unwrap()
                .read_gpu()
                .await
                .unwrap()
                .unwrap();
            let gy = floats(
                ctx.read_tensor(gpu.y.as_ref().unwrap())
                    .unwrap()
                    .read()
                    .await
                    .unwrap()
                    .y
                    .unwrap(),
            );
            let sum = gpu.sum.unwrap();
            let gv = floats(
                ctx.read_tensor(&sum)
                    .unwrap()
                    .read()
                    .await
                    .unwrap()
                    .y
                    .unwrap(),
            );
            let bits = |a: &[f32]| a.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            assert_eq!(
                bits(&gy),
                bits(&y),
                "{what}: y on the GPU differs from y read back"
            );
            assert_eq!(
                bits(&gv),
                bits(&v),
                "{what}: v on the GPU differs from v read back"
            );
        }
    }
    // 1 and 3 rows of 4096 were split; 4 rows of 1024 (short rows) and 5 (more than a few)
    // were not.
    assert_eq!(split, 2, "split kernels among the calls");
}

/// The family kernel's tilings on a real GPU, forced on this adapter (whose own tiling is the
/// CPU adapter's), so that the browser's own WGSL compiler builds them (its uniformity rules
/// are stricter than naga's): QK-norm's short rows several a workgroup, folding flat, some
/// taking the exact path alone;
/// rows with the fan-in, two a workgroup and one; decode rows with their weights loaded
/// with the row. Each kind, with and without residual, postGamma and offset, against the
/// f64 reference.
#[wasm_bindgen_test]
async fn the_family_gpu_tilings_match_the_reference() {
    use webgpu_rmsnorm::call::options::Options;
    use webgpu_rmsnorm::Inputs;

    let ctx = gpu_tiled_context().await;
    for (rows, hidden) in [
        (300usize, 64usize),
        (260, 128),
        (2, 1024),
        (9, 1024),
        (6, 2048),
    ] {
        for mut f in Family::some(rows, hidden, 0xFA_5000 + hidden as u64) {
            if hidden <= 128 {
                // Rows that take the exact path (~1e30; a mean 10⁷ times the spread) beside
                // rows that do not: each decides alone where rows share a workgroup.
                let rows_of = |a: &mut Vec<f32>| {
                    for (at, x) in a.iter_mut().enumerate() {
                        match (at / hidden) % 3 {
                            0 => *x *= 1e30,
                            1 => *x += 1e7,
                            _ => {}
                        }
                    }
                };
                rows_of(&mut f.case.input);
                rows_of(&mut f.case.residual);
            }
            let what = f.what();
            let c = &f.case;
            let host = Inputs {
                input: array(&c.input),
                residual: f.residual.then(|| array(&c.residual)),
                input2: None,
                gamma: Some(array(&c.gamma)),
                beta: c.beta.as_deref().map(array),
                bias: c.bias.as_deref().map(array),
                post_gamma: f.post.as_deref().map(array),
                hidden,
                eps: c.eps,
                norm: f.norm,
                rotary: None,
            };
            let v = Kernel::f32(hidden, Options::of(&host, true)).variant(ctx.caps(), rows);
            // The tiling each shape is here for (plain RMSNorm of long rows is the fused
            // kernel's, tested above).
            match (rows, hidden, v.tiling) {
                (_, 64 | 128, Tiling::Family(t)) => {
                    assert!(t.rows_per_group > 1 && t.flat, "{what}: {v:?}")
                }
                (9, _, Tiling::Family(t)) => assert!(t.fan > 0, "{what}: {v:?}"),
                (6, _, Tiling::Family(t)) => {
                    assert!(t.fan > 0 && t.rows_per_group == 1, "{what}: {v:?}")
                }
                (2, _, Tiling::Family(t)) => assert!(t.preload, "{what}: {v:?}"),
                (_, 64 | 128, _) => panic!("{what}: short rows take the family kernel: {v:?}"),
                _ => assert!(!v.is_family() && f.norm.kind == NormKind::Rms && f.post.is_none()),
            }
            let out = ctx
                .run(&host, true)
                .await
                .unwrap_or_else(|e| panic!("{what}: {e:?}"));
            let x = f.inputs(c, f.post.as_deref());
            let sum = floats(out.sum.unwrap());
            let (want_y, v) = want_from_sum(&x, &sum, &what);
            assert_within(
                &floats(out.y.unwrap()),
                &want_y,
                &from_sum(&x, &v),
                RTOL,
                &what,
            );
        }
    }
}

/// A call of the normalization family through the JavaScript API: a case's arrays, with or
/// without its residual, a postGamma, and the normalization's fields.
struct Family {
    case: Case,
    residual: bool,
    post: Option<Vec<f32>>,
    norm: Norm,
}

impl Family {
    /// Every combination of kind × residual × postGamma × gammaOffset at `rows × hidden`,
    /// bias and beta on in turn.
    fn all(rows: usize, hidden: usize, seed: u64) -> Vec<Family> {
        let mut rng = Rng(seed);
        let mut all = Vec::new();
        for kind in [NormKind::Rms, NormKind::Layer] {
            for bits in 0..8u32 {
                let (bias, beta) = (bits % 3 == 1, bits % 2 == 1);
                let case = Case::random(&mut rng, rows, hidden, bias, beta, 1e-5, 1.0);
                all.push(Family {
                    case,
                    residual: bits & 1 == 0,
                    post: (bits & 2 != 0).then(|| rng.vec(hidden, 2.0)),
                    norm: Norm {
                        kind,
                        gamma_offset: if bits & 4 != 0 { 1.0 } else { 0.0 },
                        output_dtype: None,
                    },
                });
            }
        }
        all
    }

    /// Six of [`Family::all`] that have each kind, with and without a residual, a postGamma
    /// and an offset: for the tests whose every call compiles its own pipelines.
    fn some(rows: usize, hidden: usize, seed: u64) -> Vec<Family> {
        Family::all(rows, hidden, seed)
            .into_iter()
            .step_by(3)
            .collect()
    }

    /// The call as the reference takes it; `case` is this call's arrays (or their widened halves).
    fn inputs<'a>(&'a self, case: &'a Case, post: Option<&'a [f32]>) -> RefInputs<'a> {
        RefInputs {
            residual: self.residual.then_some(&case.residual[..]),
            post_gamma: post,
            norm: self.norm,
            ..case.inputs()
        }
    }

    /// `args` (a case's argument object) with this call's fields: no residual where it has
    /// none, `postGamma`, `kind`, `gammaOffset` and `outputDtype`.
    fn fields(&self, args: JsValue, post: Option<JsValue>, output_dtype: Option<&str>) -> JsValue {
        let set = |k: &str, v: &JsValue| Reflect::set(&args, &k.into(), v).unwrap();
        if !self.residual {
            unset(&args, "residual");
        }
        if let Some(p) = post {
            set("postGamma", &p);
        }
        set("kind", &self.norm.kind.name().into());
        set("gammaOffset", &(self.norm.gamma_offset as f64).into());
        if let Some(d) = output_dtype {
            set("outputDtype", &d.into());
        }
        args
    }

    /// The f32 call's argument object.
    fn args(&self, output_dtype: Option<&str>) -> JsValue {
        let post = self.post.as_deref().map(|p| Float32Array::from(p).into());
        self.fields(self.case.args(), post, output_dtype)
    }

    fn what(&self) -> String {
        let (rows, hidden) = (self.case.input.len() / self.case.hidden, self.case.hidden);
        format!(
            "{rows}x{hidden} {} residual {} postGamma {} offset {}",
            self.norm.kind.name(),
            self.residual,
            self.post.is_some(),
            self.norm.gamma_offset
        )
    }
}

/// Removes field `key` of an argument object.
fn unset(o: &JsValue, key: &str) {
    Reflect::delete_property(o.unchecked_ref::<Object>(), &key.into()).unwrap();
}

/// A field of a result object as the typed array `A` of its dtype.
fn field<A: JsCast + Into<JsValue> + Clone>(r: &JsValue, key: &str) -> A {
    Reflect::get(r, &key.into())
        .unwrap()
        .dyn_into::<A>()
        .unwrap_or_else(|_| panic!("{key}: not the typed array of its dtype"))
}

/// `y` of `x` as the kernel's own `v` (the `sum`) determines it, after `v` itself is checked
/// against the reference (src/reference.rs `from_sum`: a post-norm's `w` is rounded in f32).
fn want_from_sum(x: &RefInputs, sum: &[f32], what: &str) -> (Vec<f64>, Vec<f32>) {
    let (_, want_v) = norm_family(x);
    assert!(
        same_sum(x, sum, &want_v),
        "{what}: sum differs from the reference's v"
    );
    (norm_family(&from_sum(x, sum)).0, sum.to_vec())
}

#[wasm_bindgen_test]
async fn the_norm_family_through_run_with_sum_matches_the_reference() {
    let norm = norm().await;
    for (rows, hidden) in [(3usize, 64usize), (2, 37)] {
        for f in Family::all(rows, hidden, 0xFA_1000 + hidden as u64) {
            let what = f.what();
            let r = resolve(norm.run_with_sum(f.args(None)))
                .await
                .unwrap_or_else(|e| panic!("{what}: {}", error_message(&e)));
            let x = f.inputs(&f.case, f.post.as_deref());
            let sum = field::<Float32Array>(&r, "sum").to_vec();
            let (want_y, v) = want_from_sum(&x, &sum, &what);
            let y = field::<Float32Array>(&r, "output").to_vec();
            assert_within(&y, &want_y, &from_sum(&x, &v), RTOL, &what);
            // run gives runWithSum's output.
            let alone = resolve(norm.run(f.args(None))).await.unwrap();
            assert_eq!(
                alone.dyn_into::<Float32Array>().unwrap().to_vec(),
                y,
                "{what}: run"
            );
        }
    }
}

#[wasm_bindgen_test]
async fn f16_outputs_from_f32_data_and_f32_outputs_from_f16_data_on_both_f16_paths() {
    for (path, norm) in [("default", norm().await), ("packed", packed_norm().await)] {
        for f in Family::some(2, 128, 0xFA_2000) {
            let what = format!("{path} {}", f.what());
            // f32 data, f16 output: one f16 rounding of the reference; the sum stays f32.
            let r = resolve(norm.run_with_sum(f.args(Some("f16"))))
                .await
                .unwrap_or_else(|e| panic!("{what}: {}", error_message(&e)));
            let x = f.inputs(&f.case, f.post.as_deref());
            let sum = field::<Float32Array>(&r, "sum").to_vec();
            let (want_y, _) = want_from_sum(&x, &sum, &what);
            let y = field::<js_sys::Uint16Array>(&r, "output").to_vec();
            assert_f16_rounding(&y, &want_y, &format!("{what} → f16"));

            // f16 data, f32 output: f32-exact against the reference of the very halves; the
            // sum stays f16, v rounded once.
            let halves = f.case.halves();
            let post16: Option<Vec<u16>> = f
                .post
                .as_ref()
                .map(|p| p.iter().map(|&v| f16_bits(v)).collect());
            let post_js = post16
                .as_deref()
                .map(|p| js_sys::Uint16Array::from(p).into());
            let args = f.fields(f16_args(&halves), post_js, Some("f32"));
            let r = resolve(norm.run_with_sum(args))
                .await
                .unwrap_or_else(|e| panic!("{what} f16 data: {}", error_message(&e)));
            let (widened, post_wide) = (
                halves.widened(),
                post16.map(|p| p.into_iter().map(f16_value).collect::<Vec<_>>()),
            );
            let x = f.inputs(&widened, post_wide.as_deref());
            let (want_y, want_v) = norm_family(&x);
            let y = field::<Float32Array>(&r, "output").to_vec();
            let sum: Vec<u16> = field::<js_sys::Uint16Array>(&r, "sum").to_vec();
            if f.post.is_none() {
                let want: Vec<u16> = want_v.iter().map(|&v| f16_bits(v)).collect();
                assert_eq!(sum, want, "{what}: the f16 sum is v rounded once");
            }
            // With a residual after the post-norm, y depends on the f32 v the kernel rounded
            // into the f16 sum, which is not there to check against (see want_from_sum).
            if !(f.post.is_some() && f.residual) {
                assert_within(&y, &want_y, &x, RTOL, &format!("{what} f16 data → f32"));
            }
        }
    }
}

#[wasm_bindgen_test]
async fn the_norm_family_in_place_and_on_gpu_tensors() {
    let norm = norm().await;
    for f in Family::some(4, 256, 0xFA_3000) {
        let what = f.what();
        let args = f.args(None);
        let input = upload(&norm, &f.case.input);
        Reflect::set(&args, &"input".into(), &input).unwrap();
        let residual = f.residual.then(|| upload(&norm, &f.case.residual));
        if let Some(r) = &residual {
            Reflect::set(&args, &"residual".into(), r).unwrap();
        }
        if let Some(p) = &f.post {
            Reflect::set(&args, &"postGamma".into(), &upload(&norm, p)).unwrap();
        }
        Reflect::set(&args, &"inPlace".into(), &true.into()).unwrap();
        let none = resolve(norm.run(args))
            .await
            .unwrap_or_else(|e| panic!("{what}: {}", error_message(&e)));
        assert!(
            none.is_undefined(),
            "{what}: in place resolves with nothing"
        );
        let x = f.inputs(&f.case, f.post.as_deref());
        let y = read::<Float32Array>(&input).await.to_vec();
        // With a residual, v came back over it; without one, only input is written.
        let (want_y, second) = match &residual {
            Some(r) => {
                let v = read::<Float32Array>(r).await.to_vec();
                let (want_y, v) = want_from_sum(&x, &v, &what);
                (want_y, v)
            }
            None => (norm_family(&x).0, Vec::new()),
        };
        let checked = if residual.is_some() {
            from_sum(&x, &second)
        } else {
            x
        };
        assert_within(&y, &want_y, &checked, RTOL, &format!("{what}: y in place"));
    }
}

#[wasm_bindgen_test]
async fn the_family_fields_reject_in_place_and_f16_misuse_with_named_errors() {
    let norm = norm().await;
    let f = Family::all(2, 8, 0xFA_4000).swap_remove(3);
    let with = |key: &str, value: JsValue| {
        let a = f.args(None);
        Reflect::set(&a, &key.into(), &value).unwrap();
        a
    };
    let tensor = || {
        let a = f.args(None);
        Reflect::set(&a, &"input".into(), &upload(&norm, &f.case.input)).unwrap();
        Reflect::set(&a, &"residual".into(), &upload(&norm, &f.case.residual)).unwrap();
        Reflect::set(&a, &"inPlace".into(), &true.into()).unwrap();
        Reflect::set(&a, &"outputDtype".into(), &"f16".into()).unwrap();
        a
    };
    let odd = {
        let a = with("hidden", 6.0.into());
        for k in ["input", "residual"] {
            Reflect::set(&a, &k.into(), &Float32Array::new_with_length(12)).unwrap();
        }
        for k in ["gamma", "postGamma"] {
            Reflect::set(&a, &k.into(), &Float32Array::new_with_length(6)).unwrap();
        }
        unset(&a, "bias");
        unset(&a, "beta");
        Reflect::set(&a, &"outputDtype".into(), &"f16".into()).unwrap();
        a
    };
    // Beyond bad_arguments_reject_with_named_errors_and_the_instance_keeps_working's.
    let cases: Vec<(JsValue, &str, &str)> = vec![
        (
            with("gammaOffset", f64::NAN.into()),
            "ShapeError",
            "gammaOffset",
        ),
        (
            with("gammaOffset", 1e39.into()),
            "ShapeError",
            "gammaOffset",
        ),
        (
            with("postGamma", js_sys::Uint16Array::new_with_length(8).into()),
            "TypeError",
            "postGamma",
        ),
        (tensor(), "TypeError", "outputDtype"),
        (odd, "ShapeError", "hidden"),
    ];
    let good = Case::new(2, 8, true, true, 1e-6, 4001);
    for (args, name, field) in cases {
        let e = resolve(norm.run(args)).await.expect_err("a rejection");
        assert_eq!(error_name(&e), name, "{}", error_message(&e));
        assert!(
            error_message(&e).starts_with(&format!("{field}:")),
            "the message names {field}: {}",
            error_message(&e)
        );
        assert_still_works(&norm, &good, "after a rejection").await;
    }
}
