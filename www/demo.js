// The demo page: one FusedRmsNorm instance, a problem built from the controls (f32 or f16),
// its result checked against an f64 reference, its per-dispatch kernel time, a size sweep
// against a plain JavaScript loop, and a 32-layer pipeline run three ways.
import init, { FusedRmsNorm } from "./pkg/webgpu_rmsnorm.js";
import { filled, reference, rng } from "./reference.js";

const $ = (id) => document.getElementById(id);

/** Beyond this the page's own f64 reference and copies would take hundreds of MB. */
const MAX_ELEMENTS = 1 << 23;
/** The sweep stops around a million elements: bigger sizes take seconds on a CPU adapter. */
const SWEEP_MAX_ELEMENTS = 1 << 20;
const PREVIEW_ROWS = 4;
const PREVIEW_COLS = 8;
/** Array arguments of a call; the rest (hidden, eps) are numbers. */
const ARRAY_KEYS = ["input", "residual", "gamma", "bias", "beta"];
/** Largest relative error a run may show: f32 per the README; f16 is one rounding (2⁻¹¹). */
const TOLERANCE = { f32: 1e-5, f16: 1e-3 };
/** Kernel time: the slope of timeDispatches between these two repeat counts… */
const KERNEL_K = [1, 21];
/** …grown until the difference is this many ms, well above the page's timer resolution. */
const KERNEL_MIN_SPAN_MS = 2;
const KERNEL_MAX_K = 2001;
const PIPELINE_LAYERS = 32;

let norm = null;
let busy = false;

// ---------------------------------------------------------------- inputs and references

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

// ---------------------------------------------------------------- f16 bits

const f32Scratch = new Float32Array(1);
const u32Scratch = new Uint32Array(f32Scratch.buffer);

/**
 * The IEEE binary16 bits nearest to `x` (which is first rounded to f32), ties to even:
 * overflow goes to ±Infinity, values below half the smallest subnormal to ±0, NaN stays a
 * (quiet) NaN.
 */
function f32ToF16Bits(x) {
  f32Scratch[0] = x;
  const b = u32Scratch[0];
  const sign = (b >>> 16) & 0x8000;
  const exp = (b >>> 23) & 0xff;
  const mant = b & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 | (mant >>> 13) : 0);
  const e = exp - 127 + 15; // the f16 biased exponent
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    // Subnormal half (or zero): the value is m · 2⁻²⁴ with m = (1.mant · 2²³) >> (14 − e).
    if (e < -10) return sign; // below 2⁻²⁵, half the smallest subnormal: rounds to ±0
    const m = mant | 0x800000;
    const shift = 14 - e; // 14..24
    const half = 1 << (shift - 1);
    const rest = m & ((1 << shift) - 1);
    let h = m >>> shift;
    if (rest > half || (rest === half && h & 1)) h++; // a carry into the exponent is right
    return sign | h;
  }
  let h = (e << 10) | (mant >>> 13);
  const rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && h & 1)) h++; // may carry up to 0x7c00: Infinity
  return sign | h;
}

/** The value of binary16 bits `h`, exactly. */
function f16BitsToF32(h) {
  const sign = h & 0x8000 ? -1 : 1;
  const e = (h >>> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0) return sign * m * 2 ** -24;
  if (e === 0x1f) return m ? NaN : sign * Infinity;
  return sign * (1024 + m) * 2 ** (e - 25);
}

function toF16(a) {
  const h = new Uint16Array(a.length);
  for (let i = 0; i < a.length; i++) h[i] = f32ToF16Bits(a[i]);
  return h;
}

function fromF16(h) {
  const a = new Float32Array(h.length);
  for (let i = 0; i < h.length; i++) a[i] = f16BitsToF32(h[i]);
  return a;
}

/**
 * What the GPU gets (`gpu`: f32 arrays, or Uint16Arrays of halves) and the same values as
 * f32 arrays (`host`), which the reference and the plain loop use: in f16 the reference is
 * that of the very halves the kernel read.
 */
