// What the pages that time the package against onnxruntime-web share (versus-ort.mjs,
// bench/browser/pipeline-page.mjs): our package and onnxruntime-web's WebGPU execution
// provider opened in one page on one adapter, timings sampled in alternation, and outputs
// compared.
import init, { FusedRmsNorm } from "/pkg/webgpu_rmsnorm.js";
import * as ort from "/ort/ort.webgpu.min.mjs";

export { ort };

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

// Samples every function of `fns` once per round, in an order that rotates each round, so
// that all of them see the same machine: on a CPU adapter a build running next to the
// benchmark changes every timing, and interleaving keeps the ratios fair. Takes between `min`
// and `max` rounds, stopping early once `budgetMs` is spent.
export async function sampleTogether(fns, { min = 5, max = 25, budgetMs = 4000 } = {}) {
  const names = Object.keys(fns);
  const xs = Object.fromEntries(names.map((n) => [n, []]));
  const t0 = performance.now();
  for (let round = 0; round < max && (round < min || performance.now() - t0 < budgetMs); round++) {
    for (let j = 0; j < names.length; j++) {
      const name = names[(round + j) % names.length];
      xs[name].push(await fns[name]());
    }
  }
  return Object.fromEntries(
    names.map((n) => [n, { median: median(xs[n]), n: xs[n].length, min: Math.min(...xs[n]), max: Math.max(...xs[n]) }]),
  );
}

export const elapsed = async (fn) => {
  const t = performance.now();
  await fn();
  return performance.now() - t;
};

// Largest absolute difference, and the same scaled by the reference's largest magnitude.
export function compare(got, want) {
  let maxAbs = 0;
  let scale = 0;
  for (let i = 0; i < want.length; i++) {
    const d = Math.abs(got[i] - want[i]);
    if (Number.isNaN(d)) return { maxAbs: NaN, maxRel: NaN };
    if (d > maxAbs) maxAbs = d;
    scale = Math.max(scale, Math.abs(want[i]));
  }
  return { maxAbs, maxRel: maxAbs / (scale || 1) };
}

export function deviceInfo(info) {
  return info && {
    vendor: info.vendor, architecture: info.architecture, device: info.device,
    description: info.description, isFallbackAdapter: info.isFallbackAdapter,
  };
}

/** Our instance, ORT configured, and what the driver prints about both. */
export async function openBoth() {
  await init();
  const norm = await FusedRmsNorm.create();
  ort.env.wasm.wasmPaths = "/ort/";
  // Extra wasm threads would only be CPU workers competing with a CPU adapter (SwiftShader)
  // for the same cores; none of the measured work is ORT's CPU code.
  ort.env.wasm.numThreads = 1;
  const env = {
    ours: deviceInfo(norm.adapterInfo),
    crossOriginIsolated: self.crossOriginIsolated,
    userAgent: navigator.userAgent,
    ort: ort.env.versions,
  };
  return { norm, env };
}

export function sessionOptions(location) {
  return {
    executionProviders: ["webgpu"],
    preferredOutputLocation: location,
    // Any node the WebGPU EP cannot take would make session creation fail instead of
    // silently running on the CPU: the ORT numbers are WebGPU numbers.
    extra: { session: { disable_cpu_ep_fallback: "1" } },
  };
}
