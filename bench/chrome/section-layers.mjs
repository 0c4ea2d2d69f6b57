// (c) A token's chain: 32 layers recorded with `encode` into one encoder, submitted, then waited for, in ms per token.
// Three ways an app waits: `onSubmittedWorkDone`, its own copy of the last
// result into a mappable buffer of its own in the same encoder and `mapAsync` (the least a
// readback can cost in WebGPU), or the last result's `read()`; beside them the kernels' own GPU
// time (gpuTime of one layer's call, times the layer count).
import { gammaFloats, randomFloats } from "../shared/raw.mjs";
import { fmt, header, log, table } from "../shared/report.mjs";
import { timeLoops } from "../shared/timing.mjs";

export async function sectionLayers(ctx, out, { num }) {
  const { norm, device, raw } = ctx;
  const hidden = num("hidden", 4096), rows = num("rows", 1), layers = num("layers", 32);
  const tokens = num("tokens", 100), loops = num("loops", 5);
  header(ctx, `A token's chain: ${layers} layers of ${rows}×${hidden} in one encoder, ms per token, median of ${loops} loops of ${tokens} tokens`);
  const x = norm.upload(randomFloats(rows * hidden, 1)), r = norm.upload(randomFloats(rows * hidden, 2));
  const gammas = Array.from({ length: layers }, (_, l) => norm.upload(gammaFloats(hidden).map((v) => v * (1 + l / 1000))));
  const bytes = rows * hidden * 4;
  const staging = device.createBuffer({ size: bytes, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  const record = (copy = false) => {
    const e = device.createCommandEncoder();
    for (let l = 0; l < layers; l++) norm.encode(e, { input: x, residual: r, gamma: gammas[l], hidden, inPlace: true });
    if (copy) e.copyBufferToBuffer(x.buffer, 0, staging, 0, bytes);
    device.queue.submit([e.finish()]);
  };
  const perToken = (t) => ({ ...t, median: t.median / 1000, min: t.min / 1000, max: t.max / 1000 }); // µs per token → ms
  await raw.warm(500);
  const workDone = perToken(await timeLoops(loops, tokens, async (k) => {
    for (let i = 0; i < k; i++) {
      record();
      await device.queue.onSubmittedWorkDone();
    }
  }));
  // Where a token's time goes: the recording and submission alone (JavaScript and the GPU
  // process's intake; awaited once at the end of the loop), and the least one awaited
  // round trip costs (an empty submission).
  await raw.warm(200);
  const recordOnly = perToken(await timeLoops(loops, tokens, async (k) => {
    for (let i = 0; i < k; i++) record();
    await device.queue.onSubmittedWorkDone();
  }));
  const emptyWait = perToken(await timeLoops(loops, tokens, async (k) => {
    for (let i = 0; i < k; i++) {
      device.queue.submit([device.createCommandEncoder().finish()]);
      await device.queue.onSubmittedWorkDone();
    }
  }));
  await raw.warm(200);
  const mapped = perToken(await timeLoops(loops, tokens, async (k) => {
    for (let i = 0; i < k; i++) {
      record(true);
      await staging.mapAsync(GPUMapMode.READ);
      new Float32Array(staging.getMappedRange()).slice();
      staging.unmap();
    }
  }));
  await raw.warm(200);
  const read = perToken(await timeLoops(loops, tokens, async (k) => {
    for (let i = 0; i < k; i++) {
      record();
      await x.read();
    }
  }));
  const repeat = num("repeat", 200);
  await raw.warm(200);
  const gt = await norm.gpuTime({ input: x, residual: r, gamma: gammas[0], hidden }, repeat);
  const kernelsMs = gt === undefined ? undefined : (gt / repeat) * layers;
  for (const t of [x, r, ...gammas]) t.free();
  staging.destroy();
  const cell = (t) => `${fmt(t.median, 3)} (${fmt(t.min, 3)}–${fmt(t.max, 3)})`;
  table(
    ["wait", "ms per token", "the kernels' GPU time (gpuTime × layers) ms"],
    [
      [`encode ×${layers}, submit, await onSubmittedWorkDone`, cell(workDone), fmt(kernelsMs, 3)],
      [`encode ×${layers} + the app's copy to its own MAP_READ buffer, submit, await mapAsync, copy out`, cell(mapped), fmt(kernelsMs, 3)],
      [`encode ×${layers}, submit, await the last result's read()`, cell(read), fmt(kernelsMs, 3)],
      [`encode ×${layers}, submit, no wait (one onSubmittedWorkDone after the loop)`, cell(recordOnly), fmt(kernelsMs, 3)],
      ["an empty submit, await onSubmittedWorkDone (a round trip's floor)", cell(emptyWait), "—"],
    ],
  );
  if (!ctx.kind.realGpu) log(`NO ROOFLINE CLAIMS: a CPU adapter (${ctx.kind.name}); ms of SwiftShader, not GPU numbers.`);
  out.layers = { hidden, rows, layers, tokens, loops, workDone, mapped, read, recordOnly, emptyWait, kernelsMs };
}
