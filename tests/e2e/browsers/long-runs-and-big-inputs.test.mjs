// Long runs and big inputs in headless Chromium's WebGPU: 10,000 calls with memory, live
// buffers, tensors and pipelines flat, arrays of more than 128 MiB, and a row larger than the
// device can bind; the CPU backend past its 4 GiB of wasm memory. The harness page and its
// servers: support/page.mjs.
//
//   bash scripts/build.sh && node --test --test-reporter=spec tests/e2e/browsers/long-runs-and-big-inputs.test.mjs
import assert from "node:assert/strict";

import { pageSuite, test } from "../support/page.mjs";

const { inHarness, harnessPage, servers } = pageSuite("webgpu-rmsnorm-long-and-big-");

// ---------------------------------------------------------------------------------------
// Long runs
// ---------------------------------------------------------------------------------------

test("long run: 10,000 consecutive calls (4×256): results right throughout, wasm memory, live buffers and pipelines flat", { timeout: 120_000 }, async (t) => {
  const r = await inHarness(async () => {
    const h = await window.harness;
    const L = await h.FusedRmsNorm.create();
    const N = 10_000;
    const args = h.makeArgs({ rows: 4, hidden: 256, bias: true, beta: true, seed: 8 });
    const failures = [];
    let at500;
    for (let i = 0; i < N; i++) {
      const withSum = i % 10 === 9;
      const got = withSum ? await L.runWithSum(args) : await L.run(args);
      if (i % 1000 === 0 || i === N - 1) {
        const rep = withSum ? h.check(args, got.output, got.sum) : h.check(args, got);
        if (!rep.ok) failures.push(`call ${i + 1}: ${rep.problems.join("; ")}`);
      }
      if (i + 1 === 500) at500 = L.debugStats();
    }
    const at10000 = L.debugStats();
    L.free();
    return { failures, at500, at10000 };
  });
  t.diagnostic(`debugStats at call 500 ${JSON.stringify(r.at500)}, at call 10,000 ${JSON.stringify(r.at10000)}`);
  assert.deepEqual(r.failures, []);
  // A leak of anything a call holds shows in one of these; its time is the benchmarks' concern.
  assert.equal(r.at10000.wasmMemoryBytes, r.at500.wasmMemoryBytes, "wasm memory grew after warm-up");
  assert.equal(r.at10000.liveBuffers, r.at500.liveBuffers, "live GPU buffers grew after warm-up");
  assert.equal(r.at10000.liveTensors, r.at500.liveTensors, "live tensors grew after warm-up");
  assert.equal(r.at10000.pipelines, r.at500.pipelines, "pipelines compiled after warm-up");
});

// ---------------------------------------------------------------------------------------
// Big inputs
// ---------------------------------------------------------------------------------------

test("big input: 9000×4096 f32 (147 MiB per array, more than 128 MiB) is correct", { timeout: 120_000 }, async (t) => {
  const r = await inHarness(async () => {
    const h = await window.harness;
    const adapter = await navigator.gpu.requestAdapter();
    const limits = { maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize, maxBufferSize: adapter.limits.maxBufferSize };
    const G = await h.FusedRmsNorm.create();
    const rows = 9000, hidden = 4096, n = rows * hidden;
    const t0 = performance.now();
    const next = h.rng(99);
    const input = new Float32Array(n), residual = new Float32Array(n);
    // Cheap varied data: a random pattern per row shifted by the row index, magnitudes by row.
    const pattern = Float32Array.from({ length: hidden + 9001 }, () => 4 * next() - 2);
    for (let r = 0; r < rows; r++) {
      const k = r % 97 === 0 ? 1e25 : r % 89 === 0 ? 1e-25 : 1 + (r % 7);
      for (let i = 0, o = r * hidden; i < hidden; i++) {
        input[o + i] = pattern[i + (r % 9001)] * k;
        residual[o + i] = pattern[hidden + 9000 - i - (r % 1000)] * k;
      }
    }
    const gamma = Float32Array.from({ length: hidden }, () => 3 * next() - 1.5);
    const beta = Float32Array.from({ length: hidden }, () => next() - 0.5);
    const args = { input, residual, gamma, beta, hidden, eps: 1e-6 };
    const t1 = performance.now();
    const y = await G.run(args);
    const t2 = performance.now();
    const sample = [0, 1, 97, 89, 4095, 4096, 4097, 8191, 8192, rows - 2, rows - 1];
    for (let i = 0; i < 40; i++) sample.push(Math.floor(next() * rows));
    const rep = h.check(args, y, undefined, sample);
    const stats = G.debugStats();
    G.free();
    return { limits, bytes: n * 4, fillMs: Math.round(t1 - t0), runMs: Math.round(t2 - t1), rep, sampled: sample.length, stats };
  });
  t.diagnostic(`adapter limits ${JSON.stringify(r.limits)}: one ${(r.bytes / 2 ** 20).toFixed(0)} MiB array ${r.bytes <= r.limits.maxStorageBufferBindingSize ? "fits one binding, so no row split happens here" : "needs a row split"}`);
  t.diagnostic(`run() of 9000×4096: ${r.runMs} ms (filling the inputs: ${r.fillMs} ms); ${r.sampled} rows checked; max rel err ${r.rep.maxRel.toExponential(2)}; stats after ${JSON.stringify(r.stats)}`);
  assert.ok(r.rep.ok, r.rep.problems.join("; "));
});

