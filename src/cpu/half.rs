//! IEEE half ↔ f32 for the CPU kernel's inner loops.
//!
//! [`crate::call::dtype::f16_bits`] and [`crate::call::dtype::f16_value`] are written for
//! clarity, with branches and `powi`; these give the same results (tested against them) without a branch
//! on the value, so that LLVM turns a block of them into SIMD integer and float operations.
//! Both lean on the FPU's own round-to-nearest-even and on subnormals not being flushed, which
//! holds natively and in WebAssembly (its float operations, SIMD ones included, are IEEE 754).

/// 2^112: moves an exponent biased by 15 to one biased by 127.
const REBIAS: f32 = f32::from_bits((127 + 112) << 23);
/// 2^16: the first magnitude above every finite half, once rebiased.
const PAST_FINITE: f32 = 65536.0;

/// IEEE half bits → f32, exactly. NaNs stay NaN with their sign and payload.
#[inline(always)]
pub fn to_f32(h: u16) -> f32 {
    let h = h as u32;
    let sign = (h & 0x8000) << 16;
    // Exponent and mantissa read as an f32 with the half's bias: multiplying by 2^112 fixes
    // the bias exactly, subnormal halves included (they become normal f32).
    let rebiased = f32::from_bits((h & 0x7fff) << 13) * REBIAS;
    let bits = rebiased.to_bits();
    // Exponent 31 (Inf, NaN) lands at 2^16 and up; it becomes 255 with the mantissa kept.
    let bits = if rebiased >= PAST_FINITE {
        bits | 0x7f80_0000
    } else {
        bits
    };
    f32::from_bits(bits | sign)
}

/// f32 → IEEE half bits, rounding to nearest even; NaN becomes the quiet NaN `0x7e00` with
/// its sign, as [`crate::call::dtype::f16_bits`] makes it.
#[inline(always)]
pub fn from_f32(x: f32) -> u16 {
    let bits = x.to_bits();
    let sign = (bits >> 16) & 0x8000;
    let magnitude = bits & 0x7fff_ffff;
    let special = if magnitude > 0x7f80_0000 {
        0x7e00
    } else {
        0x7c00
    };
    // Below 2^-14 the half is subnormal: adding 0.5 leaves its ten mantissa bits at the
    // bottom of the f32, rounded to nearest even by the addition itself.
    let subnormal = (f32::from_bits(magnitude) + 0.5).to_bits() - 0x3f00_0000;
    // Otherwise rebias the exponent and round the 13 dropped bits to nearest even; a carry
    // out of the mantissa steps the exponent, up to Inf. (Wrapping: every branch is
    // computed, and this one wraps for the magnitudes that take another.)
    let odd = (magnitude >> 13) & 1;
    let normal = magnitude.wrapping_sub(112 << 23).wrapping_add(0xfff + odd) >> 13;
    let h = if magnitude >= 0x4780_0000 {
        special
    } else if magnitude < 0x3880_0000 {
        subnormal
    } else {
        normal
    };
    (h | sign) as u16
}
