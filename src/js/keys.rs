//! The fields an argument object may have, one table per kind of object: a call's arguments
//! ([`CALL_KEYS`]) and a kernel description ([`KERNEL_KEYS`]). Each reader's list of the keys
//! it accepts, and so the message naming an unknown one (`value::check_keys`), is derived
//! from its table ([`keys_of`]), never written out again. A list keeps its table's order,
//! the order the messages name the keys in.

/// The readers of argument objects, as a set.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Readers(u8);

impl Readers {
    /// `run`, `runWithSum` and the timing calls (`args.rs`), and the CPU backend's common
    /// call (`cpu_call.rs`), which takes what they take.
    pub const RUN: Readers = Readers(1);
    /// `encode` (`args.rs`).
    pub const ENCODE: Readers = Readers(2);
    /// The common call of GPU tensors read in one step (`tensor_call.rs`): any other key
    /// sends a call to the field-by-field reading.
    pub const TENSOR_CALL: Readers = Readers(4);
    /// `prepare` (`options.rs`).
    pub const PREPARE: Readers = Readers(8);
    /// `kernelSource` (`options.rs`).
    pub const KERNEL_SOURCE: Readers = Readers(16);

    const RUN_AND_ENCODE: Readers = Readers::RUN.and(Readers::ENCODE);
    const CALLS: Readers = Readers::RUN_AND_ENCODE.and(Readers::TENSOR_CALL);
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
}

/// One field: its name, what it holds, and the readers that accept it.
#[derive(Clone, Copy, Debug)]
pub struct Key {
    pub name: &'static str,
    /// Read by `tests/js_boundary.rs`, which holds the table to the kernel's binding table
    /// and to the TypeScript declarations.
    #[allow(dead_code)]
    pub kind: Kind,
    pub readers: Readers,
}

const fn key(name: &'static str, kind: Kind, readers: Readers) -> Key {
    Key {
        name,
        kind,
        readers,
    }
}

/// A call's arguments (`run`, `runWithSum`, the timing calls, `encode`).
#[rustfmt::skip]
pub const CALL_KEYS: [Key; 16] = [
    key("input", Kind::Array, Readers::CALLS),
    key("residual", Kind::Array, Readers::CALLS),
    key("gamma", Kind::Array, Readers::CALLS),
    key("beta", Kind::Array, Readers::CALLS),
    key("bias", Kind::Array, Readers::CALLS),
    key("postGamma", Kind::Array, Readers::RUN_AND_ENCODE),
    key("hidden", Kind::Number, Readers::CALLS),
    key("eps", Kind::Number, Readers::CALLS),
    key("kind", Kind::Name, Readers::RUN_AND_ENCODE),
    key("gammaOffset", Kind::Number, Readers::RUN_AND_ENCODE),
    key("outputDtype", Kind::Name, Readers::RUN_AND_ENCODE),
    key("output", Kind::Destination, Readers::CALLS),
    key("inPlace", Kind::Flag, Readers::CALLS),
    // What `GPUBuffer` arguments hold, and how many rows of them are data.
    key("dtype", Kind::Name, Readers::RUN_AND_ENCODE),
    key("rows", Kind::Number, Readers::RUN_AND_ENCODE),
    // The second destination: `encode`'s, and `runWithSum`'s array for `v`.
    key("sum", Kind::Destination, Readers::RUN_AND_ENCODE),
];

/// A kernel description (`prepare`, `kernelSource`): which arrays its calls pass, as flags.
#[rustfmt::skip]
pub const KERNEL_KEYS: [Key; 12] = [
    key("hidden", Kind::Number, Readers::KERNELS),
    key("bias", Kind::Array, Readers::KERNELS),
    key("beta", Kind::Array, Readers::KERNELS),
    // `runWithSum`'s.
    key("sum", Kind::Array, Readers::KERNELS),
    key("dtype", Kind::Name, Readers::KERNELS),
    key("inPlace", Kind::Flag, Readers::KERNELS),
    key("kind", Kind::Name, Readers::KERNELS),
    key("residual", Kind::Array, Readers::KERNELS),
    key("postGamma", Kind::Array, Readers::KERNELS),
    key("gammaOffset", Kind::Number, Readers::KERNELS),
    key("outputDtype", Kind::Name, Readers::KERNELS),
    // The rows to size the grid for.
    key("rows", Kind::Number, Readers::KERNEL_SOURCE),
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
