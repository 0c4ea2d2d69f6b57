// What an app would write without the package: the JavaScript baseline the demo's size sweep
// and the browser benchmark time the kernel against. Not a reference (see reference.js): the
// sum is not rounded the kernel's way, and it is the speed that matters here. It does an
// RMSNorm pre-norm (the residual optional), not LayerNorm's or the sandwich's extra passes.

/** Whether plainLoop does the work of a call with these arguments (a baseline to time against). */
export const plainLoopDoes = ({ kind = "rms", postGamma }) => kind === "rms" && !postGamma;

export function plainLoop({ input, residual, gamma, beta, bias, hidden, eps = 1e-6 }) {
  const n = input.length;
  const y = new Float32Array(n);
  for (let o = 0; o < n; o += hidden) {
    let ss = 0;
    for (let i = 0; i < hidden; i++) {
      const v = input[o + i] + (residual ? residual[o + i] : 0) + (bias ? bias[i] : 0);
      y[o + i] = v;
      ss += v * v;
    }
    const inv = 1 / Math.sqrt(ss / hidden + eps);
    for (let i = 0; i < hidden; i++) y[o + i] = y[o + i] * inv * gamma[i] + (beta ? beta[i] : 0);
  }
  return y;
}
