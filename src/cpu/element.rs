//! How the CPU kernel reads and writes each storage dtype.

use std::borrow::Cow;

use super::half;
use super::memory::room;
use crate::call::error::Error;

/// How a stored number becomes an f32 and back: `f32` as it is; `u16`, f16 as IEEE half
/// bits, widened exactly, and rounded once to nearest even.
pub trait Element: Copy {
    fn widen(self) -> f32;
    fn narrow(x: f32) -> Self;
    /// A per-column array in f32, widened once per call rather than once per row (`what`
    /// names it where wasm memory has no room for the widened copy).
    fn widen_all<'a>(xs: &'a [Self], what: &str) -> Result<Cow<'a, [f32]>, Error>;
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

    fn widen_all<'a>(xs: &'a [f32], _: &str) -> Result<Cow<'a, [f32]>, Error> {
        Ok(Cow::Borrowed(xs))
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

    fn widen_all<'a>(xs: &'a [u16], what: &str) -> Result<Cow<'a, [f32]>, Error> {
        let mut wide = room(xs.len(), what)?;
        wide.extend(xs.iter().map(|&h| half::to_f32(h)));
        Ok(Cow::Owned(wide))
    }
}
