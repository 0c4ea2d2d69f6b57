//! The cos and sin of a rotary (RoPE) angle as Hugging Face models compute them, for the CPU
//! backend: the angle is one f32 product `f32(position) * inv_freq`, and its cos and sin are
//! taken in f64 and rounded once to f32.
//!
//! f64's `cos` and `sin` reduce their argument exactly (the platform's libm, or the `libm`
//! port Rust's std uses in wasm), and an f32 angle is exactly an f64, so the result is the
//! exact cos and sin of the f32 angle rounded to f32 (half an ulp, plus f64's own sub-ulp
//! error). `shaders/rotary_angle.wgsl` computes the same values on the GPU in f32 and u32.

/// `(cos, sin)` of `f32(position) * inv_freq`, the f32 product rounded once, as the models'
/// rotary embeddings compute it.
pub fn rope_cos_sin(position: u32, inv_freq: f32) -> (f32, f32) {
    let angle = f64::from(position as f32 * inv_freq);
    (angle.cos() as f32, angle.sin() as f32)
}

#[cfg(test)]
mod tests {
    use super::rope_cos_sin;

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
