// Node + dawn.node as a stand-in browser for the packed package, with a tap on its WebGPU objects.
// dawn.node is npm `webgpu`, Chrome's WebGPU implementation. Here: the globals wgpu looks for,
// the package loaded from a pkg/ snapshot, and a thin tap on the package's own WebGPU objects
// (adapter, device, every WGSL module it compiles) so that raw WebGPU can run beside it on the
// same device with the package's exact kernels.
//
// Where things come from (set by scripts/bench-dawn.sh; defaults for a run from the checkout):
//   DAWN_WEBGPU_DIR  a folder holding npm webgpu@0.6.2's index.js and dist/linux-x64/dawn.node
//   DAWN_PKG_DIR     the package's files (webgpu_rmsnorm.js, webgpu_rmsnorm_bg.wasm)
//   DAWN_FLAGS       extra dawn.node flags, comma-separated (e.g. "backend=null")
import { existsSync, readFileSync } from "node:fs";
import { createHash } from "node:crypto";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { classify, newSeen, tap } from "../shared/tap.mjs";

export { classify };

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

function firstExisting(...dirs) {
  return dirs.find((d) => d && existsSync(d)) ?? dirs[dirs.length - 1];
}

export const WEBGPU_DIR = resolve(
  process.env.DAWN_WEBGPU_DIR ?? firstExisting(join(ROOT, ".gl/dawn-run/webgpu"), join(ROOT, "node_modules/webgpu")),
);
export const PKG_DIR = resolve(process.env.DAWN_PKG_DIR ?? firstExisting(join(ROOT, ".gl/dawn/pkg"), join(ROOT, "pkg")));

/** Thrown when there is nothing a benchmark can run on; `main` prints it and exits 2. */
export class NoGpu extends Error {
  /** `setup`: files missing (not prepared); else Dawn found no adapter or device. */
  constructor(message, { setup = false } = {}) {
    super(message);
    this.name = "NoGpu";
    this.setup = setup;
  }
}

function sha(path) {
  return createHash("sha256").update(readFileSync(path)).digest("hex").slice(0, 16);
}

/**
 * Loads dawn.node and the package, opens a `FusedRmsNorm`. Resolves with
 * { norm, device, adapter, kind, modules, lib, provenance } or throws `NoGpu`.
 */
export async function open() {
  const index = join(WEBGPU_DIR, "index.js");
  if (!existsSync(index)) throw new NoGpu(`dawn.node not found: ${index} is missing (run: bash scripts/bench-dawn.sh prepare)`, { setup: true });
  const jsPath = join(PKG_DIR, "webgpu_rmsnorm.js");
  const wasmPath = join(PKG_DIR, "webgpu_rmsnorm_bg.wasm");
  if (!existsSync(jsPath) || !existsSync(wasmPath)) throw new NoGpu(`the package is missing from ${PKG_DIR} (run: bash scripts/bench-dawn.sh prepare)`, { setup: true });

  const { create, globals } = await import(pathToFileURL(index).href);
  const flags = ["disable-dawn-features=timestamp_quantization", ...(process.env.DAWN_FLAGS ?? "").split(",").filter(Boolean)];
  const gpu = create(flags);
  const seen = newSeen();
  tap(gpu, seen, { subgroups: process.env.DAWN_SUBGROUPS === "1" });

  // What the package needs to find WebGPU outside a browser: `navigator.gpu` and WebGPU's globals.
  Object.assign(globalThis, globals);
  Object.defineProperty(globalThis, "navigator", { value: { gpu }, configurable: true, writable: true });
  globalThis.Window = class Window {};

  const lib = await import(pathToFileURL(jsPath).href);
  await lib.default({ module_or_path: readFileSync(wasmPath) });

  let norm;
  try {
    norm = await lib.FusedRmsNorm.create({ powerPreference: "high-performance" });
  } catch (e) {
    // Say which adapter Dawn found, if any, to tell "no Vulkan driver" from "driver refused".
    let probe = "none";
    try {
      const a = await gpu.requestAdapter();
      probe = a ? classify(a).name : "none (requestAdapter resolved null)";
    } catch (e2) {
      probe = `requestAdapter threw: ${e2.message}`;
    }
    throw new NoGpu(`the package could not open a WebGPU device on Dawn: ${e.name}: ${e.message} (adapter: ${probe})`);
  }
  if (!seen.device) throw new NoGpu("the package opened a device but the tap did not see it (requestAdapter/requestDevice were not called on navigator.gpu)");
  const device = seen.device;
  device.addEventListener?.("uncapturederror", (ev) => console.error(`[dawn uncaptured error] ${ev.error?.message ?? ev.error}`));

  const kind = classify(seen.adapter);
  return {
    norm,
    lib,
    device,
    adapter: seen.adapter,
    kind,
    modules: seen.modules,
    seen,
    provenance: {
      node: process.version,
      dawnFlags: flags,
      webgpuDir: WEBGPU_DIR,
      pkgDir: PKG_DIR,
      wasmSha256: sha(wasmPath),
      snapshot: existsSync(join(PKG_DIR, "SNAPSHOT.txt")) ? readFileSync(join(PKG_DIR, "SNAPSHOT.txt"), "utf8").trim() : null,
      adapter: kind.fields,
      packageAdapterInfo: { ...norm.adapterInfo },
      backend: kind.backend,
      deviceFeatures: [...device.features].sort(),
      requestedFeatures: seen.requestedFeatures,
      limits: {
        maxStorageBufferBindingSize: device.limits.maxStorageBufferBindingSize,
        maxBufferSize: device.limits.maxBufferSize,
        maxComputeWorkgroupsPerDimension: device.limits.maxComputeWorkgroupsPerDimension,
        maxComputeInvocationsPerWorkgroup: device.limits.maxComputeInvocationsPerWorkgroup,
      },
    },
  };
}
