//! The CPU backend's kernel (`src/cpu`) against the f64 reference: the shared case matrix,
//! random cases, every option of the normalization family (RMSNorm and LayerNorm, with and
//! without a residual, the sandwich's post-norm, a gamma offset), LayerNorm rows whose mean
//! dwarfs their spread, QK-norm's shapes, rows that overflow or underflow f32, NaN and Inf,
//! in place against out of place, f16 storage and f16 output, and the f16 conversions it
//! uses against `dtype`'s; the browser's path through scratch memory reused across calls.
#![cfg(not(target_arch = "wasm32"))]

use std::fmt;

use webgpu_rmsnorm::call::dtype::{f16_bits, f16_value, Dtype};
use webgpu_rmsnorm::call::error::Error;
use webgpu_rmsnorm::call::shape::{Norm, NormKind};
use webgpu_rmsnorm::cpu::driver::CpuContext;
use webgpu_rmsnorm::cpu::scratch::{lay_out, Span, BLOCK};
use webgpu_rmsnorm::cpu::{half, norm, norm_in_place, Element};
use webgpu_rmsnorm::reference::{
    from_sum, norm_family, same_sum, worst_error, worst_error_at, GenericInputs, Inputs,
};
use webgpu_rmsnorm::Request;

/// Relative tolerance against the f64 reference (f32 math; see `worst_error`).
const RTOL: f64 = 1e-5;
/// For f16 results: one rounding to f16 (2^-11 relative) on top of the f32 math.
const RTOL_F16: f64 = 1e-5 + 1.0 / 2048.0;

mod common;
use common::{matrix, Case, Rng};

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

/// The options of the family beyond a case's arrays.
#[derive(Clone, Copy, Debug)]
struct Family {
    kind: NormKind,
    residual: bool,
    /// The sandwich's post-norm.
    post: bool,
    /// A parallel block's `input2`.
    parallel: bool,
    gamma_offset: f32,
}

impl Family {
    /// Today's call: RMSNorm of `input + residual`.
    const PRE_NORM: Family = Family {
        kind: NormKind::Rms,
        residual: true,
        post: false,
        parallel: false,
        gamma_offset: 0.0,
    };

    /// The `i`-th of the 16 combinations of kind, residual, post-norm and offset 0 or 1;
    /// from 16, the 8 without a post-norm as parallel blocks.
    fn nth(i: usize) -> Family {
        let parallel = i >= 16;
        let i = if parallel { i & 3 | (i & 4) << 1 } else { i };
        Family {
            kind: [NormKind::Rms, NormKind::Layer][i & 1],
            residual: i & 2 == 0,
            post: i & 4 != 0,
            parallel,
            gamma_offset: [0.0, 1.0][(i >> 3) & 1],
        }
    }

    fn all() -> impl Iterator<Item = Family> {
        (0..24).map(Family::nth)
    }

    fn layer(self) -> bool {
        self.kind == NormKind::Layer
    }
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Family {
            kind,
            residual,
            post,
            parallel,
            gamma_offset,
        } = self;
        write!(
            f,
            "{} residual={residual} post={post} parallel={parallel} offset={gamma_offset}",
            kind.name()
        )
    }
}

/// A case with a family's options, and the post-norm's gamma the family may use.
struct Call<T = f32> {
    case: Case<T>,
    post_gamma: Vec<T>,
    input2: Vec<T>,
    family: Family,
}

impl Call {
    fn new(rng: &mut Rng, case: Case, family: Family) -> Call {
        Call {
            post_gamma: rng.vec(case.hidden, 2.0),
            input2: rng.vec(case.input.len(), 1.0),
            case,
            family,
        }
    }

    fn random(
        rng: &mut Rng,
        (rows, hidden): (usize, usize),
        bias: bool,
        beta: bool,
        eps: f32,
        scale: f32,
        family: Family,
    ) -> Call {
        let case = Case::random(rng, rows, hidden, bias, beta, eps, scale);
        Call::new(rng, case, family)
    }

    fn halves(&self) -> Call<u16> {
        Call {
            case: self.case.halves(),
            post_gamma: self.post_gamma.iter().map(|&g| f16_bits(g)).collect(),
            input2: self.input2.iter().map(|&g| f16_bits(g)).collect(),
            family: self.family,
        }
    }
}

impl Call<u16> {
    fn widened(&self) -> Call {
        Call {
            case: self.case.widened(),
            post_gamma: self.post_gamma.iter().map(|&g| f16_value(g)).collect(),
            input2: self.input2.iter().map(|&g| f16_value(g)).collect(),
            family: self.family,
        }
    }
}

impl<T> Call<T> {
    fn inputs(&self) -> GenericInputs<&[T]> {
        let f = self.family;
        GenericInputs {
            residual: f.residual.then_some(&self.case.residual[..]),
            post_gamma: f.post.then_some(&self.post_gamma[..]),
            input2: f.parallel.then_some(&self.input2[..]),
            norm: Norm {
                kind: f.kind,
                gamma_offset: f.gamma_offset,
                output_dtype: None,
            },
            ..self.case.inputs()
        }
    }
}

