// The demo page (www/) as `bash scripts/demo.sh` serves it: www/ at /, pkg/ at /pkg/.
// Drives it through its controls like a user, and leaves a screenshot in test-results/.
// It opens on the Auto backend; the WebGPU cards are checked on WebGPU (headless Chromium's
// SwiftShader adapter), then the same cards on the CPU backend. Firefox, which has no WebGPU,
// loads it in firefox.test.mjs.
//
//   node --test --test-reporter=spec tests/e2e/
import { test as nodeTest, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";

import { serve } from "../../../scripts/serve.mjs";
import { launch, watchedPage } from "../support/chromium.mjs";
import { ROOT, assertBuilt } from "../support/repo.mjs";
import { PRESETS } from "../../../www/demo/presets.js";

const SCREENSHOT = join(ROOT, "test-results", "demo.png");

// page.evaluate has no timeout of its own: a hung GPU call must fail its test, not stall CI.
const test = (name, fn) => nodeTest(name, { timeout: 60_000 }, fn);

let server, browser, page;
const problems = [];

before(async () => {
  assertBuilt();
  server = await serve({ port: 0, mounts: [["/", join(ROOT, "www")], ["/pkg", join(ROOT, "pkg")]] });
  browser = await launch();
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  page = await watchedPage(context, problems);
  await page.goto(server.url);
  await page.waitForSelector('#status[data-state="ready"]', { timeout: 20_000 });
}, { timeout: 60_000 });

after(async () => {
  await browser?.close();
  await server?.close();
});

/** Clicks or submits, then waits for the run to settle; returns the final status. */
async function settle(action) {
  await action();
  await page.waitForSelector('#status:not([data-state="running"]):not([data-state="ready"])', { timeout: 30_000 });
  // #run is disabled while a run is in flight; enabled again means the page is idle.
  await page.waitForSelector("#run:not([disabled])");
  return { state: await page.getAttribute("#status", "data-state"), text: (await page.textContent("#status")).trim() };
}

/** Sets the Problem controls; the normalization's default to today's pre-norm. */
async function setProblem({ rows, hidden, eps = "1e-6", seed = "1", bias = true, beta = true, dtype = "f32", kind = "rms", residual = true, postGamma = false, input2 = false, rotary = false, gammaOffset = "0", outputDtype = "" }) {
  await page.fill("#rows", String(rows));
  await page.fill("#hidden", String(hidden));
  await page.fill("#eps", eps);
  await page.fill("#seed", seed);
  await page.setChecked("#bias", bias);
  await page.setChecked("#beta", beta);
  await page.check(`#dtype-${dtype}`);
  await page.check(`#kind-${kind}`);
  await page.setChecked("#residual", residual);
  await page.setChecked("#post-gamma", postGamma);
  await page.setChecked("#input2", input2);
  await page.setChecked("#rotary", rotary);
  await page.fill("#gamma-offset", gammaOffset);
  await page.selectOption("#output-dtype", outputDtype);
}

/** Waits for the progress bar to move, then to fill with its button enabled again. */
async function progressThrough(progressId, buttonId) {
  await page.waitForFunction((id) => document.getElementById(id).value > 0, progressId, { timeout: 30_000 });
  await page.waitForFunction(
    ([progressId, buttonId]) => {
      const p = document.getElementById(progressId);
      return p.value === p.max && !document.getElementById(buttonId).disabled;
    },
    [progressId, buttonId],
    { timeout: 45_000 },
  );
}

/** Picks a backend in the control; resolves once the new instance is ready, with the panel's facts. */
async function chooseBackend(choice, want = choice) {
  await page.check(`#backend-${choice}`);
  await page.waitForSelector(`#adapter[data-backend="${want}"]`, { timeout: 20_000 });
  await page.waitForSelector('#status[data-state="ready"]', { timeout: 20_000 });
  await page.waitForSelector("#run:not([disabled])");
  return {
    backend: await page.getAttribute("#adapter", "data-backend"),
    field: (await page.textContent('#adapter [data-field="backend"]')).trim(),
    kind: (await page.textContent('#adapter [data-field="fallback"]')).trim(),
    status: (await page.textContent("#status")).trim(),
  };
}

/** Whether this browser's WebGPU adapter is a software fallback, as the page's own would see. */
async function fallbackAdapter() {
  return page.evaluate(async () => {
    const a = await navigator.gpu?.requestAdapter();
    return a ? Boolean(a.info?.isFallbackAdapter ?? a.isFallbackAdapter) : null;
  });
}

/** "12.3 µs" / "1.20 ms" as milliseconds; NaN when it is not a time. */
function parseMs(text) {
  const m = /^\s*([\d.]+(?:e[-+]?\d+)?)\s*(µs|ms|s)\s*$/.exec(text);
  if (!m) return NaN;
  return Number(m[1]) * { "µs": 1e-3, ms: 1, s: 1e3 }[m[2]];
}

test("demo opens on the Auto backend and shows which one runs: CPU on a fallback adapter, else WebGPU", async (t) => {
  assert.equal(await page.isChecked("#backend-auto"), true, "#backend-auto is the default");
  const fallback = await fallbackAdapter();
  assert.notEqual(fallback, null, "headless Chromium with --enable-unsafe-webgpu has an adapter");
  const want = fallback ? "cpu" : "webgpu";
  assert.equal(await page.getAttribute("#adapter", "data-backend"), want);
  const field = (await page.textContent('#adapter [data-field="backend"]')).trim();
  assert.match(field, want === "cpu" ? /^CPU .*auto: WebGPU's adapter here is a software fallback/ : /^WebGPU.*auto: a hardware GPU adapter/);
  assert.ok(await page.isHidden("#no-webgpu"), "WebGPU exists here: no WebGPU-missing panel");
  assert.match(await page.textContent("#status"), want === "cpu" ? /Ready on the CPU backend/ : /Ready on WebGPU/);
  for (const id of ["backend-auto", "backend-webgpu", "backend-cpu"]) {
    const label = await page.$eval(`#${id}`, (el) => el.labels?.[0]?.textContent.trim() ?? "");
    assert.ok(label.length > 0, `#${id} has a label`);
  }
  t.diagnostic(`auto: ${field}`);
});

test("demo backend control: WebGPU recreates the instance on the adapter", async () => {
  const r = await chooseBackend("webgpu");
  assert.equal(r.backend, "webgpu");
  assert.match(r.field, /^WebGPU/);
  assert.match(r.kind, /Fallback|Hardware/);
  assert.match(r.status, /Ready on WebGPU/);
  assert.match(page.url(), /[?&]backend=webgpu/, "the address keeps the choice");
});

test("demo shows the adapter: vendor, architecture and whether it is a fallback", async () => {
  const text = await page.textContent("#adapter");
  assert.match(text, /Vendor/);
  assert.doesNotMatch(text, /…/, "adapter fields are filled in");
  const kind = await page.textContent('#adapter [data-field="fallback"]');
  assert.match(kind, /Fallback|Hardware/);
  await page.waitForFunction(() => !document.querySelector('#adapter [data-field="limits"]').textContent.includes("…"));
  const limits = await page.textContent('#adapter [data-field="limits"]');
  assert.match(limits, /storage binding \d+ MiB .* workgroup \d+ invocations/);
  const features = await page.textContent('#adapter [data-field="features"]');
  assert.match(features, /shader-f16 (yes|no) · subgroups (yes|no) · timestamp-query (yes|no)/);
});

test("demo: rows/hidden set through the controls, #run clicked: #max-error < 1e-4 and an output preview", async (t) => {
  await setProblem({ rows: 6, hidden: 1000 });
  const status = await settle(() => page.click("#run"));
  assert.equal(status.state, "done", status.text);
  assert.match(status.text, /6 × 1000/);
  const maxError = Number.parseFloat(await page.textContent("#max-error"));
  assert.ok(Number.isFinite(maxError) && maxError < 1e-4, `#max-error is ${maxError}`);
  assert.match(await page.textContent("#time"), /\d/, "end-to-end time shown");
  const kernelText = await page.textContent("#kernel-time");
  const kernelMs = parseMs(kernelText);
  assert.ok(Number.isFinite(kernelMs) && kernelMs > 0, `#kernel-time is a positive time, got ${JSON.stringify(kernelText)}`);
  // GPU timestamps where the adapter has timestamp-query (SwiftShader does), else the slope.
  assert.match(
    await page.textContent("#kernel-note"),
    /GPU timestamps \(gpuTime, \d+ dispatches, median of 3\); wall-clock slope|timeDispatches, K = 1 → \d+, median of 3; wall clock/,
  );
  const cells = await page.$$eval("#output tbody tr", (trs) => trs.map((tr) => tr.cells.length));
  assert.deepEqual(cells, [9, 9, 9, 9], "4 rows × (header + 8 values) previewed");
  t.diagnostic(`6 × 1000: max error ${maxError}, ${await page.textContent("#time")} end to end, kernel ${kernelText} (${await page.getAttribute("#kernel-note", "title")})`);
});

test("demo is keyboard usable: Enter in a field runs, with bias and beta off", async () => {
  await setProblem({ rows: 3, hidden: 5, bias: false, beta: false, eps: "0.01", seed: "7" });
  await page.focus("#hidden");
  const status = await settle(() => page.keyboard.press("Enter"));
  assert.equal(status.state, "done", status.text);
  assert.ok(Number.parseFloat(await page.textContent("#max-error")) < 1e-4);
  // Every control is reachable: each has a label the accessibility tree names it by.
  for (const id of ["rows", "hidden", "eps", "seed", "bias", "beta", "dtype-f32", "dtype-f16", "pipeline-rows"]) {
    const label = await page.$eval(`#${id}`, (el) => el.labels?.[0]?.textContent.trim() ?? "");
    assert.ok(label.length > 0, `#${id} has a label`);
  }
});

test("demo in f16: halves in Uint16Arrays, max error < 5e-3 against the f64 reference of the same halves", async (t) => {
  await setProblem({ rows: 8, hidden: 768, dtype: "f16" });
  const status = await settle(() => page.click("#run"));
  assert.equal(status.state, "done", status.text);
  assert.match(status.text, /8 × 768 rows in f16/);
  assert.equal((await page.textContent("#result-dtype")).trim(), "f16");
  assert.match(await page.textContent("#error-note"), /^f16 output/);
  const maxError = Number.parseFloat(await page.textContent("#max-error"));
  const maxRel = Number.parseFloat(await page.textContent("#max-rel"));
  assert.ok(Number.isFinite(maxError) && maxError < 5e-3, `#max-error is ${maxError}`);
  // One f16 rounding of each result: not f32-exact (the halves really went through), ≤ 1e-3.
  assert.ok(maxRel > 1e-5 && maxRel <= 1e-3, `#max-rel is ${maxRel}`);
  assert.ok(parseMs(await page.textContent("#kernel-time")) > 0, "kernel time in f16 too");
  t.diagnostic(`f16 8 × 768: max error ${maxError}, max rel ${maxRel}`);
  // hidden not a multiple of 4 is the library's ShapeError, shown by name.
  await setProblem({ rows: 2, hidden: 6, dtype: "f16" });
  const bad = await settle(() => page.click("#run"));
  assert.equal(bad.state, "error", bad.text);
  assert.match(bad.text, /^ShapeError: /);
  await page.check("#dtype-f32");
});

test("demo shows library errors by name and message, then recovers", async () => {
  const cases = [
    [{ rows: 2, hidden: 4, eps: "-1" }, /^ShapeError: eps:/],
    [{ rows: 2, hidden: 2.5 }, /^ShapeError: hidden:/],
    [{ rows: 2, hidden: 0 }, /^ShapeError: hidden:/],
    [{ rows: -1, hidden: 4 }, /^RangeError: rows:/],
  ];
  for (const [problem, expected] of cases) {
    await setProblem(problem);
    const status = await settle(() => page.click("#run"));
    assert.equal(status.state, "error", status.text);
    assert.match(status.text, expected);
  }
  await setProblem({ rows: 0, hidden: 16 });
  const status = await settle(() => page.click("#run"));
  assert.equal(status.state, "done", `rows 0 is valid: ${status.text}`);
  assert.match(await page.textContent("#output"), /empty/);
});

/** The controls as a preset sets them (see www/demo/presets.js). */
function readControls() {
  return page.evaluate(() => {
    const $ = (id) => document.getElementById(id);
    return {
      rows: Number($("rows").value), hidden: Number($("hidden").value), eps: $("eps").value,
      kind: document.querySelector('input[name="kind"]:checked').value, residual: $("residual").checked,
      postGamma: $("post-gamma").checked, input2: $("input2").checked, rotary: $("rotary").checked, gammaOffset: Number($("gamma-offset").value), bias: $("bias").checked, beta: $("beta").checked,
    };
  });
}

/** Chooses preset `key`, runs it, and returns the run's status and shown errors. */
async function runPreset(key) {
  await setProblem({ rows: 1, hidden: 4 });
  await page.selectOption("#preset", key);
  const controls = await readControls();
  const status = await settle(() => page.click("#run"));
  return {
    controls, status,
    maxRel: Number.parseFloat(await page.textContent("#max-rel")),
    maxError: Number.parseFloat(await page.textContent("#max-error")),
    js: (await page.textContent("#js-time")).trim(),
  };
}

/** What the Result card says a preset normalized: the formula's options in words. */
function described(p) {
  return [p.kind === "layer" ? "LayerNorm" : "RMSNorm", p.postGamma && "the sandwich", p.input2 && "a parallel block", p.rotary && "then RoPE", p.residual ? "with a residual" : "no residual", p.gammaOffset && `γ \\+ ${p.gammaOffset}`].filter(Boolean).join(", ");
}

for (const backend of ["webgpu", "cpu"]) test(`demo model presets (${backend}): Llama, Gemma 3's sandwich with 1 + γ, GPT-2's LayerNorm, Phi-2's parallel block, Qwen3's QK-norm with and without RoPE and a final norm each set the controls and match the f64 reference`, async (t) => {
  if (backend === "cpu") await chooseBackend("cpu");
  try {
    const keys = await page.$$eval("#preset option", (os) => os.map((o) => o.value));
    assert.deepEqual(keys, ["custom", ...Object.keys(PRESETS)]);
    for (const [key, preset] of Object.entries(PRESETS)) {
      const r = await runPreset(key);
      const { label, ...want } = preset;
      assert.deepEqual(r.controls, want, `${key}: the controls`);
      assert.equal(r.status.state, "done", `${key}: ${r.status.text}`);
      assert.match(r.status.text, new RegExp(`^Done: ${want.rows} × ${want.hidden} rows in f32 on ${backend === "cpu" ? "the CPU backend" : "WebGPU"}, matches the f64 reference \\(within 1\\.00e-5 relative\\): ${described(want)}\\.$`));
      assert.ok(Number.isFinite(r.maxRel) && r.maxRel <= 1e-5, `${key}: #max-rel is ${r.maxRel}`);
      // The plain loop is an RMSNorm pre-norm's baseline only.
      assert.equal(r.js === "—", want.kind === "layer" || want.postGamma || want.input2 || want.rotary, `${key}: #js-time ${r.js}`);
      t.diagnostic(`${key}: ${r.status.text} (max error ${r.maxError}, max rel ${r.maxRel})`);
    }
    // A control changed by hand makes the problem custom.
    await page.selectOption("#preset", "gemma3");
    await page.uncheck("#post-gamma");
    assert.equal(await page.inputValue("#preset"), "custom");
  } finally {
    if (backend === "cpu") await chooseBackend("webgpu");
  }
});

test("demo output dtype: an f16 output from f32 data, an f32 output from f16 data, LayerNorm; a bad γ offset is the library's ShapeError", async () => {
  await setProblem({ rows: 4, hidden: 768, kind: "layer", outputDtype: "f16" });
  let status = await settle(() => page.click("#run"));
  assert.equal(status.state, "done", status.text);
  assert.match(status.text, /^Done: 4 × 768 rows in f32 on WebGPU, matches the f64 reference \(within 1\.00e-3 relative\): LayerNorm, with a residual, output f16\.$/);
  assert.equal((await page.textContent("#result-dtype")).trim(), "f32 → f16");
  assert.match(await page.textContent("#error-note"), /^f16 output, against the f64 reference \(one f16 rounding/);
  assert.ok(Number.parseFloat(await page.textContent("#max-rel")) <= 1e-3);

  await setProblem({ rows: 4, hidden: 768, dtype: "f16", outputDtype: "f32", postGamma: true, gammaOffset: "1" });
  status = await settle(() => page.click("#run"));
  assert.equal(status.state, "done", status.text);
  assert.match(status.text, /within 1\.00e-5 relative\): RMSNorm, the sandwich, with a residual, γ \+ 1, output f32\.$/);
  assert.match(await page.textContent("#error-note"), /^f32 output, against the f64 reference of the same halves/);
  assert.ok(Number.parseFloat(await page.textContent("#max-rel")) <= 1e-5, "f32 results from halves are f32-exact");

  await setProblem({ rows: 2, hidden: 8, gammaOffset: "huge" });
  const bad = await settle(() => page.click("#run"));
  assert.equal(bad.state, "error", bad.text);
  assert.match(bad.text, /^ShapeError: gammaOffset:/);
  await setProblem({ rows: 2, hidden: 6, outputDtype: "f16" });
  const odd = await settle(() => page.click("#run"));
  assert.match(odd.text, /^ShapeError: hidden:/);
  await setProblem({ rows: 2, hidden: 8 });
});

/** Runs the size sweep; returns its series, each with its point count, and the table's rows. */
async function runSweep() {
  await page.click("#sweep");
  await progressThrough("sweep-progress", "sweep");
  const state = await page.getAttribute("#status", "data-state");
  assert.equal(state, "done", await page.textContent("#status"));
  const sizes = await page.$eval("#sweep-progress", (p) => p.max);
  const series = await page.$$eval("#chart polyline", (ls) =>
    ls.map((l) => ({ key: l.dataset.series, points: l.getAttribute("points").trim().split(/\s+/).length })),
  );
  const table = await page.$$eval("#sweep-table tbody tr", (rows) => rows.map((r) => [...r.cells].map((c) => c.textContent)));
  return { sizes, series, table };
}

test("demo size sweep (#sweep) shows progress and draws WebGPU, the CPU backend and the JS loop", async (t) => {
  await setProblem({ rows: 4, hidden: 4096 });
  const { sizes, series, table } = await runSweep();
  assert.deepEqual(series, [
    { key: "gpu", points: sizes },
    { key: "cpu", points: sizes },
    { key: "js", points: sizes },
  ]);
  assert.equal(table.length, sizes);
  for (const row of table) {
    assert.equal(row.length, 5, "rows × hidden, elements, WebGPU, CPU backend, JS loop");
    for (const ms of row.slice(2)) assert.ok(Number.parseFloat(ms) > 0, `a positive time in ${row.join(" | ")}`);
  }
  for (const key of ["gpu", "cpu", "js"]) assert.ok(await page.isVisible(`.legend .key-${key}`), `legend ${key}`);
  assert.equal(await page.getAttribute("#adapter", "data-backend"), "webgpu", "the sweep leaves the page's backend as it was");
  t.diagnostic(`sweep: ${await page.textContent("#chart-desc")}`);
});

test("demo pipeline (#pipeline): 32 layers three ways, progress shown, the final outputs agree", async (t) => {
  await setProblem({ rows: 4, hidden: 256 });
  await page.fill("#pipeline-rows", "1");
  await page.click("#pipeline");
  await progressThrough("pipeline-progress", "pipeline");
  const state = await page.getAttribute("#status", "data-state");
  assert.equal(state, "done", await page.textContent("#status"));
  const rows = await page.$$eval("#pipeline-results tbody tr", (trs) =>
    trs.map((tr) => ({ way: tr.dataset.way, cells: [...tr.cells].map((c) => c.textContent.trim()) })),
  );
  assert.deepEqual(rows.map((r) => r.way), ["resident", "inplace", "roundtrip"]);
  for (const { way, cells } of rows) {
    const [chain, layer, ratio] = cells.slice(1, 4).map((c) => Number.parseFloat(c));
    assert.ok(chain > 0 && layer > 0 && Math.abs(chain / 32 - layer) < 1e-3, `${way}: ${cells}`);
    assert.ok(ratio > 0, `${way}: ratio ${cells[3]}`);
  }
  assert.equal(rows[0].cells[3], "1.00×");
  const rel = Number.parseFloat(await page.textContent("#pipeline-max-rel"));
  assert.ok(Number.isFinite(rel) && rel < 1e-4, `#pipeline-max-rel is ${rel}`);
  assert.match(await page.textContent("#pipeline-results"), /The three final outputs agree/);
  t.diagnostic(`pipeline 1 × 256: ${rows.map((r) => r.cells.join(" | ")).join("; ")}; agreement ${rel}`);
  t.diagnostic(await page.textContent("#pipeline-results .aside"));
});

test("demo interop (#interop): the app's matmul, norm.encode and the app's next matmul in one submit, then the buffer as a run argument; every check against f64 passes", async (t) => {
  await setProblem({ rows: 4, hidden: 256 });
  await page.click("#interop");
  await page.waitForFunction(() => ["done", "mismatch", "error"].includes(document.querySelector("#status").dataset.state) && document.querySelector("#interop-label").textContent !== "Recording…", null, { timeout: 60_000 });
  assert.equal(await page.getAttribute("#status", "data-state"), "done", await page.textContent("#status"));
  const steps = await page.$$eval("#interop-table tbody tr", (trs) => trs.map((tr) => [...tr.cells].map((c) => c.textContent.trim())));
  assert.equal(steps.length, 4);
  assert.match(steps[1][2], /max rel\. error vs f64 .*; sum exact/);
  assert.match(steps[3][2], /equal to step 2 bit for bit/);
  assert.equal(await page.textContent("#interop-verdict"), "Every check passed.");
  t.diagnostic(steps.map((r) => r.join(" | ")).join("; "));
});

test("demo backend control: CPU gives backend \"cpu\" and correct results, f32 and f16, and the pipeline", async (t) => {
  const r = await chooseBackend("cpu");
  assert.equal(r.backend, "cpu");
  assert.equal(await page.isDisabled("#interop"), true, "the interop card needs WebGPU");
  assert.match(r.field, /^CPU \(WebAssembly SIMD, this thread\)chosen/);
  assert.match(r.kind, /CPU backend/);
  assert.match(r.status, /Ready on the CPU backend/);

  await setProblem({ rows: 6, hidden: 1000 });
  const status = await settle(() => page.click("#run"));
  assert.equal(status.state, "done", status.text);
  assert.match(status.text, /6 × 1000 rows in f32 on the CPU backend, matches the f64 reference/);
  const maxError = Number.parseFloat(await page.textContent("#max-error"));
  const maxRel = Number.parseFloat(await page.textContent("#max-rel"));
  assert.ok(Number.isFinite(maxError) && maxError < 1e-4, `#max-error is ${maxError}`);
  assert.ok(Number.isFinite(maxRel) && maxRel <= 1e-5, `#max-rel is ${maxRel}`);
  assert.ok(parseMs(await page.textContent("#time")) > 0, "end-to-end time shown");
  assert.ok(parseMs(await page.textContent("#kernel-time")) > 0, "kernel time shown");
  assert.match(await page.textContent("#kernel-note"), /timeDispatches, K = 1 → \d+, median of 3; wall clock \(the CPU backend has no GPU timestamps\)/);
  t.diagnostic(`CPU 6 × 1000: max error ${maxError}, ${await page.textContent("#time")} end to end, kernel ${await page.textContent("#kernel-time")}, JS loop ${await page.textContent("#js-time")}`);

  await setProblem({ rows: 8, hidden: 768, dtype: "f16" });
  const f16 = await settle(() => page.click("#run"));
  assert.equal(f16.state, "done", f16.text);
  assert.match(f16.text, /8 × 768 rows in f16 on the CPU backend/);
  assert.ok(Number.parseFloat(await page.textContent("#max-rel")) <= 1e-3);
  await page.check("#dtype-f32");

  await setProblem({ rows: 2, hidden: 4, eps: "-1" });
  const bad = await settle(() => page.click("#run"));
  assert.equal(bad.state, "error", bad.text);
  assert.match(bad.text, /^ShapeError: eps:/);

  // The pipeline card's GPU-resident and in-place chains run on the CPU backend's tensors.
  await setProblem({ rows: 4, hidden: 256 });
  await page.fill("#pipeline-rows", "2");
  await page.click("#pipeline");
  await progressThrough("pipeline-progress", "pipeline");
  assert.equal(await page.getAttribute("#status", "data-state"), "done", await page.textContent("#status"));
  assert.match(await page.textContent("#pipeline-results"), /The three final outputs agree/);
  assert.ok(Number.parseFloat(await page.textContent("#pipeline-max-rel")) < 1e-4);
  assert.match(await page.textContent("#pipeline-results .aside"), /tensors live in wasm memory: no GPU buffers/);
});

test("demo backend control: back to Auto", async () => {
  const want = (await fallbackAdapter()) ? "cpu" : "webgpu";
  const r = await chooseBackend("auto", want);
  assert.match(r.field, /auto:/);
  assert.doesNotMatch(page.url(), /backend=/, "auto is the default address");
});

test("demo screenshot after a run is saved to test-results/demo.png", async (t) => {
  await setProblem({ rows: 8, hidden: 768 });
  const status = await settle(() => page.click("#run"));
  assert.equal(status.state, "done", status.text);
  assert.ok(Number.parseFloat(await page.textContent("#max-error")) < 1e-4);
  await mkdir(join(ROOT, "test-results"), { recursive: true });
  await page.screenshot({ path: SCREENSHOT, fullPage: true });
  t.diagnostic(`screenshot: ${SCREENSHOT}`);
});

/**
 * Loads the demo (`query`: e.g. "?backend=webgpu") with `script` run before the page's own, in
 * a fresh context; with the CPU backend running, a Run must match the reference too.
 */
async function withInitScript(script, query = "") {
  const context = await browser.newContext();
  const own = [];
  const p = await watchedPage(context, own);
  await p.addInitScript(script);
  await p.goto(server.url + query);
  await p.waitForSelector('#status[data-state="ready"], #status[data-state="unavailable"], #status[data-state="error"]', { timeout: 20_000 });
  const result = {
    state: await p.getAttribute("#status", "data-state"),
    backend: await p.getAttribute("#adapter", "data-backend"),
    panelVisible: await p.isVisible("#no-webgpu"),
    cpuNoteVisible: await p.isVisible("#no-webgpu-cpu"),
    reason: await p.textContent("#no-webgpu-reason"),
    panelText: await p.textContent("#no-webgpu"),
    runDisabled: await p.isDisabled("#run"),
    problems: own,
  };
  if (result.state === "ready") {
    await p.fill("#rows", "3");
    await p.fill("#hidden", "100");
    await p.click("#run");
    await p.waitForSelector('#status:not([data-state="running"]):not([data-state="ready"])', { timeout: 30_000 });
    result.run = (await p.textContent("#status")).trim();
  }
  await context.close();
  return result;
}

const NO_NAVIGATOR_GPU = () => {
  delete Navigator.prototype.gpu;
};
const NO_ADAPTER = () => {
  GPU.prototype.requestAdapter = async () => null;
};

test("demo without navigator.gpu, on Auto: the panel says why and that the CPU backend runs; Run works", async () => {
  const r = await withInitScript(NO_NAVIGATOR_GPU);
  assert.equal(r.state, "ready");
  assert.equal(r.backend, "cpu");
  assert.ok(r.panelVisible, "#no-webgpu is shown");
  assert.ok(r.cpuNoteVisible, "#no-webgpu-cpu is shown");
  assert.match(r.reason, /navigator\.gpu/);
  assert.match(r.panelText, /The CPU backend is running instead/);
  assert.match(r.panelText, /enable-unsafe-webgpu/);
  assert.equal(r.runDisabled, false, "#run is enabled");
  assert.match(r.run, /^Done: 3 × 100 rows in f32 on the CPU backend, matches the f64 reference/);
  assert.deepEqual(r.problems, []);
});

test("demo without navigator.gpu, WebGPU chosen: the how-to-enable panel, #run disabled", async () => {
  const r = await withInitScript(NO_NAVIGATOR_GPU, "?backend=webgpu");
  assert.equal(r.state, "unavailable");
  assert.ok(r.panelVisible, "#no-webgpu is shown");
  assert.equal(r.cpuNoteVisible, false);
  assert.match(r.reason, /^WebGpuUnavailableError: navigator\.gpu/);
  assert.match(r.panelText, /enable-unsafe-webgpu/);
  assert.match(r.panelText, /choose Auto\s+or CPU/);
  assert.ok(r.runDisabled, "#run stays disabled");
  assert.deepEqual(r.problems, []);
});

test("demo with no adapter: WebGPU chosen shows WebGpuUnavailableError; Auto runs on the CPU backend", async () => {
  const r = await withInitScript(NO_ADAPTER, "?backend=webgpu");
  assert.equal(r.state, "unavailable");
  assert.ok(r.panelVisible, "#no-webgpu is shown");
  assert.match(r.reason, /^WebGpuUnavailableError: /);
  assert.ok(r.runDisabled, "#run stays disabled");
  assert.deepEqual(r.problems, []);

  const auto = await withInitScript(NO_ADAPTER);
  assert.equal(auto.state, "ready");
  assert.equal(auto.backend, "cpu");
  assert.ok(auto.panelVisible && auto.cpuNoteVisible, "the panel, with the CPU note");
  assert.match(auto.reason, /^WebGpuUnavailableError: /);
  assert.match(auto.run, /on the CPU backend, matches the f64 reference/);
  assert.deepEqual(auto.problems, []);
});

test("demo: no console error or uncaught page error", () => {
  assert.deepEqual(problems, []);
});
