//! A call's rotary stage decoded from its record (`call_record.rs`): the JavaScript types of
//! its fields, and its positions and frequencies copied into wasm memory; and the stage of a
//! kernel that `prepare` and `kernelSource` describe. Its numbers are checked with the call's
//! (`call/checks.rs`), the stage itself by `call/rotary.rs`, the same for every entry point
//! and backend.

use std::rc::Rc;

use crate::call::checks::GivenNumbers;
use crate::call::dtype::Dtype;
use crate::call::error::Error;
use crate::call::host::AppBuffer;
use crate::support::number_text::number_text;
use wasm_bindgen::JsValue;

use crate::call::rotary::{Frequencies, Positions, Rotary, RotaryKernel};
use crate::js::call_record::{Call, What};
use crate::js::fields::{described, Field, COPY_SRC};
use crate::js::keys::CallKey;
use crate::js::refused::{field, Refused};
use crate::js::value::{describe, get};

/// The fields that describe a rotation, which need `positions` or `position`.
const DESCRIBING: [CallKey; 10] = [
    CallKey::InvFreq,
    CallKey::CosSin,
    CallKey::Theta,
    CallKey::RotaryDim,
    CallKey::RotaryStyle,
    CallKey::AttentionScaling,
    CallKey::HeadSize,
    CallKey::Heads,
    CallKey::GammaHeads,
    CallKey::PassHeads,
];

/// The call's rotary stage: `None` without `positions` and `position`. Its numbers go into
/// `numbers`, to be checked with the call's; the stage takes them once they are.
pub fn rotary(call: &Call, numbers: &mut GivenNumbers) -> Result<Option<Rotary>, Refused> {
    let Some(positions) = positions(call, numbers)? else {
        if let Some(k) = DESCRIBING.iter().find(|&&k| call.what(k) != What::Absent) {
            return Err(Error::Type(format!(
                "positions: missing ({} describes a rotary stage: give positions or position)",
                k.name()
            ))
            .into());
        }
        return Ok(None);
    };
    let style = call.rotary_style()?;
    let scaling = call
        .optional_number(CallKey::AttentionScaling)?
        .unwrap_or(1.0);
    let frequencies = frequencies(call)?;
    numbers.rotary.rotary_dim = call.optional_number(CallKey::RotaryDim)?;
    numbers.rotary.head_size = call.optional_number(CallKey::HeadSize)?;
    numbers.rotary.heads = call.optional_number(CallKey::Heads)?;
    numbers.pass_heads = call.optional_number(CallKey::PassHeads)?;
    Ok(Some(Rotary {
        positions,
        frequencies,
        style,
        rotary_dim: None,
        head_size: None,
        heads: None,
        // Out of f32's range becomes infinite, which the checks refuse by name.
        attention_scaling: scaling as f32,
        first_row: 0,
        gamma_heads: call.optional_flag(CallKey::GammaHeads)?,
        pass_heads: None,
    }))
}

/// `positions` (one a token) or `position` (the first of consecutive tokens: into `numbers`,
/// and into the stage once checked).
fn positions(call: &Call, numbers: &mut GivenNumbers) -> Result<Option<Positions>, Refused> {
    let (each, from) = (CallKey::Positions, CallKey::Position);
    match (call.what(each), call.what(from)) {
        (What::Absent, What::Absent) => Ok(None),
        (What::Absent, What::Number) => {
            numbers.rotary.position = Some(call.number(from));
            Ok(Some(Positions::From(0)))
        }
        (What::Absent, _) => field(from, "a number or undefined"),
        (What::I32 | What::U32, What::Absent) => {
            let words = copied(call, each)?;
            if call.what(each) == What::I32 {
                if let Some(i) = words.iter().position(|&w| w > i32::MAX as u32) {
                    return Err(Error::Shape(format!(
                        "positions: expected integers >= 0, got {} at {i}",
                        words[i] as i32
                    ))
                    .into());
                }
            }
            Ok(Some(Positions::Each(words.into())))
        }
        (What::Buffer, What::Absent) => Ok(Some(Positions::Buffer(word_buffer(call, each)?))),
        (What::I32 | What::U32 | What::Buffer, _) => field(from, "undefined with positions"),
        _ => field(
            each,
            "an Int32Array or a Uint32Array (a position a token), a GPUBuffer of them or undefined",
        ),
    }
}

