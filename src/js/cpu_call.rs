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
use crate::cpu::scratch::{lay_out, Span};
use crate::js::keys::{keys_of, Readers, CALL_KEYS};
use crate::js::value::to_js;

#[wasm_bindgen(inline_js = r#"
const { getPrototypeOf } = Object, U16 = Uint16Array;
const proto = getPrototypeOf(Uint8Array.prototype);
const getter = (k) => Object.getOwnPropertyDescriptor(proto, k).get;
// The intrinsics, as array.rs reads them: a subclass's own getters cannot lie about a length.
const tagOf = getter(Symbol.toStringTag), lengthOf = getter("length");
const bufferOf = getter("buffer"), offsetOf = getter("byteOffset");
const { set, slice, subarray } = proto;
// The arrays of the call being made (its six inputs, then the caller's arrays for output and
// sum), and how each is held: ABSENT, F32, BITS (a Uint16Array) or HALVES (a Float16Array).
// Kept in slots, not per-call arrays: at decode size the garbage of a call was a measurable
// part of its time.
const ABSENT = 0, F32 = 1, BITS = 2, HALVES = 3, OUTPUT = 6, SUM = 7;
const held = [undefined, undefined, undefined, undefined, undefined, undefined, undefined, undefined];
const kinds = new Int8Array(8);
let memory, known, buffer, f32, u16, f64;
// Views of all of wasm memory, made again once it has grown (the old buffer is detached).
function views() {
  if (memory.buffer === buffer) return;
  buffer = memory.buffer;
  f32 = new Float32Array(buffer);
  u16 = new U16(buffer);
  f64 = new Float64Array(buffer);
}
export function cpuInit(m, names) {
  memory = m;
  known = new Set(names);
}
const dtypeName = (d) => d === undefined || d === "f32" || d === "f16";
// How `v` is held, or -1 for a value args.rs must read (and maybe refuse).
function kindOf(v, required) {
  if (v === undefined) return required ? -1 : ABSENT;
  const tag = tagOf.call(v);
  const kind = tag === "Float32Array" ? F32 : tag === "Uint16Array" ? BITS : tag === "Float16Array" ? HALVES : -1;
  if (kind < 0) return -1;
  const b = bufferOf.call(v);
  return b.detached === true || b.resizable === true || b.growable === true ? -1 : kind;
}
// Whether held[i] (a result's array) shares no byte with another array of the call nor lies in
// wasm memory; args.rs names the problem where it does.
function apart(i) {
  if (kinds[i] === ABSENT) return true;
  const b = bufferOf.call(held[i]);
  if (b === memory.buffer) return false;
  for (let j = 0; j < 8; j++) if (j !== i && kinds[j] !== ABSENT && bufferOf.call(held[j]) === b && overlap(i, j)) return false;
  return true;
}
const bytes = (i) => lengthOf.call(held[i]) * (kinds[i] === F32 ? 4 : 2);
function overlap(i, j) {
  const s = offsetOf.call(held[i]), t = offsetOf.call(held[j]);
  return s < t + bytes(j) && t < s + bytes(i);
}
// Fields read in args.rs's order; header slots as cpu_call.rs reads them.
export function cpuRead(a, at) {
  try {
    // A plain object only (as tensor_call.rs takes): fields inherited from a prototype of
    // the app's are args.rs's to read and refuse.
    if (a === null || typeof a !== "object" || getPrototypeOf(a) !== Object.prototype) return false;
    for (const k in a) if (!known.has(k)) return false;
    if (!dtypeName(a.dtype)) return false;
    const input = a.input, kInput = kindOf(input, true);
    if (kInput < 0) return false;
    const residual = a.residual, kResidual = kindOf(residual, false);
    if (kResidual < 0) return false;
    const gamma = a.gamma, kGamma = kindOf(gamma, true);
    if (kGamma < 0) return false;
    const beta = a.beta, kBeta = kindOf(beta, false);
    if (kBeta < 0) return false;
    const bias = a.bias, kBias = kindOf(bias, false);
    if (kBias < 0) return false;
    const post = a.postGamma, kPost = kindOf(post, false);
    if (kPost < 0) return false;
    const kind = a.kind, offset = a.gammaOffset, out = a.outputDtype, hidden = a.hidden, eps = a.eps;
    if (kind !== undefined && kind !== "rms" && kind !== "layer") return false;
    if (offset !== undefined && typeof offset !== "number") return false;
    if (!dtypeName(out) || typeof hidden !== "number") return false;
    if (eps !== undefined && typeof eps !== "number") return false;
    if (a.rows !== undefined) return false;
    const output = a.output, fresh = output === undefined || output === "array";
    const kOutput = fresh ? ABSENT : kindOf(output, true);
    if (kOutput < 0) return false;
    const sum = a.sum, kSum = kindOf(sum, false);
    if (kSum < 0) return false;
    const inPlace = a.inPlace;
    if (inPlace !== undefined && inPlace !== false) return false;
    // Written only now, after the caller's last getter: one may have made a call of its own,
    // through these same slots.
    held[0] = input; held[1] = residual; held[2] = gamma; held[3] = beta; held[4] = bias; held[5] = post;
    kinds[0] = kInput; kinds[1] = kResidual; kinds[2] = kGamma; kinds[3] = kBeta; kinds[4] = kBias; kinds[5] = kPost;
    held[OUTPUT] = fresh ? undefined : output; held[SUM] = sum; kinds[OUTPUT] = kOutput; kinds[SUM] = kSum;
    if (!apart(OUTPUT) || !apart(SUM)) {
      cpuRelease();
      return false;
    }
    views();
    const h = at / 8;
    for (let i = 0; i < 6; i++) {
      f64[h + i] = kinds[i] === ABSENT ? -1 : lengthOf.call(held[i]);
      f64[h + 6 + i] = kinds[i] >= BITS ? 1 : 0;
    }
    for (let i = OUTPUT; i <= SUM; i++) {
      f64[h + 13 + i] = kinds[i] === ABSENT ? -1 : lengthOf.call(held[i]);
      f64[h + 15 + i] = kinds[i] >= BITS ? 1 : 0;
    }
    f64[h + 12] = hidden;
    f64[h + 13] = eps === undefined ? 0 : 1;
    f64[h + 14] = eps ?? 0;
    f64[h + 15] = kind === "layer" ? 1 : 0;
    f64[h + 16] = offset === undefined ? 0 : 1;
    f64[h + 17] = offset ?? 0;
    f64[h + 18] = out === undefined ? -1 : out === "f16" ? 1 : 0;
    return true;
  } catch {
    return false;
  }
}
// The call's per-column arrays (from: -1), or rows' elements [from, from + count) of its input
// and residual, to the byte addresses in the header's slots. An f16 array is copied as its
// bits (set() from a Float16Array would convert values).
export function cpuCopy(at, from, count) {
  try {
    views();
    const h = at / 8;
    for (let i = from < 0 ? 2 : 0; i < (from < 0 ? 6 : 2); i++) {
      const v = held[i], to = f64[h + i], kind = kinds[i];
      if (kind === ABSENT) continue;
      const whole = lengthOf.call(v), start = from < 0 ? 0 : from, len = from < 0 ? whole : count;
      // A view only for part of an array (a call of one block needs none).
      const part = (a) => (len === whole ? a : subarray.call(a, start, start + len));
      if (kind === F32) set.call(f32, part(v), to / 4);
      else if (kind === BITS) set.call(u16, part(v), to / 2);
      else set.call(u16, new U16(bufferOf.call(v), offsetOf.call(v) + 2 * start, len), to / 2);
    }
    return true;
  } catch {
    cpuRelease();
    return false;
  }
}
export function cpuRelease() {
  held.fill(undefined);
}
// A result: set() into the caller's array held[i] (an f16 result's bits through a Uint16Array
// over a Float16Array's memory), else a fresh array slice()d out.
function result(at, len, half, i) {
  const d = held[i];
  if (d === undefined) return half ? slice.call(u16, at / 2, at / 2 + len) : slice.call(f32, at / 4, at / 4 + len);
  const from = half ? subarray.call(u16, at / 2, at / 2 + len) : subarray.call(f32, at / 4, at / 4 + len);
  set.call(kinds[i] === HALVES ? new U16(bufferOf.call(d), offsetOf.call(d), len) : d, from);
  return d;
}
// A Promise of the results, or a rejection where one could not be made (the JavaScript
// heap's limit: the caller's thrown error would otherwise unwind through wasm).
export function cpuFinish(yAt, yLen, yHalf, vAt, vLen, vHalf) {
  try {
    views();
    const y = result(yAt, yLen, yHalf, OUTPUT);
    const done = vLen < 0 ? y : { output: y, sum: result(vAt, vLen, vHalf, SUM) };
    cpuRelease();
    return Promise.resolve(done);
  } catch (e) {
    cpuRelease();
    return Promise.reject(e);
  }
}
"#)]
extern "C" {
    #[wasm_bindgen(js_name = cpuInit)]
    fn cpu_init(memory: &JsValue, names: &js_sys::Array);
    /// The call's fields into the header at byte address `at`; `false` for a call this
    /// path does not take.
    #[wasm_bindgen(js_name = cpuRead)]
    fn cpu_read(args: &JsValue, at: u32) -> bool;
    /// The per-column arrays `cpu_read` took (`from` < 0), or the elements `[from, from +
    /// count)` of its input and residual, to the addresses in the header's first slots.
    /// `false` (the call's arrays released) where one could not be copied.
    #[wasm_bindgen(js_name = cpuCopy)]
    fn cpu_copy(at: u32, from: f64, count: u32) -> bool;
    #[wasm_bindgen(js_name = cpuRelease)]
    fn cpu_release();
    /// A Promise of `y` (`y_len` elements copied from byte address `y_at` into the caller's
    /// array, or a fresh one), or of `{ output, sum }` where `v_len` is not negative.
    #[wasm_bindgen(js_name = cpuFinish)]
    fn cpu_finish(
        y_at: u32,
        y_len: u32,
        y_f16: bool,
        v_at: u32,
        v_len: i32,
        v_f16: bool,
    ) -> Promise;
}

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
    let laid_out = inputs(&h).and_then(|mut x| {
        ctx.check_staged(&x, sum)?;
        check_given(&x, &h, sum)?;
        let staged = lay_out(&mut x, sum)?;
        Ok((x, staged))
    });
    let (x, staged) = match laid_out {
        Ok(laid_out) => laid_out,
        Err(e) => {
            // Too big for wasm memory is said at once: the field-by-field path would copy
            // the arrays before finding out.
            if matches!(e, Error::Memory(_)) {
                return Some(rejected(e));
            }
            cpu_release();
            return None;
        }
    };
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
        if !cpu_copy(at, -1.0, 0) {
            return None;
        }
        for (from, len) in staged.blocks() {
            let (block, block_at) = staged.cut(&x, from, len);
            if !cpu_copy(at, from as f64, len as u32) {
                // Only a first block can fail here (nothing the app runs comes between
                // blocks): the field-by-field path then says why, as for any other refusal.
                return None;
            }
            if let Err(e) = ctx.compute_staged(&block, &block_at, &mut scratch) {
                return Some(rejected(e));
            }
        }
        let (y, v) = (staged.y, staged.sum);
        let (v_at, v_len) = v.map_or((0, -1), |v| (address(&v), v.len as i32));
        Some(cpu_finish(
            address(&y),
            y.len as u32,
            y.dtype == Dtype::F16,
            v_at,
            v_len,
            x.input.dtype == Dtype::F16,
        ))
    })
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
