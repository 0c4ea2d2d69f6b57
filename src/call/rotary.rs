//! The rotary (RoPE) stage a call may apply to each row's normalized result `y`, after `γ`
//! and `β`, in the same pass: its description ([`Rotary`]) and its checks, the same for
//! every entry point and backend, into the [`RotaryShape`] a kernel needs.
//!
//! Rows are heads of tokens: `heads` rows a token (QK-norm: Qwen3, Gemma 3), each row of
//! `hidden / headSize` heads rotated alike (OLMo 2 normalizes all heads of a token as one
//! row). Of each head, the first `rotaryDim` values rotate, the rest pass through (partial
//! rotary: Phi, GPT-NeoX). Pair `k` (NeoX: `(k, k + rotaryDim/2)`; interleaved: `(2k,
//! 2k + 1)`) of a token at position `p` turns by `angle = f32(f32(p) · invFreq[k])`, one f32
//! product as the models form it:
//! `(a, b) ← (a·c − b·s, b·c + a·s)`, `c = cos(angle) · scaling`, `s = sin(angle) · scaling`.

use crate::call::error::Error;
use crate::call::host::AppBuffer;
use crate::support::number_text::number_text;

/// Which values of a head pair up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum RotaryStyle {
    /// `rotate_half`: `(k, k + rotaryDim/2)` (Llama, Qwen, Gemma, Mistral, OLMo 2, Phi).
    #[default]
    NeoX,
    /// `(2k, 2k + 1)` (GPT-J, Cohere).
    Interleaved,
}

impl RotaryStyle {
    /// The places in a head of pair `k`'s two values, of a rotary width of `rotary_dim`.
    pub fn pair(self, k: usize, rotary_dim: usize) -> (usize, usize) {
        match self {
            RotaryStyle::NeoX => (k, k + rotary_dim / 2),
            RotaryStyle::Interleaved => (2 * k, 2 * k + 1),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            RotaryStyle::NeoX => "neox",
            RotaryStyle::Interleaved => "interleaved",
        }
    }
}

/// The rotary stage of a call, as given; [`Rotary::check`] resolves its defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct Rotary {
    pub positions: Positions,
    pub frequencies: Frequencies,
    pub style: RotaryStyle,
    /// Values of each head that rotate; `None`: the whole head.
    pub rotary_dim: Option<usize>,
    /// Values of a head; `None`: the row (`hidden`).
    pub head_size: Option<usize>,
    /// Rows a token; `None`: from `positions`' length (1 with a start position).
    pub heads: Option<usize>,
    /// The factor on cos and sin (YaRN's `mscale`; 1 otherwise).
    pub attention_scaling: f32,
    /// The call's first row among the rows the positions count: 0, but for a block of a
    /// call that the CPU backend computes a part at a time.
    pub first_row: usize,
    /// Whether gamma holds a weight a head (`gammaHeads`); `None`: as its length says.
    pub gamma_heads: Option<bool>,
    /// The last heads of each token that pass as they are (`passHeads`: a packed qkv row's
    /// v heads, beside the q and k heads the stage normalizes and turns); `None`: none.
    pub pass_heads: Option<usize>,
}

/// What a kernel needs of a checked rotary stage.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RotaryShape {
    pub style: RotaryStyle,
    pub rotary_dim: usize,
    pub head_size: usize,
    /// Rows a token.
    pub heads: usize,
    /// Of them, the first ones, which are normalized and turned; the rest pass as they are
    /// (the v heads of a packed qkv row).
    pub turned: usize,
}

/// What a compiled kernel fixes of a rotary stage: the pipeline key's part (`Options`). The
/// rows a token, the start position and the scaling are per call (the GPU's uniform block).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RotaryKernel {
    pub style: RotaryStyle,
    pub rotary_dim: u32,
    pub head_size: u32,
    /// A position a token (`positions`), rather than consecutive ones from a start.
    pub each: bool,
    /// A `gamma` a head (Cohere's QK-norm, `[heads, head size]`): row `r` takes the
    /// `(r mod heads)`-th, where rows are heads.
    pub gamma_heads: bool,
    /// The positions the app's cos and sin table holds (`cosSin`); 0: the angles are
    /// formed from the inverse frequencies.
    pub table_positions: u32,
}

impl RotaryKernel {
    /// The word of the stage's table ([`Rotary::table`]) where the positions begin: after the
    /// app's cos and sin, or after the inverse frequencies.
    pub fn positions_at(&self) -> u32 {
        match self.table_positions {
            0 => self.rotary_dim / 2,
            n => n * self.rotary_dim,
        }
    }

    /// Whether the kernel must read its rows a scalar at a time: a vector of four must hold
    /// whole pairs' partners at the same place of two vectors (NeoX: half the rotary width a
    /// multiple of 4) and never straddle two heads.
    pub fn scalar(&self) -> bool {
        let neox_split =
            self.style == RotaryStyle::NeoX && !(self.rotary_dim / 2).is_multiple_of(4);
        neox_split || !self.head_size.is_multiple_of(4)
    }

