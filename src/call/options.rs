//! What a call asks of a kernel beyond its shape and dtypes: its optional arrays and outputs
//! and its normalization. With those, it is what a kernel is specialised for
//! ([`Kernel`](crate::call::plan::Kernel)); the GPU driver compiles each combination as a
//! pipeline of its own.

use crate::call::error::Error;
use crate::call::numbers::Len;
use crate::call::rotary::RotaryKernel;
use crate::call::shape::{Inputs, NormKind};

/// Which optional inputs and outputs a call has, and which normalization.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Options {
    pub bias: bool,
    pub beta: bool,
    pub sum: bool,
    pub residual: bool,
    /// The sandwich's post-norm (`postGamma`).
    pub post_gamma: bool,
    /// A parallel block's second sublayer output (`input2`).
    pub input2: bool,
    /// `y` is computed (the call has `gamma`, or normalizes nothing); else `v` alone, a
    /// post-norm's sum.
    pub output: bool,
    pub kind: NormKind,
    /// A `gammaOffset` other than 0: the fused kernel adds it only then.
    pub gamma_offset: bool,
    /// The rotary stage after the norm (`call/rotary.rs`).
    pub rotary: Option<RotaryKernel>,
}

impl Default for Options {
    fn default() -> Options {
        Options::PRE_NORM
    }
}

impl Options {
    /// Whether these options go beyond the pre-norm RMSNorm that the GPU's fused kernel
    /// computes (LayerNorm, the sandwich, a parallel block), so that they need its family
    /// kernel whatever the shape.
    pub fn need_family(&self) -> bool {
        self.kind == NormKind::Layer
            || self.post_gamma
            || self.input2
            || !self.output
            || self.rotary.is_some()
    }

    /// A pre-norm: a residual, no optional array, RMSNorm.
    pub const PRE_NORM: Options = Options {
        bias: false,
        beta: false,
        sum: false,
        residual: true,
        post_gamma: false,
        input2: false,
        output: true,
        kind: NormKind::Rms,
        gamma_offset: false,
        rotary: None,
    };

    /// The pre-norm with bias, beta and sum from the low three bits of `bits`: how the
    /// tests and sweeps walk every combination.
    pub fn with_flags(bits: u8) -> Options {
        Options {
            bias: bits & 1 != 0,
            beta: bits & 2 != 0,
            sum: bits & 4 != 0,
            ..Options::PRE_NORM
        }
    }

    /// The options of a call of `x`, with the `sum` output when `sum`.
    pub fn of<A: Len>(x: &Inputs<A>, sum: bool) -> Options {
        Options {
            bias: x.bias.is_some(),
            beta: x.beta.is_some(),
            sum,
            residual: x.residual.is_some(),
            post_gamma: x.post_gamma.is_some(),
            input2: x.input2.is_some(),
            output: x.writes_y(),
            kind: x.norm.kind,
            gamma_offset: x.norm.gamma_offset != 0.0,
            rotary: x.rotary.as_ref().map(|r| RotaryKernel {
                gamma_heads: x.gamma.as_ref().is_some_and(|g| g.len() > x.hidden),
                ..r.kernel(x.hidden)
            }),
        }
    }
}

/// The checks of a kernel's options that its reader (`plan::Kernel::check`) makes.
impl Options {
    /// `kind: "none"` normalizes nothing: `y = v`, for a rotary stage to turn (Llama's and GPT-J's
    /// q and k), with none of the norm's weights.
    pub fn check_no_norm(self) -> Result<(), Error> {
        let none = "kind \"none\" normalizes nothing: y is the sum, turned by a rotary stage";
        let refused = [
            (self.rotary.is_none(), "positions: missing"),
            (self.post_gamma, "postGamma: expected undefined"),
            (self.beta, "beta: expected undefined"),
            (self.gamma_offset, "gammaOffset: expected 0 or undefined"),
            (
                self.rotary.is_some_and(|r| r.gamma_heads),
                "gammaHeads: expected false or undefined",
            ),
        ];
        match refused.into_iter().find(|(bad, _)| *bad) {
            Some((_, what)) => Err(Error::Type(format!("{what} ({none})"))),
            None => Ok(()),
        }
    }

    /// A call without `gamma` computes a post-norm's sum alone (OLMo 2's `h = x + N(attn(x)) · w`):
    /// it needs `postGamma`, asks for the sum (or writes it over the residual in place), and has
    /// no `beta`.
    pub fn check_sum_alone(self, in_place: bool) -> Result<(), Error> {
        let o = self;
        let alone = "a call without gamma computes a post-norm's sum alone";
        let refused = if !o.post_gamma {
            format!("gamma: missing ({alone}, of postGamma)")
        } else if !(o.sum || in_place) {
            format!("gamma: missing ({alone}: runWithSum, encode or bind with a sum, or inPlace)")
        } else if in_place && !o.residual {
            format!("residual: missing ({alone}, in place over the residual)")
        } else if o.beta {
            format!("beta: expected undefined without gamma ({alone})")
        } else {
            return Ok(());
        };
        Err(Error::Type(refused))
    }
}
