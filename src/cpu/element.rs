//! How the CPU kernel reads and writes each storage dtype.

use std::borrow::Cow;

use super::half;

/// How a stored number becomes an f32 and back: `f32` as it is; `u16`, f16 as IEEE half
/// bits, widened exactly, and rounded once to nearest even.
pub trait Element: Copy {
    fn widen(self) -> f32;
    fn narrow(x: f32) -> Self;
    /// A per-column array in f32, widened once per call rather than once per row.
    fn widen_all(xs: &[Self]) -> Cow<'_, [f32]>;
}

impl Element for f32 {
    #[inline(always)]
    fn widen(self) -> f32 {
        self
    }

    #[inline(always)]
    fn narrow(x: f32) -> f32 {
        x
    }

    fn widen_all(xs: &[f32]) -> Cow<'_, [f32]> {
        Cow::Borrowed(xs)
    }
}

impl Element for u16 {
    #[inline(always)]
    fn widen(self) -> f32 {
        half::to_f32(self)
    }

    #[inline(always)]
    fn narrow(x: f32) -> u16 {
        half::from_f32(x)
    }

    fn widen_all(xs: &[u16]) -> Cow<'_, [f32]> {
        Cow::Owned(xs.iter().map(|&h| half::to_f32(h)).collect())
    }
}
