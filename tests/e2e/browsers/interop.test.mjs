// Alongside an app's own WebGPU work, in headless Chromium: the app's WGSL kernel writes an
// activation into a GpuTensor's buffer on the package's device, the package normalizes it in a
// GPU-resident chain, and the app's kernel reads the result, with no readback in between; the
// result is checked against the f64 reference.
//
//   bash scripts/build.sh && node --test --test-reporter=spec tests/e2e/browsers/interop.test.mjs
import assert from "node:assert/strict";

import { join } from "node:path";

import { ROOT } from "../support/repo.mjs";
import { pageSuite, test } from "../support/page.mjs";

// onnxruntime-web (the devDependency) and the benchmark's ONNX writer, for the test of interop
// with it.
const { inPage, problems } = pageSuite("rmsnorm-interop-", {
  mounts: [["/ort", join(ROOT, "node_modules/onnxruntime-web/dist")], ["/bench", join(ROOT, "bench")]],
});

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
      freed = `${e.name}: ${e.message}`;
    }
    return { device: cpu.device, buffer: cpu.upload(new Float32Array(4)).buffer, freed };
  });
  assert.deepEqual(r, { device: undefined, buffer: undefined, freed: "InvalidStateError: buffer: expected a live GpuTensor, got one that was freed (or never created)" });
});

test("GPUBuffer arguments: run and runWithSum take buffers of norm.device (alone, mixed with arrays and tensors, f32 and f16, results read back or on the GPU, larger than their data with rows); equal to the f64 reference", async () => {
  const r = await inPage(async () => {
    const { pkg, ref, seeded, f16 } = window.lib;
    const { bufferOf } = await import("/lib/app-gpu.js");
    const norm = await pkg.FusedRmsNorm.create();
    const device = norm.device;
    const COPY = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC;
    const out = {};
    const args = seeded.caseArgs({ rows: 5, hidden: 96, bias: true, beta: true, seed: 41 });
    const buf = (a) => bufferOf(device, a, COPY);
    // Every array a buffer.
    const all = await norm.runWithSum({
      input: buf(args.input), residual: buf(args.residual), gamma: buf(args.gamma),
      beta: buf(args.beta), bias: buf(args.bias), hidden: args.hidden,
    });
    out.all = ref.compare(args, all.output, { sum: all.sum });
    // Mixed: buffers, a typed array and a tensor in one call, results left on the GPU.
    const t = await norm.run({
      input: buf(args.input), residual: norm.upload(args.residual), gamma: args.gamma,
      beta: buf(args.beta), bias: args.bias, hidden: args.hidden, output: "gpu",
    });
    out.mixed = ref.compare(args, await t.read());
    // f16: the buffers hold halves, as args.dtype says.
    const { bits, host } = f16.argsToF16(seeded.caseArgs({ rows: 3, hidden: 64, beta: true, seed: 42 }));
    const h = await norm.run({
      input: buf(bits.input), residual: buf(bits.residual), gamma: bits.gamma, beta: buf(bits.beta),
      hidden: 64, dtype: "f16",
    });
    const widened = f16.fromF16(h);
    const direct = await norm.run(bits);
    out.f16 = ref.compare(host, widened, { tol: 2e-3 });
    out.f16Same = h.every((v, i) => v === direct[i]);
    out.f16Type = Object.prototype.toString.call(h);
    // Buffers larger than their data (as engines round sizes up): `rows` says how many rows are data.
    const big = (a, extra) => { const b = device.createBuffer({ size: a.byteLength + extra, usage: COPY | GPUBufferUsage.COPY_DST }); device.queue.writeBuffer(b, 0, a); return b; };
    const rows = await norm.runWithSum({ ...args, input: big(args.input, 4096), residual: big(args.residual, 100 * 4), gamma: big(args.gamma, 64), rows: 5 });
    out.rows = ref.compare(args, rows.output, { sum: rows.sum });
    // The same into the caller's arrays: their length is the rows', not the buffers'.
    const [y, v] = [new Float32Array(args.input.length), new Float32Array(args.input.length)];
    const given = await norm.runWithSum({ ...args, input: big(args.input, 4096), residual: big(args.residual, 400), rows: 5, output: y, sum: v });
    out.givenRows = { ...ref.compare(args, y, { sum: v }), same: given.output === y && given.sum === v };
    const tensorRows = await norm.run({ ...args, residual: big(args.residual, 1024) });
    out.tensorRows = ref.compare(args, tensorRows);
    try { await norm.run({ ...args, rows: 4 }); out.wrongRows = "resolved"; } catch (e) { out.wrongRows = `${e.name}: ${e.message}`; }
    try { await norm.run({ ...args, input: big(args.input, 0), rows: 6 }); out.shortBuffer = "resolved"; } catch (e) { out.shortBuffer = `${e.name}: ${e.message}`; }
    return out;
  });
  for (const k of ["all", "mixed", "f16", "rows", "givenRows", "tensorRows"]) assert.deepEqual(r[k].problems, [], k);
  assert.equal(r.givenRows.same, true, "runWithSum resolves with the caller's own arrays");
  assert.match(r.wrongRows, /^ShapeError: rows: expected 5 \(input\.length \/ hidden\), got 4/);
  assert.match(r.shortBuffer, /^ShapeError: input: expected a GPUBuffer of at least 576 elements \(rows × hidden\), got 480/);
  assert.equal(r.f16Same, true, "f16 from buffers equals f16 from arrays bit for bit");
  assert.equal(r.f16Type, "[object Uint16Array]");
});

