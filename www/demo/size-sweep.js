// The Size sweep card: the problem in the controls at rows 1, 2, 4, … up to about a million
// elements, each timed on the package's WebGPU backend and its CPU backend (end to end) and as
// a plain JavaScript loop. Whichever backend the page is not on gets an instance of its own for
// the sweep; WebGPU is left out where the browser has none.
import { FusedRmsNorm } from "../pkg/webgpu_rmsnorm.js";
import { plainLoop, plainLoopDoes } from "../lib/plain-loop.js";
import { $, nextFrame, pageError, setStatus, showError } from "./dom.js";
import { fmtCount } from "./format.js";
import { makeArgs, readProblem, withDtype } from "./problem-form.js";
import { SERIES, drawChart } from "./sweep-chart.js";
import { median, timeAsync, timeSync } from "./timing.js";

/** Bigger sizes take seconds each on a CPU adapter. */
const SWEEP_MAX_ELEMENTS = 1 << 20;

/** Rows 1, 2, 4, … up to about SWEEP_MAX_ELEMENTS elements. */
function sweepRows(hidden) {
  const rows = [1];
  while (rows.at(-1) * 2 * hidden <= SWEEP_MAX_ELEMENTS) rows.push(rows.at(-1) * 2);
  return rows;
}

/** The empty chart, with the axes the sweep would have at `hidden`. */
export function drawEmptySweep(hidden) {
  drawChart(sweepRows(hidden).map((r) => r * hidden), [], SERIES, "Not measured yet: press “Run size sweep”.");
}

/**
 * Median of three timings of norm.run(args) (each of calls batched over 10 ms at least) after a
 * warm-up that creates this size's buffers.
 */
async function timeRun(norm, args) {
  await norm.run(args);
  const times = [];
  for (let k = 0; k < 3; k++) times.push(await timeAsync(() => norm.run(args)));
  return median(times);
}

/**
 * An instance per backend, { gpu, cpu }: the page's own for its backend, a new one (listed in
 * `made`, to free) for the other; no `gpu` where WebGPU is unavailable.
 */
async function instances(norm) {
  const out = { [norm.backend === "cpu" ? "cpu" : "gpu"]: norm };
  const made = [];
  for (const [key, backend] of [["gpu", "webgpu"], ["cpu", "cpu"]]) {
    if (out[key]) continue;
    try {
      made.push((out[key] = await FusedRmsNorm.create({ backend })));
    } catch (e) {
      if (e?.name !== "WebGpuUnavailableError") throw e;
    }
  }
  return { byKey: out, made };
}

export async function sweep(norm) {
  const progress = $("sweep-progress");
  const label = $("sweep-label");
  const table = $("sweep-table");
  const tbody = table.tBodies[0];
  tbody.replaceChildren();
  let made = [];
  try {
    const base = readProblem();
    if (!(Number.isInteger(base.hidden) && base.hidden >= 1)) {
      throw pageError("ShapeError", `hidden: expected an integer >= 1 for the sweep, got ${base.hidden}`);
    }
    label.textContent = "Opening the backends…";
    const both = await instances(norm);
    made = both.made;
    // The plain loop is an RMSNorm pre-norm: no baseline for LayerNorm or the sandwich.
    const series = SERIES.filter((s) => (s.key === "js" ? plainLoopDoes(base) : both.byKey[s.key]));
    for (const s of SERIES) document.querySelector(`.legend .key-${s.key}`).hidden = !series.includes(s);
    table.dataset.series = series.map((s) => s.key).join(" ");
    const sizes = sweepRows(base.hidden);
    const ns = sizes.map((r) => r * base.hidden);
    const points = [];
    progress.max = sizes.length;
    progress.value = 0;
    drawChart(ns, points, series);
    const names = series.map((s) => s.name).join(", ");
    setStatus("running", `Size sweep: ${sizes.length} sizes at hidden ${base.hidden}, ${base.dtype}, ${names}…`);
    for (const [k, rows] of sizes.entries()) {
      label.textContent = `Measuring ${rows} × ${base.hidden} (${k + 1} of ${sizes.length})…`;
      await nextFrame();
      const { gpu: args, host } = withDtype(makeArgs({ ...base, rows }), base.dtype);
      const point = { n: rows * base.hidden };
      for (const key of ["gpu", "cpu"]) if (both.byKey[key]) point[key] = await timeRun(both.byKey[key], args);
      if (plainLoopDoes(base)) point.js = median([0, 1, 2].map(() => timeSync(() => plainLoop(host))));
      points.push(point);
      progress.value = k + 1;
      const tr = tbody.insertRow();
      const ms = (t) => (t === undefined ? "—" : t.toFixed(3));
      for (const text of [`${rows} × ${base.hidden}`, fmtCount(point.n), ms(point.gpu), ms(point.cpu), ms(point.js)]) {
        tr.insertCell().textContent = text;
      }
      drawChart(ns, points, series);
    }
    label.textContent = `Done: ${sizes.length} sizes.`;
    setStatus("done", `Size sweep done: ${sizes.length} sizes from ${fmtCount(ns[0])} to ${fmtCount(ns.at(-1))} elements, ${base.dtype}; ${names}.`);
  } catch (e) {
    label.textContent = "Stopped by an error.";
    showError(e);
  } finally {
    for (const m of made) m.free();
  }
}
