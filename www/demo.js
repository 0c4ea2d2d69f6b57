// The demo page: one FusedRmsNorm instance, a problem built from the controls, its result
// checked against an f64 reference, and a size sweep against a plain JavaScript loop.
import init, { FusedRmsNorm } from "./pkg/webgpu_rmsnorm.js";

const $ = (id) => document.getElementById(id);

/** Beyond this the page's own f64 reference and copies would take hundreds of MB. */
const MAX_ELEMENTS = 1 << 23;
/** The sweep stops around a million elements: bigger sizes take seconds on a CPU adapter. */
const SWEEP_MAX_ELEMENTS = 1 << 20;
const PREVIEW_ROWS = 4;
const PREVIEW_COLS = 8;

let norm = null;
let busy = false;

// ---------------------------------------------------------------- inputs and references

/** mulberry32: a seed gives the same inputs on every browser. */
function rng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function filled(n, next, lo, hi) {
  const a = new Float32Array(n);
  for (let i = 0; i < n; i++) a[i] = lo + (hi - lo) * next();
  return a;
}

/**
 * `hidden` goes to the library exactly as typed, so a bad value earns its ShapeError; the
 * arrays only need some length meanwhile.
 */
function makeArgs({ rows, hidden, bias, beta, eps, seed }) {
  const width = Number.isInteger(hidden) && hidden > 0 ? hidden : 1;
  const next = rng(seed);
  const args = {
    input: filled(rows * width, next, -2, 2),
    residual: filled(rows * width, next, -2, 2),
    gamma: filled(width, next, 0.5, 1.5),
    hidden,
  };
  if (bias) args.bias = filled(width, next, -0.5, 0.5);
  if (beta) args.beta = filled(width, next, -0.1, 0.1);
  if (eps !== undefined) args.eps = eps;
  return args;
}

/**
 * The contract: v summed in f32 in the kernel's order (input + residual, then + bias), the
 * mean square, rsqrt and scaling in f64. Also returns each element's magnitude
 * |v·inv·γ| + |β|, which a relative error is measured against.
 */
function reference({ input, residual, gamma, beta, bias, hidden, eps = 1e-6 }) {
  const n = input.length;
  const y = new Float64Array(n);
  const scale = new Float64Array(n);
  const v = new Float64Array(hidden);
  for (let o = 0; o < n; o += hidden) {
    let ss = 0;
    for (let i = 0; i < hidden; i++) {
      const s = Math.fround(input[o + i] + residual[o + i]);
      v[i] = bias ? Math.fround(s + bias[i]) : s;
      ss += v[i] * v[i];
    }
    const inv = 1 / Math.sqrt(ss / hidden + eps);
    for (let i = 0; i < hidden; i++) {
      const core = v[i] * inv * gamma[i];
      const b = beta ? beta[i] : 0;
      y[o + i] = core + b;
      scale[o + i] = Math.abs(core) + Math.abs(b);
    }
  }
  return { y, scale };
}

/** What an app would write without the package: the baseline of the size sweep. */
function plainLoop({ input, residual, gamma, beta, bias, hidden, eps = 1e-6 }) {
  const n = input.length;
  const y = new Float32Array(n);
  for (let o = 0; o < n; o += hidden) {
    let ss = 0;
    for (let i = 0; i < hidden; i++) {
      const v = input[o + i] + residual[o + i] + (bias ? bias[i] : 0);
      y[o + i] = v;
      ss += v * v;
    }
    const inv = 1 / Math.sqrt(ss / hidden + eps);
    for (let i = 0; i < hidden; i++) y[o + i] = y[o + i] * inv * gamma[i] + (beta ? beta[i] : 0);
  }
  return y;
}

// ---------------------------------------------------------------- formatting

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

function fmtMs(ms) {
  if (!Number.isFinite(ms)) return "—";
  if (ms >= 100) return `${ms.toFixed(0)} ms`;
  if (ms >= 10) return `${ms.toFixed(1)} ms`;
  if (ms >= 0.1) return `${ms.toFixed(2)} ms`;
  return `${(ms * 1000).toFixed(1)} µs`;
}

