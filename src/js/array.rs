//! Host arrays in the browser: JavaScript typed arrays, read through their internal slots,
//! uploaded straight from JavaScript with `writeBuffer`, copied into wasm memory for the CPU
//! backend, and results copied once into fresh typed arrays.

use std::ops::Range;
use std::rc::Rc;

use crate::call::dtype::Dtype;
use crate::call::error::Error;
use crate::call::host::{Arg, HostArray, OwnedArray};
use crate::call::numbers::Len;
use crate::call::numbers::{CpuData, Upload};
use crate::call::shape::Inputs;
use crate::cpu::memory::room;
use js_sys::{Float32Array, Function, Object, Reflect, Uint16Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

/// `%TypedArray%.prototype`'s own accessors and methods. A subclass (or a Proxy) may
/// override `length`, `buffer` or `Symbol.toStringTag` with getters that lie or throw;
/// these read the array's internal slots instead, so a lie cannot size an upload and a
/// throw comes back as an `Err`, never as an exception unwinding through wasm.
struct Intrinsics {
    tag: Option<Function>,
    length: Option<Function>,
    byte_offset: Option<Function>,
    buffer: Option<Function>,
    slice: Option<Function>,
    set: Option<Function>,
}

impl Intrinsics {
    fn new() -> Intrinsics {
        let u8_proto = Object::get_prototype_of(&js_sys::Uint8Array::new_with_length(0));
        let proto = Object::get_prototype_of(&u8_proto);
        let accessor = |key: &JsValue| {
            Reflect::get_own_property_descriptor(&proto, key)
                .and_then(|d| Reflect::get(&d, &"get".into()))
                .ok()
                .and_then(|f| f.dyn_into().ok())
        };
        Intrinsics {
            tag: accessor(&js_sys::Symbol::to_string_tag().into()),
            length: accessor(&"length".into()),
            byte_offset: accessor(&"byteOffset".into()),
            buffer: accessor(&"buffer".into()),
            slice: Reflect::get(&proto, &"slice".into())
                .ok()
                .and_then(|f| f.dyn_into().ok()),
            set: Reflect::get(&proto, &"set".into())
                .ok()
                .and_then(|f| f.dyn_into().ok()),
        }
    }
}

thread_local! {
    static INTRINSICS: Intrinsics = Intrinsics::new();
}

/// `pick`'s intrinsic called on `v`; `None` where it throws (`v` is no typed array).
fn intrinsic(pick: fn(&Intrinsics) -> &Option<Function>, v: &JsValue) -> Option<JsValue> {
    INTRINSICS.with(|i| pick(i).as_ref().and_then(|f| f.call0(v).ok()))
}

/// One call's arguments as the driver takes them, read from JavaScript.
pub type Args = Inputs<Arg<JsArray>>;

/// A JavaScript typed array: `Float32Array` for f32; `Uint16Array` (the bits) or
/// `Float16Array` for f16.
#[derive(Clone)]
pub struct JsArray {
    pub array: JsValue,
    pub dtype: Dtype,
    pub len: usize,
    /// The caller's array, where `array` is a copy of it (one over a resizable buffer).
    origin: Option<JsValue>,
}

/// Where a typed array's elements lie: its buffer, and the bytes `[start, end)` of it.
pub struct Memory {
    pub buffer: JsValue,
    pub start: f64,
    pub end: f64,
}

impl Memory {
    /// The memory of typed array `v` of `len` elements of `dtype`, read through its slots.
    pub fn of(v: &JsValue, len: usize, dtype: Dtype) -> Memory {
        let start = intrinsic(|i| &i.byte_offset, v)
            .and_then(|o| o.as_f64())
            .unwrap_or(0.0);
        Memory {
            buffer: intrinsic(|i| &i.buffer, v).unwrap_or(JsValue::UNDEFINED),
            start,
            end: start + (len * dtype.bytes()) as f64,
        }
    }

    /// Whether the two share a byte.
    pub fn overlaps(&self, other: &Memory) -> bool {
        self.buffer == other.buffer && self.start < other.end && other.start < self.end
    }
}

impl JsArray {
    /// `v` as an array of numbers the kernel takes; `Ok(None)` for anything else, and an
    /// `Err` saying what was expected where `v` is one that cannot be used.
    /// Subclasses and arrays from other realms (iframes) count: the kind is read from
    /// the array's internal slot.
    pub fn from_value(v: &JsValue) -> Result<Option<JsArray>, String> {
        let dtype = match intrinsic(|i| &i.tag, v)
            .and_then(|t| t.as_string())
            .as_deref()
        {
            Some("Float32Array") => Dtype::F32,
            Some("Uint16Array") | Some("Float16Array") => Dtype::F16,
            _ => return Ok(None),
        };
        let buffer = intrinsic(|i| &i.buffer, v).unwrap_or(JsValue::UNDEFINED);
        // Interned: read for every array of every call.
        let flag = |k: &str| {
            Reflect::get(&buffer, &JsValue::from_str(wasm_bindgen::intern(k)))
                .ok()
                .and_then(|f| f.as_bool())
        };
        if flag("detached") == Some(true) {
            return Err("a typed array over a live buffer, got one whose ArrayBuffer was transferred (detached)".into());
        }
        let mut array = v.clone();
        let mut origin = None;
        if flag("resizable") == Some(true) || flag("growable") == Some(true) {
            // WebGPU's writeBuffer refuses views of resizable buffers; upload a fixed copy.
            array = intrinsic(|i| &i.slice, v)
                .ok_or("a typed array whose resizable buffer can be copied")?;
            origin = Some(v.clone());
        }
        let len = intrinsic(|i| &i.length, &array)
            .and_then(|l| l.as_f64())
            .unwrap_or(0.0) as usize;
        Ok(Some(JsArray {
            array,
            dtype,
            len,
            origin,
        }))
    }

    /// Where the caller's array lies (not a copy's).
    pub fn memory(&self) -> Memory {
        Memory::of(
            self.origin.as_ref().unwrap_or(&self.array),
            self.len,
            self.dtype,
        )
    }

    /// A private copy, for calls that must wait before uploading.
    pub fn copy(&self) -> JsArray {
        let array = intrinsic(|i| &i.slice, &self.array).unwrap_or_else(|| self.array.clone());
        JsArray {
            array,
            origin: None,
            ..*self
        }
    }

    /// The same bits as a `Uint16Array` (`new Uint16Array(array)` would convert values).
    fn bits(&self) -> Result<Uint16Array, JsValue> {
        let slot = |pick| intrinsic(pick, &self.array).unwrap_or(JsValue::UNDEFINED);
        let (buffer, offset) = (slot(|i| &i.buffer), slot(|i| &i.byte_offset));
        let args = js_sys::Array::of3(&buffer, &offset, &JsValue::from_f64(self.len as f64));
        Reflect::construct(
            &js_sys::Uint16Array::new_with_length(0).constructor(),
            &args,
        )
        .map(|a| a.unchecked_into())
    }
}

impl Len for JsArray {
    fn len(&self) -> usize {
        self.len
    }
}

impl HostArray for JsArray {
    fn upload(&self, to: &dyn Upload) -> Result<(), String> {
        let Range { start, end } = to.range();
        let count = end - start;
        if (count * self.dtype.bytes()).is_multiple_of(4) {
            return to.write_typed_array(&self.array, start..end);
        }
        // writeBuffer moves whole 4-byte words: pad an odd count of halves.
        let bits = self.bits().map_err(|e| {
            Reflect::get(&e, &"message".into())
                .ok()
                .and_then(|m| m.as_string())
                .unwrap_or_else(|| "writeBuffer failed".into())
        })?;
        let padded = Uint16Array::new_with_length(count as u32 + 1);
        padded.set(&bits.subarray(start as u32, end as u32), 0);
        to.write_typed_array(&JsValue::from(padded), 0..count + 1)
    }

    fn dtype(&self) -> Dtype {
        self.dtype
    }

    fn detach(&self) -> Arg<OwnedArray> {
        Arg::Host(Rc::new(self.copy()))
    }

    fn to_cpu(&self, name: &str) -> Result<CpuData, Error> {
        // `%TypedArray%.prototype.set` on a view of wasm memory: one copy, sized by the
        // source's internal length (never a getter's), and a throw comes back as an Err.
        // f16 goes through a Uint16Array of the same bits, so a Float16Array is not
        // converted value by value.
        let copy = |dst: &JsValue, src: &JsValue| {
            INTRINSICS
                .with(|i| i.set.as_ref().map(|set| set.call1(dst, src)))
                .unwrap_or_else(|| Err(JsValue::from_str("no TypedArray.prototype.set")))
                .map(|_| ())
                .map_err(|e| {
                    Reflect::get(&e, &JsValue::from_str(wasm_bindgen::intern("message")))
                        .ok()
                        .and_then(|m| m.as_string())
                        .unwrap_or_else(|| "the copy failed".into())
                })
                .map_err(|e| Error::Type(format!("{name}: the browser refused the array ({e})")))
        };
        // Into the vector's spare capacity, then its length set: zero-filling first
        // writes every byte twice, a measurable part of a large call (docs/performance.md,
        // "The CPU backend in three engines"). The view lives
        // only for this copy: nothing allocates meanwhile, so wasm memory cannot grow and
        // detach it.
        match self.dtype {
            Dtype::F32 => {
                let mut v: Vec<f32> = room(self.len, name)?;
                let view = unsafe { Float32Array::view_mut_raw(v.as_mut_ptr(), self.len) };
                copy(&view, &self.array)?;
                // The copy wrote all `len` elements (a failure returned above).
                unsafe { v.set_len(self.len) };
                Ok(CpuData::F32(v))
            }
            Dtype::F16 => {
                let bits = self.bits().map_err(|_| {
                    Error::Type(format!(
                        "{name}: the browser refused the array (a typed array whose bits can be read)"
                    ))
                })?;
                let mut v: Vec<u16> = room(self.len, name)?;
                let view = unsafe { Uint16Array::view_mut_raw(v.as_mut_ptr(), self.len) };
                copy(&view, &bits)?;
                // As above: all `len` elements were written.
                unsafe { v.set_len(self.len) };
                Ok(CpuData::F16(v))
            }
        }
    }
}