test("GPUBuffer arguments: a wrong size, a missing usage, a destroyed buffer, another device's buffer, the CPU backend and in place are named errors, and the instance keeps working", async () => {
  const r = await inPage(async () => {
    const { pkg, ref, seeded } = window.lib;
    const { bufferOf } = await import("/lib/app-gpu.js");
    const norm = await pkg.FusedRmsNorm.create();
    const cpu = await pkg.FusedRmsNorm.create({ backend: "cpu" });
    const device = norm.device;
    const other = await (await navigator.gpu.requestAdapter()).requestDevice();
    const COPY = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC;
    const args = seeded.caseArgs({ rows: 2, hidden: 32, seed: 43 });
    const name = async (p) => { try { await p; return "resolved"; } catch (e) { return `${e.name}: ${e.message}`; } };
    const destroyed = bufferOf(device, args.input, COPY);
    destroyed.destroy();
    const cases = {
      "wrong size": { residual: bufferOf(device, new Float32Array(60), COPY) },
      "no COPY_SRC": { input: bufferOf(device, args.input, GPUBufferUsage.STORAGE) },
      "destroyed": { input: destroyed },
      "another device": { residual: bufferOf(other, args.residual, COPY) },
      "a look-alike": { input: { [Symbol.toStringTag]: "GPUBuffer", size: 256, usage: 4 } },
      "part of an element": { input: device.createBuffer({ size: 6, usage: COPY }) },
    };
    const out = {};
    for (const [k, bad] of Object.entries(cases)) {
      out[k] = await name(norm.run({ ...args, ...bad }));
      // The instance keeps working: the next good call is right.
      const good = await norm.run({ ...args, input: bufferOf(device, args.input, COPY) });
      if (!ref.compare(args, good).ok) out[k] += " (and the next call was wrong)";
    }
    out.cpu = await name(cpu.run({ ...args, input: bufferOf(device, args.input, COPY) }));
    out.inPlace = await name(norm.run({ ...args, input: bufferOf(device, args.input, COPY), residual: norm.upload(args.residual), inPlace: true }));
    return out;
  });
  assert.match(r["wrong size"], /^ShapeError: residual: expected length 64 \(the length of input\), got 60/);
  assert.match(r["no COPY_SRC"], /^TypeError: input: expected a GPUBuffer with GPUBufferUsage\.COPY_SRC/);
  assert.match(r.destroyed, /^InvalidStateError: input: expected a live GPUBuffer, got one that was destroyed/);
  assert.match(r["another device"], /^TypeError: residual: expected a GPUBuffer created on norm\.device, got one of another device/);
  // An object that only claims GPUBuffer's brand is not one (the runtime's GPUBuffer says so).
  assert.match(r["a look-alike"], /^TypeError: input: expected a Float32Array \(or Uint16Array\/Float16Array for f16\), a GpuTensor or a GPUBuffer, got an Object$/);
  assert.match(r["part of an element"], /^ShapeError: input: expected a GPUBuffer of whole f32 elements, got 6 bytes/);
  assert.match(r.cpu, /^TypeError: input: expected a typed array or a GpuTensor \(this instance runs on the CPU backend/);
  assert.match(r.inPlace, /^TypeError: input: expected a GpuTensor with inPlace: true, got a GPUBuffer/);
});

test("encode: the app's matmul, the package's normalization and the app's next matmul in one command encoder, one submit, no readback between; in place on buffers too; equal to the f64 reference", async () => {
  const r = await inPage(async () => {
    const { pkg, ref, seeded } = window.lib;
    const { bufferOf, emptyBuffer, readBuffer, matmulKernel, matmulCpu } = await import("/lib/app-gpu.js");
    const norm = await pkg.FusedRmsNorm.create();
    const device = norm.device;
    const rows = 4, k = 24, hidden = 128;
    const S = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC;
    const next = seeded.rng(51);
    const src = seeded.caseArgs({ rows, hidden, bias: true, beta: true, seed: 52 });
    const a = seeded.filled(rows * k, next, -1, 1);
    const w1 = seeded.filled(k * hidden, next, -0.5, 0.5);
    const w2 = seeded.filled(hidden * 8, next, -0.5, 0.5);
    const up = matmulKernel(device, { rows, k, n: hidden });
    const down = matmulKernel(device, { rows, k: hidden, n: 8 });
    const x = emptyBuffer(device, rows * hidden * 4, S);
    const residual = bufferOf(device, src.residual, S);
    const y = emptyBuffer(device, rows * hidden * 4, S);
    const sum = emptyBuffer(device, rows * hidden * 4, S);
    const z = emptyBuffer(device, rows * 8 * 4, S);
    const gamma = norm.upload(src.gamma), bias = norm.upload(src.bias);
    const beta = bufferOf(device, src.beta, S);
    device.pushErrorScope("validation");
    const e = device.createCommandEncoder();
    up.record(e, bufferOf(device, a, S), bufferOf(device, w1, S), x);
    norm.encode(e, { input: x, residual, gamma, beta, bias, hidden, output: y, sum });
    down.record(e, y, bufferOf(device, w2, S), z);
    device.queue.submit([e.finish()]);
    const scope = await device.popErrorScope();
    const f32 = async (b) => new Float32Array(await readBuffer(device, b));
    const [xs, ys, ss, zs] = [await f32(x), await f32(y), await f32(sum), await f32(z)];
    const args = { ...src, input: xs };
    const chain = ref.compare(args, ys, { sum: ss });
    const zWant = matmulCpu(ys, w2, { rows, k: hidden, n: 8 });
    const zClose = zs.every((v, i) => Math.abs(v - zWant[i]) <= 1e-5 * (Math.abs(zWant[i]) + 1));
    // In place on the app's buffers: x ← y and residual ← sum, equal to the pass above bit for bit.
    const e2 = device.createCommandEncoder();
    norm.encode(e2, { input: x, residual, gamma, beta, bias, hidden, inPlace: true });
    device.queue.submit([e2.finish()]);
    const [xi, ri] = [await f32(x), await f32(residual)];
    const inPlaceSame = xi.every((v, i) => Object.is(v, ys[i])) && ri.every((v, i) => Object.is(v, ss[i]));
    // The same call through run, on the same numbers: the same bits.
    const viaRun = await norm.runWithSum({ ...args });
    const runSame = viaRun.output.every((v, i) => Object.is(v, ys[i])) && viaRun.sum.every((v, i) => Object.is(v, ss[i]));
    return { scope: scope?.message ?? null, chain, zClose, inPlaceSame, runSame };
  });
  assert.equal(r.scope, null, "WebGPU found nothing wrong with the recorded work");
  assert.deepEqual(r.chain.problems, []);
  assert.equal(r.chain.ok, true);
  assert.equal(r.zClose, true, "the app's kernel read the normalized rows");
  assert.equal(r.inPlaceSame, true, "in place on buffers equals into buffers");
  assert.equal(r.runSame, true, "encode equals run bit for bit");
});

test("encode: f16 tensors and f16 buffers, 32 layers recorded into one encoder, equal to as many awaited runs bit for bit", async () => {
  const r = await inPage(async () => {
    const { pkg, seeded, f16 } = window.lib;
    const { bufferOf, readBuffer } = await import("/lib/app-gpu.js");
    const norm = await pkg.FusedRmsNorm.create();
    const device = norm.device;
    const rows = 2, hidden = 64, L = 32;
    const next = seeded.rng(61);
    const h = (n, lo, hi) => f16.toF16(seeded.filled(n, next, lo, hi));
    const x0 = h(rows * hidden, -2, 2), r0 = h(rows * hidden, -2, 2);
    const gammas = Array.from({ length: L }, () => h(hidden, -1.5, 1.5));
    // Recorded: x and r as f16 buffers, gammas as f16 tensors, all layers in place.
    const S = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC;
    const x = bufferOf(device, x0, S), res = bufferOf(device, r0, S);
    const g = gammas.map((a) => norm.upload(a));
    const e = device.createCommandEncoder();
    for (let l = 0; l < L; l++) norm.encode(e, { input: x, residual: res, gamma: g[l], hidden, dtype: "f16", inPlace: true });
    device.queue.submit([e.finish()]);
    const got = new Uint16Array(await readBuffer(device, x, rows * hidden * 2));
    // Awaited: the same chain through runWithSum on host arrays.
    let xs = x0, rs = r0;
    for (let l = 0; l < L; l++) {
      const o = await norm.runWithSum({ input: xs, residual: rs, gamma: gammas[l], hidden });
      xs = o.output; rs = o.sum;
    }
    return { same: got.every((v, i) => v === xs[i]), finite: f16.fromF16(got).every(Number.isFinite) };
  });
  assert.deepEqual(r, { same: true, finite: true });
});

test("encode: bad arguments throw named errors at once (host data, no output, aliasing, sizes, not an encoder, a freed tensor, the CPU backend), nothing reaches the app's error scope, and the instance keeps working", async () => {
  const r = await inPage(async () => {
    const { pkg, ref, seeded } = window.lib;
    const { bufferOf, emptyBuffer, readBuffer } = await import("/lib/app-gpu.js");
    const norm = await pkg.FusedRmsNorm.create();
    const cpu = await pkg.FusedRmsNorm.create({ backend: "cpu" });
    const device = norm.device;
    const S = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC;
    const src = seeded.caseArgs({ rows: 3, hidden: 40, seed: 71 });
    const n = src.input.length;
    const ok = () => ({ input: bufferOf(device, src.input, S), residual: bufferOf(device, src.residual, S), gamma: bufferOf(device, src.gamma, S), hidden: 40, output: emptyBuffer(device, n * 4, S) });
    const freed = norm.upload(src.gamma);
    freed.free();
    const thrown = (f) => { try { f(); return "returned"; } catch (e) { return `${e.name}: ${e.message}`; } };
    device.pushErrorScope("validation");
    const e = device.createCommandEncoder();
    const out = {};
    const shared = bufferOf(device, src.input, S);
    const cases = {
      host: { ...ok(), input: src.input },
      noOutput: { ...ok(), output: undefined },
      outputIsInput: { ...ok(), input: shared, output: shared },
      inPlaceSame: { ...ok(), input: shared, residual: shared, output: undefined, inPlace: true },
      inPlaceAndOutput: { ...ok(), inPlace: true },
      outputSize: { ...ok(), output: emptyBuffer(device, 16, S) },
      noStorage: { ...ok(), gamma: bufferOf(device, src.gamma, GPUBufferUsage.COPY_SRC) },
      freed: { ...ok(), gamma: freed },
      typo: { ...ok(), ouput: 1 },
    };
    for (const [k, a] of Object.entries(cases)) out[k] = thrown(() => norm.encode(e, a));
    out.notEncoder = thrown(() => norm.encode({}, ok()));
    out.cpu = thrown(() => cpu.encode(e, ok()));
    out.cpuSource = thrown(() => cpu.kernelSource({ hidden: 40 }));
    // The instance keeps working: a good call recorded into the same encoder after all that.
    const good = ok();
    norm.encode(e, good);
    device.queue.submit([e.finish()]);
    out.scope = (await device.popErrorScope())?.message ?? null;
    out.good = ref.compare(src, new Float32Array(await readBuffer(device, good.output))).ok;
    return out;
  });
  assert.match(r.host, /^TypeError: input: expected a GPUBuffer or a GpuTensor \(encode records GPU work only/);
  assert.match(r.noOutput, /^TypeError: output: expected a GPUBuffer or a GpuTensor for the result/);
  assert.match(r.outputIsInput, /^TypeError: output: expected a buffer other than input's/);
  assert.match(r.inPlaceSame, /^TypeError: residual: expected a buffer other than input's/);
  assert.match(r.inPlaceAndOutput, /^TypeError: output: expected no output or sum with inPlace: true/);
  assert.match(r.outputSize, /^ShapeError: output: expected length 120 \(the length of input\), got 4/);
  assert.match(r.noStorage, /^TypeError: gamma: expected a GPUBuffer with GPUBufferUsage\.STORAGE/);
  assert.match(r.freed, /^InvalidStateError: gamma: expected a live GpuTensor, got one that was freed/);
  assert.match(r.typo, /^TypeError: args\.ouput: expected one of .* \(did you mean output\?\)/);
  assert.match(r.notEncoder, /^TypeError: encoder: expected a GPUCommandEncoder of norm\.device, got an Object/);
  assert.match(r.cpu, /^InvalidStateError: encode: expected an instance on the webgpu backend/);
  assert.match(r.cpuSource, /^InvalidStateError: kernelSource: expected an instance on the webgpu backend/);
  assert.equal(r.scope, null);
  assert.equal(r.good, true);
});

test("encode after a device loss: GpuDeviceError naming the loss, then ondevicerestored, and encode on the new norm.device is right again", async () => {
  const r = await inPage(async () => {
    const { pkg, ref, seeded } = window.lib;
    const { bufferOf, emptyBuffer, readBuffer } = await import("/lib/app-gpu.js");
    const norm = await pkg.FusedRmsNorm.create();
    const restored = new Promise((resolve) => { norm.ondevicerestored = resolve; });
    const S = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC;
    const src = seeded.caseArgs({ rows: 2, hidden: 48, beta: true, seed: 81 });
    const call = (device) => ({ input: bufferOf(device, src.input, S), residual: bufferOf(device, src.residual, S), gamma: bufferOf(device, src.gamma, S), beta: bufferOf(device, src.beta, S), hidden: 48, output: emptyBuffer(device, src.input.length * 4, S) });
    const old = norm.device;
    const args = call(old);
    norm.simulateDeviceLoss();
    await old.lost;
    let lost;
    try { norm.encode(old.createCommandEncoder(), args); lost = "returned"; } catch (e) { lost = `${e.name}: ${e.message}`; }
    await restored;
    const device = norm.device;
    const again = call(device);
    const e = device.createCommandEncoder();
    norm.encode(e, again);
    device.queue.submit([e.finish()]);
    const ok = ref.compare(src, new Float32Array(await readBuffer(device, again.output))).ok;
    // And a run with a buffer of the lost device names the loss.
    let stale;
    try { await norm.run({ ...src, input: args.input }); stale = "resolved"; } catch (e) { stale = `${e.name}: ${e.message}`; }
    return { lost, ok, newDevice: device !== old, stale };
  });
  assert.match(r.lost, /^GpuDeviceError: encode: the device was lost .*a new one is being opened/);
  assert.equal(r.ok, true);
  assert.equal(r.newDevice, true);
  // The lost device's buffers are another device's now.
  assert.match(r.stale, /^TypeError: input: expected a GPUBuffer created on norm\.device, got one of another device/);
});

test("kernelSource: an engine's own pipeline from the exported WGSL and binding table (an explicit layout, its own uniform buffer, the given grid) gives run's results bit for bit", async () => {
  const r = await inPage(async () => {
    const { pkg, seeded } = window.lib;
    const { bufferOf, emptyBuffer, readBuffer } = await import("/lib/app-gpu.js");
    const norm = await pkg.FusedRmsNorm.create();
    const device = norm.device;
    const out = {};
    for (const [rows, hidden] of [[3, 96], [2, 37]]) {
      const src = seeded.caseArgs({ rows, hidden, bias: true, beta: true, seed: 90 + hidden });
      const k = norm.kernelSource({ hidden, bias: true, beta: true, sum: true, rows });
      const layout = device.createBindGroupLayout({
        entries: k.bindings.map((b) => ({ binding: b.binding, visibility: GPUShaderStage.COMPUTE, buffer: { type: b.type } })),
      });
      const pipeline = device.createComputePipeline({
        layout: device.createPipelineLayout({ bindGroupLayouts: [layout] }),
        compute: { module: device.createShaderModule({ code: k.code }), entryPoint: k.entryPoint },
      });
      const params = new ArrayBuffer(k.params.size);
      const values = { rows, width: hidden / k.lanes, hidden, eps: 1e-6, gamma_offset: 0 };
      for (const f of k.params.fields) new DataView(params)[f.type === "u32" ? "setUint32" : "setFloat32"](f.offset, values[f.name], true);
      const S = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC;
      const data = {
        input: bufferOf(device, src.input, S), residual: bufferOf(device, src.residual, S), gamma: bufferOf(device, src.gamma, S),
        beta: bufferOf(device, src.beta, S), bias: bufferOf(device, src.bias, S),
        output: emptyBuffer(device, rows * hidden * 4, S), sum: emptyBuffer(device, rows * hidden * 4, S),
        params: bufferOf(device, new Uint8Array(params), GPUBufferUsage.UNIFORM),
      };
      // Optional bindings the call has no array for (post_gamma here) take any small buffer.
      const stub = emptyBuffer(device, 16, S);
      const e = device.createCommandEncoder();
      const pass = e.beginComputePass();
      pass.setPipeline(pipeline);
      pass.setBindGroup(0, device.createBindGroup({ layout, entries: k.bindings.map((b) => ({ binding: b.binding, resource: { buffer: data[b.name] ?? (b.optional ? stub : undefined) } })) }));
      pass.dispatchWorkgroups(...k.workgroups);
      pass.end();
      device.queue.submit([e.finish()]);
      const y = new Float32Array(await readBuffer(device, data.output));
      const v = new Float32Array(await readBuffer(device, data.sum));
      const want = await norm.runWithSum(src);
      out[`${rows}x${hidden}`] = {
        same: want.output.every((x, i) => Object.is(x, y[i])) && want.sum.every((x, i) => Object.is(x, v[i])),
        names: k.bindings.map((b) => `${b.binding}:${b.name}:${b.type}`).join(" "),
        lanes: k.lanes,
        // One workgroup a row on a CPU adapter; the grid holds rows × workgroupsPerRow.
        perRow: k.workgroupsPerRow,
        grid: k.workgroups[0] * k.workgroups[1] === rows * k.workgroupsPerRow,
      };
    }
    return out;
  });
  const names = "0:input:read-only-storage 1:residual:read-only-storage 2:gamma:read-only-storage 3:beta:read-only-storage 4:bias:read-only-storage 5:output:storage 6:sum:storage 7:params:uniform 8:post_gamma:read-only-storage";
  assert.deepEqual(r, { "3x96": { same: true, names, lanes: 4, perRow: 1, grid: true }, "2x37": { same: true, names, lanes: 1, perRow: 1, grid: true } });
});

/**
 * In the page: onnxruntime-web's WebGPU session of one SkipSimplifiedLayerNormalization layer
 * (its own gamma) and our instance, ORT given norm.device either through the session's WebGPU
 * execution-provider options (`how: "ep"`) or through `env.webgpu.device` (`how: "env"`); then
 * our output tensor's buffer into ORT (Tensor.fromGpuBuffer), and ORT's output buffer into our
 * run as a GPUBuffer argument.
 */
const ORT_INTEROP = async (how) => {
  const { pkg, ref, seeded } = window.lib;
  const ort = await import("/ort/ort.webgpu.min.mjs");
  const { Writer, initializer, modelBytes, skipNormNode, valueInfo } = await import("/bench/shared/onnx-model.mjs");
  ort.env.wasm.wasmPaths = "/ort/";
  ort.env.wasm.numThreads = 1;
  const norm = await pkg.FusedRmsNorm.create();
  const rows = 3, hidden = 64, eps = 1e-6;
  const dims = [1, rows, hidden];
  const first = seeded.caseArgs({ rows, hidden, seed: 101 });
  const second = seeded.caseArgs({ rows, hidden, seed: 102 });
  const graph = new Writer();
  graph.message(1, skipNormNode({ name: "norm", inputs: ["input", "skip", "gamma"], outputs: ["output"], eps }));
  graph.string(2, "one_layer");
  graph.message(5, initializer("gamma", second.gamma));
  graph.message(11, valueInfo("input", dims));
  graph.message(11, valueInfo("skip", dims));
  graph.message(12, valueInfo("output", dims));
  if (how === "env") ort.env.webgpu.device = norm.device;
  const ep = how === "ep" ? { name: "webgpu", device: norm.device } : "webgpu";
  const session = await ort.InferenceSession.create(modelBytes(graph, "interop test"), {
    executionProviders: [ep], preferredOutputLocation: "gpu-buffer",
  });
  const out = { sameDevice: ort.env.webgpu.device === norm.device };
  const y = await norm.run({ ...first, output: "gpu" });
  const skip = norm.upload(second.residual);
  let o;
  try {
    o = await session.run({
      input: ort.Tensor.fromGpuBuffer(y.buffer, { dataType: "float32", dims }),
      skip: ort.Tensor.fromGpuBuffer(skip.buffer, { dataType: "float32", dims }),
    });
  } catch (e) {
    out.ortRefused = String(e.message ?? e);
    return out;
  }
  out.location = o.output.location;
  out.ortBufferSize = o.output.gpuBuffer.size;
  const yHost = await y.read();
  const viaOrt = await o.output.getData();
  out.toOrt = ref.compare({ ...second, input: yHost }, viaOrt, { tol: 1e-4 });
  const third = seeded.caseArgs({ rows, hidden, beta: true, seed: 103 });
  // ORT's buffer is larger than its tensor (its allocator rounds sizes up): `rows` says how much is data.
  const back = await norm.run({ ...third, input: o.output.gpuBuffer, rows });
  out.fromOrt = ref.compare({ ...third, input: viaOrt }, back);
  o.output.dispose();
  return out;
};

test("onnxruntime-web given norm.device in its WebGPU execution-provider options: it takes a tensor's buffer (Tensor.fromGpuBuffer), and its output buffer is a GPUBuffer argument of run; both directions equal to the f64 reference", async () => {
  const r = await inPage(ORT_INTEROP, "ep");
  assert.equal(r.ortRefused, undefined);
  assert.equal(r.location, "gpu-buffer");
  assert.deepEqual(r.toOrt.problems, [], "package → ORT");
  assert.deepEqual(r.fromOrt.problems, [], "ORT → package");
  assert.ok(r.ortBufferSize > 3 * 64 * 4, `ORT's output buffer (${r.ortBufferSize} bytes) is larger than its tensor`);
});

test("onnxruntime-web 1.30 given norm.device through env.webgpu.device: it opens a device of its own instead, and refuses our buffers (what the README says)", async () => {
  const r = await inPage(ORT_INTEROP, "env");
  assert.equal(r.sameDevice, false);
  assert.match(r.ortRefused, /is associated with \[Device "webgpu-rmsnorm"\], and cannot be used with \[Device\]/);
});

test("no console error or uncaught page error", () => {
  assert.deepEqual(problems, []);
});
