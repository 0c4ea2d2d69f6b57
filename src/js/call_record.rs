//! A call's argument object, read once: `call.js`'s `readCall` reads every field of
//! `keys.rs`'s table (each getter once) and writes what each holds into that field's [`Slot`]
//! of a [`Record`] in wasm memory, in one crossing into JavaScript. Every entry point decodes
//! the same record (`args.rs`): the kept dispatch (`call_cache.rs`), the CPU backend's common
//! call (`cpu_call.rs`), `run`, `encode`, `bind` and the timing calls. Values Rust needs as
//! JavaScript objects (a typed array to upload, an app's `GPUBuffer`, a value an error
//! message describes) are asked for by key ([`Call::value`]), never read from the object
//! again.
//!
//! The JavaScript lives in a file of its own, `call.js`, imported through `call_js.rs`.

use std::cell::Cell;

use wasm_bindgen::prelude::*;

use crate::call::dtype::Dtype;
pub use crate::js::call_codes::{Status, What, Word};
use crate::js::call_codes::{DETACHED, IN_WASM_MEMORY, RESIZABLE, WHATS, WORDS};
use crate::js::call_js::{call_init, call_release, call_table, call_value, read_call};
use crate::js::glue::POINTER_FIELD;
use crate::js::keys::{CallKey, Kind, CALL_KEYS};
use crate::js::tensor::freed_count;
use crate::js::value::{describe, object};

/// One field as read.
#[repr(C)]
#[derive(Clone, Copy, Default, PartialEq, Debug)]
pub struct Slot {
    what: f64,
    /// A number's value, a typed array's length, a tensor's handle, a buffer's size, a
    /// [`Word`]'s index.
    value: f64,
    /// A typed array's flags; a buffer's usage.
    flags: f64,
    /// For a destination array, the first key (by the table's order) whose array shares a
    /// byte with it; -1 for none. Written for the destinations alone.
    overlap: f64,
}

pub const KEYS: usize = CALL_KEYS.len();

/// A call as `readCall` writes it: a slot per key, in the table's order, then the status.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct Record {
    keys: [Slot; KEYS],
    status: Slot,
}

thread_local! {
    /// Where `readCall` writes: one record for every call (a read never awaits; the record
    /// is copied out at once).
    static RECORD: Cell<*mut Record> = const { Cell::new(std::ptr::null_mut()) };
    /// Calls read that were not the one before them again ([`Call::sequence`]).
    static READS: Cell<u64> = const { Cell::new(0) };
}

/// The record's address, with `call.js` told the table and the layout on the first call.
fn record() -> *mut Record {
    if RECORD.get().is_null() {
        first_record();
    }
    RECORD.get()
}

/// Out of line: once a session, and the rest of [`Call::read`] is short.
#[cold]
#[inline(never)]
fn first_record() {
    let names: js_sys::Array = CALL_KEYS.iter().map(|k| JsValue::from(k.name)).collect();
    call_init(&wasm_bindgen::memory(), &names, &layout());
    RECORD.set(Box::into_raw(Box::default()));
}

/// What `call.js` needs to know of the record: its layout, in `f64`s, and its codes.
fn layout() -> JsValue {
    let at = |offset: usize| JsValue::from(offset / 8);
    let codes: Vec<(&str, JsValue)> = WHATS
        .iter()
        .map(|(w, name)| (*name, JsValue::from(*w as u32)))
        .chain([
            ("read", JsValue::from(Status::Read as u32)),
            ("notObject", JsValue::from(Status::NotObject as u32)),
            ("unknownKey", JsValue::from(Status::UnknownKey as u32)),
        ])
        .collect();
    let flags = object(&[
        ("detached", DETACHED.into()),
        ("resizable", RESIZABLE.into()),
        ("wasm", IN_WASM_MEMORY.into()),
    ]);
    let indices = |kind: Kind| -> js_sys::Array {
        CALL_KEYS
            .iter()
            .enumerate()
            .filter(|(_, k)| k.kind == kind)
            .map(|(i, _)| JsValue::from(i))
            .collect()
    };
    let words: js_sys::Array = WORDS.iter().map(|(_, w)| JsValue::from(*w)).collect();
    object(&[
        ("stride", at(std::mem::size_of::<Slot>())),
        ("what", at(std::mem::offset_of!(Slot, what))),
        ("value", at(std::mem::offset_of!(Slot, value))),
        ("flags", at(std::mem::offset_of!(Slot, flags))),
        ("overlap", at(std::mem::offset_of!(Slot, overlap))),
        ("codes", object(&codes)),
        ("flagBits", flags),
        ("words", words.into()),
        ("arrays", indices(Kind::Array).into()),
        ("rowArrays", CallKey::ROW_ARRAYS.into()),
        ("destinations", indices(Kind::Destination).into()),
        ("pointer", POINTER_FIELD.into()),
    ])
}

/// A call's argument object as read.
pub struct Call<'a> {
    args: &'a JsValue,
    /// What each field holds, decoded from the record once.
    whats: [What; KEYS],
    record: Record,
    /// A getter of the object freed a tensor while it was read (one it may have named).
    freed_while_read: bool,
    /// Which call this is: that of the read before where it repeats it ([`Call::repeats`]).
    sequence: u64,
    /// `call.js` holds objects of the call (arrays, buffers) until this is dropped.
    holds: bool,
}

