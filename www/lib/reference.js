// The f64 reference every page checks the kernel against (the demo, the worker page, the
// benchmarks, the test pages), and the one comparison with it: the package's whole formula,
// the same contract as src/reference.rs. For every row, with N the normalization `kind` names
// (RMSNorm or LayerNorm) and g = gammaOffset:
//
//   u = input + input2 + bias              (input2: a parallel block's; both optional)
//   w = postGamma ? N(u) · (postGamma + g) : u
//   v = residual + w                       (residual optional: 0; runWithSum's `sum`)
//   y = N(v) · (gamma + g) + beta          (beta optional: 0; the `output`)
//
// v is summed in f32 in the kernel's order, ((input + input2) + residual) + bias, since it is itself an
// output that must match bit for bit (with a post-norm, w in f64 rounded once into v, which
// the kernel forms in f32 and so matches within a few ulps); the means, the inverse square
// root, the scale and the shift in f64; eps and gammaOffset rounded to f32, as the kernel's
// uniform holds them.
//
// With a rotary stage (`positions` or `position`), each head of y is then turned: pair k
// (NeoX: k and k + rotaryDim/2; interleaved: 2k and 2k + 1) of a token at position p by the
// angle the models form, one f32 product f32(f32(p) · invFreq[k]), its cos and sin in f64
// (or the app's, row p of `cosSin`: the cosines, then the sines) times attentionScaling; every value of such a row is held to the row's largest scale (a
// turned value mixes two).
import { f16BitsToF32, f32ToF16Bits } from "./f16.js";

/** The rotary stage's inverse frequencies: the call's `invFreq`, or 1/θ^(2k/d) rounded to f32. */
function inverseFrequencies(args, dim) {
  if (args.invFreq) return args.invFreq;
  const f = new Float32Array(dim / 2);
  for (let k = 0; k < dim / 2; k++) f[k] = 1 / args.theta ** ((2 * k) / dim);
  return f;
}

/** The cos of each pair at position `p`, then the sins: the app's `cosSin` row, or of the angles. */
function cosSin(args, dim, p) {
  if (args.cosSin) return args.cosSin.subarray(p * dim, (p + 1) * dim);
  const inv = inverseFrequencies(args, dim);
  const turns = new Float64Array(dim);
  for (let k = 0; k < dim / 2; k++) {
    const angle = Math.fround(Math.fround(p) * inv[k]);
    turns[k] = Math.cos(angle);
    turns[k + dim / 2] = Math.sin(angle);
  }
  return turns;
}

/** A rotary stage's rows a token. */
function headsOf(args) {
  const rows = args.input.length / args.hidden;
  return args.heads ?? (args.positions ? rows / args.positions.length : 1);
}

/** Row `r`'s gamma: a head's where the call has a gamma a head (Cohere's `[heads, hidden]`). */
function rowGamma(args, r) {
  const { gamma, hidden } = args;
  // kind "none" normalizes nothing and has no gamma: y = v (then the rotary stage).
  if (!gamma) return ones(hidden);
  if (gamma.length === hidden) return gamma;
  const h = r % headsOf(args);
  return gamma.subarray(h * hidden, (h + 1) * hidden);
}

/** Turns row `r` of y (at offset `at`) as the call's rotary stage says, and evens its scale. */
function rotateRow(args, r, y, scale, at) {
  const { positions, position, hidden, rotaryStyle = "neox", attentionScaling = 1 } = args;
  if (positions === undefined && position === undefined) return;
  const headSize = args.headSize ?? hidden;
  const dim = args.rotaryDim ?? headSize;
  const token = Math.floor(r / headsOf(args));
  const p = positions ? positions[token] : position + token;
  const turns = cosSin(args, dim, p);
  const scaling = Math.fround(attentionScaling);
  for (let h = at; h < at + hidden; h += headSize) {
    for (let k = 0; k < dim / 2; k++) {
      const c = turns[k] * scaling, s = turns[k + dim / 2] * scaling;
      const [i, j] = rotaryStyle === "neox" ? [h + k, h + k + dim / 2] : [h + 2 * k, h + 2 * k + 1];
      const a = y[i], b = y[j];
      y[i] = a * c - b * s;
      y[j] = b * c + a * s;
    }
  }
  let largest = 0;
  for (let i = at; i < at + hidden; i++) largest = Math.max(largest, scale[i]);
  for (let i = at; i < at + hidden; i++) scale[i] = largest * scaling;
}

/** A row of ones, kept: kind "none"'s gamma. */
let onesRow = new Float64Array(0);
function ones(hidden) {
  if (onesRow.length !== hidden) onesRow = new Float64Array(hidden).fill(1);
  return onesRow;
}

/** Three f64 scratch rows, grown as needed: no allocation per row. */
let scratch = [];
function rowsOf(hidden) {
  if (!(scratch[0]?.length >= hidden)) scratch = [0, 1, 2].map(() => new Float64Array(hidden));
  return scratch.map((a) => a.subarray(0, hidden));
}