function fmtCount(n) {
  if (n >= 1 << 20 && n % (1 << 20) === 0) return `${n / (1 << 20)}M`;
  if (n >= 1 << 10 && n % (1 << 10) === 0) return `${n / (1 << 10)}K`;
  return String(n);
}

/** A power of ten of milliseconds as an axis label: 100 ms, 1 ms, 10 µs. */
function fmtDecade(d) {
  if (d >= 3) return `${10 ** (d - 3)} s`;
  if (d >= 0) return `${10 ** d} ms`;
  if (d >= -3) return `${Math.round(10 ** (d + 3))} µs`;
  return `${Math.round(10 ** (d + 6))} ns`;
}

/** Small numbers stay readable and `parseFloat` reads them back (tests rely on that). */
function fmtErr(x) {
  return x === 0 ? "0" : x.toExponential(2);
}

// ---------------------------------------------------------------- status and errors

function setStatus(state, text) {
  const s = $("status");
  s.dataset.state = state;
  s.textContent = text;
}

function showError(e) {
  const s = $("status");
  s.dataset.state = "error";
  s.replaceChildren();
  const name = document.createElement("strong");
  name.className = "err-name";
  name.textContent = e?.name ?? "Error";
  s.append(name, `: ${e?.message ?? String(e)}`);
}

function pageError(name, message) {
  const e = new Error(message);
  e.name = name;
  return e;
}

function showUnavailable(reason) {
  $("no-webgpu").hidden = false;
  $("no-webgpu-reason").textContent = reason;
  setStatus("unavailable", "WebGPU is not available in this browser: see the panel above.");
  for (const f of ["vendor", "architecture", "device", "fallback"]) field(f).textContent = "—";
  $("adapter").removeAttribute("aria-busy");
}

function field(name) {
  return $("adapter").querySelector(`[data-field="${name}"]`);
}

function showAdapter(info) {
  field("vendor").textContent = info.vendor || "(not reported)";
  field("architecture").textContent = info.architecture || "(not reported)";
  field("device").textContent = info.device || info.description || "(not reported)";
  const badge = document.createElement("span");
  badge.className = `badge ${info.isFallbackAdapter ? "fallback" : "hardware"}`;
  badge.textContent = info.isFallbackAdapter ? "Fallback (software / CPU)" : "Hardware GPU";
  field("fallback").replaceChildren(badge);
  $("adapter").removeAttribute("aria-busy");
}

function setBusy(on) {
  busy = on;
  for (const id of ["run", "sweep"]) $(id).disabled = on || !norm;
  $("controls").setAttribute("aria-busy", String(on));
}

// ---------------------------------------------------------------- reading the controls

function readProblem() {
  const rowsText = $("rows").value.trim();
  const rows = Number(rowsText);
  if (rowsText === "" || !Number.isInteger(rows) || rows < 0) {
    throw pageError("RangeError", `rows: expected an integer >= 0, got ${JSON.stringify($("rows").value)}`);
  }
  // An empty field is 0 to the library, which then says why 0 is wrong.
  const hidden = Number($("hidden").value.trim() || 0);
  const epsText = $("eps").value.trim();
  const eps = epsText === "" ? undefined : Number(epsText);
  const seed = Number($("seed").value) || 0;
  const width = Number.isInteger(hidden) && hidden > 0 ? hidden : 1;
  if (rows * width > MAX_ELEMENTS) {
    throw pageError(
      "RangeError",
      `rows × hidden: expected at most ${MAX_ELEMENTS.toLocaleString("en")} elements in this demo, got ${(rows * width).toLocaleString("en")}`,
    );
  }
  return { rows, hidden, bias: $("bias").checked, beta: $("beta").checked, eps, seed };
}

// ---------------------------------------------------------------- one run

