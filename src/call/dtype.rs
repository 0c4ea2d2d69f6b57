//! How numbers are stored, and the conversions between the two storages. Arithmetic is f32
//! in every case; f16 halves the memory traffic of a memory-bound kernel.

/// The element type of a call's arrays and tensors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Dtype {
    #[default]
    F32,
    /// IEEE half precision, as its bits (`Uint16Array` in JavaScript).
    F16,
}

impl Dtype {
    pub fn bytes(self) -> usize {
        match self {
            Dtype::F32 => 4,
            Dtype::F16 => 2,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Dtype::F32 => "f32",
            Dtype::F16 => "f16",
        }
    }

    /// Bytes of `len` elements as a GPU copy moves them: whole 4-byte words, so an odd count
    /// of halves takes one more.
    pub fn copy_bytes(self, len: usize) -> u64 {
        (len * self.bytes()).next_multiple_of(4) as u64
    }
}

/// f32 → IEEE half bits, rounding to nearest even (as WGSL's f16 conversion does), written
/// out bit by bit so that tests and the host path do not depend on the GPU's own.
pub fn f16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let exp = ((b >> 23) & 0xff) as i32;
    let mant = b & 0x7f_ffff;
    if exp == 255 {
        return sign | 0x7c00 | if mant != 0 { 0x200 } else { 0 };
    }
    let e = exp - 127 + 15;
    if e >= 31 {
        return sign | 0x7c00;
    }
    let (kept, shift) = if e <= 0 {
        if e < -10 {
            return sign;
        }
        (mant | 0x80_0000, (14 - e) as u32)
    } else {
        (((e as u32) << 23) | mant, 13)
    };
    let (half, rem, mid) = (kept >> shift, kept & ((1 << shift) - 1), 1 << (shift - 1));
    let rounded = if rem > mid || (rem == mid && half & 1 == 1) {
        half + 1
    } else {
        half
    };
    sign | rounded as u16
}

/// IEEE half bits → f32, exactly.
pub fn f16_value(h: u16) -> f32 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = (h >> 10) & 0x1f;
    let frac = (h & 0x3ff) as f32;
    sign * match exp {
        0 => frac * 2f32.powi(-24),
        31 if frac == 0.0 => f32::INFINITY,
        31 => f32::NAN,
        e => (1.0 + frac / 1024.0) * 2f32.powi(e as i32 - 15),
    }
}
