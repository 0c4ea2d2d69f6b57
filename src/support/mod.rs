//! Small pieces every layer uses: a clock that works in the browser, a fast hash for the
//! pipeline and bind-group caches.

pub mod clock;
pub(crate) mod fast_hash;
