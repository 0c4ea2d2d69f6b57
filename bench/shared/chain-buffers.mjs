// One shape's buffers for a dependent chain (kernel, sweep and churn sections): the a + b and a ± b baselines on them and one checked dispatch.
import { addSubWgsl, addWgsl, gammaFloats, randomFloats } from "./raw.mjs";
import { chainTime } from "./timing.mjs";

/** Host data for the kernel section: one seeded array long enough for the largest shape, viewed. */
function hostData(ctx, n, which) {
  ctx.host ??= {};
  let a = ctx.host[which];
  if (!a || a.length < n) {
    a = ctx.host[which] = randomFloats(n, which === "x" ? 11 : 22);
  }
  return a.subarray(0, n);
}

/** The largest |got[i] − want[i]| / scale(i) (NaN where any term is). */
export function worstRelative(got, want, scale = (i) => Math.abs(want[i]) + 1e-6) {
  let worst = 0;
  for (let i = 0; i < got.length; i++) worst = Math.max(worst, Math.abs(got[i] - want[i]) / scale(i));
  return worst;
}

export class ChainBuffers {
  constructor(ctx, rows, hidden) {
    const raw = (this.raw = ctx.raw);
    const n = (this.n = rows * hidden);
    this.hidden = hidden;
    this.lanesAB = hidden % 4 === 0 ? 4 : 1;
    this.abN = n / this.lanesAB; // the elementwise kernels' elements (vec4 or scalar)
    const x = (this.x = hostData(ctx, n, "x")), res = (this.res = hostData(ctx, n, "r"));
    this.g = gammaFloats(hidden);
    this.beta = randomFloats(hidden, 4).map((v) => 0.1 * v);
    this.bias = randomFloats(hidden, 5).map((v) => 0.1 * v);
    // Two activations and two residuals to ping-pong: dispatch k reads what k-1 wrote.
    this.X = [raw.buffer(n, x), raw.buffer(n)];
    this.R = [raw.buffer(n, res), raw.buffer(n)];
    this.G = raw.buffer(hidden, this.g);
    this.BETA = raw.buffer(hidden, this.beta);
    this.BIAS = raw.buffer(hidden, this.bias);
    this.stubR = raw.buffer(4);
    this.stubW = raw.buffer(4);
  }

  /**
   * `out = a + b` moving the bytes of the plain kernel, chained (a the previous out, the two
   * activations ping-ponged): `encode(pass, k)` of its k-th dispatch, as timePass takes it.
   */
  async abChain() {
    const { raw, X, R, lanesAB } = this;
    const ab = await raw.pipeline(addWgsl(lanesAB === 4), `a+b vec${lanesAB}`);
    const groups = [raw.bind(ab, { a: X[0], b: R[0], out: X[1], p: this.abUniform() }), raw.bind(ab, { a: X[1], b: R[0], out: X[0], p: this.abUniform() })];
    return (pass, k) => raw.dispatch(pass, ab, groups[k & 1], Math.ceil(this.abN / 256));
  }

  /**
   * The `sum` output's own roofline: `out = a + b; out2 = a − b`, two reads and two writes
   * (writes cost the memory more than reads), as `encode(pass, k)`. Not chained: every dispatch
   * reads the first activation and residual and writes the second ones, since chained it
   * doubles its operands every two steps, to infinity within a few hundred steps, and a norm
   * timed right after it on those buffers would run on what no model feeds it.
   */
  async abSumRepeat() {
    const { raw, X, R, lanesAB } = this;
    const abs = await raw.pipeline(addSubWgsl(lanesAB === 4), `a+b,a-b vec${lanesAB}`);
    const group = raw.bind(abs, { a: X[0], b: R[0], out: X[1], out2: R[1], p: this.abUniform() });
    return (pass) => raw.dispatch(pass, abs, group, Math.ceil(this.abN / 256));
  }

  /** The elementwise kernels' Params: the count of their elements. */
  abUniform() {
    return (this.abU ??= this.raw.uniform(new Uint32Array([this.abN, 0, 0, 0])));
  }

  /** `abChain` timed alone (chainTime), the initial data written back after it. */
  async addChain(chainOpts) {
    const encode = await this.abChain();
    await this.raw.warm(300);
    return this.restoring(await chainTime(this.raw, encode, chainOpts));
  }

  /**
   * `result`, once the initial data is back in every activation and residual: the chains
   * leave what no model feeds a norm (`a + b` grows the activation by the residual each step,
   * a norm with `sum` the residual stream). A kernel timed on operands that reached infinity
   * takes its rescaling path on every row (measured on an H200 through Dawn: 16384×4096 at
   * 222 µs after a chained `a ± b`, 187 µs on the initial data).
   */
  restoring(result) {
    const { raw, X, R, n } = this;
    for (const [b, d] of [[X[0], this.x], [X[1], this.x], [R[0], this.res], [R[1], this.res]]) {
      raw.device.queue.writeBuffer(b, 0, d.buffer, d.byteOffset, n * 4);
    }
    return result;
  }

  /** The two bind groups of a chain of pipeline `p` with options `o` and Params `P`, even k first. */
  bindPair(p, o, P) {
    const { raw, X, R, stubR, stubW } = this;
    // post_gamma: the sandwich's binding, present in every kernel's table; these chains have none.
    const common = { gamma: this.G, beta: o.beta ? this.BETA : stubR, bias: o.bias ? this.BIAS : stubR, post_gamma: stubR, params: P };
    return o.sum
      ? [raw.bind(p, { ...common, input: X[0], residual: R[0], output: X[1], sum: R[1] }), raw.bind(p, { ...common, input: X[1], residual: R[1], output: X[0], sum: R[0] })]
      : [raw.bind(p, { ...common, input: X[0], residual: R[0], output: X[1], sum: stubW }), raw.bind(p, { ...common, input: X[1], residual: R[0], output: X[0], sum: stubW })];
  }

  /** The package's own result for these inputs with options `o` ({ output, sum? }), through its public API. */
  async reference(norm, o) {
    const { hidden, beta, bias } = this;
    const args = { input: this.x, residual: this.res, gamma: this.g, hidden, ...(o.beta ? { beta } : {}), ...(o.bias ? { bias } : {}) };
    return o.sum ? await norm.runWithSum(args) : { output: await norm.run(args) };
  }

  /** One dispatch from the initial data (`group` the even one); resolves with the output it wrote. */
  async dispatchOnce(p, group, workgroups) {
    const { raw, X, R, n } = this;
    raw.device.queue.writeBuffer(X[0], 0, this.x.buffer, this.x.byteOffset, n * 4);
    raw.device.queue.writeBuffer(R[0], 0, this.res.buffer, this.res.byteOffset, n * 4);
    raw.submit(p, group, workgroups);
    return raw.readBack(X[1], n);
  }

  /** The sum that dispatchOnce wrote (options with `sum`). */
  readSum() {
    return this.raw.readBack(this.R[1], this.n);
  }

  destroy() {
    for (const b of [...this.X, ...this.R, this.G, this.BETA, this.BIAS, this.stubR, this.stubW, this.abU]) b?.destroy();
  }
}
