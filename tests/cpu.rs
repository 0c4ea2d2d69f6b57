//! The CPU backend's kernel (`src/cpu`) against the f64 reference: the shared case matrix,
//! random cases, rows that overflow or underflow f32, NaN and Inf, in place against out of
//! place, f16 storage, and the f16 conversions it uses against `dtype`'s.
#![cfg(not(target_arch = "wasm32"))]

use webgpu_rmsnorm::call::dtype::{f16_bits, f16_value};
use webgpu_rmsnorm::cpu::{half, norm_f16, norm_f16_in_place, norm_f32, norm_f32_in_place};
use webgpu_rmsnorm::reference::{fused_rms_norm, worst_error, Inputs};

/// Relative tolerance against the f64 reference (f32 math; see `worst_error`).
const RTOL: f64 = 1e-5;
/// For f16 storage: one rounding of the result to f16 is 2^-11 relative.
const RTOL_F16: f64 = 1e-3;

mod common;
use common::{assert_within, matrix, Case, Rng};

/// Bit for bit, except that any NaN matches any NaN.
fn same_bits(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

fn assert_same_bits(got: &[f32], want: &[f32], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    if let Some(at) = (0..got.len()).find(|&i| !same_bits(got[i], want[i])) {
        panic!("{what}: element {at} is {:e}, want {:e}", got[at], want[at]);
    }
}

/// What the CPU kernel gives for a case.
struct Run {
    y: Vec<f32>,
    v: Vec<f32>,
}

fn run_f32(case: &Case) -> Run {
    let n = case.input.len();
    let (mut y, mut v) = (vec![0.0; n], vec![0.0; n]);
    norm_f32(&case.inputs(), &mut y, Some(&mut v));
    Run { y, v }
}

fn run_f32_in_place(case: &Case) -> Run {
    let (y, v) = run_in_place(case, norm_f32_in_place);
    Run { y, v }
}

/// `(y, v)` of f16 storage out of place, checking on the way that `y` alone is the same.
fn run_f16(case: &Case<u16>) -> (Vec<u16>, Vec<u16>) {
    let x = case.inputs();
    let n = case.input.len();
    let (mut y, mut v) = (vec![0u16; n], vec![0u16; n]);
    norm_f16(&x, &mut y, Some(&mut v));
    let mut y_alone = vec![0u16; n];
    norm_f16(&x, &mut y_alone, None);
    assert_eq!(y_alone, y, "f16 y without v");
    (y, v)
}

/// The signature `norm_f32_in_place` and `norm_f16_in_place` share.
type InPlace<T> = fn(&mut [T], &mut [T], &[T], Option<&[T]>, Option<&[T]>, usize, f32);

/// `(y, v)` of an in-place kernel run over copies of the case's input and residual.
fn run_in_place<T: Clone>(case: &Case<T>, kernel: InPlace<T>) -> (Vec<T>, Vec<T>) {
    let (mut y, mut v) = (case.input.clone(), case.residual.clone());
    let x = case.inputs();
    kernel(&mut y, &mut v, x.gamma, x.beta, x.bias, x.hidden, x.eps);
    (y, v)
}

/// Checks a case on every f32 path: `y` within RTOL of the reference and `v` equal to it bit
/// for bit; `y` alone, and in place, bit for bit the same as `y` with `v`.
fn check(case: &Case, what: &str) {
    let x = case.inputs();
    let got = run_f32(case);
    let (want_y, want_v) = fused_rms_norm(&x);
    let err = worst_error(&got.y, &want_y, &x, RTOL);
    if err > 1.0 {
        let at = (0..got.y.len())
            .max_by(|&a, &b| {
                let d = |i: usize| (got.y[i] as f64 - want_y[i]).abs();
                d(a).total_cmp(&d(b))
            })
            .unwrap_or(0);
        panic!(
            "{what}: y is {err:.2} tolerances off the f64 reference; worst at {at}: got {:e}, \
             want {:e}, v {:e}",
            got.y[at], want_y[at], want_v[at]
        );
    }
    assert_same_bits(&got.v, &want_v, &format!("{what}: v"));

    let mut y_alone = vec![0.0; x.input.len()];
    norm_f32(&x, &mut y_alone, None);
    assert_same_bits(&y_alone, &got.y, &format!("{what}: y without v"));
    let in_place = run_f32_in_place(case);
    assert_same_bits(&in_place.y, &got.y, &format!("{what}: y in place"));
    assert_same_bits(&in_place.v, &got.v, &format!("{what}: v in place"));
}

#[test]
fn shape_matrix_matches_the_reference() {
    let mut rng = Rng(0x5EED_C001);
    let cells = matrix();
    for c in &cells {
        let case = Case::random(&mut rng, c.rows, c.hidden, c.bias, c.beta, c.eps, 1.0);
        check(&case, &c.to_string());
    }
    assert_eq!(cells.len(), 480);
}

#[test]
fn random_shapes_and_options_match_the_reference() {
    for (case, what) in Case::sweep(0x5EED_C002, 1000) {
        check(&case, &what);
    }
}

#[test]
fn huge_and_tiny_rows_normalize_like_rows_of_one() {
    let mut rng = Rng(0x5EED_C003);
    // 1e38 with bias stays finite (|v| < 3e38); 1e-40 is all f32 subnormals, which a CPU
    // keeps; eps 1e-2 on a tiny row overflows eps * scale² and takes the eps-only branch.
    let scales = [1.0f32, 1e30, 1e-30, 3e18, 1e-18, 1e36, 1e-36, 1e38, 1e-40];
    for hidden in [1usize, 4, 7, 16, 17, 4096, 4099] {
        for scale in scales {
            for eps in [0.0f32, 1e-6, 1e-2] {
                // Without beta too: a beta of ~1 would dominate each element's tolerance
                // (|v·inv·gamma| + |beta|) and could hide a wrong normalized term.
                for beta in [true, false] {
                    let case = Case::random(&mut rng, 5, hidden, true, beta, eps, scale);
                    check(
                        &case,
                        &format!("5x{hidden} at scale {scale:e}, eps {eps}, beta {beta}"),
                    );
                }
            }
        }
    }
}

#[test]
fn a_huge_row_with_tiny_values_in_it_matches_the_reference() {
    // Scaled down with the row, the tiny values drop into subnormals; their y is far below
    // what f32 can show next to the row's largest.
    let mut rng = Rng(0x5EED_C004);
    for hidden in [5usize, 64, 4099] {
        let mut case = Case::random(&mut rng, 3, hidden, false, false, 0.0, 1.0);
        for (i, x) in case.input.iter_mut().enumerate() {
            *x *= if i % 3 == 0 { 1e30 } else { 1e-30 };
        }
        check(&case, &format!("3x{hidden} mixing 1e30 and 1e-30"));
    }
}

#[test]
fn nan_and_inf_poison_only_their_own_row() {
    let mut rng = Rng(0x5EED_C005);
    for hidden in [4usize, 5, 4096] {
        let case = Case::poisoned(&mut rng, hidden);
        check(&case, &format!("4x{hidden} with NaN/Inf"));
        let y = run_f32(&case).y;
        assert!(y[..hidden].iter().all(|y| y.is_nan()), "NaN row is NaN");
        for row in [1, 2] {
            // The reference's y of a row with an Inf: NaN where the Inf is, beta elsewhere.
            let nans = y[row * hidden..(row + 1) * hidden]
                .iter()
                .filter(|y| y.is_nan())
                .count();
            assert_eq!(nans, 1, "Inf row {row}: NaN only where the Inf is");
        }
        assert!(
            y[3 * hidden..].iter().all(|y| y.is_finite()),
            "clean row stayed clean"
        );
    }
}

#[test]
fn a_row_of_zeros_is_nan_without_eps_and_beta_with_it() {
    let gamma = [1.0f32, -2.0, 0.5];
    let beta = [0.25f32, -1.0, 3.0];
    for eps in [0.0f32, 1e-6] {
        // -0 + -0 is -0, which `sum` must keep: no bias is not a bias of +0.
        let case = Case {
            input: vec![0.0, -0.0, 0.0, -0.0, -0.0, -0.0],
            residual: vec![-0.0; 6],
            gamma: gamma.to_vec(),
            beta: Some(beta.to_vec()),
            bias: None,
            hidden: 3,
            eps,
        };
        check(&case, &format!("zeros, eps {eps}"));
        let Run { y, v } = run_f32(&case);
        let signs: Vec<bool> = v.iter().map(|v| v.is_sign_negative()).collect();
        assert_eq!(
            signs,
            [false, true, false, true, true, true],
            "signs of zero in v"
        );
        if eps == 0.0 {
            assert!(y.iter().all(|y| y.is_nan()), "0/0: {y:?}");
        } else {
            assert_eq!(y, [beta, beta].concat());
        }
    }
}

#[test]
fn zero_rows_write_nothing_and_do_not_panic() {
    let (gamma, beta) = (vec![1.0f32; 8], vec![0.5f32; 8]);
    let x = Inputs {
        beta: Some(&beta),
        bias: Some(&beta),
        ..Inputs::plain(&[], &[], &gamma, 8)
    };
    let (mut y, mut v) = (Vec::<f32>::new(), Vec::<f32>::new());
    norm_f32(&x, &mut y, Some(&mut v));
    norm_f32(&x, &mut y, None);
    norm_f32_in_place(&mut y, &mut v, &gamma, Some(&beta), Some(&beta), 8, 0.0);
    let halves = vec![0x3c00u16; 8];
    let h = webgpu_rmsnorm::Inputs {
        bias: Some(&halves[..]),
        eps: 0.0,
        ..webgpu_rmsnorm::Inputs::plain(&[][..], &[][..], &halves[..], 8)
    };
    let (mut hy, mut hv) = (Vec::<u16>::new(), Vec::<u16>::new());
    norm_f16(&h, &mut hy, Some(&mut hv));
    norm_f16_in_place(&mut hy, &mut hv, &halves, None, None, 8, 1e-6);
    assert!(y.is_empty() && v.is_empty() && hy.is_empty() && hv.is_empty());
}

#[test]
fn in_place_is_out_of_place_bit_for_bit_at_every_scale() {
    let mut rng = Rng(0x5EED_C006);
    for (rows, hidden) in [(3usize, 4096usize), (4, 4099), (2, 20000), (5, 7), (9, 1)] {
        for scale in [1.0f32, 1e30, 1e-30] {
            let case = Case::random(&mut rng, rows, hidden, true, true, 1e-6, scale);
            let (out, in_place) = (run_f32(&case), run_f32_in_place(&case));
            let what = format!("{rows}x{hidden} at {scale:e}");
            assert_same_bits(&in_place.y, &out.y, &format!("{what}: y"));
            assert_same_bits(&in_place.v, &out.v, &format!("{what}: v"));
            let hcase = case.halves();
            let (hout, hin_place) = (run_f16(&hcase), run_in_place(&hcase, norm_f16_in_place));
            assert_eq!(hin_place.0, hout.0, "{what}: f16 y");
            assert_eq!(hin_place.1, hout.1, "{what}: f16 v");
        }
    }
}

/// f16 storage against the f64 reference of the same halves widened to f32 (as the f32
/// path sees them), and, exactly, each result the one f16 rounding of the f32 path's.
#[test]
fn f16_storage_matches_the_reference_of_the_widened_halves() {
    let mut rng = Rng(0x5EED_C007);
    let shapes = [
        (3usize, 4usize, false, false),
        (5, 768, true, true),
        (2, 4096, true, false),
        (7, 132, false, true),
        (4, 5, true, true),
        (3, 4099, false, false),
    ];
    let smallest_normal = f16_value(0x0400) as f64;
    // 1e-6: f16 subnormal inputs; 1e4: v near the top of f16's range.
    for scale in [1.0f32, 1e-6, 1e4] {
        for (rows, hidden, bias, beta) in shapes {
            let what = format!("f16 {rows}x{hidden} at {scale:e} bias={bias} beta={beta}");
            let case = Case::random(&mut rng, rows, hidden, bias, beta, 1e-6, scale);
            let halves = case.halves();
            let (y, v) = run_f16(&halves);
            let widened = halves.widened();
            check(&widened, &format!("{what}, widened, on the f32 path"));
            let f32_path = run_f32(&widened);
            let rounded: Vec<u16> = f32_path.y.iter().map(|&x| f16_bits(x)).collect();
            assert_eq!(y, rounded, "{what}: y is the f32 path's rounded once");
            let want_v: Vec<u16> = f32_path.v.iter().map(|&x| f16_bits(x)).collect();
            assert_eq!(v, want_v, "{what}: v is the f32 sum rounded once");
            assert_eq!(
                run_in_place(&halves, norm_f16_in_place),
                (y.clone(), v),
                "{what}: in place"
            );

            // Where y is an f16 subnormal its rounding is absolute (up to 2^-25), which a
            // relative tolerance cannot express; there the exact checks above hold it.
            let r = widened.inputs();
            let (want_y, _) = fused_rms_norm(&r);
            let got: Vec<f32> = y
                .iter()
                .zip(&want_y)
                .map(|(&h, &w)| {
                    if w.abs() < smallest_normal {
                        w as f32
                    } else {
                        f16_value(h)
                    }
                })
                .collect();
            assert_within(&got, &want_y, &r, RTOL_F16, &what);
        }
    }
}

#[test]
fn half_to_f32_agrees_with_dtype_on_all_65536_halves() {
    for h in 0..=u16::MAX {
        let (fast, slow) = (half::to_f32(h), f16_value(h));
        if slow.is_nan() {
            // NaN keeps its sign and payload, as hardware conversions do.
            assert!(fast.is_nan(), "{h:#06x}");
            assert_eq!(fast.to_bits() >> 31, (h >> 15) as u32, "{h:#06x} sign");
            assert_eq!(fast.to_bits() & 0x7f_ffff, ((h & 0x3ff) as u32) << 13);
            assert_eq!(half::from_f32(fast), (h & 0x8000) | 0x7e00);
        } else {
            assert_eq!(
                fast.to_bits(),
                slow.to_bits(),
                "{h:#06x}: {fast:e} vs {slow:e}"
            );
            assert_eq!(half::from_f32(fast), h, "{h:#06x} round trip");
        }
    }
}

fn assert_rounds_like_dtype(x: f32) {
    assert_eq!(
        half::from_f32(x),
        f16_bits(x),
        "{x:e} ({:#010x})",
        x.to_bits()
    );
}

#[test]
fn f32_to_half_agrees_with_dtype_on_ties_subnormals_overflow_and_nan() {
    // Every tie between neighbouring halves (exact in f32), and the f32 on each side of it;
    // the last is 65520, between the largest half and 65536, which rounds to Inf.
    for h in 0..0x7c00u16 {
        let (lo, hi) = (f16_value(h) as f64, f16_value(h + 1) as f64);
        let hi = if h + 1 == 0x7c00 { 65536.0 } else { hi };
        let tie = ((lo + hi) / 2.0) as f32;
        assert_eq!(tie as f64, (lo + hi) / 2.0, "ties are exact in f32");
        for bits in [tie.to_bits() - 1, tie.to_bits(), tie.to_bits() + 1] {
            assert_rounds_like_dtype(f32::from_bits(bits));
            assert_rounds_like_dtype(-f32::from_bits(bits));
        }
    }
    // Every f32 in the binades where halves turn subnormal, and where they overflow.
    for exponent in [101u32, 102, 112, 113, 142, 143] {
        for mantissa in 0..1u32 << 23 {
            let bits = exponent << 23 | mantissa;
            assert_rounds_like_dtype(f32::from_bits(bits));
            assert_rounds_like_dtype(f32::from_bits(bits | 0x8000_0000));
        }
    }
    // A spread over all f32 bit patterns: every exponent, subnormal f32s, Inf, NaNs.
    for bits in (0..=u32::MAX).step_by(997) {
        assert_rounds_like_dtype(f32::from_bits(bits));
    }
    for bits in [
        0,
        1,
        0x7f_ffff,
        0x7f80_0000,
        0x7f80_0001,
        0x7fc0_0000,
        0x7fff_ffff,
        0x7f7f_ffff,
        0x3380_0000,
        0x3300_0000,
        0x3300_0001,
    ] {
        assert_rounds_like_dtype(f32::from_bits(bits));
        assert_rounds_like_dtype(f32::from_bits(bits | 0x8000_0000));
    }
}
