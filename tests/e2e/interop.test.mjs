// Alongside an app's own WebGPU work, in headless Chromium: the app's WGSL kernel writes an
// activation into a GpuTensor's buffer on the package's device, the package normalizes it in a
// GPU-resident chain, and the app's kernel reads the result, with no readback in between; the
// result is checked against the f64 reference.
//
//   bash scripts/build.sh && node --test --test-reporter=spec tests/e2e/interop.test.mjs
import assert from "node:assert/strict";

import { packagePage, timedTest as test } from "./package-page.mjs";

const { inPage, problems } = packagePage("rmsnorm-interop-");

test("interop: the app's matmul writes tensor.buffer on norm.device, the package normalizes in place, the app's kernel reads the result; equal to the f64 reference", async () => {
  const r = await inPage(async () => {
    const { pkg, ref, seeded } = window.lib;
    const norm = await pkg.FusedRmsNorm.create();
    const device = norm.device;
    const rows = 3, k = 16, hidden = 64;
    // The app's data: activations = A (rows × k) · W (k × hidden); a residual and gamma.
    const src = seeded.caseArgs({ rows, hidden, bias: false, beta: true, seed: 31 });
    const next = seeded.rng(32);
    const a = seeded.filled(rows * k, next, -1, 1);
    const w = seeded.filled(k * hidden, next, -0.5, 0.5);
    const x = new Float32Array(rows * hidden);
    for (let r = 0; r < rows; r++)
      for (let j = 0; j < hidden; j++) {
        let s = 0;
        for (let i = 0; i < k; i++) s = Math.fround(s + Math.fround(a[r * k + i] * w[i * hidden + j]));
        x[r * hidden + j] = s;
      }
    const storage = (data) => {
      const b = device.createBuffer({ size: data.byteLength, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
      device.queue.writeBuffer(b, 0, data);
      return b;
    };
    // The app's kernels: a matmul into the package's input tensor, and a copy out of the
    // package's output (as the next layer of an app would read it).
    const pipeline = (code) =>
      device.createComputePipeline({ layout: "auto", compute: { entryPoint: "main", module: device.createShaderModule({ code }) } });
    const matmul = pipeline(`@group(0) @binding(0) var<storage, read> a: array<f32>;
                 @group(0) @binding(1) var<storage, read> w: array<f32>;
                 @group(0) @binding(2) var<storage, read_write> x: array<f32>;
                 @compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) {
                   let r = g.x / ${hidden}u; let j = g.x % ${hidden}u;
                   if r >= ${rows}u { return; }
                   var s = 0.0;
                   for (var i = 0u; i < ${k}u; i++) { s = s + a[r * ${k}u + i] * w[i * ${hidden}u + j]; }
                   x[g.x] = s;
                 }`);
    const copy = pipeline(`@group(0) @binding(0) var<storage, read> y: array<f32>;
                 @group(0) @binding(1) var<storage, read_write> out: array<f32>;
                 @compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) {
                   if g.x < arrayLength(&out) { out[g.x] = y[g.x]; }
                 }`);
    const run = (pipeline, buffers) => {
      const e = device.createCommandEncoder();
      const p = e.beginComputePass();
      p.setPipeline(pipeline);
      p.setBindGroup(0, device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries: buffers.map((buffer, binding) => ({ binding, resource: { buffer } })) }));
      p.dispatchWorkgroups(Math.ceil((rows * hidden) / 64));
      p.end();
      device.queue.submit([e.finish()]);
    };
    const input = norm.upload(new Float32Array(rows * hidden));
    const residual = norm.upload(src.residual);
    const gamma = norm.upload(src.gamma), beta = norm.upload(src.beta);
    run(matmul, [storage(a), storage(w), input.buffer]);
    await norm.run({ input, residual, gamma, beta, hidden, inPlace: true });
    const out = device.createBuffer({ size: rows * hidden * 4, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
    run(copy, [input.buffer, out]);
    const staging = device.createBuffer({ size: rows * hidden * 4, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    const e = device.createCommandEncoder();
    e.copyBufferToBuffer(out, 0, staging, 0, rows * hidden * 4);
    device.queue.submit([e.finish()]);
    await staging.mapAsync(GPUMapMode.READ);
    const y = new Float32Array(staging.getMappedRange().slice(0));
    staging.unmap();
    const want = { ...src, input: x, residual: src.residual };
    // The GPU's matmul may round differently from the page's: compare against the
    // reference of the activations the GPU actually wrote, read back on its own.
    const written = new Float32Array(rows * hidden);
    const check = norm.upload(new Float32Array(rows * hidden));
    run(matmul, [storage(a), storage(w), check.buffer]);
    written.set(await check.read());
    const matmulClose = written.every((v, i) => Math.abs(v - x[i]) <= 1e-5 * (Math.abs(x[i]) + 1));
    const rep = ref.compare({ ...want, input: written }, y);
    const sizes = [input.buffer.size, input.buffer instanceof GPUBuffer, norm.device instanceof GPUDevice];
    return { ok: rep.ok, maxRel: rep.maxRel, problems: rep.problems, matmulClose, sizes };
  });
  assert.equal(r.matmulClose, true, "the app's matmul itself");
  assert.deepEqual(r.problems, []);
  assert.equal(r.ok, true);
  assert.deepEqual(r.sizes, [3 * 64 * 4, true, true]);
});

test("interop: on the CPU backend norm.device and tensor.buffer are undefined; a freed tensor's buffer is an InvalidStateError", async () => {
  const r = await inPage(async () => {
    const { pkg } = window.lib;
    const cpu = await pkg.FusedRmsNorm.create({ backend: "cpu" });
    const gpu = await pkg.FusedRmsNorm.create();
    const t = gpu.upload(new Float32Array(8));
    t.free();
    let freed;
    try {
      freed = t.buffer;
    } catch (e) {
      freed = e.name;
    }
    return { device: cpu.device, buffer: cpu.upload(new Float32Array(4)).buffer, freed };
  });
  assert.deepEqual(r, { device: undefined, buffer: undefined, freed: "InvalidStateError" });
});

test("no console error or uncaught page error", () => {
  assert.deepEqual(problems, []);
});
