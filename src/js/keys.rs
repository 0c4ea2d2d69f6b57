//! The fields an argument object may have, one table per kind of object: a call's arguments
//! ([`CALL_KEYS`], each named by a [`CallKey`]) and a kernel description ([`KERNEL_KEYS`]).
//! Each reader's list of the keys it accepts, and so the message naming an unknown one
//! (`value::check_keys`), is derived from its table ([`keys_of`]), never written out again.
//! A list keeps its table's order, the order the messages name the keys in. The call's
//! reader (`call.js`) reads a call's object into one slot per row of [`CALL_KEYS`], in its
//! order: adding an argument is a row here, a [`CallKey`], and its check where the call is
//! decoded (`call_record.rs`).

/// The readers of argument objects, as a set.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Readers(u8);

impl Readers {
    /// `run`, `runWithSum` and the timing calls.
    pub const RUN: Readers = Readers(1);
    /// `encode` and `bind`.
    pub const ENCODE: Readers = Readers(2);
    /// `prepare` (`options.rs`).
    pub const PREPARE: Readers = Readers(8);
    /// `kernelSource` (`options.rs`).
    pub const KERNEL_SOURCE: Readers = Readers(16);

    const RUN_AND_ENCODE: Readers = Readers::RUN.and(Readers::ENCODE);
    const KERNELS: Readers = Readers::PREPARE.and(Readers::KERNEL_SOURCE);

    pub const fn and(self, other: Readers) -> Readers {
        Readers(self.0 | other.0)
    }

    pub const fn has(self, reader: Readers) -> bool {
        self.0 & reader.0 != 0
    }
}

/// What a field holds.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    /// Data: a typed array, a `GpuTensor` or a `GPUBuffer` (`encode`: GPU data only). In a
    /// kernel description, a flag: whether the calls pass that array.
    Array,
    Number,
    Flag,
    /// One of a few strings.
    Name,
    /// Where the results go: `"array"`, `"gpu"` or a typed array of the caller's (`run`), a
    /// buffer or a tensor (`encode`).
    Destination,
    /// A few numbers of the call's own, copied into wasm memory where they are read: the rotary
    /// stage's `positions` (an `Int32Array` or `Uint32Array`), `invFreq` and `cosSin`
    /// (`Float32Array`s).
    Table,
}

/// One field: its name, what it holds, and the readers that accept it.
#[derive(Clone, Copy, Debug)]
pub struct Key {
    /// The call's argument it is, in [`CALL_KEYS`].
    pub call: Option<CallKey>,
    pub name: &'static str,
    /// Read by `tests/js_boundary.rs`, which holds the table to the kernel's binding table
    /// and to the TypeScript declarations.
    #[allow(dead_code)]
    pub kind: Kind,
    pub readers: Readers,
}

const fn key(call: Option<CallKey>, name: &'static str, kind: Kind, readers: Readers) -> Key {
    Key {
        call,
        name,
        kind,
        readers,
    }
}

/// A call's argument, by name: its row of [`CALL_KEYS`] is `CALL_KEYS[key as usize]`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum CallKey {
    Input,
    Residual,
    Input2,
    Gamma,
    Beta,
    Bias,
    PostGamma,
    Hidden,
    Eps,
    Kind,
    GammaOffset,
    OutputDtype,
    Output,
    InPlace,
    Dtype,
    Rows,
    Sum,
    Positions,
    Position,
    InvFreq,
    Theta,
    RotaryDim,
    RotaryStyle,
    AttentionScaling,
    HeadSize,
    Heads,
    GammaHeads,
    PassHeads,
    CosSin,
}

impl CallKey {
    /// The call's arrays (its data), in the table's order: first those of rows × hidden
    /// ([`CallKey::ROW_ARRAYS`] of them), then those of `hidden`.
    pub const ARRAYS: [CallKey; 7] = [
        CallKey::Input,
        CallKey::Residual,
        CallKey::Input2,
        CallKey::Gamma,
        CallKey::Beta,
        CallKey::Bias,
        CallKey::PostGamma,
    ];

    /// How many of [`CallKey::ARRAYS`] hold rows (as `Inputs::ROW_ARRAYS` of its arrays).
    pub const ROW_ARRAYS: usize = 3;

    /// The field's name in the argument object.
    pub const fn name(self) -> &'static str {
        CALL_KEYS[self as usize].name
    }
}

const fn call(id: CallKey, name: &'static str, kind: Kind) -> Key {
    key(Some(id), name, kind, Readers::RUN_AND_ENCODE)
}

