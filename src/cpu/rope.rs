//! The rotary (RoPE) stage on the CPU backend ([`Rotation`]: a row of `y` turned in f32),
//! and the cos and sin of its angle as Hugging Face models compute them (or the app's own,
//! `cosSin`): the angle is one f32 product `f32(position) * inv_freq`, and its cos and sin
//! are taken in f64 and rounded once to f32.
//!
//! f64's `cos` and `sin` reduce their argument exactly (the platform's libm, or the `libm`
//! port Rust's std uses in wasm), and an f32 angle is exactly an f64, so the result is the
//! exact cos and sin of the f32 angle rounded to f32 (half an ulp, plus f64's own sub-ulp
//! error). `shaders/rotary_angle.wgsl` computes the same values on the GPU in f32 and u32.

use crate::call::rotary::{Rotary, RotaryStyle};

/// A call's rotary stage as the CPU kernel applies it to a row of `y` in f32: each pair
/// `(a, b)` becomes `(a·c − b·s, b·c + a·s)` in f32, `c` and `s` the f32 cos and sin of the
/// angle times the f32 attention scaling, as the models' `q·cos + rotate_half(q)·sin`.
pub struct Rotation {
    rotary: Rotary,
    style: RotaryStyle,
    rotary_dim: usize,
    head_size: usize,
    heads: usize,
    /// Of them, the first ones, which turn; the rest pass as they are.
    turned: usize,
    /// The position whose `(c, s)` are in `cos_sin`: the heads of a token share them.
    at: Option<u32>,
    cos_sin: Vec<(f32, f32)>,
}

impl Rotation {
    /// The stage of a checked call (or of a block of one) of `rows` of `hidden`.
    pub fn new(rotary: &Rotary, rows: usize, hidden: usize) -> Rotation {
        let shape = rotary.shape(rows, hidden);
        Rotation {
            style: shape.style,
            rotary_dim: shape.rotary_dim,
            head_size: shape.head_size,
            heads: shape.heads,
            turned: shape.turned,
            rotary: rotary.clone(),
            at: None,
            cos_sin: Vec::new(),
        }
    }

    /// Which of its token's heads `row` is.
    pub fn head(&self, row: usize) -> usize {
        self.rotary.head(row, self.heads)
    }

    /// Whether `row` is a head the stage passes as it is (`passHeads`).
    pub fn passes(&self, row: usize) -> bool {
        self.head(row) >= self.turned
    }

    /// Rotates `y`, row `row` of the call (of its block), in place.
    pub fn rotate(&mut self, row: usize, y: &mut [f32]) {
        let position = self.rotary.position(row, self.heads);
        if self.at != Some(position) {
            let scaling = self.rotary.attention_scaling;
            self.cos_sin.clear();
            let turns = self.rotary.cos_sin(position, self.rotary_dim);
            // cos and sin rounded once to f32, then scaled in f32, as the models do.
            self.cos_sin
                .extend((turns.iter()).map(|&(c, s)| (c as f32 * scaling, s as f32 * scaling)));
            self.at = Some(position);
        }
        for head in y.chunks_exact_mut(self.head_size) {
            let turned = &mut head[..self.rotary_dim];
            for (k, &(c, s)) in self.cos_sin.iter().enumerate() {
                let (i, j) = self.style.pair(k, self.rotary_dim);
                let (a, b) = (turned[i], turned[j]);
                turned[i] = a * c - b * s;
                turned[j] = b * c + a * s;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::call::rotary::angle_cos_sin;

    fn rope_cos_sin(position: u32, inv_freq: f32) -> (f32, f32) {
        let (c, s) = angle_cos_sin(position, inv_freq);
        (c as f32, s as f32)
    }

    #[test]
    fn the_angle_is_the_f32_product() {
        assert_eq!(rope_cos_sin(0, 0.5), (1.0, 0.0));
        // 131071 * 0.1 rounds to 13107.1005859375 in f32; the f64 product is 13107.1.
        let angle = f64::from(131_071f32 * 0.1f32);
        assert_eq!(angle, 13_107.100_585_937_5);
        let (c, s) = rope_cos_sin(131_071, 0.1);
        assert_eq!((c, s), (angle.cos() as f32, angle.sin() as f32));
        assert!((c - 13_107.1f64.cos() as f32).abs() > 1e-5);
    }
}