/// What the CPU kernel gives for a call: `y` in `O`, `v` in the data's `T`.
struct Run<T = f32, O = T> {
    y: Vec<O>,
    v: Vec<T>,
}

fn run<T: Element + Default, O: Element + Default>(x: &GenericInputs<&[T]>) -> Run<T, O> {
    let n = x.input.len();
    let (mut y, mut v) = (vec![O::default(); n], vec![T::default(); n]);
    norm(x, &mut y, Some(&mut v)).unwrap();
    let mut y_alone = vec![O::default(); n];
    norm(x, &mut y_alone, None).unwrap();
    let bits = |y: &[O]| y.iter().map(|&y| y.widen().to_bits()).collect::<Vec<_>>();
    assert!(bits(&y_alone) == bits(&y), "y without v differs");
    Run { y, v }
}

/// `(y, v)` of the in-place kernel over copies of the call's input and residual; `v` is
/// empty without a residual.
fn run_in_place<T: Element>(x: &GenericInputs<&[T]>) -> (Vec<T>, Vec<T>) {
    let mut y = x.input.to_vec();
    let mut v = x.residual.map(<[T]>::to_vec);
    norm_in_place(&mut y, v.as_deref_mut(), x).unwrap();
    (y, v.unwrap_or_default())
}

/// Panics unless `got` is within `rtol` of the reference of `x`, naming the worst element.
fn assert_y(got: &[f32], x: &Inputs, rtol: f64, what: &str) {
    let (want, v) = norm_family(x);
    let (err, at) = worst_error_at(got, &want, x, rtol);
    assert!(
        err <= 1.0,
        "{what}: y is {err:.2} tolerances off the f64 reference; worst at {at}: got {:e}, \
         want {:e}, v {:e}",
        got[at],
        want[at],
        v[at]
    );
}

/// The reference `y` is checked against: that of `x`, or with a post-norm that of the `v`
/// the kernel formed (`v = residual + w` holds `w` rounded in f32, and LayerNorm's `y` of an
/// element near the mean is a relative error of that rounding), `v` being checked against
/// the reference's on its own.
fn y_reference<'a>(x: &Inputs<'a>, v: &'a [f32]) -> Inputs<'a> {
    if x.post_gamma.is_some() {
        from_sum(x, v)
    } else {
        x.clone()
    }
}

/// Checks a call on every f32 path: `v` the reference's (bit for bit without a post-norm),
/// `y` within RTOL of the reference; `y` alone, and in place, bit for bit the same as `y`
/// with `v`; `y` as f16 the one rounding of it.
fn check(x: &Inputs, what: &str) -> Run {
    let got = run(x);
    let (_, want_v) = norm_family(x);
    if x.post_gamma.is_some() {
        assert!(
            same_sum(x, &got.v, &want_v),
            "{what}: v off the reference's"
        );
    } else {
        assert_same_bits(&got.v, &want_v, &format!("{what}: v"));
    }
    assert_y(&got.y, &y_reference(x, &got.v), RTOL, what);
    let (y, v) = run_in_place(x);
    assert_same_bits(&y, &got.y, &format!("{what}: y in place"));
    if x.residual.is_some() {
        assert_same_bits(&v, &got.v, &format!("{what}: v in place"));
    }
    check_f16_output(x, &got, what);
    got
}

/// `y` in f16 from f32 data: each the f32 path's `y` rounded once, `v` still in f32, and so
/// within one f16 rounding of the reference.
fn check_f16_output(x: &Inputs, f32_path: &Run, what: &str) {
    let got: Run<f32, u16> = run(x);
    let rounded: Vec<u16> = f32_path.y.iter().map(|&y| f16_bits(y)).collect();
    assert!(
        got.y == rounded,
        "{what}: f16 y is not the f32 y rounded once"
    );
    assert_same_bits(&got.v, &f32_path.v, &format!("{what}: v with f16 y"));
    assert_f16_y(&got.y, &y_reference(x, &f32_path.v), what);
}

/// f16 results within one f16 rounding of the reference of `x`. Where `y` is an f16
/// subnormal its rounding is absolute (up to 2^-25), which a relative tolerance cannot
/// express; there the exact checks against the f32 path hold it.
fn assert_f16_y(y: &[u16], x: &Inputs, what: &str) {
    let smallest_normal = f16_value(0x0400) as f64;
    let (want, _) = norm_family(x);
    let got: Vec<f32> = y
        .iter()
        .zip(&want)
        .map(|(&h, &w)| {
            if w.abs() < smallest_normal {
                w as f32
            } else {
                f16_value(h)
            }
        })
        .collect();
    assert_y(&got, x, RTOL_F16, &format!("{what}, f16 y"));
}

