//! Test data shared by the native and the browser tests: a seeded generator and one call's
//! arguments, with the reference's view of them.
#![allow(dead_code)]

use webgpu_rmsnorm::reference::Inputs;

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

/// The arguments of one call.
pub struct Case {
    pub input: Vec<f32>,
    pub residual: Vec<f32>,
    pub gamma: Vec<f32>,
    pub beta: Option<Vec<f32>>,
    pub bias: Option<Vec<f32>>,
    pub hidden: usize,
    pub eps: f32,
}

impl Case {
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

    pub fn inputs(&self) -> Inputs<'_> {
        Inputs {
            input: &self.input,
            residual: &self.residual,
            gamma: &self.gamma,
            beta: self.beta.as_deref(),
            bias: self.bias.as_deref(),
            hidden: self.hidden,
            eps: self.eps,
        }
    }
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
