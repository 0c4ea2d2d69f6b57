//! Small pieces every layer uses: a clock that works in the browser, a fast hash for the
//! pipeline and bind-group caches, and a number as JavaScript writes it.

pub mod clock;
pub(crate) mod fast_hash;
pub mod number_text;
