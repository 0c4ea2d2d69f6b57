//! The kernels' uniform block, the one per-call value a pipeline does not fix.

/// The kernel's uniform block. Mirrors `struct Params` in the WGSL (a test checks the layout).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Params {
    /// Rows in this dispatch.
    pub rows: u32,
    /// Row length in vector elements (`hidden / lanes`).
    pub width: u32,
    /// Row length in scalars, for the mean.
    pub hidden: f32,
    pub eps: f32,
    /// Added to every gamma and postGamma: a uniform rather than a constant, so that Gemma's
    /// `1 + weight` shares the pipelines of every other call.
    pub gamma_offset: f32,
    /// A rotary stage's first position of consecutive tokens (0 where each has its own).
    pub rotary_start: u32,
    /// A rotary stage's rows a token.
    pub rotary_heads: u32,
    /// A rotary stage's factor on cos and sin.
    pub rotary_scaling: f32,
    /// Of a rotary stage's rows a token, the last ones, which pass as they are (0 where none
    /// do: an engine that does not know the field passes none).
    pub rotary_pass: u32,
}

impl Params {
    /// Nine words: the WGSL struct's size.
    pub const SIZE: usize = 36;

    /// Each field's name (as in the WGSL and as `kernelSource` gives it), offset and type;
    /// the rest of the block is padding.
    pub const FIELDS: [(&'static str, u32, &'static str); 9] = [
        ("rows", 0, "u32"),
        ("width", 4, "u32"),
        ("hidden", 8, "f32"),
        ("eps", 12, "f32"),
        ("gamma_offset", 16, "f32"),
        ("rotary_start", 20, "u32"),
        ("rotary_heads", 24, "u32"),
        ("rotary_scaling", 28, "f32"),
        ("rotary_pass", 32, "u32"),
    ];

    /// The block of a call of `rows` rows of `width` vectors of `hidden` values, without a
    /// rotary stage.
    pub fn new(rows: u32, width: u32, hidden: f32, eps: f32, gamma_offset: f32) -> Params {
        Params {
            rows,
            width,
            hidden,
            eps,
            gamma_offset,
            rotary_start: 0,
            rotary_heads: 1,
            rotary_scaling: 1.0,
            rotary_pass: 0,
        }
    }

    pub fn to_bytes(self) -> [u8; Self::SIZE] {
        let mut out = [0u8; Self::SIZE];
        out[0..4].copy_from_slice(&self.rows.to_le_bytes());
        out[4..8].copy_from_slice(&self.width.to_le_bytes());
        out[8..12].copy_from_slice(&self.hidden.to_le_bytes());
        out[12..16].copy_from_slice(&self.eps.to_le_bytes());
        out[16..20].copy_from_slice(&self.gamma_offset.to_le_bytes());
        out[20..24].copy_from_slice(&self.rotary_start.to_le_bytes());
        out[24..28].copy_from_slice(&self.rotary_heads.to_le_bytes());
        out[28..32].copy_from_slice(&self.rotary_scaling.to_le_bytes());
        out[32..36].copy_from_slice(&self.rotary_pass.to_le_bytes());
        out
    }
}
