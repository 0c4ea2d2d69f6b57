// The Backend control (auto / WebGPU / CPU) and what the page can learn about WebGPU here: the
// package says which backend it chose (norm.backend) but not why, so the page asks for an
// adapter of its own, and for the package's own words where there is none.
import { FusedRmsNorm } from "../pkg/webgpu_rmsnorm.js";
import { $ } from "./dom.js";

export const BACKENDS = ["auto", "webgpu", "cpu"];

/** The choice the page opens with: `?backend=cpu` (so a link can name one), else auto. */
export function initialChoice() {
  const asked = new URLSearchParams(location.search).get("backend");
  return BACKENDS.includes(asked) ? asked : "auto";
}

export function showChoice(choice) {
  $(`backend-${choice}`).checked = true;
}

/** Calls `onChoose(choice)` when the user picks a backend; the address keeps the choice. */
export function onBackendChange(onChoose) {
  for (const b of BACKENDS) {
    $(`backend-${b}`).addEventListener("change", (e) => {
      if (!e.target.checked) return;
      const url = new URL(location.href);
      if (b === "auto") url.searchParams.delete("backend");
      else url.searchParams.set("backend", b);
      history.replaceState(null, "", url);
      onChoose(b);
    });
  }
}

/** The control is disabled while a task runs: the cards share the instance it replaces. */
export function enableChoice(on) {
  $("backend-choice").disabled = !on;
}

/**
 * WebGPU here: { available: true, adapter, fallback } with the page's own adapter, or
 * { available: false, reason } with the package's rejection ("WebGpuUnavailableError: …"),
 * which names the cause (no navigator.gpu, not a secure context, no adapter).
 */
export async function probeWebGpu() {
  let adapter = null;
  try {
    adapter = (await navigator.gpu?.requestAdapter()) ?? null;
  } catch {
    // The package's attempt below says why.
  }
  if (adapter) {
    const fallback = Boolean(adapter.info?.isFallbackAdapter ?? adapter.isFallbackAdapter);
    return { available: true, adapter, fallback };
  }
  try {
    (await FusedRmsNorm.create({ backend: "webgpu" })).free();
    return { available: true, adapter: null, fallback: false };
  } catch (e) {
    return { available: false, reason: `${e?.name ?? "Error"}: ${e?.message ?? e}` };
  }
}
