//! The codes `call.js` writes into a call's record (`call_record.rs`): what a field holds
//! ([`What`]), the strings a field may hold ([`Word`]), whether the object could be read
//! ([`Status`]), and a typed array's flags; each listed once, by the name `call.js` is told.

/// What a field holds, as `readCall` found it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum What {
    Absent,
    /// A `Float32Array`; a `Uint16Array` of half bits; a `Float16Array`.
    F32,
    Bits,
    Halves,
    /// A live `GpuTensor` (its handle in the slot's value), or one that was freed.
    Tensor,
    FreedTensor,
    /// A `GPUBuffer` (its size in the value, its usage in the flags).
    Buffer,
    Number,
    Yes,
    No,
    /// One of [`Word`]'s strings (its index in the value).
    Word,
    /// An `Int32Array`; a `Uint32Array` (their length in the value).
    I32,
    U32,
    /// Anything else: the decoder asks for the value to say what it got.
    Other,
}

impl What {
    /// The code `call.js` wrote (`WHATS`' order is the enum's, checked below).
    pub(super) fn of(code: u32) -> What {
        WHATS.get(code as usize).map_or(What::Other, |(w, _)| *w)
    }
}

const _: () = {
    // `call.js` clears a record to zeros: an absent field's slot.
    assert!(What::Absent as usize == 0, "an absent field's code is zero");
    let mut i = 0;
    while i < WHATS.len() {
        assert!(
            WHATS[i].0 as usize == i,
            "WHATS lists the codes in What's order"
        );
        i += 1;
    }
};

/// The strings a call's fields may hold.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Word {
    Rms,
    Layer,
    F32,
    F16,
    Array,
    Gpu,
    NeoX,
    Interleaved,
    /// `kind: "none"`.
    NoNorm,
}

impl Word {
    /// The word `s` is, where it is one.
    pub fn named(s: &str) -> Option<Word> {
        WORDS.iter().find(|(_, w)| *w == s).map(|(word, _)| *word)
    }
}

/// Each string as `call.js` is told it.
#[rustfmt::skip]
pub(super) const WORDS: [(Word, &str); 9] = [
    (Word::Rms, "rms"), (Word::Layer, "layer"), (Word::F32, "f32"), (Word::F16, "f16"),
    (Word::Array, "array"), (Word::Gpu, "gpu"), (Word::NeoX, "neox"),
    (Word::Interleaved, "interleaved"), (Word::NoNorm, "none"),
];

/// Each code by the name `call.js` knows it by.
#[rustfmt::skip]
pub(super) const WHATS: [(What, &str); 14] = [
    (What::Absent, "absent"), (What::F32, "f32"), (What::Bits, "bits"), (What::Halves, "halves"),
    (What::Tensor, "tensor"), (What::FreedTensor, "freedTensor"), (What::Buffer, "buffer"),
    (What::Number, "number"), (What::Yes, "yes"), (What::No, "no"), (What::Word, "word"),
    (What::I32, "i32"), (What::U32, "u32"), (What::Other, "other"),
];

/// Whether the argument object could be read field by field.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Status {
    Read = 100,
    /// Not an object, or an Array, a typed array or a function.
    NotObject,
    /// An own key the table does not have.
    UnknownKey,
}

/// A typed array's flags.
pub(super) const DETACHED: u32 = 1;
pub(super) const RESIZABLE: u32 = 2;
pub(super) const IN_WASM_MEMORY: u32 = 4;