async function runOnce() {
  if (busy || !norm) return;
  setBusy(true);
  setStatus("running", "Running…");
  for (const id of ["max-error", "max-rel", "time", "js-time"]) $(id).textContent = "…";
  $("first-time").textContent = "\u00a0";
  try {
    const problem = readProblem();
    const args = makeArgs(problem);
    // The first call for a new size also creates that size's buffers; report it apart from
    // the steady state an app running many layers sees.
    const t0 = performance.now();
    const y = await norm.run(args);
    const firstMs = performance.now() - t0;
    const warm = [];
    for (let spent = firstMs; warm.length < 3 && spent < 1000; spent += warm.at(-1)) {
      const t = performance.now();
      await norm.run(args);
      warm.push(performance.now() - t);
    }
    const gpuMs = warm.length ? median(warm) : firstMs;
    const jsMs = timeSync(() => plainLoop(args));

    const ref = reference(args);
    let maxAbs = 0;
    let maxRel = 0;
    for (let i = 0; i < y.length; i++) {
      const err = Math.abs(y[i] - ref.y[i]);
      // NaN must not hide behind Math.max's comparisons.
      if (Number.isNaN(err)) {
        maxAbs = maxRel = NaN;
        break;
      }
      maxAbs = Math.max(maxAbs, err);
      maxRel = Math.max(maxRel, ref.scale[i] > 0 ? err / ref.scale[i] : err);
    }
    $("max-error").textContent = fmtErr(maxAbs);
    $("max-rel").textContent = fmtErr(maxRel);
    $("time").textContent = fmtMs(gpuMs);
    $("first-time").textContent = warm.length ? `first call ${fmtMs(firstMs)}, then median of ${warm.length}` : "first call";
    $("js-time").textContent = fmtMs(jsMs);
    renderOutput(y, ref.y, problem);
    const verdict = maxRel <= 1e-5 ? "matches the f64 reference" : "DOES NOT match the f64 reference";
    setStatus(
      maxRel <= 1e-5 ? "done" : "mismatch",
      `Done: ${problem.rows} × ${args.hidden} ${problem.rows === 1 ? "row" : "rows"}, ${verdict}.`,
    );
  } catch (e) {
    for (const id of ["max-error", "max-rel", "time", "js-time"]) $(id).textContent = "—";
    showError(e);
  } finally {
    setBusy(false);
  }
}

function renderOutput(y, refY, { rows, hidden }) {
  const out = $("output");
  if (rows === 0) {
    out.innerHTML = '<p class="placeholder">rows = 0: the output is an empty Float32Array.</p>';
    return;
  }
  const shownRows = Math.min(rows, PREVIEW_ROWS);
  const shownCols = Math.min(hidden, PREVIEW_COLS);
  const table = document.createElement("table");
  table.className = "data";
  const head = table.createTHead().insertRow();
  const corner = document.createElement("th");
  corner.scope = "col";
  corner.textContent = "row \\ col";
  head.append(corner);
  for (let c = 0; c < shownCols; c++) {
    const th = document.createElement("th");
    th.scope = "col";
    th.textContent = String(c);
    head.append(th);
  }
  const body = table.createTBody();
  for (let r = 0; r < shownRows; r++) {
    const tr = body.insertRow();
    const th = document.createElement("th");
    th.scope = "row";
    th.textContent = String(r);
    tr.append(th);
    for (let c = 0; c < shownCols; c++) {
      const i = r * hidden + c;
      const td = tr.insertCell();
      td.textContent = y[i].toFixed(4);
      td.title = `reference ${refY[i].toPrecision(9)}`;
    }
  }
  const caption = table.createCaption();
  caption.textContent = `First ${shownCols} of ${hidden} values in the first ${shownRows} of ${rows} rows (hover a value for its f64 reference).`;
  out.replaceChildren(table);
}

// ---------------------------------------------------------------- size sweep

