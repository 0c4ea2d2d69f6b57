// How a wait for GPU work should be sent in Chrome: a readback of 1×4096 and a token's 32-layer chain, waited for in several ways, µs per call with their spread.
// The time of a wait depends on whether the GPU is done when the wait reaches Chrome's GPU
// process (wait-strategies.mjs says why). Each row times single calls, so that the fast and
// the slow case show as the spread.
import { median } from "../shared/raw.mjs";
import { fmt, header, log, table } from "../shared/report.mjs";
import { rawReadback } from "./raw-readback.mjs";
import { mapReasked, nextTask, nudged, roundTrip } from "./wait-strategies.mjs";

/** µs of each of `calls` awaited calls of `op`, after 20 untimed ones: median, p10, p90. */
async function perCall(calls, op) {
  for (let i = 0; i < 20; i++) await op();
  const t = [];
  for (let i = 0; i < calls; i++) {
    const t0 = performance.now();
    await op();
    t.push((performance.now() - t0) * 1000);
  }
  t.sort((a, b) => a - b);
  return { median: median(t), p10: t[Math.floor(calls * 0.1)], p90: t[Math.floor(calls * 0.9)], calls };
}

export async function sectionWaits(ctx, out, { num }) {
  const { norm, device, raw } = ctx;
  const hidden = num("hidden", 4096), rows = 1, calls = num("calls", 200), layers = num("layers", 32);
  header(ctx, `Waits in Chrome: µs per awaited call, ${rows}×${hidden}, median (p10–p90) of ${calls} single calls`);
  const job = await rawReadback(ctx, rows, hidden);
  const { x, r, g, staging } = job;
  const map = () => staging.mapAsync(GPUMapMode.READ);
  // How the raw readback waits for its map, each between the same submit and read-out.
  const waits = {
    "mapAsync at once": map,
    "mapAsync after one round trip (an error scope)": async () => { await roundTrip(device); await map(); },
    "mapAsync after the next task": async () => { await nextTask(); await map(); },
    "mapAsync at once, unmapped and asked again one task later if still pending": () => mapReasked(staging),
    "mapAsync after the next task, then an empty submit every task for at most 1 ms": async () => { await nextTask(); await nudged(device, map(), 1); },
    "mapAsync at once, an empty submit every task until it resolves": () => nudged(device, map()),
    "onSubmittedWorkDone, then mapAsync": async () => { await device.queue.onSubmittedWorkDone(); await map(); },
  };
  const readback = Object.fromEntries(Object.entries(waits).map(([name, wait]) => [name, () => job.once(wait)]));
  readback["the package's run with Float32Arrays"] = () => norm.run({ input: x, residual: r, gamma: g, hidden });
  const rowsOut = [];
  for (const [name, op] of Object.entries(readback)) {
    await raw.warm(200);
    rowsOut.push(["readback", name, await perCall(calls, op)]);
  }

  // A token: `layers` in-place calls recorded with encode into one encoder, one submit.
  const tx = norm.upload(x), tr = norm.upload(r);
  const gammas = Array.from({ length: layers }, (_, l) => norm.upload(g.map((v) => v * (1 + l / 1000))));
  const record = () => {
    const e = device.createCommandEncoder();
    for (let l = 0; l < layers; l++) norm.encode(e, { input: tx, residual: tr, gamma: gammas[l], hidden, inPlace: true });
    device.queue.submit([e.finish()]);
  };
  const token = {
    "onSubmittedWorkDone at once": async () => {
      record();
      await device.queue.onSubmittedWorkDone();
    },
    "onSubmittedWorkDone after one round trip": async () => {
      record();
      await roundTrip(device);
      await device.queue.onSubmittedWorkDone();
    },
    "onSubmittedWorkDone after the next task": async () => {
      record();
      await nextTask();
      await device.queue.onSubmittedWorkDone();
    },
    "onSubmittedWorkDone after the next task, then an empty submit every task for at most 1 ms": async () => {
      record();
      await nextTask();
      await nudged(device, device.queue.onSubmittedWorkDone(), 1);
    },
    "onSubmittedWorkDone at once, an empty submit every task": async () => {
      record();
      await nudged(device, device.queue.onSubmittedWorkDone());
    },
    "the last result's read() at once": async () => {
      record();
      await tx.read();
    },
  };
  for (const [name, op] of Object.entries(token)) {
    await raw.warm(200);
    rowsOut.push([`token (${layers} layers)`, name, await perCall(Math.max(20, calls >> 1), op)]);
  }
  for (const t of [tx, tr, ...gammas]) t.free();
  job.free();
  table(
    ["what", "wait", "µs median", "p10–p90"],
    rowsOut.map(([what, name, t]) => [what, name, fmt(t.median), `${fmt(t.p10)}–${fmt(t.p90)}`]),
  );
  if (!ctx.kind.realGpu) log(`NO ROOFLINE CLAIMS: a CPU adapter (${ctx.kind.name}); µs of SwiftShader, not GPU numbers.`);
  out.waits = rowsOut.map(([what, name, t]) => ({ what, name, ...t }));
}
