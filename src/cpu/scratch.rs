//! A call computed in one region of scratch memory that the caller keeps across calls: the
//! browser's fast path for host arrays (`js/cpu_call.rs`) copies a call's per-column arrays
//! into it once and its rows a block at a time (up to [`BLOCK`] elements, whole rows), the
//! kernel normalizes each block there, and the results are copied out from there once all
//! blocks are done. No allocation per array and no free per call; the region grows to the
//! largest call's results and blocks, and is reused (wasm memory never shrinks anyway).
//!
//! Where each array lies is decided here ([`lay_out`]); the caller only copies the arrays to
//! where their [`Span`]s say and reads the results from where [`Layout`] says.

use std::rc::Rc;

use super::driver::{refuse_buffer_positions, CpuContext, CAPS};
use crate::call::dtype::Dtype;
use crate::call::error::Error;
use crate::call::host::{Arg, HostArray, OwnedArray};
use crate::call::numbers::{CpuData, Len, Upload};
use crate::call::plan::{Plan, Request};
use crate::call::shape::Inputs;
use crate::cpu;

/// Where one array lies in the scratch: `len` elements of `dtype` from word `at` (4 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    pub at: usize,
    pub len: usize,
    pub dtype: Dtype,
}

impl Span {
    /// An array of `len` elements of `dtype`, not yet placed.
    pub fn of(len: usize, dtype: Dtype) -> Span {
        Span { at: 0, len, dtype }
    }

    /// Words it takes: whole 16-byte blocks, so that every array starts on a SIMD boundary.
    fn words(&self) -> usize {
        (self.len * self.dtype.bytes()).div_ceil(16) * 4
    }

    /// Words its elements cover. A block's results start mid-region where a row is not whole
    /// 16-byte blocks, so their region ends where their elements do: rounded up to whole
    /// blocks, the last block's would run past the call's region (and past the scratch).
    fn covered(&self) -> usize {
        (self.len * self.dtype.bytes()).div_ceil(4)
    }

    fn end(&self) -> usize {
        self.at + self.words()
    }
}

impl Len for Span {
    fn len(&self) -> usize {
        self.len
    }
}

/// Only for [`Plan::new`]'s checks, which read lengths and dtypes: the numbers themselves are
/// in the scratch, never uploaded nor copied from here.
impl HostArray for Span {
    fn upload(&self, _: &dyn Upload) -> Result<(), String> {
        Err("an array in CPU scratch memory is never uploaded".into())
    }

    fn dtype(&self) -> Dtype {
        self.dtype
    }

    fn detach(&self) -> Arg<OwnedArray> {
        Arg::Host(Rc::new(*self))
    }

    fn to_cpu(&self, name: &str) -> Result<CpuData, Error> {
        Err(Error::Type(format!(
            "{name}: an array in CPU scratch memory is read where it lies"
        )))
    }
}

/// Elements of the input a block holds at most (whole rows, one at least). Copied whole, a
/// big call's input and residual crossed memory twice (into scratch, then through the
/// kernel); a block's stay in a core's cache from the copy in to the kernel. The results are
/// written where they lie for the whole call, and copied out in one `slice()` at its end:
/// copied out a block at a time into a fresh array, they cost more than the copies saved.
/// Much smaller blocks were slower (`docs/performance.md`, "Host arrays a block at a
/// time").
pub const BLOCK: usize = 64 * 1024;

/// Where a call's results lie: `y` over the input's copy where the call is one block (a
/// decode row's is), or its results are copied out after each block, and `y` has the data's
/// dtype (and `v` over the residual's); else in regions of their own after the inputs, the
/// call's length (a block's where copied out after each).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub y: Span,
    pub sum: Option<Span>,
    /// Words of scratch the call needs.
    pub words: usize,
    /// Elements of the call's input, and of a (full) block.
    pub total: usize,
    pub block: usize,
    /// Each block's results are copied out before the next block is computed: they lie where
    /// the block's do, not at their place in the call's.
    pub per_block: bool,
}

impl Layout {
    fn in_place(&self, x: &Inputs<Span>) -> bool {
        self.y == x.input
    }

    /// Each block's first element and length, in order (one empty block for an empty call).
    pub fn blocks(&self) -> impl Iterator<Item = (usize, usize)> + use<> {
        let (total, block) = (self.total, self.block);
        (0..total.max(1))
            .step_by(block.max(1))
            .map(move |from| (from, block.min(total - from)))
    }

