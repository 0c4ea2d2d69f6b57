//! A call's results as the host receives them, and everything a finished call hands back.
//!
//! A result reaches the host in a [`ResultArray`]: natively a Rust vector; in the browser a
//! typed array owned by JavaScript (`support::typed_result`), a fresh one or the caller's own
//! ([`Given`]). Each driver fills it its own way on each platform: the GPU driver copies each
//! mapped chunk into it once (`gpu/transfer/`), the CPU backend its numbers out of memory
//! (`cpu/results.rs`).

use std::rc::Rc;

use crate::call::error::Error;
use crate::call::tensor::Tensor;

/// The array a result reaches the host in: natively a vector of f32, an f16 result widened
/// (which is exact).
#[cfg(not(target_arch = "wasm32"))]
pub type ResultArray = Vec<f32>;

/// The array a result reaches the host in: in the browser a typed array JavaScript owns,
/// an f16 result as its bits.
#[cfg(target_arch = "wasm32")]
pub type ResultArray = crate::support::typed_result::TypedResult;

/// A call's results read back: `y` (not without `gamma`: a post-norm's sum alone), and `v`
/// when the `sum` output was asked for.
pub struct Output {
    pub y: Option<ResultArray>,
    pub sum: Option<ResultArray>,
}

/// Results left on the device, as new tensors, as [`Output`] has them.
pub struct GpuOutput {
    pub y: Option<Rc<Tensor>>,
    pub sum: Option<Rc<Tensor>>,
}

/// Everything a finished call hands back; which parts exist depends on its request.
#[derive(Default)]
pub struct Finished {
    /// Read back (`Destination::Host`).
    pub host: Option<Output>,
    /// New tensors (`Destination::Gpu`).
    pub gpu: Option<GpuOutput>,
    /// The timed pass's GPU time in nanoseconds, where the device has timestamps.
    pub ns: Option<f64>,
}

/// The caller's own arrays a call's host results are written into (`output`, `sum`), where
/// it gave them: each of the result's length and dtype (`plan::check_written`), written only
/// once the whole result is at hand, so that a call that fails leaves them as they were.
#[derive(Default)]
pub struct Given {
    pub y: Option<ResultArray>,
    pub sum: Option<ResultArray>,
}

impl Given {
    /// Whether each array given still holds `len` elements: in the browser the caller may
    /// transfer or shrink its buffer while the call runs, and then nothing is written.
    pub fn check_intact(&self, len: usize) -> Result<(), Error> {
        for (name, v) in [("output", &self.y), ("sum", &self.sum)] {
            let Some(got) = v.as_ref().map(ResultArray::len) else {
                continue;
            };
            if got != len {
                return Err(Error::Type(format!(
                    "{name}: expected the array given to keep its {len} elements until the call \
                     resolved, got one of {got} (its buffer transferred or resized meanwhile)"
                )));
            }
        }
        Ok(())
    }
}
