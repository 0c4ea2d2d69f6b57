//! A gamma a head (Cohere's QK-norm weights, `[heads, head size]`): where rows are heads of a
//! rotary stage, `gamma` may hold heads × hidden weights, row `r` taking its head's. The call
//! says so (`gammaHeads`), or its length does; a `GPUBuffer`'s size, rounded up by engines,
//! cannot, so a buffer holds one only where the call says.

use super::Rotary;
use crate::call::error::Error;

/// Whether `gamma`'s length (`None`: no gamma) fits rows of `hidden`: `hidden`, or where rows
/// are heads of a rotary stage (`each_head` = heads × hidden) one weight a head, as
/// `gammaHeads` (`said`) says or, where it says nothing, as the length does.
pub fn gamma_fits(
    len: Option<usize>,
    hidden: usize,
    each_head: Option<usize>,
    said: Option<bool>,
) -> Result<(), Error> {
    let Some(len) = len else {
        return match said {
            Some(true) => Err(Error::Type(
                "gammaHeads: expected false or undefined on a call without gamma".into(),
            )),
            _ => Ok(()),
        };
    };
    let (want, why) = match (said, each_head) {
        (Some(true), Some(h)) => (h, " (heads × hidden, with gammaHeads)".to_string()),
        (Some(false), _) => (hidden, " (hidden, with gammaHeads false)".to_string()),
        (None, Some(h)) if h > hidden && len == h => return Ok(()),
        (None, Some(h)) if h > hidden => (
            hidden,
            format!(" (hidden) or {h} (a gamma a head; in a GPUBuffer, with gammaHeads: true)"),
        ),
        _ => (hidden, " (hidden)".to_string()),
    };
    if len == want {
        return Ok(());
    }
    Err(Error::Shape(format!(
        "gamma: expected length {want}{why}, got {len}"
    )))
}

impl Rotary {
    /// turned heads × hidden where the call says gamma holds a weight a head (`gammaHeads:
    /// true`) and the stage checks against `rows` of `hidden`: what a `GPUBuffer` gamma is
    /// sized to.
    pub fn said_gamma_len(&self, rows: usize, hidden: usize) -> Option<usize> {
        let shape = self.check(rows, hidden).ok();
        shape
            .filter(|_| self.gamma_heads == Some(true))?
            .turned
            .checked_mul(hidden)
    }
}
