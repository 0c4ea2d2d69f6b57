//! A call as a reader decoded it, before its values are checked: its inputs, with the
//! JavaScript types of their fields read, and its numbers as given. [`Unchecked::fit`] checks
//! the numbers (`checks.rs`, one rule each) and sizes the app's buffers to the call
//! (`shape.rs`), for every entry point alike.

use crate::call::checks::{GivenNumbers, DEFAULT_EPS};
use crate::call::error::Error;
use crate::call::host::Arg;
use crate::call::numbers::Len;
use crate::call::rotary::Positions;
use crate::call::shape::{fit_buffers, Inputs, Outputs};

/// A call's inputs with their types read; `hidden`, `eps`, `gammaOffset` and the rotary
/// stage's numbers wait in `numbers` for their checks.
pub struct Unchecked<A> {
    pub inputs: Inputs<A>,
    pub numbers: GivenNumbers,
}

impl<A> Unchecked<A> {
    /// The inputs with their numbers checked, and the call's `rows`.
    pub fn checked(self) -> Result<(Inputs<A>, Option<usize>), Error> {
        let n = self.numbers;
        n.check()?;
        let count = |x: Option<f64>| x.map(|x| x as usize);
        let mut x = self.inputs;
        x.hidden = n.hidden as usize;
        x.eps = n.eps.map_or(DEFAULT_EPS, |e| e as f32);
        x.norm.gamma_offset = n.gamma_offset.unwrap_or(0.0) as f32;
        if let Some(r) = &mut x.rotary {
            (r.rotary_dim, r.head_size, r.heads, r.pass_heads) = (
                count(n.rotary.rotary_dim),
                count(n.rotary.head_size),
                count(n.rotary.heads),
                count(n.pass_heads),
            );
            if let Some(p) = n.rotary.position {
                r.positions = Positions::From(p as u32);
            }
        }
        Ok((x, count(n.rows)))
    }
}

impl<H: Len> Unchecked<Arg<H>> {
    /// [`Unchecked::checked`], with the app's buffers (and `outputs`') sized to the call.
    pub fn fit(self, outputs: Option<&mut Outputs<Arg<H>>>) -> Result<Inputs<Arg<H>>, Error> {
        let (mut x, rows) = self.checked()?;
        fit_buffers(&mut x, outputs, rows)?;
        Ok(x)
    }
}
