//! The caller's own typed arrays a call writes its host results into: `output` (and
//! `runWithSum`'s `sum`) given as a `Float32Array` for an f32 result, a `Uint16Array` of half
//! bits or a `Float16Array` for an f16 one. Checked before the call starts: the result's
//! length and dtype (`call/plan.rs`, `check_written`, as `encode`'s destinations), a live
//! buffer, no byte shared with an input or with each other, none of this module's own memory.
//! The drivers write through a plain view of each (`call/results.rs`, `Given`), never through
//! the caller's object, whose `set` or `length` a subclass may redefine, and the call resolves
//! with the caller's own objects.

use js_sys::{Float32Array, Uint16Array};
use wasm_bindgen::prelude::*;

use crate::call::dtype::Dtype;
use crate::call::error::Error;
use crate::call::plan::{check_written, Destination, Request};
use crate::call::results::{Given, Output};
use crate::js::array::{Args, Memory};
use crate::js::call_record::{Call, What, Word};
use crate::js::fields::no_output;
use crate::js::fields::DETACHED;
use crate::js::keys::CallKey;
use crate::js::refused::{field, Refused};
use crate::js::value::results_value;
use crate::support::typed_result::TypedResult;

/// One array given for a result.
struct CallerArray {
    /// The caller's object, which the call resolves with.
    array: JsValue,
    len: usize,
    dtype: Dtype,
    /// The first array of the call (by the table's order) that shares a byte with it, as
    /// `call.js` found it.
    overlap: Option<CallKey>,
}

/// The arrays given for a call's results, where it gave them.
#[derive(Default)]
pub struct CallerArrays {
    output: Option<CallerArray>,
    sum: Option<CallerArray>,
}

impl CallerArrays {
    pub fn is_empty(&self) -> bool {
        self.output.is_none() && self.sum.is_none()
    }

    /// Reads `key`'s value as the array its result goes into; `Ok(false)` where it is no
    /// typed array of a dtype the package holds (the caller says what else it may be).
    pub fn read(&mut self, call: &Call, key: CallKey) -> Result<bool, Refused> {
        let Some(dtype) = call.dtype(key) else {
            return Ok(false);
        };
        let name = key.name();
        if call.detached(key) {
            return Err(Error::Type(format!("{name}: expected {DETACHED}")).into());
        }
        if call.in_wasm_memory(key) {
            return Err(Error::Type(format!(
                "{name}: expected an array of the app's own memory, got a view of this module's \
                 WebAssembly memory (which the package itself writes)"
            ))
            .into());
        }
        let given = CallerArray {
            array: call.value(key),
            len: call.len(key),
            dtype,
            overlap: call.overlap(key),
        };
        match key {
            CallKey::Output => self.output = Some(given),
            _ => self.sum = Some(given),
        }
        Ok(true)
    }

    /// Each array of the result's length and dtype, and apart from the call's host inputs
    /// and from the other (the inputs are read before any result is written, but an array
    /// that is both is a mistake to name, not a race to leave to the order of copies).
    pub fn check(&self, x: &Args) -> Result<(), Error> {
        let given = [("output", &self.output), ("sum", &self.sum)];
        for (name, a) in given
            .iter()
            .filter_map(|(n, a)| a.as_ref().map(|a| (*n, a)))
        {
            check_written(x, name, a.len, a.dtype)?;
            if let Some(input) = a.overlap.filter(|k| CallKey::ARRAYS.contains(k)) {
                return Err(Error::Type(format!(
                    "{name}: expected an array apart from the call's inputs, got one over \
                     the same memory as {}",
                    input.name()
                )));
            }
        }
        let (y, v) = (&self.output, &self.sum);
        if y.as_ref().is_some_and(|y| y.overlap == Some(CallKey::Sum))
            || v.as_ref()
                .is_some_and(|v| v.overlap == Some(CallKey::Output))
        {
            return Err(Error::Type(
                "sum: expected an array apart from output, got one over the same memory".into(),
            ));
        }
        Ok(())
    }

    /// What the drivers write into: a plain view of each array given, over its memory (an
    /// f16 result's bits, whichever of `Uint16Array` or `Float16Array` the caller gave).
    pub fn given(&self) -> Given {
        let view = |a: &Option<CallerArray>| {
            let a = a.as_ref()?;
            let memory = Memory::of(&a.array, a.len, a.dtype);
            let (buffer, start, len) = (&memory.buffer, memory.start as u32, a.len as u32);
            Some(match a.dtype {
                Dtype::F32 => TypedResult::F32(Float32Array::new_with_byte_offset_and_length(
                    buffer, start, len,
                )),
                Dtype::F16 => TypedResult::F16(Uint16Array::new_with_byte_offset_and_length(
                    buffer, start, len,
                )),
            })
        };
        Given {
            y: view(&self.output),
            sum: view(&self.sum),
        }
    }

    /// What a call resolves with: `y`, or `{ output, sum }` for `runWithSum` (`want_sum`;
    /// `{ sum }` for a post-norm's sum alone), each the caller's own array where it gave one.
    pub fn resolve(&self, out: Output, want_sum: bool) -> JsValue {
        let own = |a: &Option<CallerArray>, v: Option<TypedResult>| {
            v.map(|v| a.as_ref().map_or_else(|| v.into(), |a| a.array.clone()))
        };
        let y = own(&self.output, out.y);
        let sum = own(&self.sum, out.sum);
        results_value(y, sum.filter(|_| want_sum))
    }
}

/// Where `run`'s results go: what `output`, `sum` and `inPlace` ask for (`writes_y`: the call
/// has a `y` to write), and the caller's arrays among them ([`CallerArrays::check`] checks
/// them once the call's input is fitted to its rows).
pub fn destinations(
    call: &Call,
    sum: bool,
    writes_y: bool,
) -> Result<(Request, CallerArrays), Refused> {
    let mut arrays = CallerArrays::default();
    let output = call.what(CallKey::Output);
    let request = match call.word(CallKey::Output) {
        _ if output == What::Absent => Request::host(sum),
        Some(Word::Array) => Request::host(sum),
        Some(Word::Gpu) => Request::to_gpu(sum),
        _ if !writes_y => return no_output(),
        _ if arrays.read(call, CallKey::Output)? => Request::host(sum),
        _ => {
            return field(
                CallKey::Output,
                "\"array\", \"gpu\", a typed array for the result or undefined",
            )
        }
    };
    let given_sum = call.what(CallKey::Sum) != What::Absent;
    if given_sum {
        let refused = if !sum {
            Some("in run (runWithSum has a sum result)")
        } else if request.to == Destination::Gpu {
            Some("with output: \"gpu\" (the sum is a new GpuTensor too)")
        } else if !arrays.read(call, CallKey::Sum)? {
            Some("or a typed array for the sum")
        } else {
            None
        };
        if let Some(why) = refused {
            return field(CallKey::Sum, format!("undefined {why}"));
        }
    }
    if !call.flag_field(CallKey::InPlace)? {
        return Ok((request, arrays));
    }
    if output != What::Absent || given_sum {
        let key = if output == What::Absent {
            CallKey::Sum
        } else {
            CallKey::Output
        };
        return field(
            key,
            "undefined with inPlace: true (the results overwrite input and residual)",
        );
    }
    Ok((Request::in_place(), CallerArrays::default()))
}