/**
 * Milliseconds per call of a synchronous `fn`: repeated until 10 ms pass, since timers in a
 * page that is not cross-origin isolated are coarsened to 0.1 ms.
 */
function timeSync(fn) {
  let reps = 0;
  const t0 = performance.now();
  let t = t0;
  do {
    fn();
    reps++;
    t = performance.now();
  } while (t - t0 < 10);
  return (t - t0) / reps;
}

async function timeGpu(args) {
  await norm.run(args); // warm-up: buffers of this size are created once and reused
  const times = [];
  for (let k = 0; k < 3; k++) {
    const t0 = performance.now();
    await norm.run(args);
    times.push(performance.now() - t0);
  }
  return median(times);
}

/** Rows 1, 2, 4, … up to about SWEEP_MAX_ELEMENTS elements. */
function sweepRows(hidden) {
  const rows = [1];
  while (rows.at(-1) * 2 * hidden <= SWEEP_MAX_ELEMENTS) rows.push(rows.at(-1) * 2);
  return rows;
}

async function sweep() {
  if (busy || !norm) return;
  setBusy(true);
  const progress = $("sweep-progress");
  const label = $("sweep-label");
  const tbody = $("sweep-table").tBodies[0];
  tbody.replaceChildren();
  try {
    const base = readProblem();
    if (!(Number.isInteger(base.hidden) && base.hidden >= 1)) {
      throw pageError("ShapeError", `hidden: expected an integer >= 1 for the sweep, got ${base.hidden}`);
    }
    const sizes = sweepRows(base.hidden);
    const points = [];
    progress.max = sizes.length;
    progress.value = 0;
    drawChart(sizes.map((r) => r * base.hidden), points);
    setStatus("running", `Size sweep: ${sizes.length} sizes at hidden ${base.hidden}…`);
    for (const [k, rows] of sizes.entries()) {
      label.textContent = `Measuring ${rows} × ${base.hidden} (${k + 1} of ${sizes.length})…`;
      // Let the label and bar paint before the measurement occupies the thread.
      await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
      const args = makeArgs({ ...base, rows });
      const gpu = await timeGpu(args);
      const js = median([0, 1, 2].map(() => timeSync(() => plainLoop(args))));
      points.push({ n: rows * base.hidden, gpu, js });
      progress.value = k + 1;
      const tr = tbody.insertRow();
      for (const text of [`${rows} × ${base.hidden}`, fmtCount(rows * base.hidden), gpu.toFixed(3), js.toFixed(3)]) {
        tr.insertCell().textContent = text;
      }
      drawChart(sizes.map((r) => r * base.hidden), points);
    }
    label.textContent = `Done: ${sizes.length} sizes.`;
    setStatus("done", `Size sweep done: ${sizes.length} sizes from ${fmtCount(sizes[0] * base.hidden)} to ${fmtCount(sizes.at(-1) * base.hidden)} elements.`);
  } catch (e) {
    label.textContent = "Stopped by an error.";
    showError(e);
  } finally {
    setBusy(false);
  }
}

const SVG = "http://www.w3.org/2000/svg";

function svgEl(name, attrs, text) {
  const el = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  return el;
}

