// The Pipeline card: a 32-layer residual chain (each layer's output the next input, its sum
// the next residual) run three ways — resident tensors (on the GPU, or in wasm memory on the
// CPU backend), in place, Float32Array round trips — timed, and checked against each other
// and against a JavaScript chain.
import { chainReference } from "../lib/reference.js";
import { filled, rng } from "../lib/seeded.js";
import { $, dataTable, nextFrame, pageError, setStatus, showError } from "./dom.js";
import { fmtErr } from "./format.js";
import { DEMO_RANGES, MAX_ELEMENTS, readProblem } from "./problem-form.js";
import { median } from "./timing.js";

const PIPELINE_LAYERS = 32;
const PIPELINE_REPS = 5;
const F32 = { dtype: "f32" };

/** The chain's inputs: a first input and residual, and each layer's own weights. */
function makeChain({ rows, hidden, bias, beta, eps, seed }) {
  const next = rng(seed);
  const x0 = filled(rows * hidden, next, ...DEMO_RANGES.input);
  const r0 = filled(rows * hidden, next, ...DEMO_RANGES.residual);
  const layers = [];
  for (let l = 0; l < PIPELINE_LAYERS; l++) {
    const w = { gamma: filled(hidden, next, ...DEMO_RANGES.gamma) };
    if (bias) w.bias = filled(hidden, next, ...DEMO_RANGES.bias);
    if (beta) w.beta = filled(hidden, next, ...DEMO_RANGES.beta);
    layers.push(w);
  }
  const common = { hidden };
  if (eps !== undefined) common.eps = eps;
  return { x0, r0, layers, common };
}

/** output: "gpu": each layer's output and sum become the next input and residual. */
async function chainResident(norm, { x0, r0, common }, weights, onLayer) {
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
async function chainInPlace(norm, { x0, r0, common }, weights, onLayer) {
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
async function chainRoundTrip(norm, { x0, r0, layers, common }, _weights, onLayer) {
  let x = x0;
  let r = r0;
  for (const w of layers) {
    ({ output: x, sum: r } = await norm.runWithSum({ ...common, ...w, input: x, residual: r }));
    onLayer();
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
  { key: "resident", name: "GPU-resident", cpuName: "Resident tensors", api: 'runWithSum({…, output: "gpu"})', chain: chainResident },
  { key: "inplace", name: "In place", api: "run({…, inPlace: true})", chain: chainInPlace },
  { key: "roundtrip", name: "Float32Array round trips", api: "runWithSum({…}) on arrays", chain: chainRoundTrip },
];

/** A way's name on `backend`: the CPU backend's tensors live in wasm memory, not on a GPU. */
const nameOn = (way, backend) => (backend === "cpu" && way.cpuName) || way.name;

/** The rows of the chain, and the problem's hidden size checked for a chain of that many. */
function readChainShape() {
  const base = readProblem();
  const text = $("pipeline-rows").value.trim();
  const rows = Number(text);
  if (text === "" || !Number.isInteger(rows) || rows < 1) {
    throw pageError("RangeError", `pipeline rows: expected an integer >= 1, got ${JSON.stringify($("pipeline-rows").value)}`);
  }
  const { hidden } = base;
  if (!(Number.isInteger(hidden) && hidden >= 1)) {
    throw pageError("ShapeError", `hidden: expected an integer >= 1 for the pipeline, got ${hidden}`);
  }
  if (rows * hidden > MAX_ELEMENTS) {
    throw pageError("RangeError", `pipeline rows × hidden: expected at most ${MAX_ELEMENTS.toLocaleString("en")} elements, got ${(rows * hidden).toLocaleString("en")}`);
  }
  return { ...base, rows };
}

/** GPU buffers held by tensors or calls (not idle in the pool). */
function inUse(norm) {
  const s = norm.debugStats();
  return s.liveBuffers - s.idleBuffers;
}

export async function pipeline(norm) {
  const progress = $("pipeline-progress");
  const label = $("pipeline-label");
  const results = $("pipeline-results");
  const weightTensors = [];
  try {
    const shape = readChainShape();
    const { rows, hidden } = shape;
    const problem = makeChain(shape);
    const inUseBefore = inUse(norm);
    // A model's weights are uploaded once: the two ways on tensors share them.
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
        const name = nameOn(way, norm.backend);
        label.textContent = round === 0
          ? `${name}: warm-up (${done + 1} of ${chains})…`
          : `${name}: chain ${round} of ${PIPELINE_REPS} (${done + 1} of ${chains})…`;
        await nextFrame();
        const t0 = performance.now();
        finals[way.key] = await way.chain(norm, problem, weights, () => progress.value++);
        const ms = performance.now() - t0;
        if (round > 0) times[way.key].push(ms);
        done++;
        progress.value = done * PIPELINE_LAYERS;
      }
    }
    for (const t of weightTensors.splice(0)) t.free();
    const inUseAfter = inUse(norm);

    label.textContent = "Checking against a JavaScript chain…";
    await nextFrame();
    const { x0, r0, layers, common } = problem;
    const refY = chainReference({ ...common, input: x0, residual: r0, layers }).output;
    const rows3 = WAYS.map((way) => ({
      ...way,
      ms: median(times[way.key]),
      diff: difference(finals[way.key], finals.resident),
    }));
    const agree = Math.max(...rows3.map((r) => r.diff.rel));
    const agreeAbs = Math.max(...rows3.map((r) => r.diff.abs));
    const vsRef = difference(finals.resident, refY);
    renderPipeline({ rows, hidden, rows3, agree, agreeAbs, vsRef, inUseBefore, inUseAfter, backend: norm.backend });
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
  }
}

function renderPipeline({ rows, hidden, rows3, agree, agreeAbs, vsRef, inUseBefore, inUseAfter, backend }) {
  const resident = nameOn(WAYS[0], backend);
  const columns = ["way", "ms per chain", "ms per layer", `× ${resident}`, `max |Δ| vs ${resident}`];
  const { box, table, body } = dataTable("pipeline-table", columns, { way: "way" });
  const residentMs = rows3[0].ms;
  for (const r of rows3) {
    const tr = body.insertRow();
    tr.dataset.way = r.key;
    const way = tr.insertCell();
    way.className = "way";
    const name = document.createElement("strong");
    name.textContent = nameOn(r, backend);
    const api = document.createElement("code");
    api.textContent = r.api;
    way.append(name, " ", api);
    const cells = [
      r.ms.toFixed(3),
      (r.ms / PIPELINE_LAYERS).toFixed(4),
      `${(r.ms / residentMs).toFixed(2)}×`,
      r.key === "resident" ? "—" : fmtErr(r.diff.abs),
    ];
    for (const text of cells) tr.insertCell().textContent = text;
  }
  const caption = table.createCaption();
  caption.textContent = `${PIPELINE_LAYERS} layers of ${rows} × ${hidden}, f32; median of ${PIPELINE_REPS} chains after a warm-up; each chain includes its first upload and final read.`;

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
    (backend === "cpu"
      ? "On the CPU backend tensors live in wasm memory: no GPU buffers are used."
      : `GPU buffers in use before → after: ${inUseBefore} → ${inUseAfter} (every tensor freed; the rest of the buffers stay pooled for reuse).`);
  $("pipeline-results").replaceChildren(box, verdict, aside);
}
