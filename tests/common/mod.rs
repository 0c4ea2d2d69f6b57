//! Test data shared by the native and the browser tests: a seeded generator and one call's
//! arguments (in f32 or as f16 halves), with the reference's view of them.
#![allow(dead_code)]

use webgpu_rmsnorm::call::dtype::{f16_bits, f16_value};
use webgpu_rmsnorm::reference::{worst_error, GenericInputs, Inputs};

/// SplitMix64: tiny, seedable, and the same on every machine and target.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [-1, 1).
    pub fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    pub fn vec(&mut self, n: usize, scale: f32) -> Vec<f32> {
        (0..n).map(|_| self.unit() * scale).collect()
    }
}

/// The arguments of one call: f32 data, or (`Case<u16>`) f16 data as IEEE half bits.
pub struct Case<T = f32> {
    pub input: Vec<T>,
    pub residual: Vec<T>,
    pub gamma: Vec<T>,
    pub beta: Option<Vec<T>>,
    pub bias: Option<Vec<T>>,
    pub hidden: usize,
    pub eps: f32,
}

impl Case {
    /// `n` cases from one generator seeded with `seed`, the `i`th made by `case(rng, i)`.
    pub fn seeded(seed: u64, n: usize, mut case: impl FnMut(&mut Rng, usize) -> Case) -> Vec<Case> {
        let mut rng = Rng(seed);
        (0..n).map(|i| case(&mut rng, i)).collect()
    }

    /// `rows × hidden` uniform values of magnitude `scale`; gamma in [-2, 2), beta in [-1, 1).
    #[allow(clippy::too_many_arguments)]
    pub fn random(
        rng: &mut Rng,
        rows: usize,
        hidden: usize,
        bias: bool,
        beta: bool,
        eps: f32,
        scale: f32,
    ) -> Case {
        Case {
            input: rng.vec(rows * hidden, scale),
            residual: rng.vec(rows * hidden, scale),
            gamma: rng.vec(hidden, 2.0),
            beta: beta.then(|| rng.vec(hidden, 1.0)),
            bias: bias.then(|| rng.vec(hidden, scale)),
            hidden,
            eps,
        }
    }

    /// A case of its own seed, for tests that make one at a time.
    pub fn new(rows: usize, hidden: usize, bias: bool, beta: bool, eps: f32, seed: u64) -> Case {
        Case::random(&mut Rng(seed), rows, hidden, bias, beta, eps, 1.0)
    }

    /// The random sweep every suite runs: `n` cases from the seed RMSNORM_SEED (else
    /// `default_seed`), each with the description a failure prints to replay it. Row lengths
    /// short, long and multiples of 4; up to 19 rows; magnitudes from 1e-25 to 1e25; every
    /// option; and now and then a NaN or an Inf, which must poison its own row only.
    pub fn sweep(default_seed: u64, n: usize) -> impl Iterator<Item = (Case, String)> {
        let seed = std::env::var("RMSNORM_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(default_seed);
        let mut rng = Rng(seed);
        (0..n).map(move |i| {
            let hidden = match rng.below(3) {
                0 => 1 + rng.below(16) as usize,
                1 => 1 + rng.below(3000) as usize,
                _ => 4 * (1 + rng.below(3000) as usize),
            };
            let rows = rng.below(20) as usize;
            let scale = [1.0f32, 1e-3, 1e3, 1e25, 1e-25][rng.below(5) as usize];
            let eps = [0.0f32, 1e-6, 1e-5, 1e-2][rng.below(4) as usize];
            let (bias, beta) = (rng.below(2) == 0, rng.below(2) == 0);
            let mut case = Case::random(&mut rng, rows, hidden, bias, beta, eps, scale);
            if rows > 1 && rng.below(8) == 0 {
                let at = rng.below((rows * hidden) as u64) as usize;
                case.input[at] =
                    [f32::NAN, f32::INFINITY, f32::NEG_INFINITY][rng.below(3) as usize];
            }
            let what = format!(
                "case {i} (RMSNORM_SEED={seed}): {rows}x{hidden} scale {scale:e} eps {eps}"
            );
            (case, what)
        })
    }

    /// Four rows of `hidden` with a NaN in row 0's input, an Inf in row 1's input and a -Inf
    /// in row 2's residual: each must poison its own row only, and row 3 stays clean.
    pub fn poisoned(rng: &mut Rng, hidden: usize) -> Case {
        let mut case = Case::random(rng, 4, hidden, false, true, 1e-6, 1.0);
        case.input[hidden / 2] = f32::NAN;
        case.input[hidden + 1] = f32::INFINITY;
        case.residual[2 * hidden] = f32::NEG_INFINITY;
        case
    }

    /// The same call with f16 data: each value rounded once to the nearest half.
    pub fn halves(&self) -> Case<u16> {
        self.map(|v| v.iter().map(|&x| f16_bits(x)).collect())
    }
}

impl Case<u16> {
    /// The values these halves stand for, in f32: what a kernel reading them computes on, so
    /// the reference of an f16 call is the reference of its widened case.
    pub fn widened(&self) -> Case {
        self.map(|v| v.iter().map(|&b| f16_value(b)).collect())
    }
}

impl<T> Case<T> {
    /// The call as slices: what the GPU and CPU contexts and (for f32) the reference take.
    pub fn inputs(&self) -> GenericInputs<&[T]> {
        GenericInputs {
            beta: self.beta.as_deref(),
            bias: self.bias.as_deref(),
            eps: self.eps,
            ..GenericInputs::plain(&self.input, &self.residual, &self.gamma, self.hidden)
        }
    }