/// A call's arguments (`run`, `runWithSum`, the timing calls, `encode`, `bind`).
#[rustfmt::skip]
pub const CALL_KEYS: [Key; 29] = [
    call(CallKey::Input, "input", Kind::Array),
    call(CallKey::Residual, "residual", Kind::Array),
    // A parallel block's second sublayer output.
    call(CallKey::Input2, "input2", Kind::Array),
    call(CallKey::Gamma, "gamma", Kind::Array),
    call(CallKey::Beta, "beta", Kind::Array),
    call(CallKey::Bias, "bias", Kind::Array),
    call(CallKey::PostGamma, "postGamma", Kind::Array),
    call(CallKey::Hidden, "hidden", Kind::Number),
    call(CallKey::Eps, "eps", Kind::Number),
    call(CallKey::Kind, "kind", Kind::Name),
    call(CallKey::GammaOffset, "gammaOffset", Kind::Number),
    call(CallKey::OutputDtype, "outputDtype", Kind::Name),
    call(CallKey::Output, "output", Kind::Destination),
    call(CallKey::InPlace, "inPlace", Kind::Flag),
    // What `GPUBuffer` arguments hold, and how many rows of them are data.
    call(CallKey::Dtype, "dtype", Kind::Name),
    call(CallKey::Rows, "rows", Kind::Number),
    // The second destination: `encode`'s, and `runWithSum`'s array for `v`.
    call(CallKey::Sum, "sum", Kind::Destination),
    // The rotary stage (`call/rotary.rs`): each token's position, or the first of consecutive
    // tokens; the inverse frequencies, or theta; the style and widths; the scaling.
    call(CallKey::Positions, "positions", Kind::Table),
    call(CallKey::Position, "position", Kind::Number),
    call(CallKey::InvFreq, "invFreq", Kind::Table),
    call(CallKey::Theta, "theta", Kind::Number),
    call(CallKey::RotaryDim, "rotaryDim", Kind::Number),
    call(CallKey::RotaryStyle, "rotaryStyle", Kind::Name),
    call(CallKey::AttentionScaling, "attentionScaling", Kind::Number),
    call(CallKey::HeadSize, "headSize", Kind::Number),
    call(CallKey::Heads, "heads", Kind::Number),
    // Whether gamma holds a weight a head (Cohere's QK-norm): what a GPUBuffer's size, rounded
    // up by engines, cannot tell.
    call(CallKey::GammaHeads, "gammaHeads", Kind::Flag),
    // The last heads of a token's rows that pass as they are: a packed qkv row's v.
    call(CallKey::PassHeads, "passHeads", Kind::Number),
    // The app's own cos and sin, instead of the frequencies: a row a position.
    call(CallKey::CosSin, "cosSin", Kind::Table),
];

// Each row sits at its key's place.
const _: () = {
    let mut i = 0;
    while i < CALL_KEYS.len() {
        let at = match CALL_KEYS[i].call {
            Some(k) => k as usize,
            None => usize::MAX,
        };
        assert!(at == i, "CALL_KEYS must list the keys in CallKey's order");
        i += 1;
    }
};

const fn kernel(name: &'static str, kind: Kind, readers: Readers) -> Key {
    key(None, name, kind, readers)
}

/// A kernel description (`prepare`, `kernelSource`): which arrays its calls pass, as flags.
#[rustfmt::skip]
pub const KERNEL_KEYS: [Key; 20] = [
    kernel("hidden", Kind::Number, Readers::KERNELS), kernel("bias", Kind::Array, Readers::KERNELS),
    kernel("beta", Kind::Array, Readers::KERNELS),
    // `runWithSum`'s.
    kernel("sum", Kind::Array, Readers::KERNELS),
    kernel("dtype", Kind::Name, Readers::KERNELS), kernel("inPlace", Kind::Flag, Readers::KERNELS),
    kernel("kind", Kind::Name, Readers::KERNELS), kernel("residual", Kind::Array, Readers::KERNELS),
    kernel("postGamma", Kind::Array, Readers::KERNELS), kernel("input2", Kind::Array, Readers::KERNELS),
    // `false`: a post-norm's sum alone.
    kernel("gamma", Kind::Array, Readers::KERNELS),
    kernel("gammaOffset", Kind::Number, Readers::KERNELS),
    kernel("outputDtype", Kind::Name, Readers::KERNELS),
    // A rotary stage's (`rotary_args.rs`): its width, head, style, and whether each token
    // has its position (`positions`, the default) or they count from a start (`position`).
    kernel("rotaryDim", Kind::Number, Readers::KERNELS),
    kernel("headSize", Kind::Number, Readers::KERNELS),
    kernel("rotaryStyle", Kind::Name, Readers::KERNELS),
    kernel("positions", Kind::Flag, Readers::KERNELS),
    // A gamma a head (Cohere's QK-norm), where rows are heads.
    kernel("gammaHeads", Kind::Flag, Readers::KERNELS),
    // The rows of the app's cos and sin table (`cosSin`); absent: angles from `invFreq`.
    kernel("cosSinPositions", Kind::Number, Readers::KERNELS),
    // The rows to size the grid for.
    kernel("rows", Kind::Number, Readers::KERNEL_SOURCE),
];

/// How many of `table`'s keys `reader` accepts.
pub const fn count(table: &[Key], reader: Readers) -> usize {
    let (mut i, mut n) = (0, 0);
    while i < table.len() {
        if table[i].readers.has(reader) {
            n += 1;
        }
        i += 1;
    }
    n
}

/// The names of `table`'s keys `reader` accepts, in the table's order; `N` is their
/// [`count`].
pub const fn names<const N: usize>(table: &[Key], reader: Readers) -> [&'static str; N] {
    let mut out = [""; N];
    let (mut i, mut n) = (0, 0);
    while i < table.len() {
        if table[i].readers.has(reader) {
            out[n] = table[i].name;
            n += 1;
        }
        i += 1;
    }
    assert!(n == N, "N must be the count of the reader's keys");
    out
}

/// The keys `reader` accepts of `table`, as a `&'static [&'static str]`.
macro_rules! keys_of {
    ($table:expr, $reader:expr) => {{
        static KEYS: [&str; $crate::js::keys::count(&$table, $reader)] =
            $crate::js::keys::names(&$table, $reader);
        &KEYS
    }};
}
pub(crate) use keys_of;
