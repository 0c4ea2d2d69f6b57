// A rotary stage's positions in an app's GPUBuffer (a decode loop's position counter kept on
// the GPU), in headless Chromium on WebGPU (SwiftShader): through run with arrays and with
// tensors in place, encode, bind (the buffer read again at every recording), with the app's
// cos and sin (`cosSin`: the positions after its table), a timing call,
// two recordings of one shape with different buffers in one encoder; every value against
// the f64 reference (www/lib/reference.js) of the same call with the positions as an array;
// every bad buffer a named error, the instance working after them, and the CPU backend
// refusing such a call by name.
//
//   bash scripts/build.sh && node --test --test-reporter=spec tests/e2e/browsers/rotary-buffer-positions.test.mjs
import assert from "node:assert/strict";

import { pageSuite, test } from "../support/page.mjs";

const { inPage } = pageSuite("rmsnorm-rotary-buffer-positions-");

test("positions in a GPUBuffer: run, tensors in place, encode, bind (read at each recording) and a timing call meet the f64 reference; bad buffers and the CPU backend are named errors", async () => {
  const r = await inPage(async () => {
    const { pkg, seeded, ref } = window.lib;
    const { bufferOf } = await import("/lib/app-gpu.js");
    // Three tokens of four heads of 16.
    const heads = 4, hidden = 16, a = seeded.caseArgs({ rows: 3 * heads, hidden, bias: false, beta: false, seed: 17 });
    const out = {};
    const invFreq = Float32Array.from({ length: 8 }, (_, k) => Math.fround(1e4 ** (-k / 8)));
    const at = (positions) => ({ input: a.input, gamma: a.gamma, hidden, eps: 1e-5, invFreq, heads, positions: new Int32Array(positions) });
    const message = async (p) => p.then(() => "resolved", (e) => `${e.name}: ${e.message}`);
    const n = await pkg.FusedRmsNorm.create();
    const device = n.device;
    const USE = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC;
    const counter = (positions, extra = 0) => bufferOf(device, new Int32Array([...positions, ...Array(extra).fill(9)]), USE);
    const want = at([3, 4, 70000]);
    // Larger than the call's tokens, as an engine's pooled buffer is: the first three are read.
    const given = { ...want, positions: counter([3, 4, 70000], 5) };
    out.run = ref.compare(want, await n.run(given)).problems;
    const inPlace = n.upload(a.input);
    await n.run({ ...given, input: inPlace, gamma: n.upload(a.gamma), inPlace: true });
    out.inPlace = ref.compare(want, await inPlace.read()).problems;
    const gpu = await n.run({ ...given, output: "gpu" });
    out.gpu = ref.compare(want, await gpu.read()).problems;
    // Two recordings of one shape (one kept table), each with its own buffer, in one encoder.
    const input = n.upload(a.input), gamma = n.upload(a.gamma);
    const [o1, o2] = [0, 1].map(() => n.upload(new Float32Array(a.input.length)));
    const e = device.createCommandEncoder();
    n.encode(e, { ...given, input, gamma, output: o1 });
    n.encode(e, { ...given, input, gamma, output: o2, positions: counter([0, 1, 2]) });
    device.queue.submit([e.finish()]);
    out.encode = ref.compare(want, await o1.read()).problems;
    out.encodeSecond = ref.compare(at([0, 1, 2]), await o2.read()).problems;
    // A bound call reads the buffer at each recording: the app moves its counter on the GPU.
    const step = counter([3, 4, 70000]);
    const o3 = n.upload(new Float32Array(a.input.length));
    const bound = n.bind({ ...given, input, gamma, output: o3, positions: step });
    await bound.run();
    out.bound = ref.compare(want, await o3.read()).problems;
    device.queue.writeBuffer(step, 0, new Int32Array([5, 6, 1 << 20]));
    await bound.run();
    out.boundMoved = ref.compare(at([5, 6, 1 << 20]), await o3.read()).problems;
    bound.free();
    // With the app's cos and sin, the positions go after its table: through run and encode.
    const cosSin = Float32Array.from({ length: 12 * 16 }, (_, i) => Math.cos(i * 0.29));
    const tabled = { ...at([11, 0, 5]), invFreq: undefined, cosSin };
    const fromBuffer = { ...tabled, positions: counter([11, 0, 5], 2) };
    out.cosSinRun = ref.compare(tabled, await n.run(fromBuffer)).problems;
    const o4 = n.upload(new Float32Array(a.input.length));
    const e2 = device.createCommandEncoder();
    n.encode(e2, { ...fromBuffer, input, gamma, output: o4 });
    device.queue.submit([e2.finish()]);
    out.cosSinEncode = ref.compare(tabled, await o4.read()).problems;
    const ms = await n.timeDispatches(given, 2);
    out.timed = typeof ms === "number" && ms >= 0;
    // Refusals, nothing computed; the instance works after them.
    out.noHeads = await message(n.run({ ...given, heads: undefined }));
    out.noCopy = await message(n.run({ ...given, positions: bufferOf(device, new Int32Array(3), GPUBufferUsage.STORAGE) }));
    out.short = await message(n.run({ ...given, positions: counter([1, 2]) }));
    out.both = await message(n.run({ ...given, position: 4 }));
    out.notDivided = await message(n.run({ ...given, heads: 5 }));
    try {
      n.encode(device.createCommandEncoder(), { ...given, input, gamma, output: o1, heads: undefined });
      out.encodeBad = "returned";
    } catch (err) {
      out.encodeBad = `${err.name}: ${err.message}`;
    }
    out.after = ref.compare(want, await n.run(given)).problems;
    const cpu = await pkg.FusedRmsNorm.create({ backend: "cpu" });
    out.cpu = await message(cpu.run({ ...want, positions: counter([3, 4, 70000]) }));
    out.cpuAfter = ref.compare(want, await cpu.run(want)).problems;
    return out;
  });
  for (const k of ["run", "inPlace", "gpu", "encode", "encodeSecond", "bound", "boundMoved", "cosSinRun", "cosSinEncode", "after", "cpuAfter"]) assert.deepEqual(r[k], [], k);
  assert.equal(r.timed, true, "a timing call with a positions buffer resolves with milliseconds");
  const noHeads = "TypeError: heads: expected the rows a token with positions in a GPUBuffer (its size does not tell the tokens), got undefined";
  assert.equal(r.noHeads, noHeads);
  assert.equal(r.encodeBad, noHeads);
  assert.equal(r.noCopy, "TypeError: positions: expected a GPUBuffer with GPUBufferUsage.COPY_SRC (its positions are copied on the GPU), got one without it");
  assert.equal(r.short, "ShapeError: positions: expected a GPUBuffer of at least 12 bytes (a 32-bit position for each of 3 tokens), got 8");
  assert.equal(r.both, "TypeError: position: expected undefined with positions, got the number 4");
  assert.equal(r.notDivided, "ShapeError: heads: expected a divisor of the rows (12), got 5");
  assert.equal(r.cpu, "TypeError: positions: expected an Int32Array or a Uint32Array (this instance runs on the CPU backend, which has no GPU device), got a GPUBuffer");
});