test("big input: one row larger than the device can bind rejects with ShapeError naming maxStorageBufferBindingSize", async (t) => {
  const r = await inHarness(async () => {
    const h = await window.harness;
    const adapter = await navigator.gpu.requestAdapter();
    const maxBinding = Math.min(adapter.limits.maxStorageBufferBindingSize, adapter.limits.maxBufferSize);
    const hidden = maxBinding / 4 + 4;
    const out = { maxBinding, hidden, failures: [] };
    // The arrays are never written, so the OS commits no pages for them; the check must
    // fire before anything is uploaded. rows = 1 (input.length = hidden) if the renderer
    // allows three such arrays, else rows = 0 (gamma alone has hidden elements).
    let args;
    try {
      args = { input: new Float32Array(hidden), residual: new Float32Array(hidden), gamma: new Float32Array(hidden), hidden };
      out.rows = 1;
    } catch (e) {
      args = { input: new Float32Array(0), residual: new Float32Array(0), gamma: new Float32Array(hidden), hidden };
      out.rows = 0;
      out.why = String(e);
    }
    for (const method of ["run", "runWithSum"]) {
      const t0 = performance.now();
      const r = await h.settle(h.norm[method](args));
      out[method] = { ...(r.err ?? { name: "resolved" }), ms: Math.round(performance.now() - t0) };
    }
    args = null;
    // hidden = 2**30 with small arrays: the length check fires first (no 4 GiB array needed).
    const small = h.makeArgs({ rows: 1, hidden: 8, seed: 1 });
    const r2 = await h.settle(h.norm.run({ ...small, hidden: 2 ** 30 }));
    out.hugeHiddenSmallArrays = r2.err;
    const g = h.makeArgs({ rows: 2, hidden: 7, seed: 2 });
    out.afterOk = h.check(g, await h.norm.run(g)).ok;
    return out;
  });
  t.diagnostic(`maxStorageBufferBindingSize ${r.maxBinding} → hidden ${r.hidden}, rows ${r.rows}${r.why ? ` (${r.why})` : ""}: ${JSON.stringify(r.run)}`);
  t.diagnostic(`hidden 2**30 with 8-element arrays: ${JSON.stringify(r.hugeHiddenSmallArrays)}`);
  for (const method of ["run", "runWithSum"]) {
    assert.equal(r[method].name, "ShapeError", `${method}: ${JSON.stringify(r[method])}`);
    assert.match(r[method].message, /^hidden:/);
    assert.match(r[method].message, /maxStorageBufferBindingSize/);
  }
  assert.equal(r.hugeHiddenSmallArrays?.name, "ShapeError");
  assert.match(r.hugeHiddenSmallArrays.message, /^input:/);
  assert.ok(r.afterOk, "a good call after the rejections");
});

// A page of its own for the CPU backend's memory tests: wasm memory never shrinks, so the
// suite's page keeps its own size.
async function inOwnPage(fn) {
  const page = await harnessPage(servers.plain);
  try {
    return await page.evaluate(fn);
  } finally {
    await page.close();
  }
}