    /// The same call with every array converted by `f`.
    fn map<U>(&self, f: impl Fn(&[T]) -> Vec<U>) -> Case<U> {
        Case {
            input: f(&self.input),
            residual: f(&self.residual),
            gamma: f(&self.gamma),
            beta: self.beta.as_deref().map(&f),
            bias: self.bias.as_deref().map(&f),
            hidden: self.hidden,
            eps: self.eps,
        }
    }
}

/// Asserts that `got` is within `rtol` of `x`'s reference `want` in every element, as
/// `worst_error` weighs each element's tolerance.
pub fn assert_within(got: &[f32], want: &[f64], x: &Inputs, rtol: f64, what: &str) {
    let err = worst_error(got, want, x, rtol);
    assert!(
        err <= 1.0,
        "{what}: y is {err:.2} tolerances off the f64 reference"
    );
}

/// One cell of the case matrix.
#[derive(Clone, Copy, Debug)]
pub struct Cell {
    pub rows: usize,
    pub hidden: usize,
    pub bias: bool,
    pub beta: bool,
    pub eps: f32,
}

/// The case matrix every suite runs (natively in full, in the browser a sample): row lengths
/// around the vector width and the workgroup tilings, empty to many rows, every option, and
/// eps from none to large.
pub fn matrix() -> Vec<Cell> {
    let mut cells = Vec::new();
    for hidden in [1usize, 3, 4, 5, 768, 769, 4096, 4099, 8192, 16384] {
        for rows in [0usize, 1, 7, 83] {
            for bits in 0..4u8 {
                for eps in [0.0f32, 1e-6, 1e-2] {
                    let (bias, beta) = (bits & 1 != 0, bits & 2 != 0);
                    cells.push(Cell {
                        rows,
                        hidden,
                        bias,
                        beta,
                        eps,
                    });
                }
            }
        }
    }
    cells
}

impl std::fmt::Display for Cell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Cell {
            rows,
            hidden,
            bias,
            beta,
            eps,
        } = self;
        write!(f, "{rows}x{hidden} bias={bias} beta={beta} eps={eps}")
    }
}

/// Asserts that f16 results (`got`, half bits) are `want` rounded once to f16: within half an
/// f16 ulp of the rounded reference (twice, for an f32 result that straddles a rounding
/// boundary) plus the f32 tolerance.
pub fn assert_f16_rounding(got: &[u16], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: output length");
    for (at, (&bits, &want)) in got.iter().zip(want).enumerate() {
        let got = f16_value(bits) as f64;
        let rounded = f16_value(f16_bits(want as f32)) as f64;
        let half_ulp = want.abs().max(6.1e-5) * 2f64.powi(-11) * 1.01;
        assert!(
            (got - rounded).abs() <= 2.0 * half_ulp + 1e-5 * want.abs(),
            "{what} at {at}: got {got}, want {want} (f16 {rounded})"
        );
    }
}
