//! Room in wasm memory for the CPU backend's arrays, asked for so that running out of it is an
//! error the caller can act on (free tensors, split the call) and not an abort: wasm32 memory
//! ends at 4 GiB, and a failed allocation would end the instance (`panic = abort`), its trap
//! escaping to JavaScript as `RuntimeError: unreachable` (as an `upload()` that takes memory
//! past its end would).

use crate::call::error::Error;

/// An empty vector with room for `len` elements.
pub fn room<T>(len: usize, what: &str) -> Result<Vec<T>, Error> {
    let mut v = Vec::new();
    reserve(&mut v, len, what)?;
    Ok(v)
}

/// Room in `v` for `len` elements in all.
pub fn reserve<T>(v: &mut Vec<T>, len: usize, what: &str) -> Result<(), Error> {
    let more = len.saturating_sub(v.len());
    v.try_reserve_exact(more).map_err(|_| {
        // In f64: in wasm32's usize a request of 4 GiB, or memory grown to all of it, wraps.
        // Whole MiB as an integer: no float formatting in the wasm (`support::number_text`).
        let mib = |bytes: f64| (bytes / f64::from(1u32 << 20)).round() as u64;
        let asked = mib(more as f64 * std::mem::size_of::<T>() as f64);
        Error::Range(format!(
            "{what}: {asked} MiB more than the CPU backend's wasm memory can hold now \
             ({} MiB of it in use, 4096 at most); free tensors, or split the call",
            mib(in_use())
        ))
    })
}

/// Bytes of wasm memory the module has grown to (never given back).
#[cfg(target_arch = "wasm32")]
fn in_use() -> f64 {
    core::arch::wasm32::memory_size(0) as f64 * 65536.0
}

#[cfg(not(target_arch = "wasm32"))]
fn in_use() -> f64 {
    0.0
}
