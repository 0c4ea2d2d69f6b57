// Seeded inputs: the one generator of the demo, the worker page, the benchmarks and the test
// pages, so that a seed names the same data in every browser and in Node.

/** mulberry32: a tiny generator whose sequence is the same everywhere for a given seed. */
export function rng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** n values uniform in [lo, hi), rounded to f32. */
export function filled(n, next, lo, hi) {
  const a = new Float32Array(n);
  for (let i = 0; i < n; i++) a[i] = lo + (hi - lo) * next();
  return a;
}

/**
 * The tests' ranges. gamma is signed so that a kernel that drops its sign fails; beta is small
 * next to the normalized term, as in a trained model.
 */
export const TEST_RANGES = {
  input: [-2, 2],
  residual: [-2, 2],
  gamma: [-1.5, 1.5],
  bias: [-0.5, 0.5],
  beta: [-0.25, 0.25],
};

/**
 * The arguments of one call, drawn from `next` in a fixed order (input, residual, gamma, bias,
 * beta); `bias` and `beta` only when asked for, `eps` only when given.
 */
export function randomArgs({ rows, hidden, bias = false, beta = false, eps }, next, ranges = TEST_RANGES) {
  const args = {
    input: filled(rows * hidden, next, ...ranges.input),
    residual: filled(rows * hidden, next, ...ranges.residual),
    gamma: filled(hidden, next, ...ranges.gamma),
    hidden,
  };
  if (bias) args.bias = filled(hidden, next, ...ranges.bias);
  if (beta) args.beta = filled(hidden, next, ...ranges.beta);
  if (eps !== undefined) args.eps = eps;
  return args;
}

/** A test case's arguments: its seed mixed with its shape, so neighbouring cases differ. */
export function caseArgs({ rows, hidden, bias, beta, eps, seed = 1 }) {
  return randomArgs({ rows, hidden, bias, beta, eps }, rng(seed * 7919 + rows * 31 + hidden));
}

/** A case in a failure message: "rows 3 × hidden 5 +bias eps default". */
export function describeArgs(a) {
  return `rows ${a.input.length / a.hidden} × hidden ${a.hidden}${a.bias ? " +bias" : ""}${a.beta ? " +beta" : ""} eps ${a.eps ?? "default"}`;
}
