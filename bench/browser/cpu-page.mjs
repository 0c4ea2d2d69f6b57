// The in-browser half of the CPU section of `npm run bench` (cpu.mjs drives it): the
// package's CPU backend against a plain JavaScript loop, both writing into an output array
// they keep, and against onnxruntime-web's WebAssembly execution provider, both returning a
// fresh array; the package's WebGPU backend on this page's adapter, reading back into a fresh
// array and into one it keeps. Each is called as an app calls it: Float32Arrays in, the
// Promise of the output awaited (the JS loop's result is not a Promise). One thread each.
import { FusedRmsNorm } from "/pkg/webgpu_rmsnorm.js";
import { plainLoop } from "../../www/lib/plain-loop.js";
import { compare, reference } from "../../www/lib/reference.js";
import { rng } from "../../www/lib/seeded.js";
import { EPS, activations, weights } from "../shared/data.mjs";
import { skipSimplifiedLayerNormChain } from "../shared/onnx-model.mjs";
import { deviceInfo } from "../shared/side-by-side.mjs";

// The package's three ways to open an instance, and what each resolved to.
const BACKENDS = ["cpu", "webgpu", "auto"];
const norms = {};
let ortWasm;

/**
 * Opens onnxruntime-web's wasm build and one instance per backend. Must follow
 * `window.bench.setup()` (bench-page.mjs), which has run the package's `init()`.
 */
export async function cpuSetup() {
  // The wasm build (its own `env` and wasm module, ort-wasm-simd-threaded.wasm) beside
  // side-by-side.mjs's ort.webgpu.min.mjs, whose CPU EP would run in its asyncify module.
  // Loaded only when this section runs.
  ortWasm = await import("/ort/ort.wasm.min.mjs");
  ortWasm.env.wasm.wasmPaths = "/ort/";
  // In a cross-origin isolated page ORT defaults to half the cores (up to 4): one thread, as
  // the package's CPU backend has.
  ortWasm.env.wasm.numThreads = 1;
  // An engine without WebGPU (Firefox ESR, WebKitGTK) has no "webgpu" instance: those
  // columns are then left out, not failed.
  for (const backend of BACKENDS) norms[backend] ??= await FusedRmsNorm.create({ backend }).catch((e) => ({ error: `${e.name}: ${e.message}` }));
  return {
    backends: Object.fromEntries(BACKENDS.map((b) => [b, norms[b].backend ?? norms[b].error])),
    webgpuAdapter: deviceInfo(norms.webgpu.adapterInfo),
    ortWasm: { versions: ortWasm.env.versions, numThreads: ortWasm.env.wasm.numThreads },
  };
}

// performance.now() moves in 5 µs steps here (100 µs without cross-origin isolation) and one
// call can take about that: time `calls` calls together, each awaited where it returns a
// Promise (a synchronous loop is not charged a microtask per call).
async function msPerCall(fn, calls) {
  const t = performance.now();
  for (let i = 0; i < calls; i++) {
    const r = fn();
    if (r instanceof Promise) await r;
  }
  return (performance.now() - t) / calls;
}