test("CPU backend: past the 4 GiB of wasm memory, uploads throw and calls reject with RangeError; the instance keeps working, and works in full once tensors are freed", { timeout: 120_000 }, async (t) => {
  const r = await inOwnPage(async () => {
    const h = await window.harness;
    const n = await h.FusedRmsNorm.create({ backend: "cpu" });
    const hidden = 4096;
    const a = h.makeArgs({ rows: 4096, hidden, bias: true, seed: 3 }); // 64 MiB arrays
    const failures = [];
    const kept = [n.upload(a.input), n.upload(a.residual)];
    const [tx, tr] = kept;
    // Fill wasm memory: 256 MiB tensors until one is refused, then 16 MiB ones.
    const refusals = [];
    for (const size of [64 << 20, 4 << 20]) {
      const data = new Float32Array(size);
      for (let i = 0; i < 4096; i++) {
        try {
          kept.push(n.upload(data));
        } catch (e) {
          refusals.push({ name: e.name, message: e.message, range: e instanceof RangeError });
          break;
        }
      }
    }
    const slow = (args) => Object.create({ inherited: 1 }, Object.getOwnPropertyDescriptors(args));
    const halves = new Uint16Array(a.input.length); // 32 MiB
    const full = {};
    for (const [what, call] of [
      ["run, arrays", () => n.run(a)],
      ["runWithSum, arrays", () => n.runWithSum(a)],
      ["run, arrays behind getters of a prototype", () => n.run(slow(a))],
      ["run, tensors", () => n.run({ ...a, input: tx, residual: tr })],
      ["runWithSum, tensors to tensors", () => n.runWithSum({ ...a, input: tx, residual: tr, output: "gpu" })],
      ["run, f16 arrays", () => n.run({ ...a, input: halves, residual: halves, gamma: new Uint16Array(hidden), bias: undefined })],
      ["timeDispatches, arrays", () => n.timeDispatches(a, 1)],
      ["gpuTime, arrays", () => n.gpuTime(a, 1)],
      // Its scratch is small; the kernel's own f32 copies of a row and of gamma are not.
      ["run, f16 data, one row of 2**20", () => n.run({ input: new Uint16Array(2 ** 20), gamma: new Uint16Array(2 ** 20), hidden: 2 ** 20, outputDtype: "f32" })],
    ]) {
      let sync;
      try {
        full[what] = (await h.settle(call())).err ?? { name: "resolved" };
      } catch (e) {
        sync = e;
      }
      if (sync) failures.push(`${what}: threw ${sync.name}: ${sync.message}`);
    }
    // Small calls still fit while memory is full.
    const small = h.makeArgs({ rows: 2, hidden: 64, bias: true, seed: 4 });
    const whileFull = h.check(small, await n.run(small)).ok;
    for (const k of kept) k.free();
    const y = await n.runWithSum(a);
    const afterFree = h.check(a, y.output, y.sum).ok;
    const again = n.upload(new Float32Array(64 << 20));
    again.free();
    return { refusals, full, whileFull, afterFree, failures };
  });
  t.diagnostic(JSON.stringify(r.refusals));
  assert.deepEqual(r.failures, []);
  assert.equal(r.refusals.length, 2, "a 256 MiB and then a 16 MiB upload refused");
  for (const e of r.refusals) {
    assert.equal(e.name, "RangeError");
    assert.ok(e.range, "an instance of RangeError");
    assert.match(e.message, /^data: \d+ MiB more than the CPU backend's wasm memory can hold now/);
  }
  for (const [what, e] of Object.entries(r.full)) {
    assert.equal(e.name, "RangeError", `${what}: ${JSON.stringify(e)}`);
    assert.match(e.message, /wasm memory can hold now/, what);
  }
  assert.ok(r.whileFull, "a small call while wasm memory is full");
  assert.ok(r.afterFree, "the 4096×4096 call once the tensors are freed, against the f64 reference");
});

test("CPU backend: a call whose results alone pass what one wasm allocation can hold rejects with RangeError at once; the instance keeps working", { timeout: 120_000 }, async (t) => {
  const r = await inOwnPage(async () => {
    const h = await window.harness;
    const n = await h.FusedRmsNorm.create({ backend: "cpu" });
    const out = {};
    // 2 GiB of halves with f32 results (4 GiB), and 2 GiB of f32 with y and sum (4 GiB):
    // never written, so the OS commits no pages for them.
    const halves = new Uint16Array(2 ** 30);
    out.memoryBefore = n.debugStats().wasmMemoryBytes;
    out.f16ToF32 = (await h.settle(n.run({ input: halves, gamma: new Uint16Array(4096), hidden: 4096, outputDtype: "f32" }))).err;
    out.memoryAfter = n.debugStats().wasmMemoryBytes;
    const floats = new Float32Array(2 ** 29);
    out.withSum = (await h.settle(n.runWithSum({ input: floats, gamma: new Float32Array(4096), hidden: 4096 }))).err;
    const small = h.makeArgs({ rows: 3, hidden: 96, bias: true, seed: 5 });
    out.afterOk = h.check(small, await n.run(small)).ok;
    return out;
  });
  t.diagnostic(`${JSON.stringify(r.f16ToF32)}; ${JSON.stringify(r.withSum)}`);
  for (const e of [r.f16ToF32, r.withSum]) {
    assert.equal(e?.name, "RangeError", JSON.stringify(e));
    assert.match(e.message, /^input: the call needs \d+ MiB of the CPU backend's wasm memory in one piece/);
  }
  // Refused before any of the 2 GiB was copied in: wasm memory did not grow for it.
  assert.equal(r.memoryAfter, r.memoryBefore, "refused at once, not after copying 2 GiB into wasm memory");
  assert.ok(r.afterOk, "a good call after the rejections");
});
