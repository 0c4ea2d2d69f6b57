// The in-browser half of `npm run bench`: our kernel, onnxruntime-web's WebGPU
// SkipSimplifiedLayerNormalization and a plain JS loop, on the same data in the same page.
// The Node driver calls `window.bench.*` through Playwright and prints the results.
import init, { FusedRmsNorm } from "/pkg/webgpu_rmsnorm.js";
import * as ort from "/ort/ort.webgpu.min.mjs";
import { EPS, activations, weights } from "./data.mjs";

let norm;

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

// Same formula as the kernel, f32 in and out, accumulated in JS doubles.
function jsLoop({ input, residual, gamma, bias, hidden, eps }) {
  const out = new Float32Array(input.length);
  const v = new Float64Array(hidden);
  for (let o = 0; o < input.length; o += hidden) {
    let ss = 0;
    for (let i = 0; i < hidden; i++) {
      const x = input[o + i] + residual[o + i] + bias[i];
      v[i] = x;
      ss += x * x;
    }
    const inv = 1 / Math.sqrt(ss / hidden + eps);
    for (let i = 0; i < hidden; i++) out[o + i] = v[i] * inv * gamma[i];
  }
  return out;
}

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

async function setup() {
  await init();
  norm = await FusedRmsNorm.create();
  ort.env.wasm.wasmPaths = "/ort/";
  // Extra wasm threads would only be CPU workers competing with a CPU adapter (SwiftShader)
  // for the same cores; none of the measured work is ORT's CPU code.
  ort.env.wasm.numThreads = 1;
  return {
    ours: deviceInfo(norm.adapterInfo),
    crossOriginIsolated: self.crossOriginIsolated,
    userAgent: navigator.userAgent,
    ort: ort.env.versions,
  };
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

async function fetchModel(name) {
  const r = await fetch(`/models/${name}`);
  if (!r.ok) throw new Error(`model ${name}: HTTP ${r.status}`);
  return new Uint8Array(await r.arrayBuffer());
}

/** One shape: every measurement, plus output checks against the JS loop. */
async function shape({ rows, hidden, k1, k2, budgetMs, models }) {
  const { gamma, bias } = weights(hidden);
  const { input, residual } = activations(rows, hidden);
  const args = { input, residual, gamma, bias, hidden, eps: EPS };
  const dims = [1, rows, hidden];
  const res = { rows, hidden, k: [k1, k2] };

  // ORT end to end: the one-node model with CPU tensors in and out. Per op: 1-node vs
  // k2-node chains on GPU-resident inputs and outputs.
  const e2e = await ort.InferenceSession.create(await fetchModel(models.one), sessionOptions("cpu"));
  const one = await ort.InferenceSession.create(await fetchModel(models.one), sessionOptions("gpu-buffer"));
  const many = await ort.InferenceSession.create(await fetchModel(models.many), sessionOptions("gpu-buffer"));
  const device = ort.env.webgpu.device;
  res.ortAdapter = deviceInfo(device.adapterInfo);
  const gpuTensor = (data) => {
    const buffer = device.createBuffer({
      size: data.byteLength,
      usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST,
    });
    device.queue.writeBuffer(buffer, 0, data);
    return { buffer, tensor: ort.Tensor.fromGpuBuffer(buffer, { dataType: "float32", dims }) };
  };
  const gi = gpuTensor(input);
  const gs = gpuTensor(residual);
  const feedsGpu = { input: gi.tensor, skip: gs.tensor };
  const feedsCpu = () => ({
    input: new ort.Tensor("float32", input, dims),
    skip: new ort.Tensor("float32", residual, dims),
  });
  // The output is read back (getData) so each timing ends when the GPU is done; that readback
  // is the same size for both chain lengths and cancels in the slope, as ours does.
  const ortGpuRun = (session) =>
    elapsed(async () => {
      const out = (await session.run(feedsGpu)).output;
      if (out.location !== "gpu-buffer") throw new Error(`ORT output on ${out.location}, not gpu-buffer`);
      await out.getData(true);
    });

  try {
    // Checks: the JS loop (f64 accumulation) is the reference for both GPU outputs.
    const reference = jsLoop(args);
    const ours = await norm.run(args);
    const ortOut = (await e2e.run(feedsCpu())).output.data;
    res.oursCheck = compare(ours, reference);
    res.ortCheck = compare(ortOut, reference);
    res.oursVsOrt = compare(ours, ortOut);

    // Warm-up: pipelines compiled, buffers allocated, at both repeat counts.
    for (const k of [k1, k2]) await norm.timeDispatches(args, k);
    await ortGpuRun(one);
    await ortGpuRun(many);

    // Per op: the same work at two repeat counts; upload, submission and readback are
    // common to both and cancel in the slope.
    // The raw pairs are kept: with other processes on the cores, the slope between the
    // fastest runs at each count (`floorUs`) is a useful second estimate beside the median.
    const raw = { ours: [], ort: [] };
    const slope = (name, a, b) => {
      raw[name].push([a, b]);
      return ((b - a) / (k2 - k1)) * 1000;
    };
    const perOp = await sampleTogether(
      {
        ours: async () => slope("ours", await norm.timeDispatches(args, k1), await norm.timeDispatches(args, k2)),
        ort: async () => slope("ort", await ortGpuRun(one), await ortGpuRun(many)),
      },
      { budgetMs },
    );
    const floorUs = (pairs) =>
      ((Math.min(...pairs.map((p) => p[1])) - Math.min(...pairs.map((p) => p[0]))) / (k2 - k1)) * 1000;
    res.oursOpUs = { ...perOp.ours, floorUs: floorUs(raw.ours), rawMs: raw.ours };
    res.ortOpUs = { ...perOp.ort, floorUs: floorUs(raw.ort), rawMs: raw.ort };

    const endToEnd = await sampleTogether(
      {
        ours: () => elapsed(() => norm.run(args)),
        ort: () => elapsed(async () => (await e2e.run(feedsCpu())).output.dispose()),
        js: () => elapsed(() => jsLoop(args)),
      },
      { budgetMs },
    );
    res.oursRunMs = endToEnd.ours;
    res.ortRunMs = endToEnd.ort;
    res.jsMs = endToEnd.js;
  } finally {
    await e2e.release();
    await one.release();
    await many.release();
    gi.buffer.destroy();
    gs.buffer.destroy();
  }
  return res;
}

window.bench = { setup, shape };
window.benchReady = true;
