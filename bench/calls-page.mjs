// The in-browser half of `npm run bench:calls`: what one call of the package costs the CPU
// beside raw WebGPU doing the same dispatch from JavaScript on the same device
// (bench/dawn/bench.mjs `calls` measures the same on Dawn outside a browser).
//
//   package  norm.run({ inPlace: true }) on resident tensors, awaited one by one, and
//            left in flight (all made, then awaited together)
//   raw      the package's own kernel (norm.kernelSource) as a pipeline of the page's, on
//            buffers and a bind group made once: submit + two awaited error scopes, and
//            submit with no await
//
// Every timed loop ends with onSubmittedWorkDone, so no variant leaves GPU work behind for
// the next. The Node driver (bench/calls.mjs) calls `window.bench.*` through Playwright.
import init, { FusedRmsNorm } from "/pkg/webgpu_rmsnorm.js";
import { deviceInfo } from "./side-by-side.mjs";

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

/** µs per call of `body(k)` (which makes k calls and settles them): median of `loops`. */
async function timeLoops(device, loops, calls, body) {
  await body(Math.min(calls, 50));
  await device.queue.onSubmittedWorkDone();
  const per = [];
  for (let l = 0; l < loops; l++) {
    const t0 = performance.now();
    await body(calls);
    await device.queue.onSubmittedWorkDone();
    per.push(((performance.now() - t0) * 1000) / calls);
  }
  return { median: median(per), min: Math.min(...per), max: Math.max(...per) };
}

/** The package's in-place kernel for one row of `hidden` as the page's own pipeline and bind group. */
function rawDispatch(device, hidden, data) {
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
  // The same submit as the package's own (src/gpu/webgpu_raw.rs), alike on purpose: the
  // baseline a capable app would write.
  return {
    submit() {
      const encoder = device.createCommandEncoder();
      const pass = encoder.beginComputePass();
      pass.setPipeline(pipeline);
      pass.setBindGroup(0, group);
      pass.dispatchWorkgroups(x, y, 1);
      pass.end();
      device.queue.submit([encoder.finish()]);
    },
    destroy: () => Object.values(buffers).forEach((b) => b.destroy()),
  };
}

async function calls({ hidden, calls, loops }) {
  const device = norm.device;
  const data = { x: seeded(hidden, 1), r: seeded(hidden, 2), g: seeded(hidden, 3).map((v) => 1 + 0.1 * v) };
  const t = { input: norm.upload(data.x), residual: norm.upload(data.r), gamma: norm.upload(data.g) };
  const args = { ...t, hidden, inPlace: true };
  const raw = rawDispatch(device, hidden, data);
  const out = { hidden, calls, loops };
  // Alternating rounds, so that a slow stretch of a shared machine falls on both.
  const rounds = { awaited: [], inFlight: [], rawScopes: [], rawNoAwait: [] };
  for (let round = 0; round < 3; round++) {
    rounds.awaited.push(await timeLoops(device, loops, calls, async (k) => {
      for (let i = 0; i < k; i++) await norm.run(args);
    }));
    rounds.rawScopes.push(await timeLoops(device, loops, calls, async (k) => {
      for (let i = 0; i < k; i++) {
        device.pushErrorScope("out-of-memory");
        device.pushErrorScope("validation");
        raw.submit();
        const [a, b] = await Promise.all([device.popErrorScope(), device.popErrorScope()]);
        if (a || b) throw new Error(`raw call: ${(a ?? b).message}`);
      }
    }));
    rounds.inFlight.push(await timeLoops(device, loops, calls, async (k) => {
      const ps = [];
      for (let i = 0; i < k; i++) ps.push(norm.run(args));
      await Promise.all(ps);
    }));
    rounds.rawNoAwait.push(await timeLoops(device, loops, calls, async (k) => {
      for (let i = 0; i < k; i++) raw.submit();
    }));
  }
  for (const [name, rs] of Object.entries(rounds)) out[name] = { median: median(rs.map((r) => r.median)), rounds: rs };
  raw.destroy();
  Object.values(t).forEach((x) => x.free());
  return out;
}

window.bench = { setup, calls };
window.benchReady = true;
