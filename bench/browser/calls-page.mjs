// The in-browser half of `npm run bench:calls`: what one call of the package costs the CPU
// beside a hand-written WebGPU recording of the package's own kernel (norm.kernelSource) on
// the same device, with its pipeline and bind group made once, as a capable app keeps them
// (bench/dawn/bench.mjs `calls` measures the same on Dawn outside a browser).
//
//   encode   k recordings into one encoder: norm.encode(encoder, args), a bound call's
//            encode(encoder), and by hand: begin pass, set pipeline, set bind group,
//            dispatch, end
//   submit   k in-place calls on resident tensors, not awaited: norm.run(args), a bound
//            call's run(), and by hand: encoder, pass, finish, submit
//
// Paired passes: each round times the hand-written pass right before the package's, over the
// same k calls, and the ratio of the two is taken per round, so a slow stretch of a shared
// machine falls on both. Only the recording or submitting loop is timed; the GPU's work is
// awaited (onSubmittedWorkDone) between passes. The Node driver (calls.mjs) calls
// `window.bench.*` through Playwright.
import init, { FusedRmsNorm } from "/pkg/webgpu_rmsnorm.js";
import { deviceInfo } from "../shared/side-by-side.mjs";

let norm;

async function setup() {
  await init();
  norm = await FusedRmsNorm.create();
  return { ours: deviceInfo(norm.adapterInfo), crossOriginIsolated: self.crossOriginIsolated, userAgent: navigator.userAgent };
}

function seeded(n, seed) {
  let s = seed >>> 0;
  return Float32Array.from({ length: n }, () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32 - 0.5;
  });
}

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

/** The package's in-place kernel for one row of `hidden` as the page's own pipeline and bind group. */
function handWritten(device, hidden, data) {
  const src = norm.kernelSource({ hidden, inPlace: true, rows: 1 });
  const layout = device.createBindGroupLayout({
    entries: src.bindings.map((b) => ({ binding: b.binding, visibility: GPUShaderStage.COMPUTE, buffer: { type: b.type } })),
  });
  const pipeline = device.createComputePipeline({
    layout: device.createPipelineLayout({ bindGroupLayouts: [layout] }),
    compute: { module: device.createShaderModule({ code: src.code }), entryPoint: src.entryPoint },
  });
  const storage = (values) => {
    const b = device.createBuffer({ size: Math.max(16, values.byteLength), usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
    device.queue.writeBuffer(b, 0, values);
    return b;
  };
  const params = new ArrayBuffer(src.params.size);
  const view = new DataView(params);
  const values = { rows: 1, width: hidden / src.lanes, hidden, eps: 1e-6, gamma_offset: 0 };
  for (const f of src.params.fields) (f.type === "u32" ? view.setUint32 : view.setFloat32).call(view, f.offset, values[f.name], true);
  const uniform = device.createBuffer({ size: src.params.size, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
  device.queue.writeBuffer(uniform, 0, params);
  const buffers = { input: storage(data.x), residual: storage(data.r), gamma: storage(data.g), beta: storage(new Float32Array(4)), bias: storage(new Float32Array(4)), post_gamma: storage(new Float32Array(4)), params: uniform };
  const group = device.createBindGroup({ layout, entries: src.bindings.map((b) => ({ binding: b.binding, resource: { buffer: buffers[b.name] } })) });
  const [x, y] = src.workgroups;
  const record = (encoder) => {
    const pass = encoder.beginComputePass();
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, group);
    pass.dispatchWorkgroups(x, y, 1);
    pass.end();
  };
  return {
    record,
    submit() {
      const encoder = device.createCommandEncoder();
      record(encoder);
      device.queue.submit([encoder.finish()]);
    },
    destroy: () => Object.values(buffers).forEach((b) => b.destroy()),
  };
}

/** µs per call of one pass of `k` calls: `prepare()` untimed, `body(k, state)` timed, `settle(state)` untimed. */
async function pass(device, k, { prepare = () => undefined, body, settle = async () => {} }) {
  const state = prepare();
  const t0 = performance.now();
  const r = body(k, state);
  if (r instanceof Promise) await r;
  const us = ((performance.now() - t0) * 1000) / k;
  await settle(state);
  await device.queue.onSubmittedWorkDone();
  return us;
}

/** Rounds of the baseline pass right before each of the package's passes: µs per call and the median of the paired ratios. */
async function paired(device, { rounds, calls }, baseline, variants) {
  const base = [];
  const ours = Object.fromEntries(Object.keys(variants).map((n) => [n, { us: [], ratios: [] }]));
  for (const v of [baseline, ...Object.values(variants)]) await pass(device, Math.min(calls, 50), v);
  for (let r = 0; r < rounds; r++) {
    for (const [name, v] of Object.entries(variants)) {
      const b = await pass(device, calls, baseline);
      const p = await pass(device, calls, v);
      base.push(b);
      ours[name].us.push(p);
      ours[name].ratios.push(p / b);
    }
  }
  const out = { baseline: { median: median(base), min: Math.min(...base) } };
  for (const [name, o] of Object.entries(ours)) out[name] = { median: median(o.us), min: Math.min(...o.us), ratio: median(o.ratios), ratios: o.ratios };
  return out;
}

async function calls({ hidden, calls, rounds }) {
  const device = norm.device;
  const data = { x: seeded(hidden, 1), r: seeded(hidden, 2), g: seeded(hidden, 3).map((v) => 1 + 0.1 * v) };
  const t = { input: norm.upload(data.x), residual: norm.upload(data.r), gamma: norm.upload(data.g) };
  const args = { ...t, hidden, inPlace: true };
  const bound = typeof norm.bind === "function" ? norm.bind(args) : undefined;
  const hand = handWritten(device, hidden, data);
  const cfg = { rounds, calls };
  const out = { hidden, calls, rounds, bound: !!bound };

  // Recording only: the encoders are finished and dropped, never submitted.
  const encoding = (record) => ({
    prepare: () => device.createCommandEncoder(),
    body: (k, e) => {
      for (let i = 0; i < k; i++) record(e);
    },
    settle: async (e) => void e.finish(),
  });
  out.encode = await paired(device, cfg, encoding(hand.record), {
    "norm.encode": encoding((e) => norm.encode(e, args)),
    ...(bound && { "bound.encode": encoding((e) => bound.encode(e)) }),
  });

  const submitting = (call) => ({
    prepare: () => [],
    body: (k, ps) => {
      for (let i = 0; i < k; i++) ps.push(call());
    },
    settle: (ps) => Promise.all(ps),
  });
  out.submit = await paired(device, cfg, submitting(hand.submit), {
    "norm.run": submitting(() => norm.run(args)),
    ...(bound && { "bound.run": submitting(() => bound.run()) }),
  });

  bound?.free();
  hand.destroy();
  Object.values(t).forEach((x) => x.free());
  return out;
}

window.bench = { setup, calls };
window.benchReady = true;
