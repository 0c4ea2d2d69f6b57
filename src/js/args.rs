//! A call's arguments into Rust: the arrays, tensors and app `GPUBuffer`s of `run`,
//! `runWithSum`, the timing calls and `encode`, and `upload`'s data. `create`'s options and
//! the kernels of `prepare` and `kernelSource` are read in `options.rs`; both read values
//! through `value.rs`, which lets nothing throw into Rust. Only the JavaScript types are
//! checked here; the values are checked by `call/checks.rs` (`hidden`, `eps`, `repeat`, `rows`),
//! `call/shape.rs` (lengths) and `call/plan.rs` (what a call asks for), the same functions for every
//! entry point.

use js_sys::Reflect;
use wasm_bindgen::prelude::*;

use crate::call::checks::{eps_from_number, hidden_from_number, repeat_from_number};
use crate::call::dtype::Dtype;
use crate::call::error::Error;
use crate::call::host::{AppBuffer, Arg};
use crate::call::plan::{Destination, Request};
use crate::call::shape::Outputs;
use crate::call::shape::{fit_buffers, Inputs, Norm};
use crate::gpu::webgpu_raw::{is_webgpu, RawEncoder};
use crate::js::array::{Args, JsArray};
use crate::js::caller_arrays::CallerArrays;
use crate::js::keys::{keys_of, Readers, CALL_KEYS};
use crate::js::tensor::tensor_arg;
use crate::js::value::{
    check_keys, describe, dtype_field, flag, gamma_offset_field, get, is_array, is_view,
    kind_field, rows_field,
};
use crate::support::number_text::number_text;

static RUN_KEYS: &[&str] = keys_of!(CALL_KEYS, Readers::RUN);
static ENCODE_KEYS: &[&str] = keys_of!(CALL_KEYS, Readers::ENCODE);
const UPLOAD_OPTIONS_KEYS: [&str; 1] = ["dtype"];

