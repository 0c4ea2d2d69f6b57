//! One field of a call's record (`call_record.rs`) decoded: an array argument (a typed
//! array, a `GpuTensor` or an app's `GPUBuffer`), a number, a flag or a name, each checked
//! for its JavaScript type. A field of the wrong type is [`Refused`] by name, with what it
//! should have been; `refused.rs` adds what the call gave. Values are checked in `call/`.

use crate::call::dtype::Dtype;
use crate::call::error::Error;
use crate::call::host::{AppBuffer, Arg};
use crate::call::rotary::RotaryStyle;
use crate::call::shape::NormKind;
use crate::js::array::JsArray;
use crate::js::call_record::{Call, What, Word};
use crate::js::keys::CallKey;
use crate::js::refused::{field, Refused};
use crate::js::tensor::tensor_by_handle;
use crate::js::value::{describe, get};
use wasm_bindgen::JsValue;

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
pub const COPY_SRC: (u32, &str) = (0x4, "COPY_SRC");
/// `GPUBufferUsage.STORAGE`: `encode` binds an app's buffer as it is.
const STORAGE: (u32, &str) = (0x80, "STORAGE");

/// A typed array, a `GpuTensor` or a `GPUBuffer` argument; `None` when optional and absent.
pub fn array_arg(
    call: &Call,
    key: CallKey,
    required: bool,
    from: Sources,
) -> Result<Option<Arg<JsArray>>, Refused> {
    let name = key.name();
    match call.what(key) {
        What::Absent if !required => return Ok(None),
        What::Buffer => return gpu_buffer_arg(call, key, from).map(|b| Some(Arg::Buffer(b))),
        What::F32 | What::Bits | What::Halves => return host_array(call, key, from).map(Some),
        What::Tensor => match tensor_by_handle(call.handle(key)) {
            Some(t) => return Ok(Some(Arg::Gpu(t))),
            None => return Err(freed(name).into()),
        },
        What::FreedTensor => return Err(freed(name).into()),
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
    field(key, expected)
}

/// A typed array argument, where the call takes host data.
fn host_array(call: &Call, key: CallKey, from: Sources) -> Result<Arg<JsArray>, Refused> {
    let name = key.name();
    // A transferred (detached) buffer would read as length 0: it gets its own message.
    if call.detached(key) {
        return Err(Error::Type(format!("{name}: expected {DETACHED}")).into());
    }
    if !from.host {
        return field(
            key,
            "a GPUBuffer or a GpuTensor (encode records GPU work only: upload host data first)",
        );
    }
    match JsArray::from_value(&call.value(key)) {
        Ok(Some(a)) => Ok(Arg::Host(a)),
        Ok(None) => field(key, "a typed array"),
        Err(expected) => Err(Error::Type(format!("{name}: expected {expected}")).into()),
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
fn gpu_buffer_arg(call: &Call, key: CallKey, from: Sources) -> Result<AppBuffer, Refused> {
    let name = key.name();
    let (size, usage) = (call.number(key), call.usage(key));
    let (bits, flag) = from.usage;
    if usage & bits == 0 {
        return Err(Error::Type(format!(
            "{name}: expected a GPUBuffer with GPUBufferUsage.{flag}, got one without it"
        ))
        .into());
    }
    // A GPUBuffer's size is a whole number of bytes (one that only claims the brand may not be).
    let whole = size.fract() == 0.0 && (0.0..=u64::MAX as f64).contains(&size);
    if !whole || !(size as u64).is_multiple_of(from.dtype.bytes() as u64) {
        let got = match whole {
            true => format!("{} bytes", size as u64),
            false => "a size of no whole bytes".into(),
        };
        return Err(Error::Shape(format!(
            "{name}: expected a GPUBuffer of whole {} elements, got {got}",
            from.dtype.name(),
        ))
        .into());
    }
    Ok(AppBuffer::new(call.value(key), size as u64, from.dtype))
}

/// An `output` given to a call without `gamma`, which has no `y` to write.
pub fn no_output<T>() -> Result<T, Refused> {
    field(
        CallKey::Output,
        "undefined without gamma (the call computes a post-norm's sum alone)",
    )
}

pub fn missing(key: CallKey) -> Refused {
    Error::Type(format!("{}: missing", key.name())).into()
}

/// A field as read, from a call's record ([`Call::field`]) or from a kernel description's
/// object ([`described`]): what the decoders below take, so that both readers decode a field
/// alike and say alike what it should have been.
#[derive(Clone, Copy)]
pub enum Field {
    Absent,
    Number(f64),
    Flag(bool),
    Word(Word),
    Other,
}

impl Field {
    /// An optional number.
    pub fn optional_number(self) -> Result<Option<f64>, &'static str> {
        match self {
            Field::Absent => Ok(None),
            Field::Number(x) => Ok(Some(x)),
            _ => Err("a number or undefined"),
        }
    }

    /// An optional boolean, `absent` where not given.
    pub fn flag(self, absent: bool) -> Result<bool, &'static str> {
        match self {
            Field::Absent => Ok(absent),
            Field::Flag(on) => Ok(on),
            _ => Err("a boolean or undefined"),
        }
    }

    pub fn optional_flag(self) -> Result<Option<bool>, &'static str> {
        match self {
            Field::Absent => Ok(None),
            _ => self.flag(false).map(Some),
        }
    }

    /// The optional `kind: "rms" | "layer" | "none"`.
    pub fn kind(self) -> Result<NormKind, &'static str> {
        match self {
            Field::Absent | Field::Word(Word::Rms) => Ok(NormKind::Rms),
            Field::Word(Word::Layer) => Ok(NormKind::Layer),
            Field::Word(Word::NoNorm) => Ok(NormKind::None),
            _ => Err("\"rms\", \"layer\", \"none\" or undefined"),
        }
    }

    /// An optional `"f32" | "f16"`.
    pub fn dtype(self) -> Result<Option<Dtype>, &'static str> {
        match self {
            Field::Absent => Ok(None),
            Field::Word(Word::F32) => Ok(Some(Dtype::F32)),
            Field::Word(Word::F16) => Ok(Some(Dtype::F16)),
            _ => Err("\"f32\" or \"f16\""),
        }
    }

    /// The optional `rotaryStyle: "neox" | "interleaved"`.
    pub fn style(self) -> Result<RotaryStyle, &'static str> {
        match self {
            Field::Absent | Field::Word(Word::NeoX) => Ok(RotaryStyle::NeoX),
            Field::Word(Word::Interleaved) => Ok(RotaryStyle::Interleaved),
            _ => Err("\"neox\", \"interleaved\" or undefined"),
        }
    }
}

