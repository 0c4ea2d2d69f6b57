// `npm run bench:pipeline`: a 32-layer residual chain of fused add+RMSNorm, as a transformer
// runs it, end to end in one headless Chromium page: ours with GPU-resident tensors
// (output: "gpu", and inPlace: true), ours with a Float32Array round trip per layer, and
// onnxruntime-web's WebGPU SkipSimplifiedLayerNormalization chain. Prints a table and writes
// bench-out/pipeline.json.
//
//   node bench/browser/pipeline.mjs [--rows 1,128] [--hidden 4096] [--layers 32] [--pkg DIR]
//                           [--min 3] [--max 31] [--max-large 15] [--budget-ms 120000]
//
// Every variant runs once per round, in rotating order; each row count takes between --min
// and --max rounds (--max-large above 16 rows), stopping after --budget-ms once --min are done.
// On a 2-core CPU adapter (SwiftShader) the defaults take under a minute.
// --pkg measures another build of the package instead of ./pkg.
import { openBench, options as opt } from "./driver.mjs";

const ROWS = (opt.rows ?? "1,128").split(",").map(Number);
const HIDDEN = Number(opt.hidden ?? 4096);
const LAYERS = Number(opt.layers ?? 32);
const sampling = (rows) => ({
  min: Number(opt.min ?? 3),
  max: rows > 16 ? Number(opt["max-large"] ?? 15) : Number(opt.max ?? 31),
  budgetMs: Number(opt["budget-ms"] ?? 120000),
});
// Agreement asked of every variant with the reference chain, relative to the largest magnitude.
const TOLERANCE = 1e-4;

const VARIANTS = [
  ["gpu", "(a) ours, GpuTensors, output: \"gpu\""],
  ["inPlace", "(a') ours, GpuTensors, inPlace: true"],
  ["inFlight", "(a2) ours, in place, calls left in flight"],
  ["encoded", "(a3) ours, in place, norm.encode into one encoder"],
  ["arrays", "(b) ours, Float32Array round trip per layer"],
  ["ort", "(c) onnxruntime-web WebGPU"],
];

const fmt = (x, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : String(x));
const exp = (x) => (Number.isFinite(x) ? x.toExponential(1) : String(x));

function table(results) {
  const head = ["variant", "rows", "ms per chain", "ms per layer", "ratio to (a)", "samples"];
  const lines = [];
  for (const r of results) {
    if (r.error) {
      lines.push(["all", r.rows, "failed", "", "", ""]);
      continue;
    }
    const base = r.ms.gpu.median;
    for (const [key, label] of VARIANTS) {
      const m = r.ms[key];
      const name = key === "ort" && !r.ortSumOutput ? `${label} (constant skip)` : label;
      lines.push([name, r.rows, fmt(m.median, 1), fmt(m.median / r.layers, 2), fmt(m.median / base, 2), m.n]);
    }
  }
  return [head, head.map(() => "---"), ...lines].map((c) => `| ${c.join(" | ")} |`).join("\n");
}

const bench = await openBench({ html: "pipeline.html" });
try {
  console.log(`${LAYERS} layers at hidden ${HIDDEN}; each chain from x_0, r_0 in Float32Arrays to x_${LAYERS} in a Float32Array\n`);
  const results = [];
  for (const rows of ROWS) {
    const t0 = Date.now();
    const r = await bench.measure("chain", { rows, hidden: HIDDEN, layers: LAYERS, sampling: sampling(rows) }, `rows ${rows}`);
    if (r.error) {
      results.push({ rows, hidden: HIDDEN, layers: LAYERS, error: r.error });
      continue;
    }
    if (!r.ortSumOutput) console.log(`ORT rejected output 3 (${r.ortSumError}); its chain uses a constant skip`);
    // Pass/fail of every agreement check.
    r.pass = {};
    for (const [name, c] of Object.entries(r.checks)) {
      r.pass[name] = [c.output, c.sum].every((x) => x === null || x.maxRel <= TOLERANCE);
      if (!r.pass[name]) process.exitCode = 1;
    }
    results.push(r);
    console.log(`rows ${rows}: |x_${LAYERS}| ≤ ${fmt(r.scale.output)}, |r_${LAYERS}| ≤ ${fmt(r.scale.sum)} (reference chain)`);
    for (const [name, c] of Object.entries(r.checks)) {
      const vs = name.endsWith("VsGpu") ? "vs (a)" : "vs ref";
      console.log(
        `  ${name.padEnd(12)} ${vs}: output max abs ${exp(c.output.maxAbs)} rel ${exp(c.output.maxRel)}` +
          (c.sum ? `; sum max abs ${exp(c.sum.maxAbs)} rel ${exp(c.sum.maxRel)}` : "") +
          `  ${r.pass[name] ? "ok" : `FAILED (> ${TOLERANCE})`}`,
      );
    }
    console.log(
      `  ms per chain: ` +
        VARIANTS.map(([k]) => `${k} ${fmt(r.ms[k].median, 1)} (min ${fmt(r.ms[k].min, 1)}, n=${r.ms[k].n})`).join(", ") +
        `; buffers live ${r.debugStats.before.liveBuffers} → ${r.debugStats.after.liveBuffers}  [${((Date.now() - t0) / 1000).toFixed(0)} s]`,
    );
  }
  console.log(`\n${table(results)}\n`);
  const command = ["npm run bench:pipeline", ...process.argv.slice(2)].join(" ");
  const fields = { command, layers: LAYERS, hidden: HIDDEN, tolerance: TOLERANCE, variants: Object.fromEntries(VARIANTS) };
  await bench.finish("pipeline.json", fields, results);
} finally {
  await bench.close();
}
