// The JavaScript half of reading a call (call_record.rs holds the Rust half and says why):
// `readCall` reads a call's argument object once, every field in keys.rs's table, and writes
// what each field holds into that field's slot of a record in wasm memory, which Rust reads
// by name. The values themselves stay here, for Rust to ask for (`callValue`) and for the
// CPU backend's common call to copy in and out (`cpuCopy`, `cpuCopyOut`, `cpuFinish`).
//
// Nothing here throws into wasm: every operation on a caller's value is caught.

const { getPrototypeOf } = Object, hasOwn = Object.prototype.hasOwnProperty, U16 = Uint16Array;
const typed = getPrototypeOf(Uint8Array.prototype);
const getter = (k) => Object.getOwnPropertyDescriptor(typed, k).get;
// The intrinsics, as array.rs reads them: a subclass's own getters cannot lie about a length.
const tagOf = getter(Symbol.toStringTag), lengthOf = getter("length");
const bufferOf = getter("buffer"), offsetOf = getter("byteOffset");
const { set, slice, subarray } = typed;

// From Rust (`callInit`): wasm memory, the table's names, and the record's layout and codes.
let memory, names, known, L, W, F, pointer;
// The values of the call read last, by the table's order, and what each slot says of them.
let held = [];
let whats = new Int8Array(0);
// Views of all of wasm memory, made again once it has grown (the old buffer is detached).
let buffer, f64, f32, u16;
// A view of a buffer that memory.grow() replaced is detached, of length 0: cheaper to ask than
// `memory.buffer`, a call into the engine.
function views() {
  if (f64 !== undefined && f64.length !== 0) return;
  buffer = memory.buffer;
  f64 = new Float64Array(buffer);
  f32 = new Float32Array(buffer);
  u16 = new U16(buffer);
}
// A read's values and slots, kept for the next: at decode size the garbage of a call was a
// measurable part of its time. A getter of one call's object may read a call of its own,
// which then takes fresh ones.
let depth = 0, values = new Array(0), slots = new Float64Array(0), present = new Int32Array(0);
// The fields the last read held, by the table's order, and a live tensor's handle by field.
let written = new Int32Array(0), writtenCount = 0, handles = new Float64Array(0);
// The status the last read wrote: only a call read as an object of known fields repeats one.
let writtenStatus = -1;
// Reads begun so far: a read during which another began (a getter's own call) wrote the
// record in between, and is never the same as the last.
let reads = 0;

export function callInit(m, tableNames, layout) {
  memory = m;
  names = tableNames;
  known = Object.create(null);
  for (const k of names) known[k] = true;
  L = layout;
  W = layout.codes;
  F = layout.flagBits;
  // As a property's name, internalized: a read by a key made at run time (wasm-bindgen decodes
  // strings from wasm memory) deoptimized readCall over and over.
  pointer = Object.keys({ [layout.pointer]: 0 })[0];
  whats = new Int8Array(names.length);
  held = new Array(names.length).fill(undefined);
  values = Array.from({ length: names.length });
  slots = new Float64Array(3 * names.length);
  present = new Int32Array(names.length);
  written = new Int32Array(names.length);
  handles = new Float64Array(names.length);
}

// A tensor's handle, on the object under a key of this module's own (`tagTensor`): what makes
// an object one of the package's tensors (its pointer says whether it was freed), read as a
// plain property, where a getter of the class would cross into wasm for each tensor.
const HANDLE = Symbol("handle");

export function tagTensor(t, handle) {
  Object.defineProperty(t, HANDLE, { value: handle });
}