    /// `x` laid out by [`lay_out`], and this layout, for the block of `len` elements from
    /// element `from`: its input and residual where a block's lie, its results where they lie
    /// in the call's.
    pub fn cut(&self, x: &Inputs<Span>, from: usize, len: usize) -> (Inputs<Span>, Layout) {
        let block = |s: Span| Span { len, ..s };
        // Whole words: f16 rows are whole groups of 4 (`Kernel::check`), so `from` is even.
        let result = |s: Span| Span {
            at: if self.per_block {
                s.at
            } else {
                s.at + from * s.dtype.bytes() / 4
            },
            len,
            ..s
        };
        let hidden = x.hidden.max(1);
        let x = Inputs {
            input: block(x.input),
            residual: x.residual.map(block),
            input2: x.input2.map(block),
            rotary: x
                .rotary
                .as_ref()
                .map(|r| r.from_row(from / hidden, self.total / hidden)),
            ..x.clone()
        };
        let staged = Layout {
            y: result(self.y),
            sum: self.sum.map(result),
            ..*self
        };
        (x, staged)
    }
}

/// Places a block of the input, the residual and `input2`, then the arrays of `x` one after
/// another in the order [`Inputs::named`] lists them, and the results where [`Layout`] says;
/// `x`'s arrays of rows are left a block long. `x.input`'s dtype is the data's (a call
/// whose arrays disagree is refused by [`CpuContext::check_staged`] before anything is
/// computed, and [`Plan::new`]'s checks are of the whole call: made before this).
///
/// `out_per_block`: the results go into the caller's arrays, so each block's can be copied
/// out while in cache, where a fresh array's whole call is copied out in one `slice()`.
pub fn lay_out(x: &mut Inputs<Span>, sum: bool, out_per_block: bool) -> Result<Layout, Error> {
    // A post-norm's sum alone is no common call: it is computed as any other call is.
    if !x.writes_y() {
        return Err(Error::Type(
            "gamma: missing (the scratch path lays out y)".into(),
        ));
    }
    let total = x.input.len;
    let block = ((BLOCK / x.hidden.max(1)).max(1) * x.hidden).min(total);
    fits(x, block, sum)?;
    let per_block = out_per_block && block < total;
    x.input.len = block;
    for r in [x.residual.as_mut(), x.input2.as_mut()]
        .into_iter()
        .flatten()
    {
        r.len = block;
    }
    let mut end = 0;
    let mut place = |s: &mut Span| {
        s.at = end;
        end = s.end();
    };
    for s in x.arrays_mut().into_iter().flatten() {
        place(s);
    }
    let dtype = x.input.dtype;
    let out_dtype = x.norm.output_dtype.unwrap_or(dtype);
    // In place needs the residual's copy to take v; without a residual, v needs a region.
    if (block == total || per_block) && out_dtype == dtype && (x.residual.is_some() || !sum) {
        return Ok(Layout {
            y: x.input,
            sum: x.residual.filter(|_| sum),
            words: end,
            total,
            block,
            per_block,
        });
    }
    let results = if per_block { block } else { total };
    let mut y = Span::of(results, out_dtype);
    place(&mut y);
    let mut v = sum.then(|| Span::of(results, dtype));
    if let Some(v) = v.as_mut() {
        place(v);
    }
    Ok(Layout {
        y,
        sum: v,
        words: end,
        total,
        block,
        per_block,
    })
}

/// Refuses a call whose scratch could not be one allocation: wasm32's `usize` is 32 bits and
/// a `Vec` holds at most `isize::MAX` bytes, so past that the sizes computed here in `usize`
/// (words, offsets) would wrap first. Counted in `u64`, as [`lay_out`] places them: `block`
/// elements of the input and of the residual, the per-column arrays and the results whole,
/// each rounded up to 16 bytes.
fn fits(x: &Inputs<Span>, block: usize, sum: bool) -> Result<(), Error> {
    let bytes = |len: usize, d: Dtype| (len as u64 * d.bytes() as u64).div_ceil(16) * 16;
    let total = x.input.len;
    let rows = [Some(x.input), x.residual, x.input2].into_iter().flatten();
    let columns = [x.gamma, x.beta, x.bias, x.post_gamma]
        .into_iter()
        .flatten();
    let out = x.norm.output_dtype.unwrap_or(x.input.dtype);
    let need: u64 = rows.map(|s| bytes(block, s.dtype)).sum::<u64>()
        + columns.map(|s| bytes(s.len, s.dtype)).sum::<u64>()
        + bytes(total, out)
        + if sum { bytes(total, x.input.dtype) } else { 0 };
    let most = isize::MAX as u64;
    if need <= most && bytes(total, Dtype::F32) <= most {
        return Ok(());
    }
    Err(Error::Range(format!(
        "input: the call needs {} MiB of the CPU backend's wasm memory in one piece, more than \
         it can hold ({} MiB at most); split the call",
        need >> 20,
        most >> 20
    )))
}