/// An app's `GPUBuffer` of 32-bit words (positions), which the call copies on the GPU.
fn word_buffer(call: &Call, key: CallKey) -> Result<AppBuffer, Refused> {
    let name = key.name();
    if call.usage(key) & COPY_SRC.0 == 0 {
        return Err(Error::Type(format!(
            "{name}: expected a GPUBuffer with GPUBufferUsage.COPY_SRC (its positions are \
             copied on the GPU), got one without it"
        ))
        .into());
    }
    let size = call.number(key);
    if !(size.fract() == 0.0 && size >= 0.0 && size % 4.0 == 0.0) {
        return Err(Error::Shape(format!(
            "{name}: expected a GPUBuffer of whole 32-bit positions, got {} bytes",
            number_text(size)
        ))
        .into());
    }
    // Words, read as four-byte elements (their bits are copied, never converted).
    Ok(AppBuffer::new(call.value(key), size as u64, Dtype::F32))
}

/// `invFreq` (copied), `theta`, or the app's cos and sin (`cosSin`, copied): one of them.
fn frequencies(call: &Call) -> Result<Frequencies, Refused> {
    let (inv, theta, table) = (CallKey::InvFreq, CallKey::Theta, CallKey::CosSin);
    let given: Vec<CallKey> = [inv, theta, table]
        .into_iter()
        .filter(|&k| call.what(k) != What::Absent)
        .collect();
    match given[..] {
        [] => Err(Error::Type(
            "invFreq: missing (the model's inverse frequencies, theta, or cosSin, with \
             positions)"
                .into(),
        )
        .into()),
        [k] if k == theta && call.what(k) == What::Number => {
            Ok(Frequencies::Theta(call.number(theta)))
        }
        [k] if k == theta => field(theta, "a number or undefined"),
        [k] if call.what(k) == What::F32 => {
            let floats: Rc<[f32]> = copied(call, k)?.into_iter().map(f32::from_bits).collect();
            Ok(if k == inv {
                Frequencies::Inverse(floats)
            } else {
                Frequencies::Table(floats)
            })
        }
        [k] => field(k, "a Float32Array or undefined"),
        [first, second, ..] => field(second, &format!("undefined with {}", first.name())),
    }
}

/// A table field's numbers, copied now: the app may change its array once the call returns.
fn copied(call: &Call, key: CallKey) -> Result<Vec<u32>, Refused> {
    match call.table(key) {
        Some(words) => Ok(words),
        None => field(key, "a typed array the browser lets be read"),
    }
}

/// A kernel description's rotary stage (`rotaryDim`, `headSize`, `rotaryStyle`, `positions`,
/// `gammaHeads`, `cosSinPositions`: the rows of the app's cos and sin), checked as a call's
/// would be against rows of `hidden`; `None` without `rotaryDim`.
pub fn rotary_kernel(o: &JsValue, hidden: f64) -> Result<Option<RotaryKernel>, Error> {
    let number = |name: &'static str| -> Result<Option<usize>, Error> {
        let v = get(o, name);
        match v.as_f64() {
            _ if v.is_undefined() => Ok(None),
            Some(n) if n.fract() == 0.0 && (1.0..=u32::MAX as f64).contains(&n) => {
                Ok(Some(n as usize))
            }
            _ => Err(Error::Type(format!(
                "{name}: expected an integer >= 1 or undefined, got {}",
                describe(&v)
            ))),
        }
    };
    let (rotary_dim, head_size) = (number("rotaryDim")?, number("headSize")?);
    let table_positions = number("cosSinPositions")?;
    let style = described(o, "rotaryStyle", Field::style)?;
    let each = described(o, "positions", |f| f.flag(true))?;
    let gamma_heads = described(o, "gammaHeads", |f| f.flag(false))?;
    let Some(rotary_dim) = rotary_dim else {
        if gamma_heads {
            return Err(Error::Type(
                "gammaHeads: expected false or undefined without rotaryDim (a gamma a head \
                 is a rotary stage's, where rows are heads)"
                    .into(),
            ));
        }
        return Ok(None);
    };
    let stage = Rotary {
        style,
        rotary_dim: Some(rotary_dim),
        head_size,
        frequencies: Frequencies::Theta(1e4),
        ..Rotary::new(Positions::From(0), &[])
    };
    let hidden = hidden as usize;
    stage.check(0, hidden)?;
    Ok(Some(RotaryKernel {
        each,
        gamma_heads,
        table_positions: table_positions.unwrap_or(0) as u32,
        ..stage.kernel(hidden)
    }))
}