/**
 * `out[i] = N(x)[i]` in f64: RMSNorm, x · 1/sqrt(mean(x²) + eps), or LayerNorm,
 * (x − m) · 1/sqrt(mean((x − m)²) + eps) with m = mean(x); returns the inverse square root.
 * Sums of f32 values in f64 are exact far below f32's precision, so the centered form needs
 * no care here.
 */
function normalize(x, kind, eps, out) {
  const n = x.length;
  if (kind === "none") {
    for (let i = 0; i < n; i++) out[i] = x[i];
    return 1;
  }
  let mean = 0;
  if (kind === "layer") {
    for (let i = 0; i < n; i++) mean += x[i];
    mean /= n;
  }
  let ss = 0;
  for (let i = 0; i < n; i++) ss += (x[i] - mean) * (x[i] - mean);
  const inv = 1 / Math.sqrt(ss / n + Math.fround(eps));
  for (let i = 0; i < n; i++) out[i] = (x[i] - mean) * inv;
  return inv;
}

/**
 * Row `r` into v, y and scale at offset `at`. scale = |N(v)·(γ + g)| + |β|, what a relative
 * error is measured against: a y near 0 because β cancels the product is not held to a bound
 * relative to itself. Two terms more, as src/reference.rs allows them:
 * - LayerNorm's mean is an f32 sum's, off by ~1e-9 of the row's spread, which an element near
 *   the mean sees as more than 1e-5 of itself: 1e-2 of a unit normalized value, |γ + g|, on
 *   top (a millionth of what a wrong mean or variance costs every element);
 * - with a post-norm, v = residual + w holds a w the kernel forms in f32, so v is known to w's
 *   f32 rounding only: w's share of the product, |w · inv · (γ + g)|, on top, or a v near 0
 *   because the residual cancels w would be held to a bound relative to what is left.
 */
function normRow(args, r, v, y, scale, at) {
  const { input, residual, input2, beta, bias, postGamma, hidden, eps = 1e-6, kind = "rms", gammaOffset = 0 } = args;
  const gamma = rowGamma(args, r);
  const o = r * hidden;
  const g = Math.fround(gammaOffset);
  const [wide, t, w] = rowsOf(hidden);
  if (postGamma) {
    for (let i = 0; i < hidden; i++) wide[i] = bias ? Math.fround(input[o + i] + bias[i]) : input[o + i];
    normalize(wide, kind, eps, t);
    for (let i = 0; i < hidden; i++) {
      w[i] = t[i] * (postGamma[i] + g);
      v[at + i] = (residual ? residual[o + i] : 0) + w[i];
    }
  } else {
    for (let i = 0; i < hidden; i++) {
      const a = input2 ? Math.fround(input[o + i] + input2[o + i]) : input[o + i];
      const s = residual ? Math.fround(a + residual[o + i]) : a;
      v[at + i] = bias ? Math.fround(s + bias[i]) : s;
    }
  }
  // A head the rotary stage passes (passHeads: a packed qkv row's v) is y as it is.
  const heads = headsOf(args);
  if (args.passHeads && r % heads >= heads - args.passHeads) {
    for (let i = 0; i < hidden; i++) (y[at + i] = v[at + i]), (scale[at + i] = Math.abs(v[at + i]));
    return;
  }
  for (let i = 0; i < hidden; i++) wide[i] = v[at + i];
  const inv = normalize(wide, kind, eps, t);
  for (let i = 0; i < hidden; i++) {
    const core = t[i] * (gamma[i] + g);
    const b = beta ? beta[i] : 0;
    y[at + i] = core + b;
    const centering = kind === "layer" ? 1e-2 * Math.abs(gamma[i] + g) : 0;
    scale[at + i] = Math.abs(core) + Math.abs(b) + centering + (postGamma ? Math.abs(w[i] * inv * (gamma[i] + g)) : 0);
  }
  rotateRow(args, r, y, scale, at);
}

/** One row's { v (f32), y (f64), scale (f64) }: for sampling rows of inputs too big to copy. */
export function referenceRow(args, r) {
  const { hidden } = args;
  const out = { v: new Float32Array(hidden), y: new Float64Array(hidden), scale: new Float64Array(hidden) };
  normRow(args, r, out.v, out.y, out.scale, 0);
  return out;
}

/** Every row: { v: Float32Array, y: Float64Array, scale: Float64Array }, each rows × hidden. */
export function reference(args) {
  const n = args.input.length;
  const out = { v: new Float32Array(n), y: new Float64Array(n), scale: new Float64Array(n) };
  for (let r = 0; r * args.hidden < n; r++) normRow(args, r, out.v, out.y, out.scale, r * args.hidden);
  return out;
}

/** Half the gap between the f16 values around |x|: what one rounding to f16 may move it. */
function halfF16Ulp(x) {
  const a = Math.abs(x);
  return a < 2 ** -14 ? 2 ** -25 : 2 ** (Math.floor(Math.log2(a)) - 11);
}

