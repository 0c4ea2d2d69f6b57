// `npm run bench:calls`: the package's own CPU cost per call in headless Chromium, beside raw
// WebGPU doing the same dispatch from JavaScript on the same device (bench/calls-page.mjs).
// Prints a table and writes bench-out/calls.json.
//
//   node bench/calls.mjs [--hidden 4096] [--calls 500] [--loops 5] [--pkg DIR]
//
// On a CPU adapter (SwiftShader) every submit also runs the kernel on the same cores, so the
// absolute times say more about SwiftShader than about the calls. On a real GPU: `npm run
// bench:chrome` (its calls section) and `npm run bench:dawn` (docs/performance.md).
import { openBench, options as opt } from "./driver.mjs";

const cfg = { hidden: Number(opt.hidden ?? 4096), calls: Number(opt.calls ?? 500), loops: Number(opt.loops ?? 5) };
const fmt = (x) => (Number.isFinite(x) ? x.toFixed(1) : String(x));
const cell = (m) => `${fmt(m.median)} (${m.rounds.map((r) => fmt(r.median)).join(", ")})`;

const bench = await openBench({ html: "calls.html" });
try {
  const r = await bench.measure("calls", cfg, "calls");
  if (!r.error) {
    console.log(`\nµs per call, 1×${r.hidden} f32 in place on resident tensors; median of three alternating rounds (each the median of ${r.loops} loops of ${r.calls} calls)\n`);
    console.log("| call | package | raw WebGPU doing the same dispatch | raw | package / raw |");
    console.log("| --- | --- | --- | --- | --- |");
    console.log(`| awaited | ${cell(r.awaited)} | submit + two awaited error scopes | ${cell(r.rawScopes)} | ${(r.awaited.median / r.rawScopes.median).toFixed(2)}× |`);
    console.log(`| left in flight, awaited together | ${cell(r.inFlight)} | submit, no await | ${cell(r.rawNoAwait)} | ${(r.inFlight.median / r.rawNoAwait.median).toFixed(2)}× |`);
    console.log("");
  }
  await bench.finish("calls.json", { config: cfg }, r);
} finally {
  await bench.close();
}