/// Where a call takes its arrays from, and what it does with the app's `GPUBuffer`s.
#[derive(Clone, Copy)]
struct Sources {
    /// Typed arrays are welcome (`run`), or only GPU data is (`encode`).
    host: bool,
    /// The `GPUBufferUsage` bits a `GPUBuffer` argument needs, and their names.
    usage: (u32, &'static str),
    /// What a `GPUBuffer` holds (a buffer has no element type of its own).
    dtype: Dtype,
}

/// `GPUBufferUsage.COPY_SRC`: `run` copies an app's buffer into one of its own.
const COPY_SRC: (u32, &str) = (0x4, "COPY_SRC");
/// `GPUBufferUsage.STORAGE`: `encode` binds an app's buffer as it is.
const STORAGE: (u32, &str) = (0x80, "STORAGE");

/// A typed array, a `GpuTensor` or a `GPUBuffer` argument; `None` when optional and absent.
fn array_arg(
    args: &JsValue,
    name: &'static str,
    required: bool,
    from: Sources,
) -> Result<Option<Arg<JsArray>>, Error> {
    let v = get(args, name);
    if v.is_undefined() && !required {
        return Ok(None);
    }
    // A transferred (detached) buffer would read as length 0: it gets its own message.
    match JsArray::from_value(&v) {
        Ok(Some(a)) if from.host => return Ok(Some(Arg::Host(a))),
        Ok(Some(_)) => {
            return Err(Error::Type(format!(
                "{name}: expected a GPUBuffer or a GpuTensor (encode records GPU work only: \
                 upload host data first), got {}",
                describe(&v)
            )))
        }
        Ok(None) => {}
        Err(expected) => return Err(Error::Type(format!("{name}: expected {expected}"))),
    }
    if let Some(t) = tensor_arg(&v, name)? {
        return Ok(Some(Arg::Gpu(t)));
    }
    if let Some(b) = gpu_buffer_arg(&v, name, from)? {
        return Ok(Some(Arg::Buffer(b)));
    }
    let expected = match (from.host, required) {
        (true, true) => {
            "a Float32Array (or Uint16Array/Float16Array for f16), a GpuTensor or a GPUBuffer"
        }
        (true, false) => {
            "a Float32Array (or Uint16Array/Float16Array for f16), a GpuTensor, a GPUBuffer or undefined"
        }
        (false, true) => "a GPUBuffer or a GpuTensor",
        (false, false) => "a GPUBuffer, a GpuTensor or undefined",
    };
    Err(Error::Type(format!(
        "{name}: expected {expected}, got {}",
        describe(&v)
    )))
}

/// An app's `GPUBuffer`, recognised as the runtime's WebGPU recognises its own
/// (`webgpu_raw::is_webgpu`).
fn gpu_buffer_arg(v: &JsValue, name: &str, from: Sources) -> Result<Option<AppBuffer>, Error> {
    if !is_webgpu(v, "GPUBuffer") {
        return Ok(None);
    }
    let number = |k: &'static str| get(v, k).as_f64().unwrap_or(0.0);
    let (size, usage) = (number("size"), number("usage") as u32);
    let (bits, flag) = from.usage;
    if usage & bits == 0 {
        return Err(Error::Type(format!(
            "{name}: expected a GPUBuffer with GPUBufferUsage.{flag}, got one without it"
        )));
    }
    if size % from.dtype.bytes() as f64 != 0.0 {
        return Err(Error::Shape(format!(
            "{name}: expected a GPUBuffer of whole {} elements, got {} bytes",
            from.dtype.name(),
            number_text(size)
        )));
    }
    Ok(Some(AppBuffer::new(v.clone(), size as u64, from.dtype)))
}

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
pub fn parse_args(args: &JsValue, sum: bool) -> Result<(Args, Request), Error> {
    let (x, request, arrays) = parse_call(args, sum)?;
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
pub fn parse_call(args: &JsValue, sum: bool) -> Result<(Args, Request, CallerArrays), Error> {
    if let Some(parsed) = crate::js::tensor_call::parse(args, sum) {
        return parsed.map(|(x, request)| (x, request, CallerArrays::default()));
    }
    let from = Sources {
        host: true,
        usage: COPY_SRC,
        dtype: Dtype::F32,
    };
    let mut x = parse_inputs(args, RUN_KEYS, from)?;
    fit_buffers(&mut x, None, rows_field(args)?)?;
    let (o, s) = (get(args, "output"), get(args, "sum"));
    let mut arrays = CallerArrays::default();
    let request = match o.as_string().as_deref() {
        _ if o.is_undefined() => Request::host(sum),
        Some("array") => Request::host(sum),
        Some("gpu") => Request::to_gpu(sum),
        _ if arrays.read("output", &o)? => Request::host(sum),
        _ => {
            return Err(Error::Type(format!(
                "output: expected \"array\", \"gpu\", a typed array for the result or undefined, got {}",
                describe(&o)
            )));
        }
    };
    if !s.is_undefined() {
        let refused = if !sum {
            Some("in run (runWithSum has a sum result)")
        } else if request.to == Destination::Gpu {
            Some("with output: \"gpu\" (the sum is a new GpuTensor too)")
        } else if !arrays.read("sum", &s)? {
            Some("or a typed array for the sum")
        } else {
            None
        };
        if let Some(why) = refused {
            return Err(Error::Type(format!(
                "sum: expected undefined {why}, got {}",
                describe(&s)
            )));
        }
    }
    if !flag(args, "inPlace")? {
        arrays.check(&x)?;
        return Ok((x, request, arrays));
    }
    if !o.is_undefined() || !s.is_undefined() {
        let (name, v) = if o.is_undefined() {
            ("sum", &s)
        } else {
            ("output", &o)
        };
        return Err(Error::Type(format!(
            "{name}: expected undefined with inPlace: true (the results overwrite input and residual), got {}",
            describe(v)
        )));
    }
    Ok((x, Request::in_place(), CallerArrays::default()))
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

/// `encode`'s arguments: the inputs (GPU data only), and where the results go.
pub fn parse_encode(args: &JsValue) -> Result<(Args, Outputs<Arg<JsArray>>), Error> {
    let from = Sources {
        host: false,
        usage: STORAGE,
        dtype: Dtype::F32,
    };
    let mut x = parse_inputs(args, ENCODE_KEYS, from)?;
    // The app's buffers hold what the call says: the data's dtype, `output` outputDtype's.
    let data = Sources {
        dtype: dtype_field(args, "dtype")?.unwrap_or(Dtype::F32),
        ..from
    };
    let out = Sources {
        dtype: x.norm.output_dtype.unwrap_or(data.dtype),
        ..data
    };
    let output = array_arg(args, "output", false, out)?;
    let sum = array_arg(args, "sum", false, data)?;
    let mut outputs = match (flag(args, "inPlace")?, output) {
        (true, None) if sum.is_none() => Outputs::InPlace,
        (true, _) => {
            return Err(Error::Type(
                "output: expected no output or sum with inPlace: true (the results overwrite input and residual)".into(),
            ))
        }
        (false, Some(output)) => Outputs::To { output, sum },
        (false, None) => {
            return Err(Error::Type(
                "output: expected a GPUBuffer or a GpuTensor for the result (or inPlace: true), got undefined".into(),
            ))
        }
    };
    fit_buffers(&mut x, Some(&mut outputs), rows_field(args)?)?;
    Ok((x, outputs))
}

/// The arrays, `hidden` and `eps` of a call's argument object. `GPUBuffer`s hold `args.dtype`.
fn parse_inputs(
    args: &JsValue,
    keys: &'static [&'static str],
    mut from: Sources,
) -> Result<Args, Error> {
    if !args.is_object()
        || args.is_function()
        || is_array(args).unwrap_or(true)
        || is_view(args).unwrap_or(true)
    {
        return Err(Error::Type(format!(
            "args: expected an object {{ input, gamma, hidden, residual?, beta?, bias?, postGamma?, eps?, kind?, gammaOffset?, outputDtype? }}, got {}",
            describe(args)
        )));
    }
    check_keys(args, "args", keys)?;
    from.dtype = dtype_field(args, "dtype")?.unwrap_or(Dtype::F32);
    let required = |name| {
        array_arg(args, name, true, from)?.ok_or_else(|| Error::Type(format!("{name}: missing")))
    };
    let input = required("input")?;
    let residual = array_arg(args, "residual", false, from)?;
    let gamma = required("gamma")?;
    let beta = array_arg(args, "beta", false, from)?;
    let bias = array_arg(args, "bias", false, from)?;
    let post_gamma = array_arg(args, "postGamma", false, from)?;
    let norm = Norm {
        kind: kind_field(args)?,
        gamma_offset: gamma_offset_field(args)?,
        output_dtype: dtype_field(args, "outputDtype")?,
    };
    let h = get(args, "hidden");
    let Some(hidden) = h.as_f64() else {
        return Err(Error::Type(format!(
            "hidden: expected a number (an integer >= 1), got {}",
            describe(&h)
        )));
    };
    let hidden = hidden_from_number(hidden)?;
    let e = get(args, "eps");
    let eps = if e.is_undefined() {
        crate::call::shape::DEFAULT_EPS
    } else {
        let Some(eps) = e.as_f64() else {
            return Err(Error::Type(format!(
                "eps: expected a number or undefined, got {}",
                describe(&e)
            )));
        };
        eps_from_number(eps)?
    };
    Ok(Inputs {
        input,
        residual,
        gamma,
        beta,
        bias,
        post_gamma,
        hidden,
        eps,
        norm,
    })
}

/// A timing call's arguments: the call's, with results read back, and `repeat`.
pub fn parse_timed(
    args: &JsValue,
    repeat: &JsValue,
    timed: bool,
) -> Result<(Args, Request), Error> {
    let (x, request) = parse_args(args, false)?;
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
    Ok((x, Request::repeated(repeat_from_number(r)?, timed)))
}
