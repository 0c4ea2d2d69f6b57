// Deterministic benchmark data, shared by the Node driver (which bakes gamma and bias into the
// ONNX models) and the page (which feeds the same gamma and bias to our kernel), so both
// implementations compute the same thing and their outputs can be compared element by element.

export const EPS = 1e-6;

// mulberry32: a tiny seeded generator, so every run and both sides see identical values.
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function fill(n, seed, lo, hi) {
  const r = rng(seed);
  const a = new Float32Array(n);
  for (let i = 0; i < n; i++) a[i] = lo + (hi - lo) * r();
  return a;
}

export function weights(hidden) {
  return { gamma: fill(hidden, 1000 + hidden, 0.5, 1.5), bias: fill(hidden, 2000 + hidden, -0.1, 0.1) };
}

export function activations(rows, hidden) {
  const n = rows * hidden;
  return { input: fill(n, 3000 + n, -1, 1), residual: fill(n, 4000 + n, -1, 1) };
}
