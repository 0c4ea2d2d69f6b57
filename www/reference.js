// The page side's f64 reference and seeded inputs, shared by the demo (index.html) and the
// Web Worker example (worker.html).

/** mulberry32: a seed gives the same inputs on every browser. */
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

export function filled(n, next, lo, hi) {
  const a = new Float32Array(n);
  for (let i = 0; i < n; i++) a[i] = lo + (hi - lo) * next();
  return a;
}

/**
 * The contract: v summed in f32 in the kernel's order (input + residual, then + bias), the
 * mean square, rsqrt and scaling in f64. Also returns each element's magnitude
 * |v·inv·γ| + |β|, which a relative error is measured against.
 */
export function reference({ input, residual, gamma, beta, bias, hidden, eps = 1e-6 }) {
  const n = input.length;
  const y = new Float64Array(n);
  const scale = new Float64Array(n);
  const v = new Float64Array(hidden);
  for (let o = 0; o < n; o += hidden) {
    let ss = 0;
    for (let i = 0; i < hidden; i++) {
      const s = Math.fround(input[o + i] + residual[o + i]);
      v[i] = bias ? Math.fround(s + bias[i]) : s;
      ss += v[i] * v[i];
    }
    const inv = 1 / Math.sqrt(ss / hidden + eps);
    for (let i = 0; i < hidden; i++) {
      const core = v[i] * inv * gamma[i];
      const b = beta ? beta[i] : 0;
      y[o + i] = core + b;
      scale[o + i] = Math.abs(core) + Math.abs(b);
    }
  }
  return { y, scale };
}
