//! The JavaScript half of the CPU backend's common call (`cpu_call.rs`): one function reads the
//! call's fields, one copies its arrays into wasm memory, one copies results out and makes the
//! Promise. Inline, not a module file: wasm-bindgen-test's server does not always finish
//! serving a module snippet, and a page that never loads its tests times out.

use js_sys::Promise;
use wasm_bindgen::prelude::*;

#[wasm_bindgen(inline_js = r#"
// The JavaScript half of the CPU backend's common call (cpu_call.rs, which says why it exists):
// reading a call's fields, copying its arrays into wasm memory and its results out.
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
// Rows' elements [from, from + count) of the call's input and residual, and with `columns` its
// per-column arrays, to the byte addresses in the header's slots. An f16 array is copied as
// its bits (set() from a Float16Array would convert values).
export function cpuCopy(at, from, count, columns) {
  try {
    views();
    const h = at / 8;
    for (let i = 0; i < (columns ? 6 : 2); i++) {
      const v = held[i], to = f64[h + i], kind = kinds[i];
      if (kind === ABSENT) continue;
      const whole = lengthOf.call(v), start = i < 2 ? from : 0, len = i < 2 ? count : whole;
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
// The view of wasm memory a result is copied from, kept while its place stays the same (a
// decode step's does, call after call): one object fewer to make and collect per call.
const sources = [0, 1].map(() => ({ at: -1, len: 0, half: false, buffer: undefined, view: undefined }));
function source(s, at, len, half) {
  const c = sources[s];
  if (c.at !== at || c.len !== len || c.half !== half || c.buffer !== buffer) {
    c.view = half ? subarray.call(u16, at / 2, at / 2 + len) : subarray.call(f32, at / 4, at / 4 + len);
    c.at = at;
    c.len = len;
    c.half = half;
    c.buffer = buffer;
  }
  return c.view;
}
// Elements [from, from + len) of a result, at byte address `at`, set() into the caller's array
// held[i] (an f16 result's bits through a Uint16Array over a Float16Array's memory).
function write(i, at, from, len, half) {
  const d = held[i];
  const to = kinds[i] === HALVES ? new U16(bufferOf.call(d), offsetOf.call(d), lengthOf.call(d)) : d;
  set.call(to, source(i - OUTPUT, at, len, half), from);
}
// A block's results into the caller's arrays, where the call's results are all given.
export function cpuCopyOut(yAt, vAt, from, len, yHalf, vHalf) {
  try {
    views();
    write(OUTPUT, yAt, from, len, yHalf);
    if (vAt >= 0) write(SUM, vAt, from, len, vHalf);
    return true;
  } catch {
    return false;
  }
}
// A result: the caller's array held[i] (written now unless `written`), else a fresh array
// slice()d out.
function result(at, len, half, i, written) {
  if (held[i] === undefined) return half ? slice.call(u16, at / 2, at / 2 + len) : slice.call(f32, at / 4, at / 4 + len);
  if (!written) write(i, at, 0, len, half);
  return held[i];
}
// A Promise of the results, or a rejection where one could not be made (the JavaScript
// heap's limit: the caller's thrown error would otherwise unwind through wasm).
export function cpuFinish(yAt, yLen, yHalf, vAt, vLen, vHalf, written) {
  try {
    views();
    const y = result(yAt, yLen, yHalf, OUTPUT, written);
    const done = vLen < 0 ? y : { output: y, sum: result(vAt, vLen, vHalf, SUM, written) };
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
    pub(crate) fn cpu_init(memory: &JsValue, names: &js_sys::Array);
    /// The call's fields into the header at byte address `at`; `false` for a call this
    /// path does not take.
    #[wasm_bindgen(js_name = cpuRead)]
    pub(crate) fn cpu_read(args: &JsValue, at: u32) -> bool;
    /// The elements `[from, from + count)` of the input and residual `cpu_read` took, and
    /// with `columns` its per-column arrays, to the addresses in the header's first slots.
    /// `false` (the call's arrays released) where one could not be copied.
    #[wasm_bindgen(js_name = cpuCopy)]
    pub(crate) fn cpu_copy(at: u32, from: f64, count: u32, columns: bool) -> bool;
    /// A block's `len` results, `y` at byte address `y_at` (and `v` at `v_at` unless it is
    /// negative), into the caller's arrays from element `from`.
    #[wasm_bindgen(js_name = cpuCopyOut)]
    pub(crate) fn cpu_copy_out(
        y_at: u32,
        v_at: f64,
        from: u32,
        len: u32,
        y_f16: bool,
        v_f16: bool,
    ) -> bool;
    #[wasm_bindgen(js_name = cpuRelease)]
    pub(crate) fn cpu_release();
    /// A Promise of `y` (`y_len` elements copied from byte address `y_at` into the caller's
    /// array, or a fresh one), or of `{ output, sum }` where `v_len` is not negative; the
    /// caller's arrays as they are where `written` (block by block, by `cpu_copy_out`).
    #[wasm_bindgen(js_name = cpuFinish)]
    pub(crate) fn cpu_finish(
        y_at: u32,
        y_len: u32,
        y_f16: bool,
        v_at: u32,
        v_len: i32,
        v_f16: bool,
        written: bool,
    ) -> Promise;
}
