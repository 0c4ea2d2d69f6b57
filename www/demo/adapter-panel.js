// The Backend and adapter card: which backend runs (norm.backend) and why, what it runs on
// (vendor, architecture, device, GPU or not), the limits and features that decide what it can
// do there, and the panel above the cards when the browser has no usable WebGPU.
import { $, setStatus } from "./dom.js";

const FIELDS = ["backend", "vendor", "architecture", "device", "fallback", "limits", "features"];
const field = (name) => $("adapter").querySelector(`[data-field="${name}"]`);

/** While an instance is being created: every field pending, no panel. */
export function resetAdapter() {
  for (const f of FIELDS) field(f).textContent = "…";
  delete $("adapter").dataset.backend;
  $("adapter").setAttribute("aria-busy", "true");
  $("no-webgpu").hidden = true;
}

/**
 * The panel for a browser without usable WebGPU. With the CPU backend running it is a note;
 * with WebGPU chosen it is where the page stops until another backend is chosen.
 */
export function showUnavailable(reason, { cpuRunning }) {
  $("no-webgpu").hidden = false;
  $("no-webgpu-reason").textContent = reason;
  $("no-webgpu-cpu").hidden = !cpuRunning;
  $("no-webgpu-choice").hidden = cpuRunning;
  if (cpuRunning) return;
  setStatus("unavailable", "WebGPU is not available in this browser: see the panel above.");
  for (const f of FIELDS) field(f).textContent = "—";
  $("adapter").removeAttribute("aria-busy");
}

/** Why this backend runs: the user's choice, or what auto found here. */
function why(backend, choice, probe) {
  if (choice !== "auto") return backend === "webgpu" && probe.fallback ? "chosen; on a software adapter, the CPU backend is faster" : "chosen";
  if (backend === "webgpu") return "auto: a hardware GPU adapter";
  if (!probe.available) return "auto: WebGPU is not available here (see above)";
  return probe.fallback ? "auto: WebGPU's adapter here is a software fallback, slower than this" : "auto";
}

/**
 * Fills the card for `norm` (created with `choice`; `probe` from probeWebGpu) and returns a note
 * on how the kernel time can be taken here: GPU timestamps where WebGPU's adapter has
 * timestamp-query, else the wall-clock slope of timeDispatches.
 */
export function showBackend(norm, choice, probe) {
  const { backend } = norm;
  const info = norm.adapterInfo;
  const cpu = backend === "cpu";
  $("adapter").dataset.backend = backend;
  const note = document.createElement("span");
  note.className = "why";
  note.textContent = why(backend, choice, probe);
  field("backend").replaceChildren(cpu ? "CPU (WebAssembly SIMD, this thread)" : "WebGPU", note);
  field("vendor").textContent = info.vendor || (cpu ? "(none: no GPU)" : "(not reported)");
  field("architecture").textContent = info.architecture || "(not reported)";
  field("device").textContent = info.device || info.description || "(not reported)";
  const badge = document.createElement("span");
  badge.className = `badge ${cpu ? "cpu" : info.isFallbackAdapter ? "fallback" : "hardware"}`;
  badge.textContent = cpu ? "CPU backend (no GPU)" : info.isFallbackAdapter ? "Fallback (software / CPU)" : "Hardware GPU";
  field("fallback").replaceChildren(badge);
  $("adapter").removeAttribute("aria-busy");
  if (cpu) {
    const mib = Math.round(norm.debugStats().wasmMemoryBytes / 2 ** 20);
    field("limits").textContent = `no GPU limits: rows of any size fit the wasm memory (${mib} MiB now, grown as needed)`;
    field("features").textContent = "WebAssembly SIMD (simd128) yes · f16 storage yes · GPU timestamps no";
    return "The CPU backend has no GPU timestamps: the kernel time is the wall-clock slope over K calls in one timeDispatches.";
  }
  if (probe.adapter) showLimits(probe.adapter);
  else for (const f of ["limits", "features"]) field(f).textContent = "(not reported)";
  return probe.adapter?.features.has("timestamp-query")
    ? "This adapter has timestamp-query: the kernel time is the compute pass's GPU time from timestamps (gpuTime), per dispatch."
    : "This adapter offers no timestamp queries: the kernel time is the wall-clock slope over K dispatches in one submission.";
}

/**
 * The limits that decide what the package can do on WebGPU: the largest row and call, the
 * tiling. The package exposes no adapter, so these are of the page's own (the same one, asked
 * for the same way).
 */
function showLimits(adapter) {
  const l = adapter.limits;
  const mib = (b) => `${Math.round(b / 2 ** 20)} MiB`;
  field("limits").textContent =
    `storage binding ${mib(l.maxStorageBufferBindingSize)} · buffer ${mib(l.maxBufferSize)} · ` +
    `workgroup ${l.maxComputeInvocationsPerWorkgroup} invocations · ${l.maxComputeWorkgroupsPerDimension} workgroups per dimension`;
  const wanted = ["shader-f16", "subgroups", "timestamp-query"];
  field("features").textContent = wanted.map((f) => `${f} ${adapter.features.has(f) ? "yes" : "no"}`).join(" · ");
}
