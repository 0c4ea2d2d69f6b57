//! The CPU backend's common call in a few crossings: a call of typed arrays, numbers and
//! known options (`run` or `runWithSum`, results as arrays), read by `call_record.rs`, has its
//! arrays copied by `call.js` into scratch memory kept across calls (`cpu/scratch.rs`), the
//! per-column ones once and the rows a block at a time (one block at decode size), and the
//! results copied out, and their Promise made, by `call.js` too: one crossing a block and
//! two more. Made of JavaScript objects one by one, a decode-sized call took many times as
//! many crossings, most of its time in Firefox and WebKit (docs/performance.md, "The CPU
//! backend in three engines").
//!
//! Anything else, and every call that a check refuses, returns `None`: the caller then
//! decodes the same record as every call (`args.rs`), whose messages say why, so errors are
//! the same whichever path a call starts on.

use std::cell::RefCell;

use js_sys::Promise;

use crate::call::dtype::Dtype;
use crate::call::error::Error;
use crate::call::plan::check_written;
use crate::call::shape::Inputs;
use crate::cpu::driver::CpuContext;
use crate::cpu::memory::reserve;
use crate::cpu::scratch::{lay_out, Layout, Span};
use crate::js::args::parse_inputs;
use crate::js::call_js::{cpu_copy, cpu_copy_out, cpu_finish};
use crate::js::call_record::{Call, Status, What, Word};
use crate::js::fields::Sources;
use crate::js::keys::CallKey;
use crate::js::value::to_js;

thread_local! {
    /// The byte address of each array of [`CallKey::ARRAYS`] in the scratch, for `cpuCopy`
    /// (-1 where absent).
    static ADDRESSES: RefCell<[f64; CallKey::ARRAYS.len()]> =
        const { RefCell::new([0.0; CallKey::ARRAYS.len()]) };
    /// Every call's arrays and results, in words; grown to the largest call made. One for
    /// all instances (calls never overlap: nothing here awaits), not one each: wasm memory
    /// never shrinks, so regions of their own would only add up.
    static SCRATCH: RefCell<Vec<u32>> = const { RefCell::new(Vec::new()) };
}

/// `run` (`sum: false`) or `runWithSum` on the CPU backend for the common call, or `None`
/// where the call is decoded as every call is.
pub fn run(ctx: &CpuContext, call: &Call, sum: bool) -> Option<Promise> {
    if !takes(call) {
        return None;
    }
    // Where the caller gave an array for every result, each block's results go out while
    // they are in cache (`scratch.rs`, `lay_out`).
    let given = |k| call.dtype(k).is_some();
    let all_given = given(CallKey::Output) && (!sum || given(CallKey::Sum));
    let spans = parse_inputs(call, Sources::RUN, |k, _, _| {
        Ok(call.dtype(k).map(|d| Span::of(call.len(k), d)))
    });
    // A refusal is worded where the call is decoded again, as every call is.
    let (mut x, _) = spans.ok().and_then(|x| x.checked().ok())?;
    let laid_out = ctx
        .check_staged(&x, sum)
        .and_then(|_| check_given(&x, call, sum))
        .and_then(|()| lay_out(&mut x, sum, all_given));
    match laid_out {
        Ok(staged) => in_scratch(ctx, &x, &staged),
        // Too big for wasm memory is said at once: decoding again would copy the arrays
        // before finding out.
        Err(e @ Error::Range(_)) => Some(rejected(e)),
        Err(_) => None,
    }
}