/** Log-log axes fixed by the planned sizes, so points fill in left to right as they come. */
function drawChart(sizes, points, emptyText = "Measuring…") {
  const svg = $("chart");
  const W = 960, H = 320, L = 64, R = 20, T = 26, B = 44;
  for (const el of [...svg.children]) if (el.tagName !== "title" && el.tagName !== "desc") el.remove();

  const lx0 = Math.log2(sizes[0]);
  const lx1 = Math.max(Math.log2(sizes.at(-1)), lx0 + 1);
  const x = (n) => L + ((Math.log2(n) - lx0) / (lx1 - lx0)) * (W - L - R);

  const times = points.flatMap((p) => [p.gpu, p.js]).filter((t) => t > 0);
  const ly0 = Math.floor(Math.log10(times.length ? Math.min(...times) : 0.01));
  const ly1 = Math.max(Math.ceil(Math.log10(times.length ? Math.max(...times) : 10)), ly0 + 1);
  const y = (ms) => T + (1 - (Math.log10(Math.max(ms, 10 ** ly0)) - ly0) / (ly1 - ly0)) * (H - T - B);

  const g = svgEl("g", {});
  for (let d = ly0; d <= ly1; d++) {
    g.append(svgEl("line", { class: "grid-line", x1: L, x2: W - R, y1: y(10 ** d), y2: y(10 ** d) }));
    g.append(svgEl("text", { x: L - 8, y: y(10 ** d) + 4, "text-anchor": "end" }, fmtDecade(d)));
  }
  const step = Math.ceil(sizes.length / 8);
  sizes.forEach((n, i) => {
    if (i % step) return;
    g.append(svgEl("line", { class: "grid-line", x1: x(n), x2: x(n), y1: T, y2: H - B }));
    g.append(svgEl("text", { x: x(n), y: H - B + 16, "text-anchor": "middle" }, fmtCount(n)));
  });
  g.append(svgEl("line", { class: "axis", x1: L, x2: W - R, y1: H - B, y2: H - B }));
  g.append(svgEl("line", { class: "axis", x1: L, x2: L, y1: T, y2: H - B }));
  g.append(svgEl("text", { x: (L + W - R) / 2, y: H - 8, "text-anchor": "middle" }, "elements (rows × hidden)"));
  g.append(svgEl("text", { x: L, y: T - 12, "text-anchor": "start" }, "time per call (log scale)"));
  svg.append(g);

  if (!points.length) {
    svg.append(svgEl("text", { class: "empty", x: (L + W - R) / 2, y: (T + H - B) / 2, "text-anchor": "middle" }, emptyText));
  }
  for (const key of ["gpu", "js"]) {
    const pts = points.map((p) => `${x(p.n).toFixed(1)},${y(p[key]).toFixed(1)}`).join(" ");
    svg.append(svgEl("polyline", { class: `series ${key}`, points: pts, "data-series": key }));
    for (const p of points) {
      const c = svgEl("circle", { class: key, cx: x(p.n).toFixed(1), cy: y(p[key]).toFixed(1), r: 3.5 });
      c.append(svgEl("title", {}, `${fmtCount(p.n)} elements: ${fmtMs(p[key])} (${key === "gpu" ? "WebGPU" : "JS loop"})`));
      svg.append(c);
    }
  }
  $("chart-desc").textContent = points.length
    ? points.map((p) => `${fmtCount(p.n)} elements: WebGPU ${fmtMs(p.gpu)}, JS loop ${fmtMs(p.js)}`).join("; ")
    : emptyText;
}

// ---------------------------------------------------------------- start

async function start() {
  $("controls").addEventListener("submit", (e) => {
    e.preventDefault();
    runOnce();
  });
  $("sweep").addEventListener("click", () => sweep());
  drawChart(
    sweepRows(Number($("hidden").value) || 768).map((r) => r * (Number($("hidden").value) || 768)),
    [],
    "Not measured yet: press “Run size sweep”.",
  );

  if (!("gpu" in navigator) || !navigator.gpu) {
    const why = window.isSecureContext
      ? "navigator.gpu is undefined: this browser has WebGPU turned off or does not support it."
      : `navigator.gpu is undefined: this page (${location.origin}) is not a secure context.`;
    showUnavailable(why);
    return;
  }
  try {
    setStatus("loading", "Loading the WebAssembly module…");
    await init();
    setStatus("loading", "Opening a WebGPU device…");
    norm = await FusedRmsNorm.create();
  } catch (e) {
    if (e?.name === "WebGpuUnavailableError") showUnavailable(`${e.name}: ${e.message}`);
    else showError(e);
    return;
  }
  showAdapter(norm.adapterInfo);
  setBusy(false);
  setStatus("ready", "Ready: set a problem and press Run.");
}

start();
