// The demo page: one FusedRmsNorm instance, on the backend chosen in the Backend control,
// shared by the cards, each card's button running one task at a time. Loaded by www/index.html.
import init, { FusedRmsNorm } from "../pkg/webgpu_rmsnorm.js";
import { resetAdapter, showBackend, showUnavailable } from "./adapter-panel.js";
import { enableChoice, initialChoice, onBackendChange, probeWebGpu, showChoice } from "./backend.js";
import { $, setStatus, showError } from "./dom.js";
import { setTimerNote } from "./kernel-time.js";
import { interop } from "./interop-panel.js";
import { pipeline } from "./pipeline-panel.js";
import { initPresets } from "./presets.js";
import { runOnce } from "./result-view.js";
import { drawEmptySweep, sweep } from "./size-sweep.js";

let norm = null;
let busy = false;

function setBusy(on) {
  busy = on;
  for (const id of ["run", "sweep", "pipeline"]) $(id).disabled = on || !norm;
  // The app's own WebGPU work needs a device to share.
  $("interop").disabled = on || norm?.backend !== "webgpu";
  enableChoice(!on);
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

/**
 * Replaces the instance with one of `choice` ("auto", "webgpu" or "cpu"). WebGPU chosen where
 * there is none stops here, with the panel saying why; the CPU backend always runs.
 */
async function openBackend(choice) {
  norm?.free();
  norm = null;
  resetAdapter();
  let created;
  try {
    setStatus("loading", choice === "cpu" ? "Starting the CPU backend…" : "Opening a WebGPU device…");
    created = await FusedRmsNorm.create({ backend: choice });
  } catch (e) {
    if (e?.name === "WebGpuUnavailableError") showUnavailable(`${e.name}: ${e.message}`, { cpuRunning: false });
    else showError(e);
    return;
  }
  const probe = await probeWebGpu();
  norm = created;
  setTimerNote(showBackend(norm, choice, probe));
  if (norm.backend === "cpu" && !probe.available) showUnavailable(probe.reason, { cpuRunning: true });
  setStatus("ready", `Ready on ${norm.backend === "cpu" ? "the CPU backend" : "WebGPU"}: set a problem and press Run.`);
}

async function useBackend(choice) {
  if (busy) return;
  setBusy(true);
  try {
    await openBackend(choice);
  } finally {
    setBusy(false);
  }
}

async function start() {
  initPresets();
  onSubmit("controls", runOnce);
  $("sweep").addEventListener("click", () => exclusive(sweep));
  onSubmit("pipeline-form", pipeline);
  $("interop").addEventListener("click", () => exclusive(interop));
  onBackendChange(useBackend);
  drawEmptySweep(Number($("hidden").value) || 768);

  const choice = initialChoice();
  showChoice(choice);
  setBusy(true);
  try {
    setStatus("loading", "Loading the WebAssembly module…");
    await init();
  } catch (e) {
    showError(e);
    return;
  } finally {
    setBusy(false);
  }
  await useBackend(choice);
}

start();
