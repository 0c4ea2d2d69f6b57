//! The CPU backend's common call in a few crossings: a plain object of typed arrays, numbers
//! and known options (`run` or `runWithSum`, results as arrays) is read by one JavaScript
//! function; its arrays are copied by another into scratch memory kept across calls
//! (`cpu/scratch.rs`), the per-column ones once and the rows a block at a time (one block at
//! decode size), and the results copied out, and their Promise made, by a third: 3 + 1 per
//! block. Read field by field, a decode-sized call took some two hundred crossings (each
//! typed array's slots, flags, the copies, every value handle dropped), most of its time in
//! Firefox and WebKit (docs/performance.md, "The CPU backend in three engines").
//!
//! Anything else, and every call that any check refuses, returns `None`: the caller then
//! takes the field-by-field path of `args.rs`, which has every message, so errors are the
//! same whichever path a call starts on. (A getter of such a call's arguments is then read
//! twice.)

use std::cell::{Cell, RefCell};

use js_sys::Promise;
use wasm_bindgen::prelude::*;

use crate::call::checks::{eps_from_number, gamma_offset_from_number, hidden_from_number};
use crate::call::dtype::Dtype;
use crate::call::error::Error;
use crate::call::plan::check_written;
use crate::call::shape::{Inputs, Norm, NormKind, DEFAULT_EPS};
use crate::cpu::driver::CpuContext;
use crate::cpu::memory::reserve;
use crate::cpu::scratch::{lay_out, Layout, Span};
use crate::js::cpu_call_js::{cpu_copy, cpu_copy_out, cpu_finish, cpu_init, cpu_read, cpu_release};
use crate::js::keys::{keys_of, Readers, CALL_KEYS};
use crate::js::value::to_js;

/// Slots of the header `cpuRead` fills: per array (in `ARRAYS`' order) its length (-1:
/// absent), then whether it holds halves; hidden, eps given and eps, layer, gammaOffset
/// given and gammaOffset, outputDtype (-1: absent, 0: f32, 1: f16); then the caller's arrays
/// for output and sum, as the arrays (at `GIVEN`). `cpuCopy` reads the first six as byte
/// addresses.
const HEADER: usize = 23;
const GIVEN: usize = 19;
const ARRAYS: usize = 6;

thread_local! {
    static READY: Cell<bool> = const { Cell::new(false) };
    static HEADER_SLOTS: RefCell<Vec<f64>> = RefCell::new(vec![0.0; HEADER]);
    /// Every call's arrays and results, in words; grown to the largest call made. One for
    /// all instances (calls never overlap: nothing here awaits), not one each: wasm memory
    /// never shrinks, so regions of their own would only add up.
    static SCRATCH: RefCell<Vec<u32>> = const { RefCell::new(Vec::new()) };
}

fn header() -> u32 {
    if !READY.get() {
        let known: &[&str] = keys_of!(CALL_KEYS, Readers::RUN);
        let names: js_sys::Array = known.iter().map(|k| JsValue::from_str(k)).collect();
        cpu_init(&wasm_bindgen::memory(), &names);
        READY.set(true);
    }
    HEADER_SLOTS.with(|h| h.borrow_mut().as_mut_ptr() as u32)
}

/// `run` (`sum: false`) or `runWithSum` on the CPU backend for the common call, or `None`
/// where `args.rs` must read it.
pub fn run(ctx: &CpuContext, args: &JsValue, sum: bool) -> Option<Promise> {
    let at = header();
    if !cpu_read(args, at) {
        return None;
    }
    let h: [f64; HEADER] = HEADER_SLOTS.with(|s| s.borrow()[..].try_into().unwrap());
    // Where the caller gave an array for every result, each block's results go out while
    // they are in cache (`scratch.rs`, `lay_out`).
    let all_given = h[GIVEN] >= 0.0 && (!sum || h[GIVEN + 1] >= 0.0);
    let laid_out = inputs(&h).and_then(|mut x| {
        ctx.check_staged(&x, sum)?;
        check_given(&x, &h, sum)?;
        let staged = lay_out(&mut x, sum, all_given)?;
        Ok((x, staged))
    });
    match laid_out {
        Ok((x, staged)) => in_scratch(ctx, at, &x, &staged),
        // Too big for wasm memory is said at once: the field-by-field path would copy the
        // arrays before finding out.
        Err(e @ Error::Range(_)) => Some(rejected(e)),
        Err(_) => {
            cpu_release();
            None
        }
    }
}

