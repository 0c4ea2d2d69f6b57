// The package inside a module Web Worker: the work (on WebGPU or on the CPU backend), the wasm
// instance and the copies in and out stay off the main thread, which only posts inputs and
// receives the output.
//
// Messages in:  { id, args }            args as FusedRmsNorm.run takes them
// Messages out: { type: "ready", adapterInfo, backend, scope }
//               { type: "result", id, output, ms }
//               { type: "error", id, name, message }
// Errors cross as plain name/message: structured cloning keeps the `name` of built-in errors
// only, so a ShapeError would arrive as a bare "Error".
import init, { FusedRmsNorm } from "./pkg/webgpu_rmsnorm.js";

const plainError = (e) => ({ name: e?.name ?? "Error", message: e?.message ?? String(e) });

// "auto": WebGPU on a real GPU, the CPU backend where a worker has no WebGPU (Firefox ESR,
// older Safari) or only a software adapter, where the CPU backend is the faster one.
const ready = (async () => {
  await init();
  return FusedRmsNorm.create({ backend: "auto" });
})();

ready.then(
  (norm) => postMessage({ type: "ready", adapterInfo: { ...norm.adapterInfo }, backend: norm.backend, scope: self.constructor.name }),
  (e) => postMessage({ type: "error", id: null, ...plainError(e) }),
);

self.onmessage = async ({ data: { id, args } }) => {
  try {
    const norm = await ready;
    const t0 = performance.now();
    const output = await norm.run(args);
    const ms = performance.now() - t0;
    // The output is a fresh array the worker owns: transfer it instead of copying it again.
    postMessage({ type: "result", id, output, ms }, [output.buffer]);
  } catch (e) {
    postMessage({ type: "error", id, ...plainError(e) });
  }
};
