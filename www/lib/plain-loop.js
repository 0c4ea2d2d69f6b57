// What an app would write without the package: the JavaScript baseline the demo's size sweep
// and the browser benchmarks time the kernel against. Not a reference (see reference.js): the
// sum is not rounded the kernel's way, and it is the speed that matters here. It does an
// RMSNorm pre-norm (the residual optional), not LayerNorm's or the sandwich's extra passes.
//
// Written as a person writes it for one case, input + residual + bias: no optional term is
// tested inside the inner loops (a loop that made such tests took 1.2-1.3× this one's time
// in Chromium). The output goes into `out` where given (an app that keeps its buffers, as
// the package's `output` array), else into a fresh array (as the package's default). A call
// without residual or bias reads zeros instead (one array kept at the largest length asked
// for, so that calls do not allocate them), and beta gets a pass of its own.

/** Whether plainLoop does the work of a call with these arguments (a baseline to time against). */
export const plainLoopDoes = ({ kind = "rms", postGamma, input2, position, positions }) =>
  kind === "rms" && !postGamma && !input2 && position === undefined && positions === undefined;

let zeros = new Float32Array(0);
const zerosOf = (n) => (zeros.length >= n ? zeros : (zeros = new Float32Array(n)));

export function plainLoop({ input, residual, gamma, beta, bias, hidden, eps = 1e-6 }, out) {
  const n = input.length;
  const skip = residual ?? zerosOf(n);
  const b = bias ?? zerosOf(hidden);
  const y = out ?? new Float32Array(n);
  for (let o = 0; o < n; o += hidden) {
    let ss = 0;
    for (let i = 0; i < hidden; i++) {
      const v = input[o + i] + skip[o + i] + b[i];
      y[o + i] = v;
      ss += v * v;
    }
    const inv = 1 / Math.sqrt(ss / hidden + eps);
    for (let i = 0; i < hidden; i++) y[o + i] = y[o + i] * inv * gamma[i];
  }
  if (beta) for (let o = 0; o < n; o += hidden) for (let i = 0; i < hidden; i++) y[o + i] += beta[i];
  return y;
}
