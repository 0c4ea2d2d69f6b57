// One shape of our kernel against onnxruntime-web's WebGPU SkipSimplifiedLayerNormalization and
// a plain JS loop, on the same data in the same page: per op (a slope over two chain lengths)
// and end to end, with the outputs checked against the f64 reference. `npm run bench`'s page
// (bench/browser/bench-page.mjs) and bench/chrome's ort section run it; the models come from
// the page's server at /models/ (made with onnx-model.mjs).
import { plainLoop } from "../../www/lib/plain-loop.js";
import { reference } from "../../www/lib/reference.js";
import { EPS, activations, weights } from "./data.mjs";
import { compare, deviceInfo, elapsed, openBoth, ort, sampleTogether, sessionOptions } from "./side-by-side.mjs";

let norm;

export async function setup() {
  const opened = await openBoth();
  norm = opened.norm;
  return opened.env;
}

async function fetchModel(name) {
  const r = await fetch(`/models/${name}`);
  if (!r.ok) throw new Error(`model ${name}: HTTP ${r.status}`);
  return new Uint8Array(await r.arrayBuffer());
}

/** One shape: every measurement, plus output checks against the f64 reference. */
export async function shape({ rows, hidden, k1, k2, budgetMs, models }) {
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
    // Checks: both GPU outputs against the f64 reference, and against each other.
    const want = reference(args).y;
    const ours = await norm.run(args);
    const ortOut = (await e2e.run(feedsCpu())).output.data;
    res.oursCheck = compare(ours, want);
    res.ortCheck = compare(ortOut, want);
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
        js: () => elapsed(() => plainLoop(args)),
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
