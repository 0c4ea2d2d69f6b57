// The package in Node on a real GPU, set up as docs/api.md ("In Node") tells an app to: WebGPU
// from npm `webgpu` (Dawn) as `navigator.gpu`, then `await init()` with no argument (the .wasm
// read from disk beside the module). Runs the suite the Deno and Node tests run
// (tests/e2e/support/runtime-suite.mjs: every entry point and family variant against the f64
// reference, f16, encode, GPUBuffer arguments, errors, gpuTime, a device loss) and prints its
// report; the exit status is 1 on any failure.
//
//   bash scripts/bench-dawn.sh check        (on the GPU machine, with .gl/dawn carried there)
import { join } from "node:path";
import { pathToFileURL } from "node:url";

import { PKG_DIR, WEBGPU_DIR } from "./env.mjs";

const { create, globals } = await import(pathToFileURL(join(WEBGPU_DIR, "index.js")).href);
Object.assign(globalThis, globals);
Object.defineProperty(globalThis, "navigator", { value: { gpu: create([]) } });
globalThis.Window ??= class Window {};

const pkg = await import(pathToFileURL(join(PKG_DIR, "index.js")).href);
const { check } = await import("../../tests/e2e/support/runtime-suite.mjs");
const report = await check({ init: pkg.default, pkg, backend: "webgpu" });
console.log(`[bench:dawn] node check: ${JSON.stringify(report)}`);
process.exitCode = report.failures.length ? 1 : 0;
