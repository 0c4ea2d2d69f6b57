// The Size sweep card: the problem in the controls at rows 1, 2, 4, … up to about a million
// elements, each timed on the package (end to end) and as a plain JavaScript loop.
import { plainLoop } from "../lib/plain-loop.js";
import { $, nextFrame, pageError, setStatus, showError } from "./dom.js";
import { fmtCount } from "./format.js";
import { makeArgs, readProblem, withDtype } from "./problem-form.js";
import { drawChart } from "./sweep-chart.js";
import { median, timeSync } from "./timing.js";

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
  drawChart(sweepRows(hidden).map((r) => r * hidden), [], "Not measured yet: press “Run size sweep”.");
}

/** Median ms of three norm.run(args) after a warm-up that creates this size's buffers. */
async function timeRun(norm, args) {
  await norm.run(args);
  const times = [];
  for (let k = 0; k < 3; k++) {
    const t0 = performance.now();
    await norm.run(args);
    times.push(performance.now() - t0);
  }
  return median(times);
}

export async function sweep(norm) {
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
      await nextFrame();
      const { gpu: args, host } = withDtype(makeArgs({ ...base, rows }), base.dtype);
      const gpu = await timeRun(norm, args);
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
  }
}