/// f16 data against the f64 reference of the same halves widened to f32 (as the f32 path
/// sees them), and, exactly, each result the one f16 rounding of the f32 path's; in place,
/// and with `y` in f32, the same results.
fn check_halves(halves: &Call<u16>, what: &str) {
    let h = halves.inputs();
    let got: Run<u16> = run(&h);
    let widened = halves.widened();
    let w = widened.inputs();
    let f32_path = check(&w, &format!("{what}, widened, on the f32 path"));
    let round = |xs: &[f32]| xs.iter().map(|&x| f16_bits(x)).collect::<Vec<_>>();
    assert_eq!(
        got.y,
        round(&f32_path.y),
        "{what}: y is the f32 path's rounded once"
    );
    assert_eq!(
        got.v,
        round(&f32_path.v),
        "{what}: v is the f32 sum rounded once"
    );
    let (y, v) = run_in_place(&h);
    assert_eq!(y, got.y, "{what}: y in place");
    if h.residual.is_some() {
        assert_eq!(v, got.v, "{what}: v in place");
    }
    let f32_y: Run<u16, f32> = run(&h);
    assert_same_bits(&f32_y.y, &f32_path.y, &format!("{what}: f32 y of f16 data"));
    assert_eq!(f32_y.v, got.v, "{what}: f16 v with f32 y");
    assert_f16_y(&got.y, &y_reference(&w, &f32_path.v), what);
}

#[test]
fn shape_matrix_matches_the_reference() {
    let mut rng = Rng(0x5EED_C001);
    let cells = matrix();
    for c in &cells {
        let case = Case::random(&mut rng, c.rows, c.hidden, c.bias, c.beta, c.eps, 1.0);
        check(&case.inputs(), &c.to_string());
    }
    assert_eq!(cells.len(), 480);
}

#[test]
fn random_shapes_and_options_match_the_reference() {
    let mut rng = Rng(0x5EED_C002);
    for (i, (case, what)) in Case::sweep(0x5EED_C002, 1000).enumerate() {
        check(&case.inputs(), &what);
        // The same case again with one of the family's options, in turn.
        let call = Call::new(&mut rng, case, Family::nth(i));
        check(&call.inputs(), &format!("{what}, {}", call.family));
    }
}

/// Every combination of kind, residual, post-norm, gamma offset, bias and beta, in f32 and
/// in f16 storage (both also with `y` in the other dtype), at short, odd and long rows.
#[test]
fn every_option_of_the_family_matches_the_reference() {
    let mut rng = Rng(0x5EED_C008);
    let shapes = [
        (5usize, 1usize),
        (7, 3),
        (4, 64),
        (3, 768),
        (2, 4099),
        (2, 16384),
    ];
    for family in Family::all() {
        for bits in 0..4u8 {
            let (bias, beta) = (bits & 1 != 0, bits & 2 != 0);
            for (rows, hidden) in shapes {
                for eps in [0.0f32, 1e-6] {
                    let what =
                        format!("{rows}x{hidden} {family} bias={bias} beta={beta} eps={eps}");
                    let call = Call::random(&mut rng, (rows, hidden), bias, beta, eps, 1.0, family);
                    check(&call.inputs(), &what);
                    if hidden % 4 == 0 {
                        check_halves(&call.halves(), &format!("f16 {what}"));
                    }
                }
            }
        }
    }
}

/// LayerNorm where the mean is 10^4 times the spread and more (values 1e4 ± 1, and a
/// residual as large: 2e4 ± 2), at scales from 1e-20 to 1e20 and of both signs.
#[test]
fn layer_norm_is_exact_where_the_mean_dwarfs_the_spread() {
    let mut rng = Rng(0x5EED_C009);
    for hidden in [1024usize, 4096, 16384] {
        for family in Family::all().filter(|f| f.layer()) {
            for (mean, scale) in [(1e4f32, 1.0f32), (-1e4, 1e-20), (1e4, 1e20)] {
                for beta in [false, true] {
                    let mut call =
                        Call::random(&mut rng, (4, hidden), true, beta, 1e-6, 1.0, family);
                    let case = &mut call.case;
                    for x in case.input.iter_mut().chain(&mut case.residual) {
                        *x = (*x + mean) * scale;
                    }
                    for b in case.bias.iter_mut().flatten() {
                        *b *= scale;
                    }
                    let what = format!("{hidden} {family} beta={beta} mean {mean:e} x {scale:e}");
                    check(&call.inputs(), &what);
                }
            }
        }
    }
}

