// IEEE binary16 bits in Uint16Arrays, the package's f16 data: the bits nearest an f32 (ties to
// even) and the exact value of given bits. Float16Array would do this where browsers have it.

const f32Scratch = new Float32Array(1);
const u32Scratch = new Uint32Array(f32Scratch.buffer);

/**
 * The binary16 bits nearest to `x` (which is first rounded to f32), ties to even: overflow
 * goes to ±Infinity, values below half the smallest subnormal to ±0, NaN stays a (quiet) NaN.
 */
export function f32ToF16Bits(x) {
  f32Scratch[0] = x;
  const b = u32Scratch[0];
  const sign = (b >>> 16) & 0x8000;
  const exp = (b >>> 23) & 0xff;
  const mant = b & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 | (mant >>> 13) : 0);
  const e = exp - 127 + 15; // the f16 biased exponent
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    // Subnormal half (or zero): the value is m · 2⁻²⁴ with m = (1.mant · 2²³) >> (14 − e).
    if (e < -10) return sign; // below 2⁻²⁵, half the smallest subnormal: rounds to ±0
    const m = mant | 0x800000;
    const shift = 14 - e; // 14..24
    const half = 1 << (shift - 1);
    const rest = m & ((1 << shift) - 1);
    let h = m >>> shift;
    if (rest > half || (rest === half && h & 1)) h++; // a carry into the exponent is right
    return sign | h;
  }
  let h = (e << 10) | (mant >>> 13);
  const rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && h & 1)) h++; // may carry up to 0x7c00: Infinity
  return sign | h;
}

/** The value of binary16 bits `h`, exactly. */
export function f16BitsToF32(h) {
  const sign = h & 0x8000 ? -1 : 1;
  const e = (h >>> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0) return sign * m * 2 ** -24;
  if (e === 0x1f) return m ? NaN : sign * Infinity;
  return sign * (1024 + m) * 2 ** (e - 25);
}

export function toF16(a) {
  const h = new Uint16Array(a.length);
  for (let i = 0; i < a.length; i++) h[i] = f32ToF16Bits(a[i]);
  return h;
}

export function fromF16(h) {
  const a = new Float32Array(h.length);
  for (let i = 0; i < h.length; i++) a[i] = f16BitsToF32(h[i]);
  return a;
}

/** The array arguments of a pre-norm call; the rest (hidden, eps, options) are not data. */
export const ARRAY_KEYS = ["input", "residual", "gamma", "bias", "beta"];
/** Every array argument a call may have: the sandwich's `postGamma` and a parallel block's `input2` too. */
export const ALL_ARRAY_KEYS = [...ARRAY_KEYS, "postGamma", "input2"];

/**
 * The same call in f16: `bits`, its arrays as Uint16Arrays of halves (what the package gets),
 * and `host`, those halves widened back to f32 arrays. The reference of an f16 call is the
 * reference of `host`: of the very halves the kernel reads, not of the f32 data they came from.
 */
export function argsToF16(args) {
  const bits = { ...args };
  const host = { ...args };
  for (const k of ALL_ARRAY_KEYS) {
    if (!args[k]) continue;
    bits[k] = toF16(args[k]);
    host[k] = fromF16(bits[k]);
  }
  return { bits, host };
}
