//! One field of a call's record (`call_record.rs`) decoded: an array argument (a typed
//! array, a `GpuTensor` or an app's `GPUBuffer`), a number, a flag or a name, each checked
//! for its JavaScript type with the message that names the field and describes the value.

use crate::call::checks::rows_from_number;
use crate::call::dtype::Dtype;
use crate::call::error::Error;
use crate::call::host::{AppBuffer, Arg};
use crate::call::shape::NormKind;
use crate::js::array::JsArray;
use crate::js::call_record::{Call, What, Word};
use crate::js::keys::CallKey;
use crate::js::tensor::tensor_by_handle;
use crate::support::number_text::number_text;

/// Where a call takes its arrays from, and what it does with the app's `GPUBuffer`s.
#[derive(Clone, Copy)]
pub struct Sources {
    /// Typed arrays are welcome (`run`), or only GPU data is (`encode`).
    pub host: bool,
    /// The `GPUBufferUsage` bits a `GPUBuffer` argument needs, and their names.
    pub usage: (u32, &'static str),
    /// What a `GPUBuffer` holds (a buffer has no element type of its own).
    pub dtype: Dtype,
}

impl Sources {
    /// `run`'s: host data, and `GPUBuffer`s it copies from.
    pub const RUN: Sources = Sources {
        host: true,
        usage: COPY_SRC,
        dtype: Dtype::F32,
    };
    /// `encode`'s: GPU data only, `GPUBuffer`s bound as storage.
    pub const ENCODE: Sources = Sources {
        host: false,
        usage: STORAGE,
        dtype: Dtype::F32,
    };
}

/// `GPUBufferUsage.COPY_SRC`: `run` copies an app's buffer into one of its own.
const COPY_SRC: (u32, &str) = (0x4, "COPY_SRC");
/// `GPUBufferUsage.STORAGE`: `encode` binds an app's buffer as it is.
const STORAGE: (u32, &str) = (0x80, "STORAGE");

/// A typed array, a `GpuTensor` or a `GPUBuffer` argument; `None` when optional and absent.
pub fn array_arg(
    call: &Call,
    key: CallKey,
    required: bool,
    from: Sources,
) -> Result<Option<Arg<JsArray>>, Error> {
    let name = key.name();
    match call.what(key) {
        What::Absent if !required => return Ok(None),
        What::F32 | What::Bits | What::Halves => return host_array(call, key, from).map(Some),
        What::Tensor => match tensor_by_handle(call.handle(key)) {
            Some(t) => return Ok(Some(Arg::Gpu(t))),
            None => return Err(freed(name)),
        },
        What::FreedTensor => return Err(freed(name)),
        What::Buffer => return gpu_buffer_arg(call, key, from).map(|b| Some(Arg::Buffer(b))),
        _ => {}
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
        call.got(key)
    )))
}

/// A typed array argument, where the call takes host data.
fn host_array(call: &Call, key: CallKey, from: Sources) -> Result<Arg<JsArray>, Error> {
    let name = key.name();
    // A transferred (detached) buffer would read as length 0: it gets its own message.
    if call.detached(key) {
        return Err(Error::Type(format!("{name}: expected {DETACHED}")));
    }
    if !from.host {
        return Err(Error::Type(format!(
            "{name}: expected a GPUBuffer or a GpuTensor (encode records GPU work only: \
             upload host data first), got {}",
            call.got(key)
        )));
    }
    match JsArray::from_value(&call.value(key)) {
        Ok(Some(a)) => Ok(Arg::Host(a)),
        Ok(None) => Err(Error::Type(format!(
            "{name}: expected a typed array, got {}",
            call.got(key)
        ))),
        Err(expected) => Err(Error::Type(format!("{name}: expected {expected}"))),
    }
}

/// What a typed array over a transferred buffer is told it should have been.
pub const DETACHED: &str =
    "a typed array over a live buffer, got one whose ArrayBuffer was transferred (detached)";

fn freed(name: &str) -> Error {
    Error::InvalidState(format!(
        "{name}: expected a live GpuTensor, got one that was freed"
    ))
}

/// An app's `GPUBuffer`, recognised as the runtime's WebGPU recognises its own.
fn gpu_buffer_arg(call: &Call, key: CallKey, from: Sources) -> Result<AppBuffer, Error> {
    let name = key.name();
    let (size, usage) = (call.number(key), call.usage(key));
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
    Ok(AppBuffer::new(call.value(key), size as u64, from.dtype))
}

/// An `output` given to a call without `gamma`, which has no `y` to write.
pub fn no_output(call: &Call) -> Error {
    Error::Type(format!(
        "output: expected undefined without gamma (the call computes a post-norm's sum alone), got {}",
        call.got(CallKey::Output)
    ))
}

pub fn missing(key: CallKey) -> Error {
    Error::Type(format!("{}: missing", key.name()))
}

/// An optional number field.
pub fn optional_number(call: &Call, key: CallKey) -> Result<Option<f64>, Error> {
    match call.what(key) {
        What::Absent => Ok(None),
        What::Number => Ok(Some(call.number(key))),
        _ => Err(Error::Type(format!(
            "{}: expected a number or undefined, got {}",
            key.name(),
            call.got(key)
        ))),
    }
}

/// The optional `rows` of a call whose `GPUBuffer`s hold more than its rows.
pub fn rows(call: &Call) -> Result<Option<usize>, Error> {
    optional_number(call, CallKey::Rows)?
        .map(rows_from_number)
        .transpose()
}

/// An optional boolean field.
pub fn flag(call: &Call, key: CallKey) -> Result<bool, Error> {
    match call.what(key) {
        What::Absent | What::No => Ok(false),
        What::Yes => Ok(true),
        _ => Err(Error::Type(format!(
            "{}: expected a boolean or undefined, got {}",
            key.name(),
            call.got(key)
        ))),
    }
}

/// The optional `kind: "rms" | "layer"`.
pub fn kind(call: &Call) -> Result<NormKind, Error> {
    match call.word(CallKey::Kind) {
        _ if call.what(CallKey::Kind) == What::Absent => Ok(NormKind::Rms),
        Some(Word::Rms) => Ok(NormKind::Rms),
        Some(Word::Layer) => Ok(NormKind::Layer),
        Some(Word::NoNorm) => Ok(NormKind::None),
        _ => Err(Error::Type(format!(
            "kind: expected \"rms\", \"layer\", \"none\" or undefined, got {}",
            call.got(CallKey::Kind)
        ))),
    }
}

/// An optional `"f32" | "f16"` field.
pub fn dtype(call: &Call, key: CallKey) -> Result<Option<Dtype>, Error> {
    match call.word(key) {
        _ if call.what(key) == What::Absent => Ok(None),
        Some(Word::F32) => Ok(Some(Dtype::F32)),
        Some(Word::F16) => Ok(Some(Dtype::F16)),
        _ => Err(Error::Type(format!(
            "{}: expected \"f32\" or \"f16\", got {}",
            key.name(),
            call.got(key)
        ))),
    }
}