    /// Checks what a kernel may hold beside the stage: its table takes the binding that
    /// `postGamma` and `input2` share (`gpu/kernel/bindings.rs`), and f16 rows (`f16`) are
    /// read four halves at a time.
    pub fn check_beside(&self, post_gamma: bool, input2: bool, f16: bool) -> Result<(), Error> {
        for (given, name) in [(post_gamma, "postGamma"), (input2, "input2")] {
            if given {
                return Err(Error::Type(format!(
                    "positions: expected undefined with {name} (a rotary stage follows a QK-norm \
                     or a final norm, not a sandwich or a parallel block)"
                )));
            }
        }
        if f16 && self.scalar() {
            return Err(shape(format!(
                "rotaryDim: expected half of it and headSize multiples of 4 with f16 data or \
                 output (rows are read four halves at a time), got {} and {}",
                self.rotary_dim, self.head_size
            )));
        }
        Ok(())
    }
}

/// The largest `rotaryDim`: models' heads are at most 256 wide; its frequencies travel in
/// the GPU's uniform block.
pub const MAX_ROTARY_DIM: usize = 512;

impl Rotary {
    /// A rotation of whole rows (`headSize` = `hidden`, one row a token) at `positions`, by
    /// `inv_freq`, NeoX style, scaling 1.
    pub fn new(positions: Positions, inv_freq: &[f32]) -> Rotary {
        Rotary {
            positions,
            frequencies: Frequencies::Inverse(inv_freq.into()),
            style: RotaryStyle::NeoX,
            rotary_dim: None,
            head_size: None,
            heads: None,
            attention_scaling: 1.0,
            first_row: 0,
            gamma_heads: None,
            pass_heads: None,
        }
    }

    /// The stage for the rows of a block that starts at row `first` of this call of `rows`:
    /// its rows a token pinned, since the block's own rows no longer tell them.
    pub fn from_row(&self, first: usize, rows: usize) -> Rotary {
        Rotary {
            first_row: self.first_row + first,
            heads: Some(self.heads(rows)),
            ..self.clone()
        }
    }

    /// Which of its token's `heads` row `r` is (a block's rows counted from the call's first).
    pub fn head(&self, r: usize, heads: usize) -> usize {
        (self.first_row + r) % heads.max(1)
    }

    /// Rows a token in a call of `rows` (checked by [`Rotary::check`]).
    fn heads(&self, rows: usize) -> usize {
        let derived = match &self.positions {
            Positions::Each(p) if !p.is_empty() => rows / p.len(),
            // A buffer's size does not tell the tokens: `heads` is required (checked).
            _ => 1,
        };
        self.heads.unwrap_or(derived).max(1)
    }

    /// What [`Rotary::check`] returns, for a stage it accepted: of a call of `rows`, or of a
    /// block of one ([`Rotary::from_row`]).
    pub fn shape(&self, rows: usize, hidden: usize) -> RotaryShape {
        let (head_size, rotary_dim) = self.sizes(hidden);
        let heads = self.heads(rows);
        RotaryShape {
            style: self.style,
            rotary_dim,
            head_size,
            heads,
            turned: heads.saturating_sub(self.pass_heads.unwrap_or(0)),
        }
    }

    /// What a kernel fixes of this stage, for rows of `hidden`.
    pub fn kernel(&self, hidden: usize) -> RotaryKernel {
        let (head_size, rotary_dim) = self.sizes(hidden);
        RotaryKernel {
            style: self.style,
            rotary_dim: rotary_dim as u32,
            head_size: head_size as u32,
            each: !matches!(self.positions, Positions::From(_)),
            gamma_heads: false,
            table_positions: self.frequencies.table_positions(rotary_dim) as u32,
        }
    }

    /// The words a GPU kernel reads of this stage (checked, of `rotary_dim`) in a call of
    /// `rows`: the app's cos and sin or the inverse frequencies, as bits, then each token's
    /// position where the call gives them (zeros where a buffer of the app's holds them,
    /// copied in on the GPU: [`Rotary::buffer_positions`]).
    pub fn table(&self, rows: usize, rotary_dim: usize) -> Vec<u32> {
        let mut words = self.frequencies.words(rotary_dim);
        match &self.positions {
            Positions::Each(p) => words.extend_from_slice(p),
            Positions::Buffer(_) => words.resize(words.len() + rows / self.heads(rows), 0),
            Positions::From(_) => {}
        }
        words
    }

    /// The first position of consecutive tokens; 0 where each token has its own.
    pub fn start(&self) -> u32 {
        match self.positions {
            Positions::From(start) => start,
            Positions::Each(_) | Positions::Buffer(_) => 0,
        }
    }