impl<'a> Call<'a> {
    /// Reads `args`, in one crossing into JavaScript.
    pub fn read(args: &'a JsValue) -> Call<'a> {
        let at = record();
        let freed = freed_count();
        read_call(args, at as u32);
        // Copied out at once, the fields the call has alone (their bits are in the status):
        // a later read (a getter's own call) writes the same record, and `call.js` leaves an
        // earlier call's slots as they were. An absent field's slot is all zeros.
        // SAFETY: `at` is the live record `record()` made, which nothing else borrows.
        let written = unsafe { &*at };
        let mut record = Record {
            status: written.status,
            ..Record::default()
        };
        let mut whats = [What::Absent; KEYS];
        let mut left = record.status.value as u32;
        while left != 0 {
            let i = left.trailing_zeros() as usize;
            record.keys[i] = written.keys[i];
            whats[i] = What::of(record.keys[i].what as u32);
            left &= left - 1;
        }
        let object = |w: &What| {
            !matches!(
                w,
                What::Absent
                    | What::Tensor
                    | What::FreedTensor
                    | What::Number
                    | What::Yes
                    | What::No
                    | What::Word
            )
        };
        let repeats = record.status.flags == 1.0;
        if !repeats {
            READS.set(READS.get() + 1);
        }
        Call {
            args,
            whats,
            record,
            sequence: READS.get(),
            freed_while_read: freed_count() != freed,
            holds: whats.iter().any(object),
        }
    }

    /// The argument object itself, for the messages that describe it.
    pub fn args(&self) -> &JsValue {
        self.args
    }

    pub fn status(&self) -> Status {
        match self.record.status.what as u32 {
            x if x == Status::Read as u32 => Status::Read,
            x if x == Status::UnknownKey as u32 => Status::UnknownKey,
            _ => Status::NotObject,
        }
    }

    /// The fields the call has, a bit each by the table's order (`call.js` writes it into the
    /// status slot's value, `KEYS` ≤ 32 bits).
    pub fn present(&self) -> u32 {
        self.record.status.value as u32
    }

    /// Whether this call is the one read before it again: the same object or another, the
    /// same fields, each the same number, flag, name or live tensor (`call.js` writes a 1 into
    /// the status slot's flags then, leaving the record as it was).
    pub fn repeats(&self) -> bool {
        self.record.status.flags == 1.0
    }

    /// The same for a call and the calls that repeat it ([`Call::repeats`]), new for any
    /// other: what a dispatch found for one call is kept by, to be found again at once.
    pub fn sequence(&self) -> u64 {
        self.sequence
    }

    pub fn freed_while_read(&self) -> bool {
        self.freed_while_read
    }

    fn slot(&self, key: CallKey) -> &Slot {
        &self.record.keys[key as usize]
    }

    pub fn what(&self, key: CallKey) -> What {
        self.whats[key as usize]
    }

    /// A number field's value.
    pub fn number(&self, key: CallKey) -> f64 {
        self.slot(key).value
    }

    /// A typed array's length; a buffer's size in bytes.
    pub fn len(&self, key: CallKey) -> usize {
        self.slot(key).value as usize
    }

    /// A live tensor's handle.
    pub fn handle(&self, key: CallKey) -> u32 {
        self.slot(key).value as u32
    }

    /// A buffer's `GPUBufferUsage` bits.
    pub fn usage(&self, key: CallKey) -> u32 {
        self.slot(key).flags as u32
    }

    /// The string a field holds, where it is one of [`Word`]'s.
    pub fn word(&self, key: CallKey) -> Option<Word> {
        match self.what(key) {
            What::Word => WORDS.get(self.slot(key).value as usize).map(|(w, _)| *w),
            _ => None,
        }
    }

    /// A typed array's element type.
    pub fn dtype(&self, key: CallKey) -> Option<Dtype> {
        match self.what(key) {
            What::F32 => Some(Dtype::F32),
            What::Bits | What::Halves => Some(Dtype::F16),
            _ => None,
        }
    }

    fn flag(&self, key: CallKey, bit: u32) -> bool {
        self.dtype(key).is_some() && self.slot(key).flags as u32 & bit != 0
    }

    pub fn detached(&self, key: CallKey) -> bool {
        self.flag(key, DETACHED)
    }

    pub fn resizable(&self, key: CallKey) -> bool {
        self.flag(key, RESIZABLE)
    }

    pub fn in_wasm_memory(&self, key: CallKey) -> bool {
        self.flag(key, IN_WASM_MEMORY)
    }

    /// For a destination array, the first key whose array shares a byte with it.
    pub fn overlap(&self, key: CallKey) -> Option<CallKey> {
        CALL_KEYS
            .get(usize::try_from(self.slot(key).overlap as i64).ok()?)
            .and_then(|k| k.call)
    }

    /// The numbers of a table field (`positions`, `invFreq`: 32-bit elements, as their bits),
    /// copied into wasm memory; `None` where the browser refused the copy.
    pub fn table(&self, key: CallKey) -> Option<Vec<u32>> {
        let mut words = vec![0u32; self.len(key)];
        call_table(key as u32, words.as_mut_ptr() as u32, words.len() as u32).then_some(words)
    }

    /// The value read for `key`, as a JavaScript value (one crossing).
    pub fn value(&self, key: CallKey) -> JsValue {
        call_value(key as u32)
    }

    /// How the value of `key` looks in a message: what the call got. A tensor is read as its
    /// handle alone, not held as an object.
    pub fn got(&self, key: CallKey) -> String {
        match self.what(key) {
            What::Tensor | What::FreedTensor => "a GpuTensor".into(),
            _ => describe(&self.value(key)),
        }
    }

    /// What field `i` of the table holds and its value's bits: all that identifies a call of
    /// tensors (by handle) and numbers.
    pub fn field_at(&self, i: usize) -> (What, u64) {
        (self.whats[i], self.record.keys[i].value.to_bits())
    }
}

impl Drop for Call<'_> {
    fn drop(&mut self) {
        if self.holds {
            call_release();
        }
    }
}