/// The element types of scratch memory: any bit pattern is a value, and 4-byte words align them.
trait Word: cpu::Element + Copy {}
impl Word for f32 {}
impl Word for u16 {}

/// `s`'s elements in `words` (the region of scratch from `s.at`).
fn elements<T: Word>(words: &mut [u32], s: Span) -> &mut [T] {
    assert!(s.len * std::mem::size_of::<T>() <= words.len() * 4);
    // In bounds (checked above); u32 alignment covers f32 and u16, every bit pattern of
    // which is a value.
    unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<T>(), s.len) }
}

/// The disjoint regions of `spans` (in ascending order of `at`, `None` for absent ones) in
/// `scratch`.
fn regions<const N: usize>(
    mut scratch: &mut [u32],
    spans: [Option<Span>; N],
) -> [Option<&mut [u32]>; N] {
    let mut start = 0;
    spans.map(|s| {
        let s = s?;
        let rest = std::mem::take(&mut scratch);
        let (region, tail) = rest[s.at - start..].split_at_mut(s.covered());
        start = s.at + s.covered();
        scratch = tail;
        Some(region)
    })
}

impl CpuContext {
    /// The checks of every call ([`Plan::new`]'s) on a call laid out in scratch.
    pub fn check_staged(&self, x: &Inputs<Span>, sum: bool) -> Result<Plan, Error> {
        let plan = Plan::new(x, Request::host(sum), &CAPS, self.id())?;
        refuse_buffer_positions(x.rotary.as_ref())?;
        Ok(plan)
    }

    /// Computes a call checked by [`CpuContext::check_staged`] whose arrays were copied to
    /// where [`lay_out`] placed them in `scratch` (at least `at.words` long); the results are
    /// then where `at` says. Fails as [`cpu::norm`] does, before anything is written.
    ///
    /// # Panics
    /// If `scratch` is shorter than the layout.
    pub fn compute_staged(
        &self,
        x: &Inputs<Span>,
        at: &Layout,
        scratch: &mut [u32],
    ) -> Result<(), Error> {
        assert!(
            scratch.len() >= at.words,
            "scratch: shorter than the layout"
        );
        let out = at.y.dtype;
        match (x.input.dtype, out) {
            (Dtype::F32, Dtype::F32) => staged::<f32, f32>(x, at, scratch),
            (Dtype::F32, Dtype::F16) => staged::<f32, u16>(x, at, scratch),
            (Dtype::F16, Dtype::F32) => staged::<u16, f32>(x, at, scratch),
            (Dtype::F16, Dtype::F16) => staged::<u16, u16>(x, at, scratch),
        }
    }
}

/// A per-column array's elements, where the call has it.
fn column<T: Word>(words: Option<&mut [u32]>, s: Option<Span>) -> Option<&[T]> {
    Some(elements::<T>(words?, s?))
}

fn staged<T: Word, O: Word>(
    x: &Inputs<Span>,
    at: &Layout,
    scratch: &mut [u32],
) -> Result<(), Error> {
    let in_place = at.in_place(x);
    let y = (!in_place).then_some(at.y);
    let v = at.sum.filter(|_| !in_place);
    let [input, residual, input2, gamma, beta, bias, post_gamma] = x.arrays().map(|s| s.copied());
    let [input, residual, input2, gamma, beta, bias, post_gamma, y_words, v_words] = regions(
        scratch,
        [input, residual, input2, gamma, beta, bias, post_gamma, y, v],
    );
    let Some(input) = input else {
        unreachable!("input is always laid out")
    };
    let columns = Inputs {
        input: &[][..],
        residual: None,
        input2: column(input2, x.input2),
        gamma: column(gamma, x.gamma),
        beta: column(beta, x.beta),
        bias: column(bias, x.bias),
        post_gamma: column(post_gamma, x.post_gamma),
        hidden: x.hidden,
        eps: x.eps,
        norm: x.norm,
        rotary: x.rotary.clone(),
    };
    let input = elements::<T>(input, x.input);
    let residual = residual.zip(x.residual).map(|(w, s)| elements::<T>(w, s));
    if in_place {
        // Bit for bit what the out-of-place kernel writes; the copies are the call's own.
        return cpu::norm_in_place(input, residual, &columns);
    }
    let (Some(y_words), Some(y)) = (y_words, y) else {
        unreachable!("y has a region of its own where it is not written over input")
    };
    let call = Inputs {
        input: &*input,
        residual: residual.as_deref(),
        ..columns
    };
    let v = v_words.zip(v).map(|(w, s)| elements::<T>(w, s));
    cpu::norm(&call, elements::<O>(y_words, y), v)
}
