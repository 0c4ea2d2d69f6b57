// The f64 reference every page checks the kernel against (the demo, the worker page, the
// benchmarks, the test pages), and the one comparison with it. The same contract as
// src/reference.rs: v = (input + residual) + bias summed in f32 in the kernel's order, since v
// is itself an output (runWithSum's `sum`) that must match bit for bit; the mean square, the
// inverse square root, the scale and the shift in f64; eps rounded to f32, as the kernel's
// uniform holds it.

/**
 * Row `r` into v, y and scale at offset `at`. scale = |v·inv·γ| + |β|, what a relative error
 * is measured against: a y near 0 because β cancels the product is not held to a bound
 * relative to itself.
 */
function normRow({ input, residual, gamma, beta, bias, hidden, eps = 1e-6 }, r, v, y, scale, at) {
  const o = r * hidden;
  let ss = 0;
  for (let i = 0; i < hidden; i++) {
    const s = Math.fround(input[o + i] + residual[o + i]);
    v[at + i] = bias ? Math.fround(s + bias[i]) : s;
    ss += v[at + i] * v[at + i];
  }
  const inv = 1 / Math.sqrt(ss / hidden + Math.fround(eps));
  for (let i = 0; i < hidden; i++) {
    const core = v[at + i] * inv * gamma[i];
    const b = beta ? beta[i] : 0;
    y[at + i] = core + b;
    scale[at + i] = Math.abs(core) + Math.abs(b);
  }
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

/**
 * A result against the reference, in the rows listed (all by default). `output` within `tol`
 * relative to scale, exactly equal where the reference is not finite (a poisoned row: the
 * formula's own NaN or Inf); `sum`, if given, equal to v bit for bit (either zero for a zero).
 * Returns { ok, maxAbs, maxRel, problems } (problems: the first few, for a failure message);
 * a NaN error counts as Infinity, so that it cannot hide behind Math.max.
 */
export function compare(args, output, { sum, rows, tol = 1e-5 } = {}) {
  const report = { ok: true, maxAbs: 0, maxRel: 0, problems: [] };
  const fail = (what) => {
    report.ok = false;
    if (report.problems.length < 5) report.problems.push(what);
  };
  const n = args.input.length;
  const h = args.hidden;
  if (!(output instanceof Float32Array)) fail(`output is ${Object.prototype.toString.call(output)}, not a Float32Array`);
  else if (output.length !== n) fail(`output length ${output.length}, want ${n}`);
  if (sum !== undefined && (!(sum instanceof Float32Array) || sum.length !== n)) fail(`sum is not a Float32Array of ${n}`);
  if (!report.ok) return report;
  const v = new Float32Array(h);
  const y = new Float64Array(h);
  const scale = new Float64Array(h);
  for (const r of rows ?? Array.from({ length: n / h }, (_, r) => r)) {
    normRow(args, r, v, y, scale, 0);
    for (let i = 0; i < h; i++) {
      const at = `[${r}, ${i}]`;
      if (sum !== undefined) {
        const s = sum[r * h + i];
        if (!Object.is(s, v[i]) && !(s === 0 && v[i] === 0)) fail(`sum${at} = ${s}, want ${v[i]} exactly`);
      }
      const got = output[r * h + i];
      if (!Number.isFinite(y[i])) {
        if (!Object.is(got, y[i])) fail(`y${at} = ${got}, want ${y[i]}`);
        continue;
      }
      const err = Math.abs(got - y[i]);
      let rel = scale[i] === 0 ? (err === 0 ? 0 : Infinity) : err / scale[i];
      if (Number.isNaN(rel)) rel = Infinity;
      report.maxAbs = Math.max(report.maxAbs, Number.isNaN(err) ? Infinity : err);
      report.maxRel = Math.max(report.maxRel, rel);
      if (!(rel <= tol)) fail(`y${at} = ${got}, want ${y[i]} (relative error ${rel})`);
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
