//! The checks of single values: a number from JavaScript (`hidden`, `rows`, `eps`,
//! `gammaOffset`, `repeat`) and a size against the device's limits. [`crate::call::shape`]
//! applies them to a whole call, the facade's argument readers to JavaScript numbers, and the
//! drivers' `upload` (`instance.rs`, `gpu/resident.rs`, `cpu/driver.rs`) to the size of an
//! upload.

use crate::call::device::Caps;
use crate::call::dtype::Dtype;
use crate::call::error::Error;
use crate::support::number_text::number_text;

/// The most dispatches one timing call records. A repeat count is work recorded
/// synchronously and run in one submission: unbounded, `timeDispatches(args, -1)` would
/// record 2³² dispatches and hang the page. 10,000 covers any slope measurement, the demo's
/// and the benchmarks' included.
pub const MAX_REPEAT: u32 = 10_000;

/// Rows of `hidden` one storage binding of `max_binding` bytes holds.
pub(crate) fn rows_per_binding(hidden: usize, max_binding: u64) -> Result<usize, Error> {
    let row_bytes = hidden as u64 * 4;
    if row_bytes > max_binding {
        return Err(Error::Shape(format!(
            "hidden: expected a row this device can bind (at most {} f32, its \
             maxStorageBufferBindingSize is {} bytes), got {hidden}",
            max_binding / 4,
            max_binding
        )));
    }
    Ok((max_binding / row_bytes) as usize)
}

/// An upload of `len` elements must fit one storage binding.
pub fn check_upload(len: usize, dtype: Dtype, caps: &Caps) -> Result<(), Error> {
    if (len * dtype.bytes()) as u64 > caps.max_binding {
        return Err(Error::Shape(format!(
            "data: expected at most {} elements (this device's maxStorageBufferBindingSize is {} bytes), got {len}",
            caps.max_binding / dtype.bytes() as u64,
            caps.max_binding
        )));
    }
    Ok(())
}

/// A repeat count from Rust; the same check as JavaScript's.
pub(crate) fn check_repeat(repeat: u32) -> Result<(), Error> {
    repeat_from_number(repeat.into()).map(drop)
}

/// `hidden` as JavaScript passes it: any number. Non-numbers are the caller's `TypeError`.
pub fn hidden_from_number(hidden: f64) -> Result<usize, Error> {
    if !(hidden.fract() == 0.0 && hidden >= 1.0 && hidden <= u32::MAX as f64) {
        return Err(Error::Shape(format!(
            "hidden: expected an integer from 1 to {}, got {}",
            u32::MAX,
            number_text(hidden)
        )));
    }
    Ok(hidden as usize)
}

/// `rows` as JavaScript passes it (where a `GPUBuffer` input holds more than the call's rows).
pub fn rows_from_number(rows: f64) -> Result<usize, Error> {
    if !(rows.fract() == 0.0 && (0.0..=u32::MAX as f64).contains(&rows)) {
        return Err(Error::Shape(format!(
            "rows: expected an integer from 0 to {}, got {}",
            u32::MAX,
            number_text(rows)
        )));
    }
    Ok(rows as usize)
}

/// `eps` as JavaScript passes it; it must also be finite once rounded to f32.
pub fn eps_from_number(eps: f64) -> Result<f32, Error> {
    if !(eps.is_finite() && eps >= 0.0 && eps <= f32::MAX as f64) {
        return Err(Error::Shape(format!(
            "eps: expected a finite number >= 0, got {}",
            number_text(eps)
        )));
    }
    Ok(eps as f32)
}

/// `gammaOffset` as JavaScript passes it: any number that stays finite in f32 (Gemma's 1).
pub fn gamma_offset_from_number(offset: f64) -> Result<f32, Error> {
    if !(offset.is_finite() && offset.abs() <= f32::MAX as f64) {
        return Err(Error::Shape(format!(
            "gammaOffset: expected a finite number, got {}",
            number_text(offset)
        )));
    }
    Ok(offset as f32)
}

/// A timing call's `repeat` as JavaScript passes it, checked before anything is recorded.
pub fn repeat_from_number(repeat: f64) -> Result<u32, Error> {
    if !(repeat.fract() == 0.0 && repeat >= 1.0 && repeat <= MAX_REPEAT as f64) {
        return Err(Error::Shape(format!(
            "repeat: expected an integer from 1 to {MAX_REPEAT}, got {}",
            number_text(repeat)
        )));
    }
    Ok(repeat as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeat_is_bounded_before_anything_is_recorded() {
        for bad in [
            0.0,
            -1.0,
            1.5,
            f64::NAN,
            f64::INFINITY,
            1e12,
            (MAX_REPEAT + 1) as f64,
        ] {
            let e = repeat_from_number(bad).unwrap_err();
            assert_eq!(e.name(), "ShapeError");
            assert!(e.message().starts_with("repeat:"), "{e}");
        }
        assert_eq!(repeat_from_number(1.0), Ok(1));
        assert_eq!(repeat_from_number(MAX_REPEAT as f64), Ok(MAX_REPEAT));
        assert!(check_repeat(0).is_err() && check_repeat(MAX_REPEAT + 1).is_err());
    }
}
