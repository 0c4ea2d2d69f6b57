// The demo page (www/) as `bash scripts/demo.sh` serves it: www/ at /, pkg/ at /pkg/.
// Drives it through its controls like a user, and leaves a screenshot in test-results/.
//
//   node --test --test-reporter=spec tests/e2e/
import { test as nodeTest, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";

import { serve } from "../../scripts/serve.mjs";
import { ROOT, assertBuilt, launch, watchedPage } from "./browser.mjs";

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

async function setProblem({ rows, hidden, eps = "1e-6", seed = "1", bias = true, beta = true, dtype = "f32" }) {
  await page.fill("#rows", String(rows));
  await page.fill("#hidden", String(hidden));
  await page.fill("#eps", eps);
  await page.fill("#seed", seed);
  await page.setChecked("#bias", bias);
  await page.setChecked("#beta", beta);
  await page.check(`#dtype-${dtype}`);
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

/** "12.3 µs" / "1.20 ms" as milliseconds; NaN when it is not a time. */
function parseMs(text) {
  const m = /^\s*([\d.]+(?:e[-+]?\d+)?)\s*(µs|ms|s)\s*$/.exec(text);
  if (!m) return NaN;
  return Number(m[1]) * { "µs": 1e-3, ms: 1, s: 1e3 }[m[2]];
}

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

test("demo size sweep (#sweep) shows progress and draws both series", async (t) => {
  await setProblem({ rows: 4, hidden: 4096 });
  await page.click("#sweep");
  await progressThrough("sweep-progress", "sweep");
  const state = await page.getAttribute("#status", "data-state");
  assert.equal(state, "done", await page.textContent("#status"));
  const sizes = await page.$eval("#sweep-progress", (p) => p.max);
  const series = await page.$$eval("#chart polyline", (ls) =>
    ls.map((l) => ({ key: l.dataset.series, points: l.getAttribute("points").trim().split(/\s+/).length })),
  );
  assert.deepEqual(series, [
    { key: "gpu", points: sizes },
    { key: "js", points: sizes },
  ]);
  assert.equal(await page.$$eval("#sweep-table tbody tr", (rows) => rows.length), sizes);
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

test("demo screenshot after a run is saved to test-results/demo.png", async (t) => {
  await setProblem({ rows: 8, hidden: 768 });
  const status = await settle(() => page.click("#run"));
  assert.equal(status.state, "done", status.text);
  assert.ok(Number.parseFloat(await page.textContent("#max-error")) < 1e-4);
  await mkdir(join(ROOT, "test-results"), { recursive: true });
  await page.screenshot({ path: SCREENSHOT, fullPage: true });
  t.diagnostic(`screenshot: ${SCREENSHOT}`);
});

/** Loads the demo with `script` run before the page's own, in a fresh context. */
async function withInitScript(script) {
  const context = await browser.newContext();
  const own = [];
  const p = await watchedPage(context, own);
  await p.addInitScript(script);
  await p.goto(server.url);
  await p.waitForSelector('#status[data-state="unavailable"], #status[data-state="error"]', { timeout: 20_000 });
  const result = {
    state: await p.getAttribute("#status", "data-state"),
    panelVisible: await p.isVisible("#no-webgpu"),
    reason: await p.textContent("#no-webgpu-reason"),
    panelText: await p.textContent("#no-webgpu"),
    runDisabled: await p.isDisabled("#run"),
    problems: own,
  };
  await context.close();
  return result;
}

test("demo shows the how-to-enable panel when navigator.gpu is absent", async () => {
  const r = await withInitScript(() => {
    delete Navigator.prototype.gpu;
  });
  assert.equal(r.state, "unavailable");
  assert.ok(r.panelVisible, "#no-webgpu is shown");
  assert.match(r.reason, /navigator\.gpu/);
  assert.match(r.panelText, /enable-unsafe-webgpu/);
  assert.ok(r.runDisabled, "#run stays disabled");
  assert.deepEqual(r.problems, []);
});

test("demo shows the panel when create() rejects with WebGpuUnavailableError (no adapter)", async () => {
  const r = await withInitScript(() => {
    GPU.prototype.requestAdapter = async () => null;
  });
  assert.equal(r.state, "unavailable");
  assert.ok(r.panelVisible, "#no-webgpu is shown");
  assert.match(r.reason, /^WebGpuUnavailableError: /);
  assert.ok(r.runDisabled, "#run stays disabled");
  assert.deepEqual(r.problems, []);
});

test("demo: no console error or uncaught page error", () => {
  assert.deepEqual(problems, []);
});
