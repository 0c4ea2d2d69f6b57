// The in-browser half of `npm run bench:pipeline`: a chain of L fused add+RMSNorm layers, the
// way a transformer's residual stream goes through them, run four ways on the same data in the
// same page. Layer l takes x_l and r_l and gives x_{l+1} = norm(x_l + r_l) · gamma_l and
// r_{l+1} = x_l + r_l.
//
//   gpu     our runWithSum({ output: "gpu" }) on GpuTensors, one read() at the end
//   inPlace our runWithSum({ inPlace: true }) on two GpuTensors, one read() at the end
//   inFlight the same, every layer's call made before any is awaited
//   encoded the same layers recorded by norm.encode into one command encoder, one submit
//   arrays  our runWithSum on Float32Arrays: every layer's output and sum come back to JS
//   ort     onnxruntime-web WebGPU: one model of L SkipSimplifiedLayerNormalization nodes,
//           each node's input_skip_bias_sum (output 3) the next node's skip
//
// The Node driver (pipeline.mjs) calls `window.bench.*` through Playwright.
import { chainReference } from "../../www/lib/reference.js";
import { EPS, activations, weights } from "../shared/data.mjs";
import { Writer, initializer, modelBytes, skipNormNode, valueInfo } from "../shared/onnx-model.mjs";
import { compare, deviceInfo, elapsed, openBoth, ort, sampleTogether, sessionOptions } from "../shared/side-by-side.mjs";

let norm;

/** Layer l's gamma: the benchmark's gamma (values in [0.5, 1.5)) rotated by 97·l places. */
function layerGammas(hidden, layers) {
  const { gamma } = weights(hidden);
  return Array.from({ length: layers }, (_, l) => {
    const s = (97 * l) % hidden;
    const g = new Float32Array(hidden);
    g.set(gamma.subarray(s));
    g.set(gamma.subarray(0, s), hidden - s);
    return g;
  });
}

/**
 * The chain as the f64 reference computes it (www/lib/reference.js). With `sum` false, the
 * variant ORT falls back to if it lacks output 3: every layer adds the same skip r_0.
 */
function referenceChain({ input, residual, gammas, hidden, sum = true }) {
  const layers = gammas.map((gamma) => ({ gamma }));
  return chainReference({ input, residual, layers, hidden, eps: EPS }, { constantSkip: !sum });
}

/**
 * ONNX model: `layers` chained com.microsoft SkipSimplifiedLayerNormalization nodes on
 * [1, rows, hidden], per-layer gammas as initializers, graph inputs `input` and `skip`.
 * With `sum`, node l's output 3 (input_skip_bias_sum) is node l+1's skip and the graph
 * outputs are `output` and `sum`; without, every node takes the graph's `skip`.
 */
function chainModel({ rows, hidden, gammas, sum = true }) {
  const dims = [1, rows, hidden];
  const layers = gammas.length;
  const graph = new Writer();
  for (let l = 0; l < layers; l++) {
    const last = l === layers - 1;
    const inputs = [l === 0 ? "input" : `x${l}`, sum && l > 0 ? `r${l}` : "skip", `gamma${l}`];
    const outputs = [last ? "output" : `x${l + 1}`];
    // Outputs 1 and 2 (mean, inv_std_var) not produced; 3 is input_skip_bias_sum.
    if (sum) outputs.push("", "", last ? "sum" : `r${l + 1}`);
    graph.message(1, skipNormNode({ name: `norm${l}`, inputs, outputs, eps: EPS }));
  }
  graph.string(2, `residual_chain_x${layers}`);
  gammas.forEach((g, l) => graph.message(5, initializer(`gamma${l}`, g)));
  graph.message(11, valueInfo("input", dims));
  graph.message(11, valueInfo("skip", dims));
  graph.message(12, valueInfo("output", dims));
  if (sum) graph.message(12, valueInfo("sum", dims));
  return modelBytes(graph, "webgpu-rmsnorm pipeline bench");
}

async function setup() {
  const opened = await openBoth();
  norm = opened.norm;
  return opened.env;
}

