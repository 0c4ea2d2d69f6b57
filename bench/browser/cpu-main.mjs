// The CPU section's page of its own (cpu.html), for `npm run bench -- --cpu --browser B`:
// only the package's init() and cpu-page.mjs, so that it opens in an engine without WebGPU
// (Firefox ESR, WebKitGTK), where bench-page.mjs's ORT-WebGPU setup cannot.
import init from "/pkg/webgpu_rmsnorm.js";
import { cpuSetup, cpuShape } from "./cpu-page.mjs";

async function setup() {
  await init();
  return { ours: null, crossOriginIsolated: self.crossOriginIsolated, userAgent: navigator.userAgent };
}

window.bench = { setup, cpuSetup, cpuShape };
window.benchReady = true;