// Whether `v` is the WebGPU interface `name`: an instance of the runtime's global of that
// name where it has one (browsers, Deno), else by its brand, Symbol.toStringTag, which
// WebIDL objects carry but Deno's do not. An object that only claims the brand is not one
// where the global exists. The prototype chain is walked as `instanceof` does, bounded: a
// Proxy could make it endless.
export function isWebGpu(v, name) {
  try {
    if (v === null || (typeof v !== "object" && typeof v !== "function")) return false;
    const C = globalThis[name];
    if (typeof C !== "function") return v[Symbol.toStringTag] === name;
    const p = C.prototype;
    let at = v;
    for (let i = 0; i < 32; i++) {
      at = getPrototypeOf(at);
      if (at === p) return true;
      if (at === null || typeof at !== "object") return false;
    }
    return false;
  } catch {
    return false;
  }
}

// Whether `a` is an argument object (not a function, an Array or a typed array), and every
// own key one of the table's: the record's status.
function statusOf(a) {
  try {
    if (a === null || typeof a !== "object" || Array.isArray(a) || ArrayBuffer.isView(a)) return W.notObject;
    for (const k in a) if (known[k] !== true && hasOwn.call(a, k)) return W.unknownKey;
    return W.read;
  } catch {
    return W.notObject;
  }
}

// What `v` is, into slot[o] (the code), slot[o + 1] (a number, a length, a tensor's handle,
// a buffer's size) and slot[o + 2] (an array's flags, a buffer's usage).
function describe(v, slot, o) {
  slot[o + 1] = 0;
  slot[o + 2] = 0;
  const t = typeof v;
  if (t === "number") return (slot[o + 1] = v), (slot[o] = W.number);
  if (t === "boolean") return (slot[o] = v ? W.yes : W.no);
  if (t === "string") {
    const word = L.words.indexOf(v);
    return word < 0 ? (slot[o] = W.other) : ((slot[o + 1] = word), (slot[o] = W.word));
  }
  if (v === null || t !== "object") return (slot[o] = W.other);
  // readCall took a live tensor already: one of ours here is a freed one.
  if (hasOwn.call(v, HANDLE)) return (slot[o] = W.freedTensor);
  let tag;
  try {
    tag = tagOf.call(v);
  } catch {}
  if (tag === "Float32Array" || tag === "Uint16Array" || tag === "Float16Array") {
    slot[o] = tag === "Float32Array" ? W.f32 : tag === "Uint16Array" ? W.bits : W.halves;
    const b = bufferOf.call(v);
    slot[o + 1] = lengthOf.call(v);
    slot[o + 2] = (b.detached === true ? F.detached : 0) | (b.resizable === true || b.growable === true ? F.resizable : 0)
      | (b === memory.buffer ? F.wasm : 0);
    return;
  }
  if (tag === "Int32Array" || tag === "Uint32Array") {
    slot[o + 1] = lengthOf.call(v);
    return (slot[o] = tag === "Int32Array" ? W.i32 : W.u32);
  }
  if (isWebGpu(v, "GPUBuffer")) {
    slot[o + 1] = Number(v.size);
    slot[o + 2] = Number(v.usage);
    return (slot[o] = W.buffer);
  }
  slot[o] = W.other;
}

const isArray = (w) => w === W.f32 || w === W.bits || w === W.halves;
const bytes = (i) => lengthOf.call(held[i]) * (whats[i] === W.f32 ? 4 : 2);

// The first array of the call (in the table's order) that shares a byte with held[i], or -1.
function overlapOf(i) {
  const b = bufferOf.call(held[i]), s = offsetOf.call(held[i]);
  for (let j = 0; j < held.length; j++) {
    if (j === i || !isArray(whats[j]) || bufferOf.call(held[j]) !== b) continue;
    const t = offsetOf.call(held[j]);
    if (s < t + bytes(j) && t < s + bytes(i)) return j;
  }
  return -1;
}

// Each field of `a` that is not undefined into v (whose slots are all undefined), in the
// table's order, and its index into `given`: each getter once, and a getter that throws
// reads as undefined, as a missing field does. Returns how many were given. The reads name
// their fields, one per row of keys.rs's CALL_KEYS, written in by build.rs: a property read
// by a name that varies from read to read took several times as long.
function readFields(a, v, given) {
  let x, c = 0;
  // build.rs: the reads.
  return c;
}

