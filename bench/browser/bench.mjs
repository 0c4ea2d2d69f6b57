// `npm run bench`: two sections in one headless Chromium page on one adapter.
// - WebGPU: our fused add+bias+RMSNorm against onnxruntime-web's WebGPU
//   SkipSimplifiedLayerNormalization and a plain JS loop; table, bench-out/browser.json.
// - CPU (cpu.mjs): the package's CPU backend against the JS loop (both writing into an
//   array they keep) and onnxruntime-web's WebAssembly EP (both returning a fresh one), and
//   the package's "webgpu" (read back into a fresh and a kept array) and "auto" backends;
//   table, bench-out/cpu.json.
//
//   node bench/browser/bench.mjs [--webgpu | --cpu] [--shapes 1x896,16x4096,...] [--k 21]
//                          [--cpu-shapes 1x4096,...] [--batch-ms 10] [--budget-ms 4000] [--pkg DIR]
//                          [--browser chromium | firefox | webkit]
//
// Both sections run unless --webgpu or --cpu names one; --browser firefox or webkit (Firefox
// ESR, WebKitGTK: no WebGPU) runs the CPU section alone, in cpu.html. --pkg measures another build of the
// package (say, one made from a clean checkout of a commit) instead of ./pkg.
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { EPS, weights } from "../shared/data.mjs";
import { skipSimplifiedLayerNormChain } from "../shared/onnx-model.mjs";
import { cpuSection } from "./cpu.mjs";
import { OUT_DIR, openBench, options as opt } from "./driver.mjs";

const modelDir = join(OUT_DIR, "models");

// Decode (1 row), small prefill and batch shapes at two model widths, plus an odd width that
// takes the kernel's scalar path and a ragged last workgroup.
const SHAPES = (opt.shapes ?? "1x896,1x4096,32x896,16x4096,128x4096,512x4096,100x4099")
  .split(",")
  .map((s) => s.split("x").map(Number))
  .map(([rows, hidden]) => ({ rows, hidden }));
const K1 = 1;
// Small shapes cost tens of µs per op, near the jitter of one submission: a longer chain
// lifts the difference well clear of it.
const k2For = ({ rows, hidden }) => Number(opt.k ?? (rows * hidden <= 8192 ? 101 : 21));
const BUDGET_MS = Number(opt["budget-ms"] ?? 4000);
const BROWSER = opt.browser ?? "chromium";
// Firefox ESR and WebKitGTK have no WebGPU: there only the CPU section runs, in its own page.
if (BROWSER !== "chromium" && "webgpu" in opt) throw new Error(`--webgpu runs in Chromium only, not --browser ${BROWSER}`);
const RUN_WEBGPU = BROWSER === "chromium" && (!("cpu" in opt) || "webgpu" in opt);
const RUN_CPU = !("webgpu" in opt) || "cpu" in opt;

async function writeModels() {
  await mkdir(modelDir, { recursive: true });
  const names = {};
  for (const { rows, hidden } of SHAPES) {
    const { gamma, bias } = weights(hidden);
    const entry = {};
    for (const [key, k] of [["one", K1], ["many", k2For({ rows, hidden })]]) {
      const name = `sslnorm_${rows}x${hidden}_k${k}.onnx`;
      await writeFile(join(modelDir, name), skipSimplifiedLayerNormChain({ rows, hidden, k, eps: EPS, gamma, bias }));
      entry[key] = name;
    }
    names[`${rows}x${hidden}`] = entry;
  }
  return names;
}

const fmt = (x, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : String(x));
const ratio = (a, b) => (b > 0 ? (a / b).toFixed(2) : "n/a");

function table(results) {
  const head = ["shape", "ours per-op µs", "ORT per-op µs", "ours/ORT", "ours run() ms", "ORT session.run ms", "ours/ORT", "JS loop ms"];
  const rows = results.map((r) => r.error ? [`${r.rows}×${r.hidden}`, "failed", "", "", "", "", "", ""] : [
    `${r.rows}×${r.hidden}`,
    fmt(r.oursOpUs.median),
    fmt(r.ortOpUs.median),
    ratio(r.oursOpUs.median, r.ortOpUs.median),
    fmt(r.oursRunMs.median, 2),
    fmt(r.ortRunMs.median, 2),
    ratio(r.oursRunMs.median, r.ortRunMs.median),
    fmt(r.jsMs.median, 2),
  ]);
  return [head, head.map(() => "---"), ...rows].map((cells) => `| ${cells.join(" | ")} |`).join("\n");
}

async function webgpuSection(bench, models) {
  console.log(`per-op: slope of time over repeat ${K1} → K; medians; budget ${BUDGET_MS} ms per measurement\n`);
  const results = [];
  for (const s of SHAPES) {
    const t0 = Date.now();
    const cfg = { ...s, k1: K1, k2: k2For(s), budgetMs: BUDGET_MS, models: models[`${s.rows}x${s.hidden}`] };
    const r = await bench.measure("shape", cfg, `${s.rows}×${s.hidden}`);
    if (r.error) {
      results.push({ ...s, error: r.error });
      continue;
    }
    results.push(r);
    console.log(
      `${s.rows}×${s.hidden} (K=${r.k[1]}): ours ${fmt(r.oursOpUs.median)} µs/op (floor ${fmt(r.oursOpUs.floorUs)}, n=${r.oursOpUs.n}), ` +
        `ORT ${fmt(r.ortOpUs.median)} µs/op (floor ${fmt(r.ortOpUs.floorUs)}, n=${r.ortOpUs.n}); ` +
        `run ${fmt(r.oursRunMs.median, 2)} vs ${fmt(r.ortRunMs.median, 2)} ms; JS ${fmt(r.jsMs.median, 2)} ms; ` +
        `max|ours−f64| ${r.oursCheck.maxAbs.toExponential(1)}, max|ORT−f64| ${r.ortCheck.maxAbs.toExponential(1)}, ` +
        `max|ours−ORT| ${r.oursVsOrt.maxAbs.toExponential(1)}  [${((Date.now() - t0) / 1000).toFixed(0)} s]`,
    );
  }
  console.log(`\n${table(results)}\n`);
  const command = ["npm run bench", ...(process.argv.length > 2 ? ["--", ...process.argv.slice(2)] : [])].join(" ");
  await bench.finish("browser.json", { command, budgetMs: BUDGET_MS }, results);
}

const models = RUN_WEBGPU ? await writeModels() : {};
const bench = await openBench({ html: RUN_WEBGPU ? "bench.html" : "cpu.html", mounts: [["/models/", modelDir]], browser: BROWSER });
try {
  if (RUN_WEBGPU) await webgpuSection(bench, models);
  if (RUN_CPU) await cpuSection(bench, opt);
} finally {
  await bench.close();
}
