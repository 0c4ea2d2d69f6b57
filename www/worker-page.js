// The worker example's page side: build inputs, post them to the worker (worker.js), check
// what comes back. Nothing of the package is imported here; the worker owns the wasm instance
// and the GPU device, if it has one. Loaded by www/worker.html.
import { compare } from "./lib/reference.js";
import { randomArgs, rng } from "./lib/seeded.js";
import { renderPreview } from "./demo/output-preview.js";

const $ = (id) => document.getElementById(id);
const TOL = 1e-5;
const MAX_ELEMENTS = 1 << 23;

function setStatus(state, text) {
  $("status").dataset.state = state;
  $("status").textContent = text;
}

/** `hidden` and `eps` go to the library as typed, so bad values earn its named errors. */
function readProblem() {
  const rows = Number($("rows").value);
  const hidden = Number($("hidden").value);
  if (!Number.isInteger(rows) || rows < 0) throw new RangeError(`rows: expected an integer ≥ 0, got ${$("rows").value}`);
  const width = Number.isInteger(hidden) && hidden > 0 ? hidden : 1;
  if (rows * width > MAX_ELEMENTS) throw new RangeError(`rows × hidden: expected at most ${MAX_ELEMENTS} elements, got ${rows * width}`);
  const eps = $("eps").value.trim() === "" ? undefined : Number($("eps").value);
  const shape = { rows, hidden: width, bias: $("bias").checked, beta: $("beta").checked, eps };
  const args = { ...randomArgs(shape, rng(Number($("seed").value) || 0)), hidden };
  return { rows, args };
}

const worker = new Worker(new URL("./worker.js", import.meta.url), { type: "module" });
const pending = new Map();
let nextId = 1;

// A worker that fails to load (a 404, a syntax error) reports nothing through messages.
worker.addEventListener("error", (e) => {
  console.error(`worker failed: ${e.message || "could not load worker.js"}`);
  setStatus("error", `The worker failed: ${e.message || "could not load worker.js"}`);
});

worker.addEventListener("message", ({ data }) => {
  if (data.type === "ready") {
    const info = data.adapterInfo;
    for (const key of ["vendor", "architecture"]) $("adapter").querySelector(`[data-field="${key}"]`).textContent = info[key] || "(not reported)";
    $("adapter").querySelector('[data-field="scope"]').textContent = data.scope;
    $("adapter").querySelector('[data-field="backend"]').textContent = data.backend === "cpu" ? "CPU (WebAssembly SIMD, in the worker)" : "WebGPU";
    $("adapter").querySelector('[data-field="fallback"]').innerHTML = info.isFallbackAdapter
      ? '<span class="badge fallback">Fallback (CPU)</span>'
      : '<span class="badge hardware">Hardware</span>';
    $("adapter").setAttribute("aria-busy", "false");
    $("run").disabled = false;
    setStatus("ready", data.backend === "cpu" ? "Ready: the worker runs the CPU backend." : "Ready: the worker holds a WebGPU device.");
    return;
  }
  if (data.id === null) {
    setStatus(data.name === "WebGpuUnavailableError" ? "unavailable" : "error", `${data.name}: ${data.message}`);
    return;
  }
  pending.get(data.id)?.(data);
  pending.delete(data.id);
});

function runInWorker(args) {
  const id = nextId++;
  return new Promise((resolve) => {
    pending.set(id, resolve);
    worker.postMessage({ id, args });
  });
}

$("controls").addEventListener("submit", async (event) => {
  event.preventDefault();
  if ($("run").disabled) return;
  $("run").disabled = true;
  setStatus("running", "Running in the worker…");
  try {
    const { rows, args } = readProblem();
    const t0 = performance.now();
    const reply = await runInWorker(args);
    const roundTrip = performance.now() - t0;
    if (reply.type === "error") {
      setStatus("error", `${reply.name}: ${reply.message}`);
      return;
    }
    const { ok, maxAbs, maxRel } = compare(args, reply.output, { tol: TOL });
    $("max-error").textContent = maxAbs.toExponential(2);
    $("max-rel").textContent = maxRel.toExponential(2);
    $("time").textContent = `${reply.ms.toFixed(2)} ms`;
    $("round-trip").textContent = `${roundTrip.toFixed(2)} ms`;
    renderPreview(reply.output, args, { rows, hidden: args.hidden });
    setStatus(ok ? "done" : "mismatch", `${rows} × ${args.hidden}: ${ok ? "matches" : "does NOT match"} the f64 reference (tolerance ${TOL} relative).`);
  } catch (e) {
    setStatus("error", `${e.name}: ${e.message}`);
  } finally {
    $("run").disabled = false;
  }
});
