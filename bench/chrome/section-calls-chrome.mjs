// Call costs at 1×4096 in real Chrome: the rows the shared calls section (bench/shared/section-calls.mjs) lacks, then the table beside raw WebGPU.
// Runs after sectionCalls (same page, same device), whose numbers it reuses from `out.calls`.
import { fmt, log, table } from "../shared/report.mjs";
import { timeLoops } from "../shared/timing.mjs";
import { rawReadback } from "./raw-readback.mjs";
import { mapReasked, nextTask } from "./wait-strategies.mjs";

export async function sectionCallsChrome(ctx, out, { num }) {
  const { norm, device, raw } = ctx;
  const c = out.calls;
  const { hidden, rows, calls, loops } = c;
  const job = await rawReadback(ctx, rows, hidden);
  const { x, r, g, staging } = job;
  // What `run` with host arrays has to do at the least: upload both, one dispatch, copy, map,
  // read; with its map sent at once (as a plain page would), one task after the submission,
  // and either of them asked again one task later if still pending (as the package does the
  // first: wait-strategies.mjs).
  const waits = {
    "at once": () => staging.mapAsync(GPUMapMode.READ),
    "one task later": async () => { await nextTask(); await staging.mapAsync(GPUMapMode.READ); },
    "at once, re-asked a task later": () => mapReasked(staging),
    "one task later, re-asked a task later": async () => { await nextTask(); await mapReasked(staging); },
  };
  const readbacks = {};
  for (const [name, wait] of Object.entries(waits)) {
    await raw.warm(200);
    readbacks[name] = await timeLoops(loops, Math.min(calls, num("readback-calls", 300)), async (k) => {
      for (let i = 0; i < k; i++) await job.once(wait);
    });
  }
  // The package again, right after the raw loops (the first figure is from sectionCalls,
  // earlier in the page): Chrome's map latency drifts within a page.
  await raw.warm(200);
  const runArraysAgain = await timeLoops(loops, Math.min(calls, num("readback-calls", 300)), async (k) => {
    for (let i = 0; i < k; i++) await norm.run({ input: x, residual: r, gamma: g, hidden });
  });
  const readback = readbacks["at once"];
  job.free();
  // The package's `encode` into an encoder of the app's, submitted (in place on resident tensors).
  const tx = norm.upload(x), tr = norm.upload(r), tg = norm.upload(g);
  await raw.warm(200);
  const encodeSubmit = await timeLoops(loops, calls, async (k) => {
    for (let i = 0; i < k; i++) {
      const e = device.createCommandEncoder();
      norm.encode(e, { input: tx, residual: tr, gamma: tg, hidden, inPlace: true });
      device.queue.submit([e.finish()]);
    }
    await device.queue.onSubmittedWorkDone();
  });
  for (const t of [tx, tr, tg]) t.free();
  c.raw.readbackAwaited = readback;
  c.raw.readbacks = readbacks;
  c.package.runArraysAgain = runArraysAgain;
  c.package.encodeSubmit = encodeSubmit;
  const cell = (t) => `${fmt(t.median)} (${fmt(t.min)}–${fmt(t.max)})`;
  const ratio = (a, b) => `${fmt(a.median / b.median, 2)}×`;
  log(`\n### Call costs beside raw WebGPU (µs per call, ${rows}×${hidden}, median of ${loops} loops)`);
  table(
    ["call", "raw WebGPU µs", "the package µs", "package / raw"],
    [
      ["one dispatch submitted, no await", cell(c.raw.noAwait), `in place awaited ${cell(c.package.inPlaceAwaited)}; in flight ${cell(c.package.inPlaceInFlight)}; encode + submit ${cell(encodeSubmit)}`, ratio(c.package.inPlaceAwaited, c.raw.noAwait)],
      ["writeBuffer ×2 + dispatch + copy + mapAsync readback, awaited", cell(readback), `run with host arrays, awaited: ${cell(c.package.runArrays)}`, ratio(c.package.runArrays, readback)],
      ...Object.entries(readbacks).map(([name, t]) => [`the same readback, map ${name}`, cell(t), `run with host arrays, right after: ${cell(runArraysAgain)}`, ratio(runArraysAgain, t)]),
      ["—", "—", `runWithSum({ output: "gpu" }) awaited, then free: ${cell(c.package.runWithSumGpu)}`, `${fmt(c.package.runWithSumGpu.median / c.package.inPlaceAwaited.median, 2)}× in place`],
    ],
  );
  if (!ctx.kind.realGpu) log(`NO ROOFLINE CLAIMS: a CPU adapter (${ctx.kind.name}); µs of SwiftShader, not GPU numbers.`);
}