/**
 * A result against the reference, in the rows listed (all by default). `output` within `tol`
 * relative to scale, exactly equal where the reference is not finite (a poisoned row: the
 * formula's own NaN or Inf); `sum`, if given, equal to v bit for bit (either zero for a zero;
 * with a post-norm, within a few f32 ulps of its terms: the kernel forms w in f32). A `Uint16Array` output
 * or sum is f16 bits (`outputDtype: "f16"`, f16 data), held to the same and one f16 rounding
 * more: the sum to exactly v rounded to f16 (with a post-norm, within the f32 allowance and
 * half an f16 ulp of v). `args` are f32 arrays: for f16 data, the halves widened (f16.js's argsToF16). Returns { ok, maxAbs, maxRel, problems } (problems: the first
 * few, for a failure message); a NaN error counts as Infinity, so that it cannot hide behind
 * Math.max.
 */
export function compare(args, output, { sum, rows, tol = 1e-5 } = {}) {
  const report = { ok: true, maxAbs: 0, maxRel: 0, problems: [] };
  const fail = (what) => {
    report.ok = false;
    if (report.problems.length < 5) report.problems.push(what);
  };
  const n = args.input.length;
  const h = args.hidden;
  const typed = (a) => a instanceof Float32Array || a instanceof Uint16Array;
  if (!typed(output)) fail(`output is ${Object.prototype.toString.call(output)}, not a Float32Array (or Uint16Array of f16 bits)`);
  else if (output.length !== n) fail(`output length ${output.length}, want ${n}`);
  if (sum !== undefined && (!typed(sum) || sum.length !== n)) fail(`sum is not a Float32Array (or Uint16Array) of ${n}`);
  if (!report.ok) return report;
  const value = (a, k) => (a instanceof Uint16Array ? f16BitsToF32(a[k]) : a[k]);
  const halfY = output instanceof Uint16Array;
  const halfV = sum instanceof Uint16Array;
  const v = new Float32Array(h);
  const y = new Float64Array(h);
  const scale = new Float64Array(h);
  for (const r of rows ?? Array.from({ length: n / h }, (_, r) => r)) {
    normRow(args, r, v, y, scale, 0);
    for (let i = 0; i < h; i++) {
      const at = `[${r}, ${i}]`;
      if (sum !== undefined) {
        const s = value(sum, r * h + i);
        const want = halfV ? f16BitsToF32(f32ToF16Bits(v[i])) : v[i];
        if (args.postGamma) {
          // w = N(u) · (postGamma + g) rounded in f32: a few ulps of a normalized value. In f16,
          // one rounding more of the kernel's own v, held to the f32 reference: where v lies
          // near the midpoint of two halves, either half is a correct rounding of a v that
          // close, so the f16 rounding of the reference is not the bound.
          const res = args.residual ? Math.abs(args.residual[r * h + i]) : 0;
          const post = Math.abs(args.postGamma[i] + Math.fround(args.gammaOffset ?? 0));
          const allowed = 1e-6 * (Math.abs(v[i]) + 2 * res + 8 * post) + (halfV ? halfF16Ulp(Math.max(Math.abs(v[i]), Math.abs(s))) : 0) + 2 ** -126;
          if (!(Math.abs(s - v[i]) <= allowed)) fail(`sum${at} = ${s}, want ${v[i]}${halfV ? " rounded to f16" : ""} (within ${allowed})`);
        } else if (!Object.is(s, want) && !(s === 0 && want === 0)) fail(`sum${at} = ${s}, want ${want} exactly`);
      }
      const got = value(output, r * h + i);
      if (!Number.isFinite(y[i])) {
        if (!Object.is(got, y[i])) fail(`y${at} = ${got}, want ${y[i]}`);
        continue;
      }
      const err = Math.abs(got - y[i]);
      // One f16 rounding of a result already within tol: past it, the error is the kernel's.
      const rounding = halfY ? halfF16Ulp(Math.max(Math.abs(y[i]), Math.abs(got))) : 0;
      const over = Math.max(0, err - rounding);
      let rel = scale[i] === 0 ? (over === 0 ? 0 : Infinity) : over / scale[i];
      if (Number.isNaN(rel)) rel = Infinity;
      report.maxAbs = Math.max(report.maxAbs, Number.isNaN(err) ? Infinity : err);
      report.maxRel = Math.max(report.maxRel, rel);
      if (!(rel <= tol)) fail(`y${at} = ${got}, want ${y[i]} (relative error ${rel}${halfY ? " past one f16 rounding" : ""})`);
    }
  }
  return report;
}

/**
 * A residual chain as the kernel runs it: layer l normalizes x_l + r_l (+ bias_l) with its own
 * γ_l (and β_l); its output is x_{l+1} and its sum r_{l+1}, both f32 as the kernel stores them.
 * `constantSkip`: every layer adds r_0 instead, and there is no sum (onnxruntime's chain
 * where its kernel cannot output the sum).
 */
export function chainReference({ input, residual, layers, hidden, eps }, { constantSkip = false } = {}) {
  let x = input;
  let r = residual;
  for (const w of layers) {
    const ref = reference({ ...w, input: x, residual: r, hidden, eps });
    x = Float32Array.from(ref.y);
    if (!constantSkip) r = ref.v;
  }
  return { output: x, sum: constantSkip ? null : r };
}