/// Whether every array of `call` is a typed array over a fixed, live buffer, it has `gamma`
/// (a post-norm's sum alone is decoded as every call is), and its results go to fresh arrays
/// or to such arrays apart from the rest.
fn takes(call: &Call) -> bool {
    let host = |k| call.dtype(k).is_some() && !call.detached(k) && !call.resizable(k);
    let absent = |k| call.what(k) == What::Absent;
    let given = |k| host(k) && !call.in_wasm_memory(k) && call.overlap(k).is_none();
    call.status() == Status::Read
        && !absent(CallKey::Gamma)
        && CallKey::ARRAYS.iter().all(|&k| absent(k) || host(k))
        && absent(CallKey::Rows)
        && matches!(call.what(CallKey::InPlace), What::Absent | What::No)
        && (absent(CallKey::Output)
            || call.word(CallKey::Output) == Some(Word::Array)
            || given(CallKey::Output))
        && (absent(CallKey::Sum) || given(CallKey::Sum))
}

/// The call laid out as `staged`, computed in the scratch block by block.
fn in_scratch(ctx: &CpuContext, x: &Inputs<Span>, staged: &Layout) -> Option<Promise> {
    SCRATCH.with(|s| {
        let mut scratch = s.try_borrow_mut().ok()?;
        if scratch.len() < staged.words {
            // Grows wasm memory at most here, before any view of it is made for this call.
            if let Err(e) = reserve(&mut scratch, staged.words, "input") {
                return Some(rejected(e));
            }
            scratch.resize(staged.words, 0);
        }
        let base = scratch.as_ptr() as u32;
        let address = |s: &Span| base + 4 * s.at as u32;
        let at = ADDRESSES.with(|slots| {
            let mut slots = slots.borrow_mut();
            for (slot, s) in slots.iter_mut().zip(x.arrays()) {
                *slot = s.map_or(-1.0, |s| f64::from(address(s)));
            }
            slots.as_ptr() as u32
        });
        let f16 = |s: &Span| s.dtype == Dtype::F16;
        for (from, len) in staged.blocks() {
            let (block, block_at) = staged.cut(x, from, len);
            if !cpu_copy(at, from as f64, len as u32, from == 0) {
                // Only a first block can fail here (nothing the app runs comes between
                // blocks): decoding the call then says why, as for any other refusal.
                return None;
            }
            // A later block cannot fail: it asks for the room the first one had and gave back
            // (`cpu::norm`), so results copied out a block at a time are never left partial.
            if let Err(e) = ctx.compute_staged(&block, &block_at, &mut scratch) {
                return Some(rejected(e));
            }
            if staged.per_block && !copy_out(&block_at, from, len, address) {
                return Some(rejected(Error::Type(
                    "output: the browser refused the copy into the array given".into(),
                )));
            }
        }
        let (y, v) = (staged.y, staged.sum);
        let (v_at, v_len) = v.map_or((0, -1), |v| (address(&v), v.len as i32));
        Some(cpu_finish(
            address(&y),
            y.len as u32,
            f16(&y),
            v_at,
            v_len,
            x.input.dtype == Dtype::F16,
            staged.per_block,
        ))
    })
}

/// A block's results, laid out as `at` says, into the caller's arrays from element `from`.
fn copy_out(at: &Layout, from: usize, len: usize, address: impl Fn(&Span) -> u32) -> bool {
    let f16 = |s: &Span| s.dtype == Dtype::F16;
    let v = at.sum;
    let v_at = v.map_or(-1.0, |v| f64::from(address(&v)));
    let v_f16 = v.is_some_and(|v| f16(&v));
    cpu_copy_out(
        address(&at.y),
        v_at,
        from as u32,
        len as u32,
        f16(&at.y),
        v_f16,
    )
}

/// A call that could not be made.
fn rejected(e: Error) -> Promise {
    Promise::reject(&to_js(e))
}

/// The caller's arrays for the results, checked as `caller_arrays.rs` checks them (a `sum`
/// array in `run` is refused there).
fn check_given(x: &Inputs<Span>, call: &Call, sum: bool) -> Result<(), Error> {
    for key in [CallKey::Output, CallKey::Sum] {
        let Some(dtype) = call.dtype(key) else {
            continue;
        };
        if key == CallKey::Sum && !sum {
            return Err(Error::Type("sum: expected undefined in run".into()));
        }
        check_written(x, key.name(), call.len(key), dtype)?;
    }
    Ok(())
}