/// The call laid out as `staged`, computed in the scratch block by block.
fn in_scratch(ctx: &CpuContext, at: u32, x: &Inputs<Span>, staged: &Layout) -> Option<Promise> {
    SCRATCH.with(|s| {
        let Ok(mut scratch) = s.try_borrow_mut() else {
            cpu_release();
            return None;
        };
        if scratch.len() < staged.words {
            // Grows wasm memory at most here, before any view of it is made for this call.
            if let Err(e) = reserve(&mut scratch, staged.words, "input") {
                return Some(rejected(e));
            }
            scratch.resize(staged.words, 0);
        }
        let base = scratch.as_ptr() as u32;
        let address = |s: &Span| base + 4 * s.at as u32;
        HEADER_SLOTS.with(|slots| {
            let mut slots = slots.borrow_mut();
            let spans = [x.input, x.gamma].map(Some);
            let spans = [spans[0], x.residual, spans[1], x.beta, x.bias, x.post_gamma];
            for (slot, s) in slots.iter_mut().zip(spans) {
                *slot = s.map_or(-1.0, |s| f64::from(address(&s)));
            }
        });
        let f16 = |s: &Span| s.dtype == Dtype::F16;
        for (from, len) in staged.blocks() {
            let (block, block_at) = staged.cut(x, from, len);
            if !cpu_copy(at, from as f64, len as u32, from == 0) {
                // Only a first block can fail here (nothing the app runs comes between
                // blocks): the field-by-field path then says why, as for any other refusal.
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

/// A call that could not be made, its arrays released.
fn rejected(e: Error) -> Promise {
    cpu_release();
    Promise::reject(&to_js(e))
}

/// The caller's arrays `cpuRead` found for the results, checked as `caller_arrays.rs` checks
/// them (a `sum` array in `run` is refused there).
fn check_given(x: &Inputs<Span>, h: &[f64; HEADER], sum: bool) -> Result<(), Error> {
    for (i, name) in ["output", "sum"].into_iter().enumerate() {
        if h[GIVEN + i] < 0.0 {
            continue;
        }
        if name == "sum" && !sum {
            return Err(Error::Type("sum: expected undefined in run".into()));
        }
        let dtype = if h[GIVEN + 2 + i] == 1.0 {
            Dtype::F16
        } else {
            Dtype::F32
        };
        check_written(x, name, h[GIVEN + i] as usize, dtype)?;
    }
    Ok(())
}

/// The call `cpuRead` found, its numbers checked as `args.rs` checks them.
fn inputs(h: &[f64; HEADER]) -> Result<Inputs<Span>, Error> {
    let span = |i: usize| {
        let dtype = if h[ARRAYS + i] == 1.0 {
            Dtype::F16
        } else {
            Dtype::F32
        };
        (h[i] >= 0.0).then(|| Span::of(h[i] as usize, dtype))
    };
    let (Some(input), Some(gamma)) = (span(0), span(2)) else {
        return Err(Error::Type("input and gamma: missing".into()));
    };
    let gamma_offset = if h[16] == 1.0 {
        gamma_offset_from_number(h[17])?
    } else {
        0.0
    };
    let output_dtype = match h[18] {
        0.0 => Some(Dtype::F32),
        1.0 => Some(Dtype::F16),
        _ => None,
    };
    let hidden = hidden_from_number(h[12])?;
    let eps = if h[13] == 1.0 {
        eps_from_number(h[14])?
    } else {
        DEFAULT_EPS
    };
    Ok(Inputs {
        input,
        residual: span(1),
        gamma,
        beta: span(3),
        bias: span(4),
        post_gamma: span(5),
        hidden,
        eps,
        norm: Norm {
            kind: if h[15] == 1.0 {
                NormKind::Layer
            } else {
                NormKind::Rms
            },
            gamma_offset,
            output_dtype,
        },
    })
}
