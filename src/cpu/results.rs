//! The CPU backend's results as the host receives them (`call::results::ResultArray`):
//! natively a vector, an f16 result widened (which is exact); in the browser copied out of
//! wasm memory into a typed array JavaScript owns, a fresh one or the caller's.

use crate::call::error::Error;
use crate::call::numbers::CpuData;
use crate::call::results::ResultArray;

#[cfg(not(target_arch = "wasm32"))]
pub use native::host_result;
#[cfg(not(target_arch = "wasm32"))]
use native::write_host;
#[cfg(target_arch = "wasm32")]
pub use web::host_result;
#[cfg(target_arch = "wasm32")]
use web::write_host;

/// A result computed in memory, as the host receives it: into the array given, else a
/// fresh one.
pub fn host_result_into(data: &CpuData, given: Option<ResultArray>) -> Result<ResultArray, Error> {
    match given {
        Some(mut dst) => write_host(&mut dst, data).map(|()| dst),
        None => Ok(host_result(data)),
    }
}

#[cfg(not(target_arch = "wasm32"))]
mod native {
    use crate::call::dtype::f16_value;
    use crate::call::error::Error;
    use crate::call::numbers::CpuData;
    use crate::call::results::ResultArray;

    /// A result computed in memory, as the host receives it.
    pub fn host_result(data: &CpuData) -> ResultArray {
        match data {
            CpuData::F32(v) => v.clone(),
            CpuData::F16(v) => v.iter().map(|&h| f16_value(h)).collect(),
        }
    }

    /// `data` over the given array `dst` of its length.
    pub fn write_host(dst: &mut ResultArray, data: &CpuData) -> Result<(), Error> {
        *dst = host_result(data);
        Ok(())
    }
}

#[cfg(target_arch = "wasm32")]
mod web {
    use js_sys::{Float32Array, Uint16Array};

    use crate::call::error::Error;
    use crate::call::numbers::CpuData;
    use crate::support::typed_result::TypedResult;

    /// A result computed in wasm memory, copied out into a fresh typed array.
    pub fn host_result(data: &CpuData) -> TypedResult {
        // `slice()` of a view: `new Float32Array(view)` (js-sys's `From<&[f32]>`) was slower
        // in Chromium (docs/performance.md, "Host arrays a block at a time"). The view lives
        // only for this copy: nothing allocates meanwhile, so wasm memory cannot grow and
        // detach it.
        match data {
            CpuData::F32(v) => {
                TypedResult::F32(unsafe { Float32Array::view(v) }.slice(0, v.len() as u32))
            }
            CpuData::F16(v) => {
                TypedResult::F16(unsafe { Uint16Array::view(v) }.slice(0, v.len() as u32))
            }
        }
    }

    /// `data` copied out of wasm memory into the given array `dst` of its length, with one
    /// `set()` (the copy `host_result`'s `slice()` makes, less a fresh array's allocation).
    pub fn write_host(dst: &mut TypedResult, data: &CpuData) -> Result<(), Error> {
        // As in `host_result`: the view lives only for this copy.
        match (dst, data) {
            (TypedResult::F32(d), CpuData::F32(v)) => d.set(unsafe { &Float32Array::view(v) }, 0),
            (TypedResult::F16(d), CpuData::F16(v)) => d.set(unsafe { &Uint16Array::view(v) }, 0),
            // `plan::check_written` refuses such an array before the call starts.
            _ => {
                return Err(Error::Type(
                    "output: expected an array of the result's dtype, got another".into(),
                ))
            }
        }
        Ok(())
    }
}
