// The Adapter card: what the package runs on (vendor, architecture, device, fallback or not),
// the limits and features that decide what it can do there, and the panel shown instead when
// the browser has no WebGPU.
import { $, setStatus } from "./dom.js";

const field = (name) => $("adapter").querySelector(`[data-field="${name}"]`);

export function showUnavailable(reason) {
  $("no-webgpu").hidden = false;
  $("no-webgpu-reason").textContent = reason;
  setStatus("unavailable", "WebGPU is not available in this browser: see the panel above.");
  for (const f of ["vendor", "architecture", "device", "fallback", "limits", "features"]) field(f).textContent = "—";
  $("adapter").removeAttribute("aria-busy");
}

/** Why navigator.gpu is missing: off in this browser, or a page that is not a secure context. */
export function whyNoGpu() {
  return window.isSecureContext
    ? "navigator.gpu is undefined: this browser has WebGPU turned off or does not support it."
    : `navigator.gpu is undefined: this page (${location.origin}) is not a secure context.`;
}

export function showAdapter(info) {
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
  const l = adapter.limits;
  const mib = (b) => `${Math.round(b / 2 ** 20)} MiB`;
  field("limits").textContent =
    `storage binding ${mib(l.maxStorageBufferBindingSize)} · buffer ${mib(l.maxBufferSize)} · ` +
    `workgroup ${l.maxComputeInvocationsPerWorkgroup} invocations · ${l.maxComputeWorkgroupsPerDimension} workgroups per dimension`;
  const wanted = ["shader-f16", "subgroups", "timestamp-query"];
  field("features").textContent = wanted.map((f) => `${f} ${adapter.features.has(f) ? "yes" : "no"}`).join(" · ");
}

/**
 * Shows the adapter's limits and returns a note on how the kernel time is measured: the
 * package exposes neither its adapter nor timestamps, so the page asks for an adapter of its
 * own to tell whether gpuTime has timestamp-query to work with.
 */
export async function describeAdapter() {
  let offered = false;
  try {
    const adapter = await navigator.gpu.requestAdapter();
    offered = Boolean(adapter?.features.has("timestamp-query"));
    if (adapter) showLimits(adapter);
  } catch {
    // Only a note and the limits panel depend on it.
  }
  return offered
    ? "This adapter has timestamp-query: the kernel time is the compute pass's GPU time from timestamps (gpuTime), per dispatch."
    : "This adapter offers no timestamp queries: the kernel time is the wall-clock slope over K dispatches in one submission.";
}
