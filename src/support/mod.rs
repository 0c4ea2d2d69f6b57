//! Small pieces every layer uses: a clock that works in the browser, a fast hash for the
//! pipeline and bind-group caches, a number as JavaScript writes it, and the typed array a
//! result reaches the browser in.

pub mod clock;
pub(crate) mod fast_hash;
pub mod number_text;
#[cfg(target_arch = "wasm32")]
pub mod typed_result;