/// The tolerance catches what a kernel could get wrong: the one-pass `E[x²] − E[x]²` and
/// a mean in f32 (centred on it, or on the row shifted by its first value) where the kernel
/// sums the mean in f64, a wrong gamma offset, kind or post-norm.
#[test]
fn the_checks_fail_the_shortcuts_and_the_mistakes() {
    let mut rng = Rng(0x5EED_C00A);
    let layer = |residual, post, gamma_offset| Family {
        kind: NormKind::Layer,
        residual,
        post,
        parallel: false,
        gamma_offset,
    };
    // LayerNorm in f32 of rows of `input` alone, centred by `centre`: (x - mean, variance).
    type Centre = fn(&[f32]) -> (Vec<f32>, f32);
    fn in_f32(x: &Inputs, centre: Centre) -> Vec<f32> {
        x.input
            .chunks(x.hidden)
            .flat_map(|row| {
                let (c, var) = centre(row);
                let inv = 1.0 / (var + x.eps).sqrt();
                c.into_iter()
                    .zip(x.gamma.unwrap())
                    .map(move |(c, g)| c * inv * g)
            })
            .collect()
    }
    fn mean(xs: &[f32]) -> f32 {
        xs.iter().sum::<f32>() / xs.len() as f32
    }
    fn centred(row: &[f32], m: f32) -> (Vec<f32>, f32) {
        let c: Vec<f32> = row.iter().map(|x| x - m).collect();
        let var = mean(&c.iter().map(|c| c * c).collect::<Vec<_>>());
        (c, var)
    }
    let one_pass: Centre = |row| {
        let m = mean(row);
        let var = mean(&row.iter().map(|x| x * x).collect::<Vec<_>>()) - m * m;
        (row.iter().map(|x| x - m).collect(), var)
    };
    let two_pass: Centre = |row| centred(row, mean(row));
    let shifted: Centre = |row| {
        let t: Vec<f32> = row.iter().map(|x| x - row[0]).collect();
        centred(&t, mean(&t))
    };
    let wide = Call::random(
        &mut rng,
        (4, 1024),
        false,
        false,
        1e-6,
        1.0,
        layer(false, false, 0.0),
    );
    let mut narrow = Call::random(&mut rng, (4, 1024), false, false, 1e-6, 1.0, wide.family);
    narrow.case.input.iter_mut().for_each(|x| *x += 1e4);
    for (call, centre, name) in [
        (&narrow, one_pass, "E[x²] − E[x]²"),
        (&narrow, two_pass, "mean in f32"),
        (&wide, shifted, "mean in f32 of the shifted row"),
    ] {
        let x = call.inputs();
        check(&x, name);
        let (want, _) = norm_family(&x);
        let err = worst_error(&in_f32(&x, centre), &want, &x, RTOL);
        assert!(err > 1.0, "{name}: {err:.2} tolerances off, and would pass");
    }
    // The kernel's results for a call checked against the reference of another.
    let call = Call::random(
        &mut rng,
        (4, 768),
        true,
        true,
        1e-6,
        1.0,
        layer(true, true, 1.0),
    );
    let x = call.inputs();
    let y = run::<f32, f32>(&x).y;
    let rms = Norm {
        kind: NormKind::Rms,
        ..x.norm
    };
    let no_offset = Norm {
        gamma_offset: 0.0,
        ..x.norm
    };
    for (wrong, name) in [
        (
            Inputs {
                norm: no_offset,
                ..x.clone()
            },
            "gamma offset",
        ),
        (
            Inputs {
                norm: rms,
                ..x.clone()
            },
            "kind",
        ),
        (
            Inputs {
                post_gamma: None,
                ..x.clone()
            },
            "post-norm",
        ),
        (
            Inputs {
                residual: None,
                ..x.clone()
            },
            "residual",
        ),
    ] {
        let (want, _) = norm_family(&wrong);
        let err = worst_error(&y, &want, &wrong, RTOL);
        assert!(
            err > 1.0,
            "a wrong {name} is {err:.2} tolerances off, and would pass"
        );
    }
    // y as f16 rounded the other way is one f16 ulp off: more than one rounding allows.
    let x = Call::random(
        &mut rng,
        (4, 768),
        false,
        false,
        1e-6,
        1.0,
        Family::PRE_NORM,
    );
    let x = x.inputs();
    let y: Vec<u16> = run::<f32, u16>(&x).y.iter().map(|&h| h ^ 1).collect();
    // The call's inputs hold no state a panic could leave half-changed.
    let check = std::panic::AssertUnwindSafe(|| assert_f16_y(&y, &x, "off by an ulp"));
    let result = std::panic::catch_unwind(check);
    assert!(result.is_err(), "an f16 y one ulp off passes");
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
                    let what = format!("5x{hidden} at scale {scale:e}, eps {eps}, beta {beta}");
                    check(&case.inputs(), &what);
                }
            }
        }
    }
}

