//! A call's arguments decoded from what `call_record.rs` read: the inputs, options and
//! destinations of `run`, `runWithSum`, the timing calls, `encode` and `bind`; and `upload`'s
//! data. A call goes down the layers once: every field's JavaScript type first, field by
//! field (`fields.rs`, `rotary_args.rs`) in the order the messages name them; then the values,
//! by `call/checks.rs` (every number, by one rule each), `call/shape.rs` (lengths) and
//! `call/plan.rs` (what a call asks for), the same functions for every entry point. A refusal
//! is worded last (`refused.rs`), with what the call gave.

use js_sys::Reflect;
use wasm_bindgen::prelude::*;

use crate::call::checks::{repeat_from_number, GivenNumbers};
use crate::call::dtype::Dtype;
use crate::call::error::Error;
use crate::call::given::Unchecked;
use crate::call::host::Arg;
use crate::call::plan::{Destination, Request};
use crate::call::shape::{Inputs, Norm, NormKind, Outputs};
use crate::gpu::webgpu_raw::RawEncoder;
use crate::js::array::{Args, JsArray};
use crate::js::call_js::is_webgpu;
use crate::js::call_record::{Call, Status, What};
use crate::js::caller_arrays::{destinations, CallerArrays};
use crate::js::fields::{array_arg, missing, no_output, Sources};
use crate::js::keys::{keys_of, CallKey, Readers, CALL_KEYS};
use crate::js::refused::{field, word, Refused};
use crate::js::rotary_args::rotary;
use crate::js::value::{check_keys, describe};

static KEYS: &[&str] = keys_of!(CALL_KEYS, Readers::RUN);
const UPLOAD_OPTIONS_KEYS: [&str; 1] = ["dtype"];

/// `upload`'s data: a typed array of either dtype, matching `options.dtype` if given.
pub fn upload_arg(data: &JsValue, options: Option<&JsValue>) -> Result<JsArray, Error> {
    let a = match JsArray::from_value(data) {
        Ok(Some(a)) => a,
        Ok(None) => {
            return Err(Error::Type(format!(
                "data: expected a Float32Array (f32) or a Uint16Array/Float16Array (f16), got {}",
                describe(data)
            )))
        }
        Err(expected) => return Err(Error::Type(format!("data: expected {expected}"))),
    };
    let options = options.cloned().unwrap_or(JsValue::UNDEFINED);
    if !(options.is_undefined() || options.is_null() || options.is_object()) {
        return Err(Error::Type(format!(
            "options: expected an object {{ dtype? }} or undefined, got {}",
            describe(&options)
        )));
    }
    // A getter that throws (or a revoked Proxy) is refused, not read as "no dtype".
    let dtype = if options.is_object() {
        check_keys(&options, "options", &UPLOAD_OPTIONS_KEYS)?;
        Reflect::get(&options, &JsValue::from_str("dtype")).map_err(|_| {
            Error::Type("options.dtype: expected a readable field, got one that throws".into())
        })?
    } else {
        JsValue::UNDEFINED
    };
    let wanted = match dtype.as_string().as_deref() {
        _ if dtype.is_undefined() => a.dtype,
        Some("f32") => Dtype::F32,
        Some("f16") => Dtype::F16,
        _ => {
            return Err(Error::Type(format!(
                "options.dtype: expected \"f32\" or \"f16\", got {}",
                describe(&dtype)
            )))
        }
    };
    if wanted != a.dtype {
        return Err(Error::Type(format!(
            "data: expected {} for dtype \"{}\", got {}",
            if wanted == Dtype::F32 {
                "a Float32Array"
            } else {
                "a Uint16Array or Float16Array"
            },
            wanted.name(),
            describe(data)
        )));
    }
    Ok(a)
}

/// The call's inputs and what it asks for (`sum` is the method's: `runWithSum`), for calls
/// that write into no array of the caller's (the timing calls).
pub fn parse_args(call: &Call, sum: bool) -> Result<(Args, Request), Error> {
    let (x, request, arrays) = parse_call(call, sum)?;
    if !arrays.is_empty() {
        return Err(Error::Type(
            "output: expected \"array\" or undefined here (the results are read back into \
             fresh arrays), got a typed array"
                .into(),
        ));
    }
    Ok((x, request))
}

/// `run`'s and `runWithSum`'s arguments: the inputs, what the call asks for, and the arrays
/// of the caller's its results go into (`output`, `sum`), where it gave them.
pub fn parse_call(call: &Call, sum: bool) -> Result<(Args, Request, CallerArrays), Error> {
    let read = read_call(call, sum);
    read.map_err(|refused| word(call, refused))
}

/// [`parse_call`]'s reading: every field's type first, then the values, down the layers.
fn read_call(call: &Call, sum: bool) -> Result<(Args, Request, CallerArrays), Refused> {
    let x = parse_inputs(call, Sources::RUN, |key, required, from| {
        array_arg(call, key, required, from)
    })?;
    let (request, arrays) = destinations(call, sum, x.inputs.writes_y())?;
    // The arrays given for the results match the input as fitted to the call's rows.
    let x = x.fit(None)?;
    arrays.check(&x)?;
    Ok((x, request, arrays))
}

/// `encode`'s encoder: a `GPUCommandEncoder`, as this runtime's WebGPU recognises its own
/// (`is_webgpu`).
pub fn encoder_arg(v: &JsValue) -> Result<&RawEncoder, Error> {
    if !is_webgpu(v, "GPUCommandEncoder") {
        return Err(Error::Type(format!(
            "encoder: expected a GPUCommandEncoder of norm.device, got {}",
            describe(v)
        )));
    }
    Ok(v.unchecked_ref())
}

