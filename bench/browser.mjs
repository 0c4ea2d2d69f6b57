// `npm run bench`: our fused add+bias+RMSNorm against onnxruntime-web's WebGPU
// SkipSimplifiedLayerNormalization and a plain JS loop, in one headless Chromium page on one
// adapter. Prints a table and writes bench-out/browser.json.
//
//   node bench/browser.mjs [--shapes 1x896,16x4096,...] [--k 21] [--budget-ms 4000] [--pkg DIR]
//
// --pkg measures another build of the package (say, one made from a clean checkout of a
// commit) instead of ./pkg.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdir, readFile, stat, writeFile } from "node:fs/promises";
import { cpus, loadavg } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { serve } from "../scripts/serve.mjs";
import { EPS, weights } from "./data.mjs";
import { skipSimplifiedLayerNormChain } from "./onnx-model.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const outDir = join(root, "bench-out");
const modelDir = join(outDir, "models");

const opt = Object.fromEntries(
  process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith("--") ? [...acc, [a.slice(2), all[i + 1]]] : acc), []),
);
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
const PKG = resolve(opt.pkg ?? join(root, "pkg"));

const CHROMIUM_ARGS = [
  "--headless=new",
  "--no-sandbox",
  "--enable-unsafe-webgpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
  "--disable-quic",
];

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

// pkg/ is a build output that can lag behind the sources: record what was measured.
async function provenance() {
  let commit = null;
  try {
    commit = execFileSync("git", ["-C", root, "describe", "--always", "--dirty"], { encoding: "utf8" }).trim();
  } catch {}
  const wasm = join(PKG, "webgpu_rmsnorm_bg.wasm");
  return {
    // The checkout the benchmark ran from; with --pkg, the package may come from elsewhere.
    benchCommit: commit,
    pkg: PKG,
    wasmSha256: createHash("sha256").update(await readFile(wasm)).digest("hex").slice(0, 16),
    wasmBuilt: (await stat(wasm)).mtime.toISOString(),
  };
}

const loadavgBefore = loadavg();
const build = await provenance();
const models = await writeModels();
const server = await serve({
  port: 0,
  mounts: [
    ["/bench/", join(root, "bench")],
    ["/pkg/", PKG],
    ["/ort/", join(root, "node_modules/onnxruntime-web/dist")],
    ["/models/", modelDir],
  ],
  // Cross-origin isolation narrows performance.now() from 100 µs steps to 5 µs.
  headers: { "Cross-Origin-Opener-Policy": "same-origin", "Cross-Origin-Embedder-Policy": "require-corp" },
});
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium", args: CHROMIUM_ARGS });
try {
  const page = await browser.newPage();
  page.setDefaultTimeout(0);
  page.on("pageerror", (e) => console.error("page error:", e));
  page.on("response", (r) => {
    if (r.status() >= 400 && !r.url().endsWith("/favicon.ico")) console.error(`HTTP ${r.status()} ${r.url()}`);
  });
  page.on("console", (m) => {
    // The page's own 404 for favicon.ico is noise; real failures surface through "response".
    if ((m.type() === "error" || m.type() === "warning") && !m.text().startsWith("Failed to load resource")) console.error(`[page ${m.type()}] ${m.text()}`);
  });
  await page.goto(`${server.url}bench/index.html`);
  await page.waitForFunction(() => window.benchReady === true);
  const env = await page.evaluate(() => window.bench.setup());
  console.log(`adapter: ${JSON.stringify(env.ours)}`);
  console.log(`cross-origin isolated: ${env.crossOriginIsolated}; onnxruntime-web ${env.ort?.web ?? "?"}`);
  console.log(`bench from ${build.benchCommit}; package ${build.pkg}: wasm ${build.wasmSha256} built ${build.wasmBuilt}`);
  console.log(`load average before: ${loadavgBefore.map((x) => x.toFixed(2)).join(" ")} on ${cpus().length} cores`);
  console.log(`per-op: slope of time over repeat ${K1} → K; medians; budget ${BUDGET_MS} ms per measurement\n`);

  const results = [];
  for (const s of SHAPES) {
    const t0 = Date.now();
    let r;
    try {
      r = await page.evaluate(
        (cfg) => window.bench.shape(cfg),
        { ...s, k1: K1, k2: k2For(s), budgetMs: BUDGET_MS, models: models[`${s.rows}x${s.hidden}`] },
      );
    } catch (e) {
      // One failing shape should not cost the others' numbers; the run still exits non-zero.
      const error = String(e.message ?? e).split("\n").slice(0, 3).join(" ");
      console.error(`${s.rows}×${s.hidden}: FAILED: ${error}`);
      results.push({ ...s, error });
      process.exitCode = 1;
      continue;
    }
    if (JSON.stringify(r.ortAdapter) !== JSON.stringify(env.ours)) {
      throw new Error(`ORT ran on another adapter: ${JSON.stringify(r.ortAdapter)} vs ours ${JSON.stringify(env.ours)}`);
    }
    results.push(r);
    console.log(
      `${s.rows}×${s.hidden} (K=${r.k[1]}): ours ${fmt(r.oursOpUs.median)} µs/op (floor ${fmt(r.oursOpUs.floorUs)}, n=${r.oursOpUs.n}), ` +
        `ORT ${fmt(r.ortOpUs.median)} µs/op (floor ${fmt(r.ortOpUs.floorUs)}, n=${r.ortOpUs.n}); ` +
        `run ${fmt(r.oursRunMs.median, 2)} vs ${fmt(r.ortRunMs.median, 2)} ms; JS ${fmt(r.jsMs.median, 2)} ms; ` +
        `max|ours−JS| ${r.oursCheck.maxAbs.toExponential(1)}, max|ORT−JS| ${r.ortCheck.maxAbs.toExponential(1)}, ` +
        `max|ours−ORT| ${r.oursVsOrt.maxAbs.toExponential(1)}  [${((Date.now() - t0) / 1000).toFixed(0)} s]`,
    );
  }
  console.log(`\n${table(results)}\n`);

  await mkdir(outDir, { recursive: true });
  const json = {
    date: new Date().toISOString(),
    command: ["npm run bench", ...process.argv.slice(2)].join(" "),
    budgetMs: BUDGET_MS,
    build,
    // A CPU adapter shares the cores with everything else: the load says how quiet it was.
    host: { cores: cpus().length, loadavgBefore, loadavgAfter: loadavg() },
    env,
    results,
  };
  await writeFile(join(outDir, "browser.json"), JSON.stringify(json, null, 2) + "\n");
  console.log(`wrote ${join("bench-out", "browser.json")}`);
} finally {
  await browser.close();
  await server.close();
}
