// `npm run bench:pipeline`: a 32-layer residual chain of fused add+RMSNorm, as a transformer
// runs it, end to end in one headless Chromium page: ours with GPU-resident tensors
// (output: "gpu", and inPlace: true), ours with a Float32Array round trip per layer, and
// onnxruntime-web's WebGPU SkipSimplifiedLayerNormalization chain. Prints a table and writes
// bench-out/pipeline.json.
//
//   node bench/pipeline.mjs [--rows 1,128] [--hidden 4096] [--layers 32] [--pkg DIR]
//                           [--min 3] [--max 31] [--max-large 15] [--budget-ms 120000]
//
// Every variant runs once per round, in rotating order; each row count takes between --min
// and --max rounds (--max-large above 16 rows), stopping after --budget-ms once --min are done.
// On a 2-core CPU adapter (SwiftShader) the defaults take under a minute (a few minutes with
// builds before the CPU-adapter tiling of 2bdc84e).
// --pkg measures another build of the package instead of ./pkg.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdir, readFile, stat, writeFile } from "node:fs/promises";
import { cpus, loadavg } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { serve } from "../scripts/serve.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const outDir = join(root, "bench-out");

const opt = Object.fromEntries(
  process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith("--") ? [...acc, [a.slice(2), all[i + 1]]] : acc), []),
);
const ROWS = (opt.rows ?? "1,128").split(",").map(Number);
const HIDDEN = Number(opt.hidden ?? 4096);
const LAYERS = Number(opt.layers ?? 32);
const PKG = resolve(opt.pkg ?? join(root, "pkg"));
const sampling = (rows) => ({
  min: Number(opt.min ?? 3),
  max: rows > 16 ? Number(opt["max-large"] ?? 15) : Number(opt.max ?? 31),
  budgetMs: Number(opt["budget-ms"] ?? 120000),
});
// Agreement asked of every variant with the f64 chain, relative to the largest magnitude.
const TOLERANCE = 1e-4;

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
const ISOLATION = { "Cross-Origin-Opener-Policy": "same-origin", "Cross-Origin-Embedder-Policy": "require-corp" };

const VARIANTS = [
  ["gpu", "(a) ours, GpuTensors, output: \"gpu\""],
  ["inPlace", "(a') ours, GpuTensors, inPlace: true"],
  ["arrays", "(b) ours, Float32Array round trip per layer"],
  ["ort", "(c) onnxruntime-web WebGPU"],
];

async function provenance() {
  let commit = null;
  try {
    commit = execFileSync("git", ["-C", root, "describe", "--always", "--dirty"], { encoding: "utf8" }).trim();
  } catch {}
  const wasm = join(PKG, "webgpu_rmsnorm_bg.wasm");
  return {
    benchCommit: commit,
    pkg: PKG,
    wasmSha256: createHash("sha256").update(await readFile(wasm)).digest("hex").slice(0, 16),
    wasmBuilt: (await stat(wasm)).mtime.toISOString(),
  };
}

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

const loadavgBefore = loadavg();
const build = await provenance();
const server = await serve({
  port: 0,
  mounts: [
    ["/bench/", join(root, "bench")],
    ["/pkg/", PKG],
    ["/ort/", join(root, "node_modules/onnxruntime-web/dist")],
  ],
  // Cross-origin isolation narrows performance.now() from 100 µs steps to 5 µs.
  headers: ISOLATION,
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
    if ((m.type() === "error" || m.type() === "warning") && !m.text().startsWith("Failed to load resource")) console.error(`[page ${m.type()}] ${m.text()}`);
  });
  // The page itself is only a module script: served from here, no HTML file needed.
  const pageUrl = `${server.url}bench/pipeline.html`;
  await page.route(pageUrl, (route) =>
    route.fulfill({
      status: 200,
      contentType: "text/html; charset=utf-8",
      headers: { ...ISOLATION, "cache-control": "no-store" },
      body: '<!doctype html><meta charset="utf-8"><title>webgpu-rmsnorm pipeline benchmark</title>' +
        '<script type="module" src="/bench/pipeline-page.mjs"></script>',
    }),
  );
  await page.goto(pageUrl);
  await page.waitForFunction(() => window.pipelineReady === true);
  const env = await page.evaluate(() => window.pipeline.setup());
  console.log(`adapter: ${JSON.stringify(env.ours)}`);
  console.log(`cross-origin isolated: ${env.crossOriginIsolated}; onnxruntime-web ${env.ort?.web ?? "?"}`);
  console.log(`bench from ${build.benchCommit}; package ${build.pkg}: wasm ${build.wasmSha256} built ${build.wasmBuilt}`);
  console.log(`load average before: ${loadavgBefore.map((x) => x.toFixed(2)).join(" ")} on ${cpus().length} cores`);
  console.log(`${LAYERS} layers at hidden ${HIDDEN}; each chain from x_0, r_0 in Float32Arrays to x_${LAYERS} in a Float32Array\n`);

  const results = [];
  for (const rows of ROWS) {
    const t0 = Date.now();
    let r;
    try {
      r = await page.evaluate((cfg) => window.pipeline.chain(cfg), { rows, hidden: HIDDEN, layers: LAYERS, sampling: sampling(rows) });
    } catch (e) {
      const error = String(e.message ?? e).split("\n").slice(0, 3).join(" ");
      console.error(`rows ${rows}: FAILED: ${error}`);
      results.push({ rows, hidden: HIDDEN, layers: LAYERS, error });
      process.exitCode = 1;
      continue;
    }
    if (JSON.stringify(r.ortAdapter) !== JSON.stringify(env.ours)) {
      throw new Error(`ORT ran on another adapter: ${JSON.stringify(r.ortAdapter)} vs ours ${JSON.stringify(env.ours)}`);
    }
    if (!r.ortSumOutput) console.log(`ORT rejected output 3 (${r.ortSumError}); its chain uses a constant skip`);
    // Pass/fail of every agreement check.
    r.pass = {};
    for (const [name, c] of Object.entries(r.checks)) {
      r.pass[name] = [c.output, c.sum].every((x) => x === null || x.maxRel <= TOLERANCE);
      if (!r.pass[name]) process.exitCode = 1;
    }
    results.push(r);
    console.log(`rows ${rows}: |x_${LAYERS}| ≤ ${fmt(r.scale.output)}, |r_${LAYERS}| ≤ ${fmt(r.scale.sum)} (f64 chain)`);
    for (const [name, c] of Object.entries(r.checks)) {
      const vs = name.endsWith("VsGpu") ? "vs (a)" : "vs f64";
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

  await mkdir(outDir, { recursive: true });
  const json = {
    date: new Date().toISOString(),
    command: ["npm run bench:pipeline", ...process.argv.slice(2)].join(" "),
    layers: LAYERS,
    hidden: HIDDEN,
    tolerance: TOLERANCE,
    variants: Object.fromEntries(VARIANTS),
    build,
    host: { cores: cpus().length, loadavgBefore, loadavgAfter: loadavg() },
    env,
    results,
  };
  await writeFile(join(outDir, "pipeline.json"), JSON.stringify(json, null, 2) + "\n");
  console.log(`wrote ${join("bench-out", "pipeline.json")}`);
} finally {
  await browser.close();
  await server.close();
}