/// `encode`'s and `bind`'s arguments: the inputs (GPU data only), and where the results go.
pub fn parse_encode(call: &Call) -> Result<(Args, Outputs<Arg<JsArray>>), Error> {
    let read = read_encode(call);
    read.map_err(|refused| word(call, refused))
}

/// [`parse_encode`]'s reading, as [`read_call`]'s.
fn read_encode(call: &Call) -> Result<(Args, Outputs<Arg<JsArray>>), Refused> {
    let from = Sources::ENCODE;
    let x = parse_inputs(call, from, |k, required, from| {
        array_arg(call, k, required, from)
    })?;
    // The app's buffers hold what the call says: the data's dtype, `output` outputDtype's.
    let data = Sources {
        dtype: call.dtype_field(CallKey::Dtype)?.unwrap_or(Dtype::F32),
        ..from
    };
    let out = Sources {
        dtype: x.inputs.norm.output_dtype.unwrap_or(data.dtype),
        ..data
    };
    let output = array_arg(call, CallKey::Output, false, out)?;
    let sum = array_arg(call, CallKey::Sum, false, data)?;
    let writes_y = x.inputs.writes_y();
    let mut outputs = match (call.flag_field(CallKey::InPlace)?, output) {
        (true, None) if sum.is_none() => Outputs::InPlace,
        (true, _) => {
            return Err(Error::Type(
                "output: expected no output or sum with inPlace: true (the results overwrite input and residual)".into(),
            ).into())
        }
        (false, Some(_)) if !writes_y => return no_output(),
        (false, output) if !writes_y || output.is_some() => Outputs::To { output, sum },
        (false, _) => {
            return Err(Error::Type(
                "output: expected a GPUBuffer or a GpuTensor for the result (or inPlace: true), got undefined".into(),
            ).into())
        }
    };
    Ok((x.fit(Some(&mut outputs))?, outputs))
}

/// The arrays (each by `array`, as the caller takes them), `hidden`, `eps`, the norm and the
/// rotary stage of a call, their types read; `from` with the `dtype` its `GPUBuffer`s hold.
pub fn parse_inputs<A>(
    call: &Call,
    mut from: Sources,
    mut array: impl FnMut(CallKey, bool, Sources) -> Result<Option<A>, Refused>,
) -> Result<Unchecked<A>, Refused> {
    match call.status() {
        Status::Read => {}
        Status::UnknownKey => return Err(Refused::UnknownKey(KEYS)),
        Status::NotObject => return Err(Refused::Args(
            "an object { input, gamma, hidden, residual?, input2?, beta?, bias?, postGamma?, eps?, kind?, gammaOffset?, outputDtype? }",
        )),
    }
    from.dtype = call.dtype_field(CallKey::Dtype)?.unwrap_or(Dtype::F32);
    let input = array(CallKey::Input, true, from)?.ok_or_else(|| missing(CallKey::Input))?;
    let residual = array(CallKey::Residual, false, from)?;
    let input2 = array(CallKey::Input2, false, from)?;
    // Optional beside a postGamma (a post-norm's sum alone: `plan::sum_alone` checks the
    // rest) and with no norm (`kind: "none"`, which has none).
    let kind = call.kind()?;
    let gamma_required = call.what(CallKey::PostGamma) == What::Absent && kind != NormKind::None;
    let gamma = array(CallKey::Gamma, gamma_required, from)?;
    let beta = array(CallKey::Beta, false, from)?;
    let bias = array(CallKey::Bias, false, from)?;
    let post_gamma = array(CallKey::PostGamma, false, from)?;
    let mut numbers = GivenNumbers {
        gamma_offset: call.optional_number(CallKey::GammaOffset)?,
        ..GivenNumbers::default()
    };
    let norm = Norm {
        kind,
        gamma_offset: 0.0,
        output_dtype: call.dtype_field(CallKey::OutputDtype)?,
    };
    numbers.hidden = match call.what(CallKey::Hidden) {
        What::Number => call.number(CallKey::Hidden),
        _ => return field(CallKey::Hidden, "a number (an integer >= 1)"),
    };
    numbers.eps = call.optional_number(CallKey::Eps)?;
    let rotary = rotary(call, &mut numbers)?;
    numbers.rows = call.optional_number(CallKey::Rows)?;
    let inputs = Inputs {
        input,
        residual,
        input2,
        gamma,
        beta,
        bias,
        post_gamma,
        hidden: 0,
        eps: 0.0,
        norm,
        rotary,
    };
    Ok(Unchecked { inputs, numbers })
}

/// A timing call's arguments: the call's, with results read back, and `repeat`.
pub fn parse_timed(call: &Call, repeat: &JsValue, timed: bool) -> Result<(Args, Request), Error> {
    let (x, request) = parse_args(call, false)?;
    if request.to != Destination::Host {
        return Err(Error::Type(
            "output: expected \"array\" or undefined in a timing call (its results are read back)"
                .into(),
        ));
    }
    let Some(r) = repeat.as_f64() else {
        return Err(Error::Type(format!(
            "repeat: expected a number (an integer from 1 to {}), got {}",
            crate::call::checks::MAX_REPEAT,
            describe(repeat)
        )));
    };
    let mut request = Request::repeated(repeat_from_number(r)?, timed);
    // A post-norm's sum alone is timed computing its sum, its one result.
    request.sum = !x.writes_y();
    Ok((x, request))
}