// Reads `a` into the record at byte address `at`: its fields, then what each value is.
export function readCall(a, at) {
  const status = statusOf(a), n = names.length;
  const top = depth === 0;
  const v = top ? values : new Array(n), slot = top ? slots : new Float64Array(3 * n);
  const given = top ? present : new Int32Array(n);
  const read = ++reads;
  let count = 0;
  depth++;
  try {
    if (status === W.read) count = readFields(a, v, given);
    for (let k = 0; k < count; k++) {
      const i = given[k], x = v[i], o = 3 * i;
      slot[o + 1] = 0;
      slot[o + 2] = 0;
      // The common values without a call: a number, a flag, a live tensor.
      if (typeof x === "number") (slot[o] = W.number), (slot[o + 1] = x);
      else if (x === true || x === false) slot[o] = x ? W.yes : W.no;
      else {
        try {
          // Its own: an object made with a tensor for prototype is not that tensor.
          const handle = typeof x === "object" && x !== null && hasOwn.call(x, HANDLE) ? x[HANDLE] : undefined;
          if (handle !== undefined && x[pointer] !== 0) (slot[o] = W.tensor), (slot[o + 1] = handle);
          else describe(x, slot, o);
        } catch {
          slot[o] = W.other;
        }
      }
    }
  } finally {
    depth--;
  }
  if (top && read === reads && status === W.read && repeats(v, slot, given, count)) {
    // The record holds this very call already: it says so, and stays as it is.
    for (let k = 0; k < count; k++) v[given[k]] = undefined;
    views();
    f64[at / 8 + n * L.stride + L.flags] = 1;
    return;
  }
  writeRecord(at, v, slot, status, given, count);
}

// Whether the call just read (its `count` fields `given`, their values `v`, what each is in
// `slot`) is the one the record holds: the same fields, each the same number, flag, word or
// live tensor (by handle, never given to two) as the last read's. Arrays and buffers never
// are (a typed array's buffer may have been transferred since).
function repeats(v, slot, given, count) {
  if (count === 0 || count !== writtenCount || writtenStatus !== W.read) return false;
  for (let k = 0; k < count; k++) {
    const i = given[k], what = slot[3 * i];
    if (written[k] !== i || whats[i] !== what) return false;
    if (what === W.tensor) {
      if (handles[i] !== slot[3 * i + 1]) return false;
    } else if (what !== W.number && what !== W.yes && what !== W.no && what !== W.word) return false;
    else if (!Object.is(v[i], held[i])) return false;
  }
  return true;
}

// The record at byte address `at`, written only now, after the caller's last line of code: a
// getter may have read a call of its own, through this same record. Only the `count` fields
// this call has, `given`, are written, and a bit for each into the status slot.
function writeRecord(at, v, slot, status, given, count) {
  views();
  const n = names.length, h = at / 8, stride = L.stride;
  clear();
  let mask = 0;
  for (let k = 0; k < count; k++) {
    const i = given[k], what = slot[3 * i], s = h + i * stride;
    whats[i] = what;
    // A tensor is known by its handle: its object is not kept.
    if (what !== W.tensor) held[i] = v[i];
    else handles[i] = slot[3 * i + 1];
    v[i] = undefined;
    f64[s + L.what] = what;
    f64[s + L.value] = slot[3 * i + 1];
    f64[s + L.flags] = slot[3 * i + 2];
    written[k] = i;
    mask |= 1 << i;
  }
  writtenCount = count;
  for (let d = 0; d < L.destinations.length; d++) {
    const i = L.destinations[d];
    f64[h + i * stride + L.overlap] = isArray(whats[i]) ? overlapOf(i) : -1;
  }
  f64[h + n * stride + L.what] = status;
  writtenStatus = status;
  f64[h + n * stride + L.value] = mask >>> 0;
  f64[h + n * stride + L.flags] = 0;
}

