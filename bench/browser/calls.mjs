// `npm run bench:calls`: the package's own CPU cost per call in headless Chromium, beside a
// hand-written WebGPU recording of the same kernel on the same device (calls-page.mjs).
// Prints a table and writes bench-out/calls.json.
//
//   node bench/browser/calls.mjs [--hidden 4096] [--calls 100] [--rounds 41] [--pkg DIR]
//
// On a CPU adapter (SwiftShader) the GPU process runs the kernels on the same cores; only
// the recording and submitting loops are timed, with the GPU's work awaited between passes.
// On a real GPU: `npm run bench:chrome` (its calls section) and `npm run bench:dawn`
// (docs/performance.md).
import { openBench, options as opt } from "./driver.mjs";

const cfg = { hidden: Number(opt.hidden ?? 4096), calls: Number(opt.calls ?? 100), rounds: Number(opt.rounds ?? 41) };
const us = (x) => (Number.isFinite(x) ? x.toFixed(2) : String(x));

// What each comparison is, the baseline it is paired with, and the target ratio.
const SECTIONS = [
  ["encode", "record into one encoder", "by hand: pass, pipeline, bind group (made once), dispatch, end", { "norm.encode": null, "bound.encode": 2 }],
  ["submit", "in place on tensors, not awaited", "by hand: encoder, pass, finish, submit", { "norm.run": null, "bound.run": 1.2 }],
];

const bench = await openBench({ html: "calls.html" });
try {
  const r = await bench.measure("calls", cfg, "calls");
  if (!r.error) {
    console.log(`\nµs of CPU per call, 1×${r.hidden} f32; ${r.rounds} rounds of ${r.calls} calls, each the hand-written pass right before the package's; ratio = median of the rounds' ratios\n`);
    console.log("| calls | package | µs | hand-written baseline | µs | package / baseline | target |");
    console.log("| --- | --- | --- | --- | --- | --- | --- |");
    for (const [key, what, baseline, targets] of SECTIONS) {
      const s = r[key];
      for (const [name, target] of Object.entries(targets)) {
        if (!s[name]) continue;
        const t = target ? `≤ ${target}×` : "";
        console.log(`| ${what} | \`${name}\` | ${us(s[name].median)} | ${baseline} | ${us(s.baseline.median)} | ${s[name].ratio.toFixed(2)}× | ${t} |`);
      }
    }
    console.log("");
  }
  await bench.finish("calls.json", { config: cfg }, r);
} finally {
  await bench.close();
}