/// The typed getters of a call's record: each field's JavaScript type checked, and
/// [`Refused`] by name where it is another.
impl Call<'_> {
    /// The field `key` as read into the record.
    pub fn field(&self, key: CallKey) -> Field {
        match self.what(key) {
            What::Absent => Field::Absent,
            What::Number => Field::Number(self.number(key)),
            What::Yes => Field::Flag(true),
            What::No => Field::Flag(false),
            What::Word => self.word(key).map_or(Field::Other, Field::Word),
            _ => Field::Other,
        }
    }

    pub fn optional_number(&self, key: CallKey) -> Result<Option<f64>, Refused> {
        Field::optional_number(self.field(key)).or_else(|e| field(key, e))
    }

    /// An optional boolean field.
    pub fn flag_field(&self, key: CallKey) -> Result<bool, Refused> {
        Field::flag(self.field(key), false).or_else(|e| field(key, e))
    }

    pub fn optional_flag(&self, key: CallKey) -> Result<Option<bool>, Refused> {
        Field::optional_flag(self.field(key)).or_else(|e| field(key, e))
    }

    pub fn kind(&self) -> Result<NormKind, Refused> {
        Field::kind(self.field(CallKey::Kind)).or_else(|e| field(CallKey::Kind, e))
    }

    pub fn dtype_field(&self, key: CallKey) -> Result<Option<Dtype>, Refused> {
        Field::dtype(self.field(key)).or_else(|e| field(key, e))
    }

    pub fn rotary_style(&self) -> Result<RotaryStyle, Refused> {
        let key = CallKey::RotaryStyle;
        Field::style(self.field(key)).or_else(|e| field(key, e))
    }
}

/// A kernel description's field `name`, decoded by `decode` (one of [`Field`]'s), or a
/// `TypeError` naming it, what it should have been and what it is.
pub fn described<T>(
    o: &JsValue,
    name: &'static str,
    decode: impl FnOnce(Field) -> Result<T, &'static str>,
) -> Result<T, Error> {
    let v = get(o, name);
    let read = if v.is_undefined() {
        Field::Absent
    } else if let Some(x) = v.as_f64() {
        Field::Number(x)
    } else if let Some(on) = v.as_bool() {
        Field::Flag(on)
    } else {
        let word = v.as_string().and_then(|s| Word::named(&s));
        word.map_or(Field::Other, Field::Word)
    };
    decode(read).map_err(|e| Error::Type(format!("{name}: expected {e}, got {}", describe(&v))))
}