// Calls per batch so that one batch takes about `batchMs`, from the fastest of a few short
// passes after `batchMs` of warm-up calls (compiling, allocating: WebKit runs a loop in its
// interpreter for hundreds of calls), so that neither the warm-up nor a pass that another
// process or a garbage collection interrupted sizes the batches at a few calls, a few ticks
// of performance.now().
async function batchSize(fn, batchMs) {
  const call = async () => {
    const r = fn();
    if (r instanceof Promise) await r;
  };
  const t0 = performance.now();
  for (let n = 0; n < 3 || performance.now() - t0 < batchMs; n++) await call();
  let perCall = Infinity;
  for (let pass = 0; pass < 5; pass++) {
    const t = performance.now();
    let n = 0;
    while (n < 3 || performance.now() - t < batchMs / 8) {
      await call();
      n++;
    }
    perCall = Math.min(perCall, (performance.now() - t) / n);
  }
  return Math.max(1, Math.min(10000, Math.ceil(batchMs / perCall)));
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

// side-by-side.mjs's sampleTogether, but every round in a fresh (seeded) random order rather
// than a rotation, in which each way always follows the same other one: whatever a way leaves
// behind (garbage to collect; for a WebGPU call, the GPU process's work on the same two
// cores) then falls on every way alike. Between `min` and `max` rounds, stopping once
// `budgetMs` is spent.
async function sampleShuffled(fns, { min = 5, max = 60, budgetMs }) {
  const names = Object.keys(fns);
  const xs = Object.fromEntries(names.map((n) => [n, []]));
  const next = rng(names.length);
  const t0 = performance.now();
  for (let round = 0; round < max && (round < min || performance.now() - t0 < budgetMs); round++) {
    const order = names.map((n) => [next(), n]).sort((a, b) => a[0] - b[0]);
    for (const [, name] of order) xs[name].push(await fns[name]());
  }
  // Each round's sample too: ways compared round by round (cpu.mjs) share whatever load the
  // machine had in that round.
  return Object.fromEntries(
    names.map((n) => [n, { median: median(xs[n]), n: xs[n].length, min: Math.min(...xs[n]), max: Math.max(...xs[n]), rounds: xs[n] }]),
  );
}

/**
 * One shape: each way checked against the f64 reference, then timed per call in batches, all
 * ways (and the diagnostics below) sampled in alternation.
 */
export async function cpuShape({ rows, hidden, budgetMs, batchMs }) {
  const { gamma, bias } = weights(hidden);
  const { input, residual } = activations(rows, hidden);
  const args = { input, residual, gamma, bias, hidden, eps: EPS };
  const dims = [1, rows, hidden];
  const res = { rows, hidden };

  const model = skipSimplifiedLayerNormChain({ rows, hidden, k: 1, eps: EPS, gamma, bias });
  const session = await ortWasm.InferenceSession.create(model, { executionProviders: ["wasm"] });
  const resident = {};
  try {
    // What an app calls, each resolving with the output: into an array it keeps (one per
    // way, so that no way's writes warm another's), or a fresh one.
    const kept = () => {
      const y = new Float32Array(rows * hidden);
      return { ...args, output: y };
    };
    const into = { cpu: kept(), js: kept(), webgpuInto: kept() };
    const ways = {
      cpu: () => norms.cpu.run(into.cpu),
      js: () => plainLoop(args, into.js.output),
      cpuFresh: () => norms.cpu.run(args),
      ortWasm: async () =>
        (
          await session.run({
            input: new ortWasm.Tensor("float32", input, dims),
            skip: new ortWasm.Tensor("float32", residual, dims),
          })
        ).output.data,
    };
    for (const b of ["webgpu", "auto"]) if (!norms[b].error) ways[b] = () => norms[b].run(args);
    if (!norms.webgpu.error) ways.webgpuInto = () => norms.webgpu.run(into.webgpuInto);
    for (const [k, v] of Object.entries({ input, residual, gamma, bias })) resident[k] = norms.cpu.upload(v);
    const onTensors = { ...resident, hidden, eps: EPS };
    const residentRun = () => norms.cpu.run({ ...onTensors, output: "gpu" });
    ways.cpuResident = async () => {
      const y = await residentRun();
      const data = await y.read();
      y.free();
      return data;
    };

    res.checks = {};
    for (const [name, fn] of Object.entries(ways)) {
      const y = await fn();
      const { ok, maxAbs, maxRel, problems } = compare(args, y);
      // A way that writes into a kept array gives back that array.
      if (into[name] && y !== into[name].output) problems.push("resolved with another array than the one kept");
      res.checks[name] = { ok: ok && !problems.length, maxAbs, maxRel, problems };
    }
    // The JS loop forms v = input + residual + bias in f64, not rounded in the kernel's order
    // as the reference is (plain-loop.js), so an element whose v cancels to near 0 is off
    // relative to itself (2e-5 at 128×4096): it is held to 1e-5 of the largest output instead.
    const js = res.checks.js;
    const largest = reference(args).scale.reduce((m, x) => Math.max(m, x), 0);
    js.ok = js.maxAbs <= 1e-5 * largest;
    js.bound = `maxAbs ≤ 1e-5 × ${largest.toPrecision(3)} (largest |y|)`;
    if (js.ok) js.problems = [];

    // Where a CPU-backend call's time goes (diagnostics, not an app's calls):
    // - cpuResident: the call on inputs already in wasm memory (`upload()`ed) with the output
    //   left there (`output: "gpu"`): `cpu` without the copies in and out;
    // - cpuCopyIn / cpuCopyOut: the same copies alone, as `upload()` of input and residual
    //   and `read()` of an output make them (the code paths `run` takes for its arrays);
    // - copyFloor: what any wasm library pays for them at least: input and residual set()
    //   into a WebAssembly.Memory allocated once, the output slice()d out of it;
    // - resultFloor: that slice() alone, the fresh result array every way here returns
    //   (ORT's outputs are copied out of its wasm heap too): its pages are new to the process,
    //   and their first touch is most of a large call's time on some machines.
    const out = await residentRun();
    const n = rows * hidden;
    const floor = new Float32Array(new WebAssembly.Memory({ initial: Math.ceil((12 * n) / 65536) }).buffer, 0, 3 * n);
    const diagnostics = {
      cpuResident: async () => (await residentRun()).free(),
      cpuCopyIn: () => {
        norms.cpu.upload(input).free();
        norms.cpu.upload(residual).free();
      },
      cpuCopyOut: () => out.read(),
      copyFloor: () => {
        floor.set(input, 0);
        floor.set(residual, n);
        return floor.slice(2 * n, 3 * n);
      },
      resultFloor: () => floor.slice(2 * n, 3 * n),
    };
    const timed = { ...ways, ...diagnostics };
    const calls = {};
    for (const [name, fn] of Object.entries(timed)) calls[name] = await batchSize(fn, batchMs);
    const timers = Object.fromEntries(Object.entries(timed).map(([name, fn]) => [name, () => msPerCall(fn, calls[name])]));
    // - cpuKernel: the kernel alone. The CPU backend's timeDispatches loops the kernel
    //   `repeat` times over the same tensors inside one call, so the slope from 1 to K
    //   repeats is its cost per operation, every fixed cost of a call cancelling. K repeats
    //   take about `batchMs`; small shapes then run from the CPU's caches.
    const estimate = (await norms.cpu.timeDispatches(onTensors, 100)) / 100;
    const k = Math.max(2, Math.min(10000, Math.ceil(batchMs / Math.max(estimate, 1e-4))));
    calls.cpuKernel = k;
    timers.cpuKernel = async () => {
      const one = await norms.cpu.timeDispatches(onTensors, 1);
      return ((await norms.cpu.timeDispatches(onTensors, k)) - one) / (k - 1);
    };
    res.callsPerBatch = calls;
    // The pairs a target compares round by round (the package and the JS loop into kept
    // arrays; WebGPU's readback into a kept and a fresh array) are sampled each on its own,
    // with nothing else between their calls: garbage another way leaves (ORT's, fresh
    // arrays') would otherwise be collected in whichever of the two allocates, the package's
    // calls (a Promise each) and never the JS loop's. Then every way, as before.
    res.ms = {};
    for (const pair of [["cpu", "js"], ["webgpu", "webgpuInto"]]) {
      const timed = Object.fromEntries(pair.map((w) => [w, timers[w]]));
      if (pair.every((w) => timers[w])) Object.assign(res.ms, await sampleShuffled(timed, { budgetMs: budgetMs / 2, max: 200 }));
    }
    const rest = Object.fromEntries(Object.entries(timers).filter(([w]) => !(w in res.ms)));
    Object.assign(res.ms, await sampleShuffled(rest, { budgetMs }));
    out.free();
  } finally {
    await session.release();
    for (const t of Object.values(resident)) t.free();
  }
  return res;
}
