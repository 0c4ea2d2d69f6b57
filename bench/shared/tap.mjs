// The tap on the package's WebGPU objects and the adapter's kind: shared by Dawn in Node (bench/dawn/env.mjs) and real Chromium (bench/chrome/page.mjs).
// Browser-safe: no Node imports, no `process` required.

/** A fresh record for `tap`. */
export function newSeen() {
  return { adapter: null, device: null, modules: [], moduleCode: new WeakMap(), pipelineCode: new WeakMap(), tracking: null, requestedFeatures: [] };
}

/**
 * The tap: wraps `gpu.requestAdapter` → `adapter.requestDevice` → the device's
 * `createShaderModule`, `createComputePipeline(Async)` and `createCommandEncoder` on the very
 * objects the package receives (own properties, so the native methods still run with their
 * real receivers). Records the adapter, the device, every WGSL source, which source each
 * pipeline came from, and — only while `seen.tracking` is a Set — every pipeline the package
 * sets in a compute pass (outside that window the encoder wrapper costs one extra call).
 */
export function tap(gpu, seen, { subgroups = false } = {}) {
  const requestAdapter = gpu.requestAdapter;
  gpu.requestAdapter = async function (options) {
    const adapter = await requestAdapter.call(gpu, options);
    if (!adapter) return adapter;
    seen.adapter = adapter;
    const requestDevice = adapter.requestDevice;
    adapter.requestDevice = async function (descriptor) {
      // DAWN_SUBGROUPS=1: the device also gets `subgroups` where the adapter has them (for
      // sweeping subgroup variants before the package asks for the feature itself).
      if (subgroups && adapter.features.has("subgroups")) {
        descriptor = { ...(descriptor ?? {}), requiredFeatures: [...(descriptor?.requiredFeatures ?? []), "subgroups"] };
      }
      const device = await requestDevice.call(adapter, descriptor);
      seen.device = device;
      seen.requestedFeatures = [...(descriptor?.requiredFeatures ?? [])];
      const { createShaderModule, createComputePipeline, createComputePipelineAsync, createCommandEncoder } = device;
      device.createShaderModule = function (d) {
        const module = createShaderModule.call(device, d);
        seen.modules.push({ code: String(d.code), label: d.label ?? null });
        seen.moduleCode.set(module, String(d.code));
        return module;
      };
      const remember = (d, pipeline) => {
        const code = d?.compute?.module && seen.moduleCode.get(d.compute.module);
        if (code) seen.pipelineCode.set(pipeline, code);
        return pipeline;
      };
      device.createComputePipeline = function (d) {
        return remember(d, createComputePipeline.call(device, d));
      };
      if (createComputePipelineAsync) {
        device.createComputePipelineAsync = async function (d) {
          return remember(d, await createComputePipelineAsync.call(device, d));
        };
      }
      device.createCommandEncoder = function (d) {
        const encoder = createCommandEncoder.call(device, d);
        if (seen.tracking) {
          const beginComputePass = encoder.beginComputePass;
          encoder.beginComputePass = function (pd) {
            const pass = beginComputePass.call(encoder, pd);
            const setPipeline = pass.setPipeline;
            pass.setPipeline = function (p) {
              seen.tracking?.add(p);
              return setPipeline.call(pass, p);
            };
            return pass;
          };
        }
        return encoder;
      };
      return device;
    };
    return adapter;
  };
}

/** What kind of adapter this is, and whether its timings mean anything for a real GPU. */
export function classify(adapter) {
  const info = adapter.info ?? {};
  const fields = {};
  for (const k of ["vendor", "architecture", "device", "description", "backendType", "adapterType", "isFallbackAdapter", "subgroupMinSize", "subgroupMaxSize"]) {
    if (info[k] !== undefined) fields[k] = info[k];
  }
  const text = `${info.vendor} ${info.architecture} ${info.device} ${info.description}`.toLowerCase();
  // dawn.node 0.6.2 exposes no backendType; the Null backend names itself in `device`.
  // On Linux dawn.node builds only Vulkan and Null, so anything else is Vulkan (a browser has
  // no `process`: Chrome on Linux runs WebGPU on Vulkan too).
  const linux = globalThis.process ? globalThis.process.platform === "linux" : /Linux/.test(globalThis.navigator?.userAgent ?? "");
  const backend = info.backendType ?? (text.includes("null-backend") ? "null" : linux ? "vulkan" : "unknown");
  const isNull = String(backend).toLowerCase() === "null";
  const isCpu = !isNull && (info.isFallbackAdapter === true || /swiftshader|llvmpipe|lavapipe|softpipe/.test(text));
  return {
    fields,
    backend,
    isNull,
    isCpu,
    // Roofline percentages are claims about a GPU's memory system: only on a real one.
    realGpu: !isNull && !isCpu,
    name: [info.vendor, info.device || info.architecture, info.description].filter(Boolean).join(" / ") || "(no name)",
  };
}