    /// The head size and rotary width without their checks (those of [`Rotary::check`]).
    fn sizes(&self, hidden: usize) -> (usize, usize) {
        let head_size = self.head_size.unwrap_or(hidden);
        (head_size, self.rotary_dim.unwrap_or(head_size))
    }

    /// Checks the stage against a call of `rows × hidden`: every error names its argument.
    pub fn check(&self, rows: usize, hidden: usize) -> Result<RotaryShape, Error> {
        let (head_size, rotary_dim) = self.sizes(hidden);
        if head_size == 0 || !hidden.is_multiple_of(head_size) {
            return Err(shape(format!(
                "headSize: expected a divisor of hidden ({hidden}), got {head_size}"
            )));
        }
        let most = head_size.min(MAX_ROTARY_DIM);
        if rotary_dim < 2 || !rotary_dim.is_multiple_of(2) || rotary_dim > most {
            return Err(shape(format!(
                "rotaryDim: expected an even number from 2 to {most} (the head size, at most \
                 {MAX_ROTARY_DIM}), got {rotary_dim}"
            )));
        }
        let scaling = self.attention_scaling;
        if !(scaling.is_finite() && scaling > 0.0) {
            return Err(shape(format!(
                "attentionScaling: expected a finite number > 0, got {}",
                number_text(scaling.into())
            )));
        }
        self.check_frequencies(rotary_dim)?;
        let heads = self.positions.check_heads(self.heads, rows)?;
        self.check_table_positions(rows / heads, rotary_dim)?;
        if let Some(pass) = self.pass_heads.filter(|&p| p >= heads) {
            return Err(shape(format!(
                "passHeads: expected fewer than the heads a token ({heads}), got {pass}"
            )));
        }
        Ok(self.shape(rows, hidden))
    }

    fn check_frequencies(&self, rotary_dim: usize) -> Result<(), Error> {
        self.frequencies.check(rotary_dim)
    }

    /// The app's cos and sin hold a row for each position the call turns by (those of a
    /// `GPUBuffer`, never read on the host, excepted).
    fn check_table_positions(&self, tokens: usize, rotary_dim: usize) -> Result<(), Error> {
        let held = self.frequencies.table_positions(rotary_dim);
        if held == 0 {
            return Ok(());
        }
        let last = match &self.positions {
            Positions::Each(p) => p.iter().copied().max(),
            Positions::From(start) if tokens > 0 => Some(start + (tokens - 1) as u32),
            _ => None,
        };
        match last {
            Some(last) if last as usize >= held => Err(shape(format!(
                "positions: expected positions below {held} (the rows of cosSin), got {last}"
            ))),
            _ => Ok(()),
        }
    }

    /// Where the positions are an app's buffer: it, how many words of it a call of `rows`
    /// reads, and the byte offset in the table ([`Rotary::table`]) they are copied to.
    pub fn buffer_positions(
        &self,
        rows: usize,
        rotary_dim: usize,
    ) -> Option<(&AppBuffer, usize, u64)> {
        match &self.positions {
            Positions::Buffer(b) => {
                let at = self.frequencies.word_count(rotary_dim);
                Some((b, rows / self.heads(rows), at as u64 * 4))
            }
            _ => None,
        }
    }

    /// The position of the token of row `row` of the call (of a block: its own rows from 0),
    /// `heads` rows a token.
    pub fn position(&self, row: usize, heads: usize) -> u32 {
        self.positions
            .of_token((self.first_row + row) / heads.max(1))
    }

    /// Heads passed as they are (`passHeads`) hold the input itself: a call that adds a
    /// residual or a bias to its rows would pass a sum no model keeps.
    pub fn check_passing(&self, residual: bool, bias: bool) -> Result<(), Error> {
        if self.pass_heads.unwrap_or(0) == 0 {
            return Ok(());
        }
        match [(residual, "residual"), (bias, "bias")]
            .iter()
            .find(|(given, _)| *given)
        {
            Some((_, name)) => Err(Error::Type(format!(
                "passHeads: expected 0 or undefined with {name} (the heads it passes are stored \
                 as the input holds them: a packed qkv row)"
            ))),
            None => Ok(()),
        }
    }

    /// `(cos, sin)` of each pair at `position`, before the scaling, of a checked stage of
    /// `rotary_dim`.
    pub fn cos_sin(&self, position: u32, rotary_dim: usize) -> Vec<(f64, f64)> {
        self.frequencies.cos_sin(position, rotary_dim)
    }
}

fn shape(message: String) -> Error {
    Error::Shape(message)
}

mod frequencies;
pub mod gamma;
mod positions;

pub use frequencies::{angle_cos_sin, inv_freq_of_theta, Frequencies};
pub use positions::Positions;

#[cfg(test)]
mod tests;
