// The churn sequence: one browser, sizes up and down, host arrays and tensors and the app's own buffers between calls, successive samples printed.
// An app with varying prompt lengths produces this order; a kernel that slowed down sample by
// sample after host-array calls at 256 MiB would show here. Each step churns first, then times, in a dependent
// chain on buffers made just then: `a + b` and the package's own kernel (plain, bias+beta), and
// the package's gpuTime on resident tensors; every timing is `--samples` successive passes.
import { ChainBuffers } from "../shared/chain-buffers.mjs";
import { parseShapes } from "../shared/options.mjs";
import { packageKernel } from "../shared/package-kernel.mjs";
import { fmt, header, log, note, pct, table } from "../shared/report.mjs";
import { bufferOf, emptyBuffer } from "../../www/lib/app-gpu.js";

export const CHURN_SHAPES = "2048x4096,16384x4096,1x4096,8192x8192,16x4096,16384x4096,4096x8192,16384x2048,12288x4096,16384x4096";

/** The app between calls: a host-array call, a tensor call, and buffers of its own made, used and freed. */
async function churn(ctx, bufs) {
  const { norm, device } = ctx;
  const { x, res, g, hidden, n } = bufs;
  await norm.run({ input: x, residual: res, gamma: g, hidden });
  const tx = norm.upload(x);
  (await norm.run({ input: tx, residual: res, gamma: g, hidden, output: "gpu" })).free();
  tx.free();
  const own = bufferOf(device, x, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC);
  const scratch = emptyBuffer(device, n * 4, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST);
  const e = device.createCommandEncoder();
  e.copyBufferToBuffer(own, 0, scratch, 0, n * 4);
  device.queue.submit([e.finish()]);
  await device.queue.onSubmittedWorkDone();
  own.destroy();
  scratch.destroy();
}

export async function sectionChurn(ctx, out, { opt, num }) {
  const { norm, raw, device } = ctx;
  const shapes = parseShapes(opt.shapes ?? CHURN_SHAPES);
  const samples = num("samples", 5);
  const maxN = num("max-n", 20);
  const maxBinding = Math.min(device.limits.maxStorageBufferBindingSize, device.limits.maxBufferSize);
  header(ctx, `Churn: one browser, ${shapes.length} steps, each after host-array, tensor and app-buffer calls; ${samples} successive samples`);
  const steps = [];
  for (const [i, [rows, hidden]] of shapes.entries()) {
    const tag = `${rows}×${hidden}`;
    if (rows * hidden * 4 > maxBinding) {
      steps.push({ step: i + 1, tag, skipped: `> binding limit ${maxBinding}` });
      continue;
    }
    note(`churn step ${i + 1}: ${tag}`);
    const bufs = new ChainBuffers(ctx, rows, hidden);
    await churn(ctx, bufs);
    const s = { step: i + 1, tag, ab: [], plain: [], biasBeta: [], gpuTime: [] };
    // One sample of each per round, so that drift shows in every column alike.
    const kernels = {};
    for (const [name, o] of [["plain", {}], ["biasBeta", { bias: true, beta: true }]]) {
      const k = await packageKernel(ctx, rows, hidden, o, { x: bufs.x, r: bufs.res });
      const p = await raw.pipeline(k.code, k.label);
      const P = raw.params(rows, hidden, k.lanes);
      kernels[name] = { k, p, P, groups: bufs.bindPair(p, o, P) };
    }
    const tx = norm.upload(bufs.x), tr = norm.upload(bufs.res), tg = norm.upload(bufs.g);
    for (let j = 0; j < samples; j++) {
      s.ab.push((await bufs.addChain({ targetUs: 1e12, maxN, minN: Math.min(8, maxN), reps: 1 })).us);
      for (const name of ["plain", "biasBeta"]) {
        const { k, p, groups } = kernels[name];
        await raw.warm(150);
        s[name].push((await raw.timePass(maxN, (pass, m) => raw.dispatch(pass, p, groups[m & 1], k.groups(rows)))) / maxN);
      }
      const t = await norm.gpuTime({ input: tx, residual: tr, gamma: tg, hidden }, maxN);
      s.gpuTime.push(t === undefined ? NaN : (t * 1000) / maxN);
    }
    for (const t of [tx, tr, tg]) t.free();
    for (const { P } of Object.values(kernels)) P.destroy();
    bufs.destroy();
    steps.push(s);
  }
  const real = ctx.kind.realGpu;
  const list = (xs) => xs.map((v) => fmt(v, 1)).join(", ");
  const rel = (xs, ab) => (real ? pct(Math.min(...ab) / Math.max(...xs)) : "—");
  log(`Each step: a fresh ChainBuffers (buffers made after the churn), ${maxN} dependent dispatches a pass between GPU timestamps, µs = pass / ${maxN}; gpuTime: ${maxN} independent dispatches on tensors. Samples in order, left to right.`);
  log("worst % = fastest a+b ÷ slowest sample (plain moves a+b's bytes; bias+beta two hidden-length arrays more).");
  if (!real) log(`NO ROOFLINE CLAIMS: a CPU adapter (${ctx.kind.name}); µs only.`);
  table(
    ["step", "shape", "a+b µs", "plain µs", "plain worst %", "bias+beta µs", "bias+beta worst %", "gpuTime µs"],
    steps.map((s) => (s.skipped ? [s.step, s.tag, `skipped: ${s.skipped}`, "", "", "", "", ""] : [s.step, s.tag, list(s.ab), list(s.plain), rel(s.plain, s.ab), list(s.biasBeta), rel(s.biasBeta, s.ab), list(s.gpuTime)])),
  );
  out.churn = { samples, maxN, steps };
}