/** One row count: checks, warm-up, then every variant timed in alternation. */
async function chain({ rows, hidden, layers, sampling }) {
  const { input, residual } = activations(rows, hidden);
  const gammas = layerGammas(hidden, layers);
  const dims = [1, rows, hidden];
  const res = { rows, hidden, layers };

  // Weights live on the GPU for every variant, as a model's weights would.
  const gpuGammas = gammas.map((g) => norm.upload(g));
  const call = (x, r, l, extra) => ({ input: x, residual: r, gamma: gpuGammas[l], hidden, eps: EPS, ...extra });

  // An in-place chain: x_0 and r_0 uploaded, `layersOn(x, r)` run, x_L (and r_L) read.
  const inPlaceChain = (layersOn) => async (full) => {
    const x = norm.upload(input);
    const r = norm.upload(residual);
    try {
      await layersOn(x, r);
      return { output: await x.read(), sum: full ? await r.read() : null };
    } finally {
      x.free();
      r.free();
    }
  };

  // Each variant starts from x_0 and r_0 in Float32Arrays and ends with x_L in a Float32Array;
  // `full` also returns r_L (for the checks; not timed).
  const variants = {
    gpu: async (full) => {
      let x = norm.upload(input);
      let r = norm.upload(residual);
      for (let l = 0; l < layers; l++) {
        const next = await norm.runWithSum(call(x, r, l, { output: "gpu" }));
        x.free();
        r.free();
        x = next.output;
        r = next.sum;
      }
      try {
        return { output: await x.read(), sum: full ? await r.read() : null };
      } finally {
        x.free();
        r.free();
      }
    },
    // Two tensors updated in place by every layer: awaited one by one, left in flight (all
    // made, then awaited together), or recorded into one command encoder of the app's.
    inPlace: inPlaceChain(async (x, r) => {
      for (let l = 0; l < layers; l++) await norm.runWithSum(call(x, r, l, { inPlace: true }));
    }),
    inFlight: inPlaceChain((x, r) =>
      Promise.all(Array.from({ length: layers }, (_, l) => norm.runWithSum(call(x, r, l, { inPlace: true })))),
    ),
    encoded: inPlaceChain(async (x, r) => {
      const e = norm.device.createCommandEncoder();
      for (let l = 0; l < layers; l++) norm.encode(e, call(x, r, l, { inPlace: true }));
      norm.device.queue.submit([e.finish()]);
    }),
    arrays: async () => {
      let x = input;
      let r = residual;
      for (let l = 0; l < layers; l++) ({ output: x, sum: r } = await norm.runWithSum(call(x, r, l)));
      return { output: x, sum: r };
    },
  };

  // ORT: output 3 if the WebGPU EP takes it; otherwise the constant-skip chain.
  let session;
  res.ortSumOutput = true;
  try {
    session = await ort.InferenceSession.create(chainModel({ rows, hidden, gammas }), sessionOptions("gpu-buffer"));
  } catch (e) {
    res.ortSumOutput = false;
    res.ortSumError = String(e.message ?? e);
    session = await ort.InferenceSession.create(
      chainModel({ rows, hidden, gammas, sum: false }),
      sessionOptions("gpu-buffer"),
    );
  }
  const device = ort.env.webgpu.device;
  res.ortAdapter = deviceInfo(device.adapterInfo);
  const gpuBuffer = () =>
    device.createBuffer({
      size: input.byteLength,
      usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST,
    });
  const bx = gpuBuffer();
  const br = gpuBuffer();
  const feeds = {
    input: ort.Tensor.fromGpuBuffer(bx, { dataType: "float32", dims }),
    skip: ort.Tensor.fromGpuBuffer(br, { dataType: "float32", dims }),
  };
  variants.ort = async (full) => {
    device.queue.writeBuffer(bx, 0, input);
    device.queue.writeBuffer(br, 0, residual);
    const out = await session.run(feeds);
    for (const t of Object.values(out)) {
      if (t.location !== "gpu-buffer") throw new Error(`ORT output on ${t.location}, not gpu-buffer`);
    }
    try {
      return {
        output: await out.output.getData(true),
        sum: full && out.sum ? await out.sum.getData(true) : null,
      };
    } finally {
      for (const t of Object.values(out)) t.dispose();
    }
  };

  try {
    // Checks (also the first warm-up): every variant against the reference chain, ours
    // against each other element by element.
    const want = referenceChain({ input, residual, gammas, hidden });
    const got = {};
    for (const [name, run] of Object.entries(variants)) got[name] = await run(true);
    const wantOrt = res.ortSumOutput ? want : referenceChain({ input, residual, gammas, hidden, sum: false });
    res.checks = {};
    for (const name of Object.keys(variants)) {
      const w = name === "ort" ? wantOrt : want;
      res.checks[name] = {
        output: compare(got[name].output, w.output),
        sum: got[name].sum && w.sum ? compare(got[name].sum, w.sum) : null,
      };
    }
    for (const name of ["inPlace", "inFlight", "encoded", "arrays"]) {
      res.checks[`${name}VsGpu`] = {
        output: compare(got[name].output, got.gpu.output),
        sum: compare(got[name].sum, got.gpu.sum),
      };
    }
    if (res.ortSumOutput) {
      res.checks.ortVsGpu = { output: compare(got.ort.output, got.gpu.output), sum: compare(got.ort.sum, got.gpu.sum) };
    }
    const maxAbs = (xs) => xs.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
    res.scale = { output: maxAbs(want.output), sum: maxAbs(want.sum) };

    // One more untimed round, then the timed rounds, variants in rotating order.
    for (const run of Object.values(variants)) await run(false);
    const stats = () => {
      const { liveBuffers, idleBuffers, wasmMemoryBytes } = norm.debugStats();
      return { liveBuffers, idleBuffers, wasmMemoryBytes };
    };
    const before = stats();
    const samples = Object.fromEntries(Object.keys(variants).map((name) => [name, []]));
    const timed = await sampleTogether(
      Object.fromEntries(
        Object.entries(variants).map(([name, run]) => [
          name,
          async () => {
            const ms = await elapsed(() => run(false));
            samples[name].push(ms);
            return ms;
          },
        ]),
      ),
      sampling,
    );
    for (const name of Object.keys(timed)) timed[name].samples = samples[name];
    res.debugStats = { before, after: stats() };
    res.ms = timed;
  } finally {
    await session.release();
    bx.destroy();
    br.destroy();
    for (const g of gpuGammas) g.free();
  }
  return res;
}

window.bench = { setup, chain };
window.benchReady = true;