function withDtype(args, dtype) {
  if (dtype !== "f16") return { gpu: args, host: args };
  const gpu = { ...args };
  const host = { ...args };
  for (const k of ARRAY_KEYS) {
    if (!args[k]) continue;
    gpu[k] = toF16(args[k]);
    host[k] = fromF16(gpu[k]);
  }
  return { gpu, host };
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
  for (const f of ["vendor", "architecture", "device", "fallback", "limits", "features"]) field(f).textContent = "—";
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

/** The limits that decide what the package can do here: the largest row and call, the tiling. */
function showLimits(adapter) {
  if (!adapter) return;
  const l = adapter.limits;
  const mib = (b) => `${Math.round(b / 2 ** 20)} MiB`;
  field("limits").textContent =
    `storage binding ${mib(l.maxStorageBufferBindingSize)} · buffer ${mib(l.maxBufferSize)} · ` +
    `workgroup ${l.maxComputeInvocationsPerWorkgroup} invocations · ${l.maxComputeWorkgroupsPerDimension} workgroups per dimension`;
  const wanted = ["shader-f16", "subgroups", "timestamp-query"];
  field("features").textContent = wanted.map((f) => `${f} ${adapter.features.has(f) ? "yes" : "no"}`).join(" · ");
}

function setBusy(on) {
  busy = on;
  for (const id of ["run", "sweep", "pipeline"]) $(id).disabled = on || !norm;
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
  const dtype = document.querySelector('input[name="dtype"]:checked')?.value === "f16" ? "f16" : "f32";
  const width = Number.isInteger(hidden) && hidden > 0 ? hidden : 1;
  if (rows * width > MAX_ELEMENTS) {
    throw pageError(
      "RangeError",
      `rows × hidden: expected at most ${MAX_ELEMENTS.toLocaleString("en")} elements in this demo, got ${(rows * width).toLocaleString("en")}`,
    );
  }
  return { rows, hidden, bias: $("bias").checked, beta: $("beta").checked, eps, seed, dtype };
}

// ---------------------------------------------------------------- one run

const RESULT_FIELDS = ["max-error", "max-rel", "time", "kernel-time", "js-time"];

async function runOnce() {
  if (busy || !norm) return;
  setBusy(true);
  setStatus("running", "Running…");
  for (const id of RESULT_FIELDS) $(id).textContent = "…";
  for (const id of ["first-time", "error-note"]) $(id).textContent = "\u00a0";
  try {
    const problem = readProblem();
    const { dtype } = problem;
    showDtype(dtype);
    const { gpu: args, host } = withDtype(makeArgs(problem), dtype);
    // The first call for a new size also creates that size's buffers; report it apart from
    // the steady state an app running many layers sees.
    const t0 = performance.now();
    const out = await norm.run(args);
    const firstMs = performance.now() - t0;
    const warm = [];
    for (let spent = firstMs; warm.length < 3 && spent < 1000; spent += warm.at(-1)) {
      const t = performance.now();
      await norm.run(args);
      warm.push(performance.now() - t);
    }
    const gpuMs = warm.length ? median(warm) : firstMs;
    $("time").textContent = fmtMs(gpuMs);
    $("first-time").textContent = warm.length ? `first call ${fmtMs(firstMs)}, then median of ${warm.length}` : "first call";
    showKernelTime(problem.rows > 0 ? await kernelTime(args, dtype) : null);
    const jsMs = timeSync(() => plainLoop(host));

    const y = dtype === "f16" ? fromF16(out) : out;
    const ref = reference(host);
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
    const tol = TOLERANCE[dtype];
    $("max-error").textContent = fmtErr(maxAbs);
    $("error-note").textContent =
      dtype === "f16"
        ? "f16 output, against the f64 reference of the same halves (one f16 rounding ≈ 4.9e-4 relative)"
        : "f32 output, against the f64 reference";
    $("max-rel").textContent = fmtErr(maxRel);
    $("js-time").textContent = fmtMs(jsMs);
    renderOutput(y, ref.y, problem);
    const ok = maxRel <= tol;
    const verdict = ok ? "matches the f64 reference" : "DOES NOT match the f64 reference";
    setStatus(
      ok ? "done" : "mismatch",
      `Done: ${problem.rows} × ${args.hidden} ${problem.rows === 1 ? "row" : "rows"} in ${dtype}, ${verdict} (within ${fmtErr(tol)} relative).`,
    );
  } catch (e) {
    for (const id of RESULT_FIELDS) $(id).textContent = "—";
    $("kernel-note").textContent = "slope of timeDispatches(args, K) over K";
    showError(e);
  } finally {
    setBusy(false);
  }
}

function showDtype(dtype) {
  const badge = $("result-dtype");
  badge.textContent = dtype;
  badge.dataset.dtype = dtype;
}

/** Set once at start: why the kernel time is a wall-clock slope (the note's tooltip). */
let timestampNote = "The package gives the page no GPU timestamps, so this is wall-clock time.";

/**
 * The kernel's cost per dispatch on GPU-resident data: every array uploaded once, then the
 * slope of `timeDispatches(args, K)` (K dispatches in one submission, plus one fixed readback)
 * between two K, median of 3 slopes. Upload, submission and readback cancel out of the slope.
 */
async function kernelTime(args, dtype) {
  const tensors = [];
  const resident = { hidden: args.hidden };
  if (args.eps !== undefined) resident.eps = args.eps;
  try {
    for (const k of ARRAY_KEYS) {
      if (!args[k]) continue;
      const t = norm.upload(args[k], { dtype });
      tensors.push(t);
      resident[k] = t;
    }
    await norm.timeDispatches(resident, 1); // warm-up: buffers of this size
    let [lo, hi] = KERNEL_K;
    const pairs = async () => {
      const slopes = [];
      const spans = [];
      for (let i = 0; i < 3; i++) {
        const a = await norm.timeDispatches(resident, lo);
        const b = await norm.timeDispatches(resident, hi);
        slopes.push((b - a) / (hi - lo));
        spans.push(b - a);
      }
      return { ms: median(slopes), span: median(spans) };
    };
    let m = await pairs();
    // A fast GPU does 20 small dispatches within the timer's resolution (0.1 ms in a page
    // that is not cross-origin isolated): take more, for a span of a few milliseconds.
    if (m.span < KERNEL_MIN_SPAN_MS && hi < KERNEL_MAX_K) {
      const perDispatch = Math.max(m.ms, 1e-4);
      hi = Math.min(KERNEL_MAX_K, lo + Math.ceil((2.5 * KERNEL_MIN_SPAN_MS) / perDispatch));
      m = await pairs();
    }
    // GPU timestamps, where the adapter has them: the pass's own time over `hi` dispatches.
    const gpu = [];
    for (let i = 0; i < 3; i++) {
      const t = await norm.gpuTime(resident, hi);
      if (t === undefined) break;
      gpu.push(t / hi);
    }
    return { ms: m.ms, lo, hi, gpu: gpu.length ? median(gpu) : undefined };
  } finally {
    for (const t of tensors) t.free();
  }
}

function showKernelTime(k) {
  if (!k) {
    $("kernel-time").textContent = "—";
    $("kernel-note").textContent = "no rows to time";
    return;
  }
  const slope = k.ms > 0 ? fmtMs(k.ms) : "below resolution";
  if (k.gpu !== undefined) {
    $("kernel-time").textContent = fmtMs(k.gpu);
    $("kernel-time").dataset.ms = String(k.gpu);
    $("kernel-note").textContent = `GPU timestamps (gpuTime, ${k.hi} dispatches, median of 3); wall-clock slope ${slope}`;
  } else {
    $("kernel-time").textContent = slope;
    $("kernel-time").dataset.ms = String(k.ms);
    $("kernel-note").textContent = `slope of timeDispatches, K = ${k.lo} → ${k.hi}, median of 3; wall clock (this adapter has no timestamp-query)`;
  }
  $("kernel-note").title = timestampNote;
}

function renderOutput(y, refY, { rows, hidden, dtype }) {
  const out = $("output");
  if (rows === 0) {
    const type = dtype === "f16" ? "Uint16Array" : "Float32Array";
    out.innerHTML = `<p class="placeholder">rows = 0: the output is an empty ${type}.</p>`;
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
  const decoded = dtype === "f16" ? ", f16 bits decoded" : "";
  caption.textContent = `First ${shownCols} of ${hidden} values in the first ${shownRows} of ${rows} rows${decoded} (hover a value for its f64 reference).`;
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
    setStatus("running", `Size sweep: ${sizes.length} sizes at hidden ${base.hidden}, ${base.dtype}…`);
    for (const [k, rows] of sizes.entries()) {
      label.textContent = `Measuring ${rows} × ${base.hidden} (${k + 1} of ${sizes.length})…`;
      // Let the label and bar paint before the measurement occupies the thread.
      await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
      const { gpu: args, host } = withDtype(makeArgs({ ...base, rows }), base.dtype);
      const gpu = await timeGpu(args);
      const js = median([0, 1, 2].map(() => timeSync(() => plainLoop(host))));
      points.push({ n: rows * base.hidden, gpu, js });
      progress.value = k + 1;
      const tr = tbody.insertRow();
      for (const text of [`${rows} × ${base.hidden}`, fmtCount(rows * base.hidden), gpu.toFixed(3), js.toFixed(3)]) {
        tr.insertCell().textContent = text;
      }
      drawChart(sizes.map((r) => r * base.hidden), points);
    }
    label.textContent = `Done: ${sizes.length} sizes.`;
    setStatus("done", `Size sweep done: ${sizes.length} sizes from ${fmtCount(sizes[0] * base.hidden)} to ${fmtCount(sizes.at(-1) * base.hidden)} elements, ${base.dtype}.`);
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

// ---------------------------------------------------------------- pipeline

/** The chain's inputs: a first input and residual, and each layer's own weights. */
function makeChain({ rows, hidden, bias, beta, eps, seed }) {
  const next = rng(seed);
  const x0 = filled(rows * hidden, next, -2, 2);
  const r0 = filled(rows * hidden, next, -2, 2);
  const layers = [];
  for (let l = 0; l < PIPELINE_LAYERS; l++) {
    const w = { gamma: filled(hidden, next, 0.5, 1.5) };
    if (bias) w.bias = filled(hidden, next, -0.5, 0.5);
    if (beta) w.beta = filled(hidden, next, -0.1, 0.1);
    layers.push(w);
  }
  const common = { hidden };
  if (eps !== undefined) common.eps = eps;
  return { x0, r0, layers, common };
}

const F32 = { dtype: "f32" };

/** output: "gpu": each layer's output and sum become the next input and residual. */
async function chainResident({ x0, r0, common }, weights, onLayer) {
  let x = norm.upload(x0, F32);
  let r = norm.upload(r0, F32);
  try {
    for (const w of weights) {
      const next = await norm.runWithSum({ ...common, ...w, input: x, residual: r, output: "gpu" });
      x.free();
      r.free();
      x = next.output;
      r = next.sum;
      onLayer();
    }
    return await x.read();
  } finally {
    x.free();
    r.free();
  }
}

/** inPlace: true: the same two tensors all the way; residual ← sum, input ← output. */
async function chainInPlace({ x0, r0, common }, weights, onLayer) {
  const x = norm.upload(x0, F32);
  const r = norm.upload(r0, F32);
  try {
    for (const w of weights) {
      await norm.run({ ...common, ...w, input: x, residual: r, inPlace: true });
      onLayer();
    }
    return await x.read();
  } finally {
    x.free();
    r.free();
  }
}

/** Float32Arrays every call: all arrays uploaded, output and sum read back. */
async function chainRoundTrip({ x0, r0, layers, common }, _weights, onLayer) {
  let x = x0;
  let r = r0;
  for (const w of layers) {
    ({ output: x, sum: r } = await norm.runWithSum({ ...common, ...w, input: x, residual: r }));
    onLayer();
  }
  return x;
}

/** The chain in JavaScript: f32 between layers, each norm in f64 (the reference's). */
function chainReference({ x0, r0, layers, common }) {
  let x = x0;
  let r = r0;
  for (const w of layers) {
    const args = { ...common, ...w, input: x, residual: r };
    const sum = new Float32Array(x.length);
    for (let o = 0; o < x.length; o += common.hidden) {
      for (let i = 0; i < common.hidden; i++) {
        const s = Math.fround(x[o + i] + r[o + i]);
        sum[o + i] = w.bias ? Math.fround(s + w.bias[i]) : s;
      }
    }
    x = Float32Array.from(reference(args).y);
    r = sum;
  }
  return x;
}

/** max |a − b| and that relative to max |b|; NaN anywhere is NaN. */
function difference(a, b) {
  let maxAbs = 0;
  let maxMag = 0;
  for (let i = 0; i < a.length; i++) {
    const d = Math.abs(a[i] - b[i]);
    if (Number.isNaN(d)) return { abs: NaN, rel: NaN };
    maxAbs = Math.max(maxAbs, d);
    maxMag = Math.max(maxMag, Math.abs(b[i]));
  }
  return { abs: maxAbs, rel: maxMag > 0 ? maxAbs / maxMag : maxAbs };
}

const WAYS = [
  { key: "resident", name: "GPU-resident", api: 'runWithSum({…, output: "gpu"})', chain: chainResident },
  { key: "inplace", name: "In place", api: "run({…, inPlace: true})", chain: chainInPlace },
  { key: "roundtrip", name: "Float32Array round trips", api: "runWithSum({…}) on arrays", chain: chainRoundTrip },
];
const PIPELINE_REPS = 5;

function readPipelineRows() {
  const text = $("pipeline-rows").value.trim();
  const rows = Number(text);
  if (text === "" || !Number.isInteger(rows) || rows < 1) {
    throw pageError("RangeError", `pipeline rows: expected an integer >= 1, got ${JSON.stringify($("pipeline-rows").value)}`);
  }
  return rows;
}

async function pipeline() {
  if (busy || !norm) return;
  setBusy(true);
  const progress = $("pipeline-progress");
  const label = $("pipeline-label");
  const results = $("pipeline-results");
  const weightTensors = [];
  try {
    const base = readProblem();
    const rows = readPipelineRows();
    const { hidden } = base;
    if (!(Number.isInteger(hidden) && hidden >= 1)) {
      throw pageError("ShapeError", `hidden: expected an integer >= 1 for the pipeline, got ${hidden}`);
    }
    if (rows * hidden > MAX_ELEMENTS) {
      throw pageError("RangeError", `pipeline rows × hidden: expected at most ${MAX_ELEMENTS.toLocaleString("en")} elements, got ${(rows * hidden).toLocaleString("en")}`);
    }
    const problem = makeChain({ ...base, rows });
    const inUseBefore = inUse();
    // A model's weights are uploaded once: the two GPU ways share these tensors.
    const weights = problem.layers.map((w) => {
      const t = {};
      for (const [k, a] of Object.entries(w)) weightTensors.push((t[k] = norm.upload(a, F32)));
      return t;
    });

    const chains = WAYS.length * (1 + PIPELINE_REPS);
    progress.max = chains * PIPELINE_LAYERS;
    progress.value = 0;
    results.innerHTML = '<p class="placeholder">Measuring…</p>';
    setStatus("running", `Pipeline: ${PIPELINE_LAYERS} layers of ${rows} × ${hidden}, three ways…`);
    const times = Object.fromEntries(WAYS.map((w) => [w.key, []]));
    const finals = {};
    let done = 0;
    // A warm-up round (buffers of this size are created once), then rounds of every way in
    // turn, so that drift in the machine's speed does not favour one of them.
    for (let round = 0; round <= PIPELINE_REPS; round++) {
      for (const way of WAYS) {
        label.textContent = round === 0
          ? `${way.name}: warm-up (${done + 1} of ${chains})…`
          : `${way.name}: chain ${round} of ${PIPELINE_REPS} (${done + 1} of ${chains})…`;
        await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
        const t0 = performance.now();
        finals[way.key] = await way.chain(problem, weights, () => progress.value++);
        const ms = performance.now() - t0;
        if (round > 0) times[way.key].push(ms);
        done++;
        progress.value = done * PIPELINE_LAYERS;
      }
    }
    for (const t of weightTensors.splice(0)) t.free();
    const inUseAfter = inUse();

    label.textContent = "Checking against a JavaScript chain…";
    await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
    const refY = chainReference(problem);
    const rows3 = WAYS.map((way) => ({
      ...way,
      ms: median(times[way.key]),
      diff: difference(finals[way.key], finals.resident),
    }));
    const agree = Math.max(...rows3.map((r) => r.diff.rel));
    const agreeAbs = Math.max(...rows3.map((r) => r.diff.abs));
    const vsRef = difference(finals.resident, refY);
    renderPipeline({ rows, hidden, rows3, agree, agreeAbs, vsRef, inUseBefore, inUseAfter });
    label.textContent = `Done: ${chains} chains of ${PIPELINE_LAYERS} layers.`;
    const ok = agree < 1e-4 && !Number.isNaN(agree);
    setStatus(
      ok ? "done" : "mismatch",
      `Pipeline done: ${PIPELINE_LAYERS} layers of ${rows} × ${hidden}; the three ways ${ok ? "agree" : "DO NOT agree"}.`,
    );
  } catch (e) {
    label.textContent = "Stopped by an error.";
    results.innerHTML = '<p class="placeholder">No result: see the status above.</p>';
    showError(e);
  } finally {
    for (const t of weightTensors) t.free();
    setBusy(false);
  }
}

/** GPU buffers held by tensors or calls (not idle in the pool). */
function inUse() {
  const s = norm.debugStats();
  return s.liveBuffers - s.idleBuffers;
}

function renderPipeline({ rows, hidden, rows3, agree, agreeAbs, vsRef, inUseBefore, inUseAfter }) {
  const box = document.createElement("div");
  box.className = "table-box";
  const table = document.createElement("table");
  table.className = "data";
  table.id = "pipeline-table";
  const head = table.createTHead().insertRow();
  for (const text of ["way", "ms per chain", "ms per layer", "× GPU-resident", "max |Δ| vs GPU-resident"]) {
    const th = document.createElement("th");
    th.scope = "col";
    if (text === "way") th.className = "way";
    th.textContent = text;
    head.append(th);
  }
  const body = table.createTBody();
  const resident = rows3[0].ms;
  for (const r of rows3) {
    const tr = body.insertRow();
    tr.dataset.way = r.key;
    const way = tr.insertCell();
    way.className = "way";
    const name = document.createElement("strong");
    name.textContent = r.name;
    const api = document.createElement("code");
    api.textContent = r.api;
    way.append(name, " ", api);
    const cells = [
      r.ms.toFixed(3),
      (r.ms / PIPELINE_LAYERS).toFixed(4),
      `${(r.ms / resident).toFixed(2)}×`,
      r.key === "resident" ? "—" : fmtErr(r.diff.abs),
    ];
    for (const text of cells) tr.insertCell().textContent = text;
  }
  const caption = table.createCaption();
  caption.textContent = `${PIPELINE_LAYERS} layers of ${rows} × ${hidden}, f32; median of ${PIPELINE_REPS} chains after a warm-up; each chain includes its first upload and final read.`;
  box.append(table);

  const ok = agree < 1e-4;
  const verdict = document.createElement("p");
  verdict.className = "verdict";
  verdict.dataset.state = ok ? "ok" : "bad";
  const rel = document.createElement("span");
  rel.id = "pipeline-max-rel";
  rel.className = "num";
  rel.textContent = fmtErr(agree);
  const abs = document.createElement("span");
  abs.className = "num";
  abs.textContent = fmtErr(agreeAbs);
  verdict.append(
    ok ? "The three final outputs agree: " : "The three final outputs DO NOT agree: ",
    "max difference ", abs, " (", rel, " relative to the largest |y|).",
  );
  const aside = document.createElement("p");
  aside.className = "aside";
  aside.textContent =
    `Against a JavaScript chain (f64 norm per layer, f32 between layers): max difference ${fmtErr(vsRef.abs)} (${fmtErr(vsRef.rel)} relative). ` +
    `GPU buffers in use before → after: ${inUseBefore} → ${inUseAfter} (every tensor freed; the rest of the buffers stay pooled for reuse).`;
  $("pipeline-results").replaceChildren(box, verdict, aside);
}

// ---------------------------------------------------------------- start

async function start() {
  $("controls").addEventListener("submit", (e) => {
    e.preventDefault();
    runOnce();
  });
  $("sweep").addEventListener("click", () => sweep());
  $("pipeline-form").addEventListener("submit", (e) => {
    e.preventDefault();
    pipeline();
  });
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
  timestampNote = await describeTimestamps();
  setBusy(false);
  setStatus("ready", "Ready: set a problem and press Run.");
}

/**
 * The package opens its device without timestamp queries and gives the page none, so the
 * kernel time is a wall-clock slope; say whether the adapter would have offered them.
 */
async function describeTimestamps() {
  let offered = false;
  try {
    const adapter = await navigator.gpu.requestAdapter();
    offered = Boolean(adapter?.features.has("timestamp-query"));
    showLimits(adapter);
  } catch {
    // Only a note and the limits panel depend on it.
  }
  return offered
    ? "This adapter has timestamp-query: the kernel time is the compute pass's GPU time from timestamps (gpuTime), per dispatch."
    : "This adapter offers no timestamp queries: the kernel time is the wall-clock slope over K dispatches in one submission.";
}

start();
