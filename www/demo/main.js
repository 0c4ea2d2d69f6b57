// The demo page: one FusedRmsNorm instance shared by the cards, each card's button running one
// task at a time. Loaded by www/index.html.
import init, { FusedRmsNorm } from "../pkg/webgpu_rmsnorm.js";
import { describeAdapter, showAdapter, showUnavailable, whyNoGpu } from "./adapter-panel.js";
import { $, setStatus, showError } from "./dom.js";
import { setTimerNote } from "./kernel-time.js";
import { pipeline } from "./pipeline-panel.js";
import { runOnce } from "./result-view.js";
import { drawEmptySweep, sweep } from "./size-sweep.js";

let norm = null;
let busy = false;

function setBusy(on) {
  busy = on;
  for (const id of ["run", "sweep", "pipeline"]) $(id).disabled = on || !norm;
  $("controls").setAttribute("aria-busy", String(on));
}

/** Runs `task(norm)` unless another is running: the cards share one instance and one status. */
async function exclusive(task) {
  if (busy || !norm) return;
  setBusy(true);
  try {
    await task(norm);
  } finally {
    setBusy(false);
  }
}

const onSubmit = (form, task) =>
  $(form).addEventListener("submit", (e) => {
    e.preventDefault();
    exclusive(task);
  });

async function start() {
  onSubmit("controls", runOnce);
  $("sweep").addEventListener("click", () => exclusive(sweep));
  onSubmit("pipeline-form", pipeline);
  drawEmptySweep(Number($("hidden").value) || 768);

  if (!("gpu" in navigator) || !navigator.gpu) {
    showUnavailable(whyNoGpu());
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
  setTimerNote(await describeAdapter());
  setBusy(false);
  setStatus("ready", "Ready: set a problem and press Run.");
}

start();
