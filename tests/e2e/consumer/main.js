// A consumer app of the installed npm package. It exposes `window.harness` for the test
// to drive through page.evaluate; the checks that decide pass/fail live here, next to the
// data, so only small JSON reports cross back to node.
import init, { FusedRmsNorm } from "webgpu-rmsnorm";

// Deterministic inputs, so a failure names a reproducible case.
function rng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function filled(n, next, lo, hi) {
  const a = new Float32Array(n);
  for (let i = 0; i < n; i++) a[i] = lo + (hi - lo) * next();
  return a;
}

/** Arguments for one case; `bias`/`beta` only when asked, `eps` only when given. */
function makeArgs({ rows, hidden, bias = false, beta = false, eps, seed = 1 }) {
  const next = rng(seed * 7919 + rows * 31 + hidden);
  const args = {
    input: filled(rows * hidden, next, -2, 2),
    residual: filled(rows * hidden, next, -2, 2),
    // Signed gamma: a kernel that drops the sign or uses |gamma| must fail.
    gamma: filled(hidden, next, -1.5, 1.5),
    hidden,
  };
  if (bias) args.bias = filled(hidden, next, -0.5, 0.5);
  if (beta) args.beta = filled(hidden, next, -0.25, 0.25);
  if (eps !== undefined) args.eps = eps;
  return args;
}

/**
 * The contract in f64: v in the kernel's f32 order (the sum output must equal it bit for bit),
 * then mean, rsqrt and scale in f64. `scale` is the per-element magnitude the tolerance is
 * relative to, so tiny outputs are not held to an absolute bound they cannot meet.
 */
function reference({ input, residual, gamma, beta, bias, hidden, eps = 1e-6 }) {
  const n = input.length;
  const v = new Float32Array(n);
  const y = new Float64Array(n);
  const scale = new Float64Array(n);
  for (let r = 0; r * hidden < n; r++) {
    const o = r * hidden;
    let ss = 0;
    for (let i = 0; i < hidden; i++) {
      const s = Math.fround(input[o + i] + residual[o + i]);
      v[o + i] = bias ? Math.fround(s + bias[i]) : s;
      ss += v[o + i] * v[o + i];
    }
    const inv = 1 / Math.sqrt(ss / hidden + eps);
    for (let i = 0; i < hidden; i++) {
      const core = v[o + i] * inv * gamma[i];
      const b = beta ? beta[i] : 0;
      y[o + i] = core + b;
      scale[o + i] = Math.abs(core) + Math.abs(b);
    }
  }
  return { v, y, scale };
}

const TOL = 1e-5;

/** Compares one result with the reference; a report small enough to print on failure. */
function compare(args, output, sum) {
  const ref = reference(args);
  const report = { ok: true, length: output?.length, problems: [] };
  const fail = (what) => {
    report.ok = false;
    if (report.problems.length < 5) report.problems.push(what);
  };
  if (!(output instanceof Float32Array)) fail(`output is ${Object.prototype.toString.call(output)}, not a Float32Array`);
  else if (output.length !== args.input.length) fail(`output length ${output.length}, want ${args.input.length}`);
  else {
    for (let i = 0; i < output.length; i++) {
      if (!Number.isFinite(ref.y[i])) {
        // A poisoned row: the formula's own NaN (Inf · 0) or Inf, nothing else.
        if (!Object.is(output[i], ref.y[i])) fail(`y[${i}] = ${output[i]}, want ${ref.y[i]}`);
        continue;
      }
      const err = Math.abs(output[i] - ref.y[i]);
      // `!(err <= tol)` also catches NaN outputs.
      if (!(err <= TOL * ref.scale[i])) fail(`y[${i}] = ${output[i]}, want ${ref.y[i]} (err ${err}, tol ${TOL * ref.scale[i]})`);
    }
  }
  if (sum !== undefined) {
    if (!(sum instanceof Float32Array) || sum.length !== args.input.length) fail(`sum is not a Float32Array of ${args.input.length}`);
    else {
      for (let i = 0; i < sum.length; i++) {
        if (sum[i] !== ref.v[i] && !(Number.isNaN(sum[i]) && Number.isNaN(ref.v[i]))) fail(`sum[${i}] = ${sum[i]}, want ${ref.v[i]} exactly`);
      }
    }
  }
  return report;
}

function describeArgs(a) {
  return `rows ${a.input.length / a.hidden} × hidden ${a.hidden}${a.bias ? " +bias" : ""}${a.beta ? " +beta" : ""} eps ${a.eps ?? "default"}`;
}

window.harness = (async () => {
  const wasm = await init();
  const norm = await FusedRmsNorm.create();
  document.getElementById("state").textContent = "ready";
  return { wasm, norm, FusedRmsNorm, makeArgs, reference, compare, describeArgs };
})();