// This module's state as if no field had been read: the fields the last read held. The
// record's floats are not cleared: Rust decodes only the fields whose bit the status carries.
function clear() {
  for (let k = 0; k < writtenCount; k++) {
    const i = written[k];
    whats[i] = W.absent;
    held[i] = undefined;
  }
  writtenCount = 0;
}

// The value read for the field at `i` of the table.
export function callValue(i) {
  return held[i];
}

export function callRelease() {
  for (let k = 0; k < writtenCount; k++) held[written[k]] = undefined;
}

// The `len` 32-bit elements of the table field at `i` (the rotary stage's positions or
// inverse frequencies) to byte address `at`, as their bits: a Uint32Array over the same bytes,
// so that nothing is converted value by value.
export function callTable(i, at, len) {
  try {
    views();
    const v = held[i];
    if (lengthOf.call(v) !== len) return false;
    set.call(new Uint32Array(buffer, at, len), new Uint32Array(bufferOf.call(v), offsetOf.call(v), len));
    return true;
  } catch {
    return false;
  }
}

// Rows' elements [from, from + count) of the call's arrays of rows (input, residual, input2:
// the table's first `L.rowArrays`), and with `columns` its per-column arrays, to the byte
// addresses Rust wrote at `at` (one per array of the table, -1 where absent). The values stay held: where a copy fails, the call is decoded again from
// them, and its message says why. An f16 array is copied as its bits (set() from a Float16Array would convert
// values).
export function cpuCopy(at, from, count, columns) {
  try {
    views();
    const to = at / 8;
    const rows = L.rowArrays;
    for (let j = 0; j < (columns ? L.arrays.length : rows); j++) {
      const i = L.arrays[j], v = held[i], what = whats[i];
      if (!isArray(what)) continue;
      const whole = lengthOf.call(v), start = j < rows ? from : 0, len = j < rows ? count : whole;
      // A view only for part of an array (a call of one block needs none).
      const part = (a) => (len === whole ? a : subarray.call(a, start, start + len));
      if (what === W.f32) set.call(f32, part(v), f64[to + j] / 4);
      else if (what === W.bits) set.call(u16, part(v), f64[to + j] / 2);
      else set.call(u16, new U16(bufferOf.call(v), offsetOf.call(v) + 2 * start, len), f64[to + j] / 2);
    }
    return true;
  } catch {
    return false;
  }
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

// Elements [from, from + len) of result `r` (0: output, 1: sum), at byte address `at`, set()
// into the caller's array (an f16 result's bits through a Uint16Array over a Float16Array's
// memory).
function write(r, at, from, len, half) {
  const i = L.destinations[r], d = held[i];
  const to = whats[i] === W.halves ? new U16(bufferOf.call(d), offsetOf.call(d), lengthOf.call(d)) : d;
  set.call(to, source(r, at, len, half), from);
}

// A block's results into the caller's arrays, where the call's results are all given.
export function cpuCopyOut(yAt, vAt, from, len, yHalf, vHalf) {
  try {
    views();
    write(0, yAt, from, len, yHalf);
    if (vAt >= 0) write(1, vAt, from, len, vHalf);
    return true;
  } catch {
    return false;
  }
}

// A result: the caller's array (written now unless `written`), else a fresh array slice()d out.
function result(r, at, len, half, written) {
  if (!isArray(whats[L.destinations[r]])) return half ? slice.call(u16, at / 2, at / 2 + len) : slice.call(f32, at / 4, at / 4 + len);
  if (!written) write(r, at, 0, len, half);
  return held[L.destinations[r]];
}

// A Promise of the results, or a rejection where one could not be made (the JavaScript
// heap's limit: the caller's thrown error would otherwise unwind through wasm).
export function cpuFinish(yAt, yLen, yHalf, vAt, vLen, vHalf, written) {
  try {
    views();
    const y = result(0, yAt, yLen, yHalf, written);
    const done = vLen < 0 ? y : { output: y, sum: result(1, vAt, vLen, vHalf, written) };
    callRelease();
    return Promise.resolve(done);
  } catch (e) {
    callRelease();
    return Promise.reject(e);
  }
}
