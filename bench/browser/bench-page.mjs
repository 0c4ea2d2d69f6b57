// The in-browser half of `npm run bench`: the WebGPU section's comparison with onnxruntime-web
// (bench/shared/versus-ort.mjs) and the CPU section's half (cpu-page.mjs), as `window.bench`,
// which the Node driver (bench.mjs) calls through Playwright.
import { setup, shape } from "../shared/versus-ort.mjs";
import { cpuSetup, cpuShape } from "./cpu-page.mjs";

window.bench = { setup, shape, cpuSetup, cpuShape };
window.benchReady = true;