/// Both normalizations of the sandwich, and LayerNorm's, rescale rows whose squares leave
/// f32 (and LayerNorm's centring keeps rows near f32's largest finite), with and without a
/// residual.
#[test]
fn huge_and_tiny_rows_normalize_like_rows_of_one_in_the_whole_family() {
    let mut rng = Rng(0x5EED_C00B);
    let scales = [1e30f32, 1e-30, 3e18, 1e-18, 1e38, 1e-40];
    let families = Family::all().filter(|f| f.post || f.layer());
    for family in families {
        for hidden in [1usize, 7, 64, 4099] {
            for scale in scales {
                for eps in [0.0f32, 1e-6, 1e-2] {
                    for beta in [true, false] {
                        let shape = (5, hidden);
                        let call = Call::random(&mut rng, shape, true, beta, eps, scale, family);
                        let what =
                            format!("5x{hidden} {family} at {scale:e}, eps {eps}, beta {beta}");
                        check(&call.inputs(), &what);
                    }
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
        for family in [Family::PRE_NORM, Family::nth(1), Family::nth(5)] {
            let mut call = Call::random(&mut rng, (3, hidden), false, false, 0.0, 1.0, family);
            for (i, x) in call.case.input.iter_mut().enumerate() {
                *x *= if i % 3 == 0 { 1e30 } else { 1e-30 };
            }
            check(
                &call.inputs(),
                &format!("3x{hidden} {family} mixing 1e30 and 1e-30"),
            );
        }
    }
}

/// QK-norm: every attention head's query or key normalized on its own, no residual; rows of
/// 64 and 128 by the ten thousand.
#[test]
fn qk_norm_shapes_match_the_reference() {
    let mut rng = Rng(0x5EED_C00C);
    for (rows, hidden) in [(20000usize, 64usize), (10000, 128)] {
        for family in Family::all().filter(|f| !f.residual && !f.post) {
            let call = Call::random(&mut rng, (rows, hidden), false, false, 1e-6, 1.0, family);
            check(&call.inputs(), &format!("{rows}x{hidden} {family}"));
        }
    }
}

#[test]
fn nan_and_inf_poison_only_their_own_row() {
    let mut rng = Rng(0x5EED_C005);
    for hidden in [4usize, 5, 4096] {
        let case = Case::poisoned(&mut rng, hidden);
        let y = check(&case.inputs(), &format!("4x{hidden} with NaN/Inf")).y;
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
        for family in Family::all() {
            let case = Case::poisoned(&mut rng, hidden);
            let call = Call::new(&mut rng, case, family);
            let what = format!("4x{hidden} {family} with NaN/Inf");
            let y = check(&call.inputs(), &what).y;
            assert!(y[..hidden].iter().all(|y| y.is_nan()), "{what}: NaN row");
            // LayerNorm's mean carries an Inf to the whole row; RMSNorm's (without a
            // post-norm) only to where it is.
            assert!(
                y[hidden..2 * hidden].iter().any(|y| y.is_nan()),
                "{what}: Inf row"
            );
            assert!(
                y[3 * hidden..].iter().all(|y| y.is_finite()),
                "{what}: clean row"
            );
        }
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
        let Run { y, v } = check(&case.inputs(), &format!("zeros, eps {eps}"));
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

/// A row of one value has no spread: LayerNorm gives beta (NaN without eps), also where the
/// value is near f32's largest and the row is rescaled before it is centred.
#[test]
fn a_constant_row_under_layer_norm_is_beta_or_nan() {
    let beta = vec![0.25f32, -1.0, 3.0, 0.5];
    for value in [1.0f32, -3e38, 1e-40, 7e4] {
        for eps in [0.0f32, 1e-6] {
            let case = Case {
                input: vec![value; 8],
                residual: vec![0.0; 8],
                gamma: vec![1.0, -2.0, 0.5, 4.0],
                beta: Some(beta.clone()),
                bias: None,
                hidden: 4,
                eps,
            };
            let call = Call {
                post_gamma: vec![1.0; 4],
                input2: vec![],
                case,
                family: Family::nth(1),
            };
            let y = check(&call.inputs(), &format!("{value:e}, eps {eps}")).y;
            if eps == 0.0 {
                assert!(y.iter().all(|y| y.is_nan()), "0/0: {y:?}");
            } else {
                assert_eq!(y, [&beta[..], &beta].concat(), "{value:e}");
            }
        }
    }
}

/// Values of both signs near f32's largest, most of one sign: `x - mean` passes f32's
/// largest, and LayerNorm (also the post-norm's) still gives the reference's finite rows.
#[test]
fn layer_norm_of_rows_near_f32s_largest_stays_finite() {
    let mut rng = Rng(0x5EED_C00D);
    for hidden in [4usize, 17, 4099] {
        for family in Family::all().filter(|f| f.layer() && !f.residual) {
            let mut call = Call::random(&mut rng, (3, hidden), false, true, 1e-6, 1.0, family);
            for (i, x) in call.case.input.iter_mut().enumerate() {
                let magnitude = 1e38 + 2.4e38 * x.abs();
                *x = if i % hidden == 0 {
                    magnitude
                } else {
                    -magnitude
                };
            }
            let what = format!("3x{hidden} {family} near ±3.4e38");
            let y = check(&call.inputs(), &what).y;
            assert!(y.iter().all(|y| y.is_finite()), "{what}: {:?}", &y[..4]);
        }
    }
}

#[test]
fn zero_rows_write_nothing_and_do_not_panic() {
    let (gamma, beta) = (vec![1.0f32; 8], vec![0.5f32; 8]);
    for family in Family::all() {
        let case = Case {
            input: vec![],
            residual: vec![],
            gamma: gamma.clone(),
            beta: Some(beta.clone()),
            bias: Some(beta.clone()),
            hidden: 8,
            eps: 0.0,
        };
        let call = Call {
            case,
            post_gamma: gamma.clone(),
            input2: vec![],
            family,
        };
        let x = call.inputs();
        let (mut y, mut v) = (Vec::<f32>::new(), Vec::<f32>::new());
        norm(&x, &mut y, Some(&mut v)).unwrap();
        norm(&x, &mut y, None).unwrap();
        norm_in_place(&mut y, Some(&mut v), &x).unwrap();
        norm_in_place(&mut y, None, &x).unwrap();
        let halves = call.halves();
        let h = halves.inputs();
        let (mut hy, mut hv) = (Vec::<u16>::new(), Vec::<u16>::new());
        norm(&h, &mut hy, Some(&mut hv)).unwrap();
        norm(&h, &mut y, Some(&mut hv)).unwrap();
        norm_in_place(&mut hy, Some(&mut hv), &h).unwrap();
        assert!(y.is_empty() && v.is_empty() && hy.is_empty() && hv.is_empty());
    }
}

#[test]
fn in_place_is_out_of_place_bit_for_bit_at_every_scale() {
    let mut rng = Rng(0x5EED_C006);
    for (rows, hidden) in [(3usize, 4096usize), (4, 4099), (2, 20000), (5, 7), (9, 1)] {
        for scale in [1.0f32, 1e30, 1e-30] {
            for family in [
                Family::PRE_NORM,
                Family::nth(2),
                Family::nth(5),
                Family::nth(15),
            ] {
                let shape = (rows, hidden);
                let call = Call::random(&mut rng, shape, true, true, 1e-6, scale, family);
                let x = call.inputs();
                let (out, in_place) = (run::<f32, f32>(&x), run_in_place(&x));
                let what = format!("{rows}x{hidden} {family} at {scale:e}");
                assert_same_bits(&in_place.0, &out.y, &format!("{what}: y"));
                let halves = call.halves();
                let h = halves.inputs();
                let (hout, hin_place) = (run::<u16, u16>(&h), run_in_place(&h));
                assert_eq!(hin_place.0, hout.y, "{what}: f16 y");
                if family.residual {
                    assert_same_bits(&in_place.1, &out.v, &format!("{what}: v"));
                    assert_eq!(hin_place.1, hout.v, "{what}: f16 v");
                }
            }
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
    // 1e-6: f16 subnormal inputs; 1e4: v near the top of f16's range.
    for scale in [1.0f32, 1e-6, 1e4] {
        for (rows, hidden, bias, beta) in shapes {
            for family in [Family::PRE_NORM, Family::nth(3), Family::nth(13)] {
                let what =
                    format!("f16 {rows}x{hidden} {family} at {scale:e} bias={bias} beta={beta}");
                let shape = (rows, hidden);
                let call = Call::random(&mut rng, shape, bias, beta, 1e-6, scale, family);
                check_halves(&call.halves(), &what);
            }
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

/// What the browser's fast path (`js/cpu_call.rs`) does with one scratch region kept across
/// calls: lays the call out, checks it, copies its arrays in (as JavaScript's `set()` does,
/// byte for byte), computes there; returns `y` and `v` read back from where the layout says,
/// after each block where `per_block` (results into the caller's arrays), else at the end.
fn staged<T: Element, O: Element>(
    scratch: &mut Vec<u32>,
    x: &GenericInputs<&[T]>,
    output_dtype: Option<Dtype>,
    sum: bool,
    per_block: bool,
) -> Result<(Vec<O>, Option<Vec<T>>), Error> {
    let dtype = if std::mem::size_of::<T>() == 2 {
        Dtype::F16
    } else {
        Dtype::F32
    };
    let span = |a: &[T]| Span::of(a.len(), dtype);
    let mut spans = GenericInputs {
        input: span(x.input),
        residual: x.residual.map(span),
        input2: x.input2.map(span),
        gamma: x.gamma.map(span),
        beta: x.beta.map(span),
        bias: x.bias.map(span),
        post_gamma: x.post_gamma.map(span),
        hidden: x.hidden,
        eps: x.eps,
        norm: Norm {
            output_dtype,
            ..x.norm
        },
        rotary: x.rotary.clone(),
    };
    let ctx = CpuContext::default();
    ctx.check_staged(&spans, sum)?;
    let at = lay_out(&mut spans, sum, per_block)?;
    assert_eq!(at.per_block, per_block && at.block < at.total);
    assert!(
        at.block.is_multiple_of(x.hidden.max(1)) && at.block <= BLOCK.max(x.hidden),
        "a block of whole rows, BLOCK elements or one row"
    );
    if scratch.len() < at.words {
        scratch.resize(at.words, 0);
    }
    let copy = |scratch: &mut Vec<u32>, a: &[T], s: Span| {
        assert!(s.at * 4 + s.len * dtype.bytes() <= scratch.len() * 4);
        // SAFETY: plain numbers viewed as bytes, within both allocations (checked above).
        unsafe {
            let to = scratch.as_mut_ptr().add(s.at).cast::<u8>();
            std::ptr::copy_nonoverlapping(a.as_ptr().cast::<u8>(), to, s.len * dtype.bytes());
        }
    };
    let columns = [x.gamma, x.beta, x.bias, x.post_gamma];
    let placed = [spans.gamma, spans.beta, spans.bias, spans.post_gamma];
    for (a, s) in columns
        .into_iter()
        .zip(placed)
        .filter_map(|(a, s)| a.zip(s))
    {
        copy(scratch, a, s);
    }
    fn read<E: Element>(scratch: &[u32], s: Span) -> Vec<E> {
        assert!(s.at * 4 + s.len * std::mem::size_of::<E>() <= scratch.len() * 4);
        // SAFETY: in bounds (checked above); u32 alignment covers f32 and u16.
        unsafe { std::slice::from_raw_parts(scratch.as_ptr().add(s.at).cast::<E>(), s.len) }
            .to_vec()
    }
    let (mut y, mut v) = (Vec::new(), sum.then(Vec::new));
    for (from, len) in at.blocks() {
        let (block, block_at) = at.cut(&spans, from, len);
        copy(scratch, &x.input[from..from + len], block.input);
        for (r, s) in [(x.residual, block.residual), (x.input2, block.input2)] {
            if let (Some(r), Some(s)) = (r, s) {
                copy(scratch, &r[from..from + len], s);
            }
        }
        // Only as much scratch as the layout asks for: the region may be longer, from calls
        // before.
        ctx.compute_staged(&block, &block_at, &mut scratch[..at.words])?;
        if at.per_block {
            y.extend(read::<O>(scratch, block_at.y));
            if let (Some(v), Some(s)) = (v.as_mut(), block_at.sum) {
                v.extend(read::<T>(scratch, s));
            }
        }
    }
    if at.per_block {
        return Ok((y, v));
    }
    Ok((read(scratch, at.y), at.sum.map(|v| read(scratch, v))))
}

/// The scratch path against the kernel's own results (bit for bit) and the f64 reference:
/// one region reused by calls of growing and shrinking sizes, both dtypes, y in either, with
/// and without `v`, every option of the family; a call the checks refuse between them is
/// refused with the driver's own error and leaves the next call right.
#[test]
fn calls_in_one_reused_scratch_match_the_kernel_and_the_reference() {
    let mut rng = Rng(23);
    let mut scratch = Vec::new();
    let shapes = [
        (16, 4096),
        (1, 4096),
        (3, 896),
        (64, 1024),
        (1, 7),
        (2, 4099),
        // Blocks of whole rows (scratch::BLOCK elements): a short last block, a row longer
        // than a block (a row a block); an empty call.
        (37, 4096),
        (301, 448),
        (20, 4099),
        (3, 70_000),
        (0, 64),
    ];
    for (k, &shape) in shapes.iter().enumerate() {
        for (j, family) in Family::all().enumerate() {
            let (bias, beta) = (j % 3 != 0, j % 2 == 0);
            let call = Call::random(&mut rng, shape, bias, beta, 1e-6, 1.0, family);
            let what = format!("{shape:?} {family} bias={bias} beta={beta}");
            let sum = (j + k) % 2 == 0;
            let x = call.inputs();
            let want = check(&x, &what);
            // Results read out at the end (fresh arrays) and after each block (the caller's).
            for per_block in [false, true] {
                let what = format!("{what}, per block {per_block}");
                let (y, v) = staged::<f32, f32>(&mut scratch, &x, None, sum, per_block).unwrap();
                assert_same_bits(&y, &want.y, &format!("{what}: staged y"));
                assert_y(&y, &y_reference(&x, &want.v), RTOL, &what);
                if sum {
                    assert_same_bits(&v.unwrap(), &want.v, &format!("{what}: staged v"));
                } else {
                    assert!(v.is_none(), "{what}: v without sum");
                }
            }
            let per_block = j % 2 == 1;
            if shape.1 % 4 != 0 {
                // f16 needs whole 4-element groups per row: refused as the driver refuses it.
                let got = staged::<f32, u16>(&mut scratch, &x, Some(Dtype::F16), sum, per_block)
                    .unwrap_err();
                let f16_out = GenericInputs {
                    norm: Norm {
                        output_dtype: Some(Dtype::F16),
                        ..x.norm
                    },
                    ..x.clone()
                };
                let Err(native) = CpuContext::default().submit(&f16_out, Request::host(sum)) else {
                    panic!("{what}: the driver took f16 output of hidden {}", shape.1);
                };
                assert_eq!(got.message(), native.message(), "{what}: f16 refusal");
            } else {
                let (y16, _) =
                    staged::<f32, u16>(&mut scratch, &x, Some(Dtype::F16), sum, per_block).unwrap();
                let want16: Run<f32, u16> = run(&x);
                assert_eq!(y16, want16.y, "{what}: staged f16 y");

                let halves = call.halves();
                let h = halves.inputs();
                let want_h: Run<u16, u16> = run(&h);
                let (y, v) = staged::<u16, u16>(&mut scratch, &h, None, sum, per_block).unwrap();
                assert_eq!(y, want_h.y, "{what}: staged f16 data");
                assert_eq!(v, sum.then(|| want_h.v.clone()), "{what}: staged f16 v");
                let want_hf: Run<u16, f32> = run(&h);
                let (y, _) =
                    staged::<u16, f32>(&mut scratch, &h, Some(Dtype::F32), sum, per_block).unwrap();
                assert_same_bits(&y, &want_hf.y, &format!("{what}: staged f16 data, f32 y"));
            }

            // Refused as the driver refuses it, and the next call is unaffected.
            if call.case.input.is_empty() {
                continue;
            }
            let short = &call.case.input[..call.case.input.len() - 1];
            let bad = GenericInputs {
                input: short,
                ..x.clone()
            };
            let got = staged::<f32, f32>(&mut scratch, &bad, None, sum, per_block).unwrap_err();
            let Err(native) = CpuContext::default().submit(&bad, Request::host(sum)) else {
                panic!("{what}: the driver took a short input");
            };
            assert_eq!(got.message(), native.message(), "{what}: refusal");
        }
    }
}

/// The rotary stage through the scratch path, a block at a time: each block's rows turned
/// by their own tokens' positions (the block's first row carried), bit for bit what the
/// driver computes in one piece, in f32 and with f16 output.
#[test]
fn the_rotary_stage_in_scratch_turns_each_block_by_its_own_rows() {
    use webgpu_rmsnorm::call::rotary::{Positions, Rotary, RotaryStyle};
    let mut rng = Rng(0x5C07E);
    let mut scratch = Vec::new();
    // 3 blocks of 64 rows of 1024 and a short one; 8 rows a token, so tokens straddle none
    // and blocks start mid-call.
    let (rows, hidden, heads) = (200, 1024, 8);
    let input = rng.vec(rows * hidden, 1.0);
    let gamma = rng.vec(hidden, 1.0);
    let inv_freq: Vec<f32> = (0..64).map(|k| 0.5f32.powi(k / 4)).collect();
    let positions: Vec<u32> = (0..(rows / heads) as u32).map(|t| 1000 + 3 * t).collect();
    for (style, each) in [(RotaryStyle::NeoX, true), (RotaryStyle::Interleaved, false)] {
        let at = if each {
            Positions::Each(positions.clone().into())
        } else {
            Positions::From(77)
        };
        let rotary = Rotary {
            style,
            head_size: Some(256),
            rotary_dim: Some(128),
            heads: Some(heads),
            ..Rotary::new(at, &inv_freq)
        };
        let x = GenericInputs {
            rotary: Some(rotary),
            ..Inputs::without_residual(&input[..], &gamma[..], hidden)
        };
        let done = CpuContext::default()
            .submit(&x, Request::host(false))
            .unwrap();
        let want = done.host.unwrap().y.unwrap();
        for per_block in [false, true] {
            let what = format!("{style:?}, per block {per_block}");
            let (y, _) = staged::<f32, f32>(&mut scratch, &x, None, false, per_block).unwrap();
            assert_same_bits(&y, &want, &what);
            let (y16, _) =
                staged::<f32, u16>(&mut scratch, &x, Some(Dtype::F16), false, per_block).unwrap();
            let rounded: Vec<u16> = want.iter().map(|&y| f16_bits(y)).collect();
            assert_eq!(y16, rounded, "{what}: f16 y is the f32 y rounded once");
        }
    }
}

/// A post-norm's sum alone (no `gamma`) on the CPU backend: the sandwich's `v` bit for bit,
/// no `y`, read back and as a new tensor; refused where the call asks for no sum.
#[test]
fn a_post_norms_sum_alone_is_the_sandwichs_sum() {
    let mut rng = Rng(0x5EED_50A2);
    let ctx = CpuContext::default();
    for shape in [(3, 64), (2, 4099), (5, 1)] {
        for family in Family::all().filter(|f| f.post) {
            let call = Call::random(&mut rng, shape, true, false, 1e-6, 1.0, family);
            let full = call.inputs();
            let alone = GenericInputs {
                gamma: None,
                ..full.clone()
            };
            let what = format!("{shape:?} {family}");
            let want = ctx
                .submit(&full, Request::host(true))
                .unwrap()
                .host
                .unwrap();
            let got = ctx
                .submit(&alone, Request::host(true))
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            let got = got.host.unwrap();
            assert!(got.y.is_none(), "{what}: a y without gamma");
            assert_same_bits(got.sum.as_ref().unwrap(), want.sum.as_ref().unwrap(), &what);
            let gpu = ctx
                .submit(&alone, Request::to_gpu(true))
                .unwrap()
                .gpu
                .unwrap();
            assert!(gpu.y.is_none(), "{what}: a y tensor without gamma");
            let read = ctx
                .read(gpu.sum.as_ref().unwrap())
                .unwrap()
                .host
                .unwrap()
                .y
                .unwrap();
            assert_same_bits(
                &read,
                want.sum.as_ref().unwrap(),
                &format!("{what}: the sum tensor"),
            );
            let Err(e) = ctx.submit(&alone, Request::host(false)) else {
                panic!("{what}: run without a sum");
            };
            assert!(e.message().starts_with("gamma: missing"), "{what}: {e}");
        }
    }
}
