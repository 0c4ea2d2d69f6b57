// What one call asks of WebGPU once warm, in headless Chromium: the page's GPUDevice, GPUQueue
// and GPUBuffer methods are wrapped to count, because in a browser every awaited
// popErrorScope, onSubmittedWorkDone or mapAsync is a round trip to the GPU process, and every
// createBuffer or createBindGroup crosses into it (in Chromium 153 on an H200, a
// runWithSum({ output: "gpu" }) that created its results and awaited their scopes cost
// 280–320 µs, one in place 47–49).
// Then: result tensors take the buffers of freed ones (never of one still alive), and their
// numbers stay right; and failures only the GPU sees still reject with the named error.
//
//   bash scripts/build.sh && node --test --test-reporter=spec tests/e2e/browsers/call-round-trips.test.mjs
import assert from "node:assert/strict";

import { pageSuite, test } from "../support/page.mjs";

const { inPage, problems } = pageSuite("rmsnorm-round-trips-");

// Installed before the page's scripts: counts every call of the WebGPU methods a call may
// make, and lets a test change the usage of the buffers created while `poison` is set (a
// descriptor WebGPU refuses on its device timeline: the error reaches only error scopes).
const COUNTING = () => {
  const counts = {};
  window.gpuCounts = counts;
  window.poison = null;
  window.poisoned = [];
  const wrap = (proto, name) => {
    const f = proto[name];
    proto[name] = function (...args) {
      counts[name] = (counts[name] ?? 0) + 1;
      return f.apply(this, args);
    };
  };
  for (const m of ["pushErrorScope", "popErrorScope", "createBindGroup", "createComputePipeline", "createComputePipelineAsync"]) wrap(GPUDevice.prototype, m);
  for (const m of ["submit", "writeBuffer", "onSubmittedWorkDone"]) wrap(GPUQueue.prototype, m);
  wrap(GPUBuffer.prototype, "mapAsync");
  const create = GPUDevice.prototype.createBuffer;
  GPUDevice.prototype.createBuffer = function (desc) {
    counts.createBuffer = (counts.createBuffer ?? 0) + 1;
    const p = window.poison;
    if (p && desc.usage === p.usage) {
      const b = create.call(this, { ...desc, usage: desc.usage | p.add });
      window.poisoned.push(b);
      return b;
    }
    return create.call(this, desc);
  };
};

// Every counted method, zero unless a row says otherwise.
const METHODS = ["createBuffer", "createBindGroup", "createComputePipeline", "createComputePipelineAsync", "pushErrorScope", "popErrorScope", "onSubmittedWorkDone", "mapAsync", "writeBuffer", "submit"];

test("round trips: once warm, each kind of call makes one submission and creates nothing; a call's readback awaits only its maps (each asked again at most once), a tensor's read() one empty error scope first", async () => {
  const r = await inPage(async (methods) => {
    const { pkg, seeded, ref } = window.lib;
    const n = await pkg.FusedRmsNorm.create();
    // Issue 22's decode size: input, residual and gamma are one size, so the pool's staging
    // buffers trade places between calls (the bind groups must still be cached).
    const a = seeded.caseArgs({ rows: 1, hidden: 4096, seed: 61 });
    const tx = n.upload(a.input), tr = n.upload(a.residual), tg = n.upload(a.gamma);
    const onTensors = { input: tx, residual: tr, gamma: tg, hidden: a.hidden };
    const wrong = [];
    const check = (what, rep) => { if (!rep.ok) wrong.push(`${what}: ${rep.problems.join("; ")}`); };
    let chain = null;
    const kinds = {
      "run, host arrays": async () => check("run", ref.compare(a, await n.run(a))),
      "runWithSum, host arrays": async () => { const o = await n.runWithSum(a); check("runWithSum", ref.compare(a, o.output, { sum: o.sum })); },
      "in place on tensors": async () => {
        const x = n.upload(a.input), res = n.upload(a.residual);
        const before = { ...window.gpuCounts };
        await n.run({ input: x, residual: res, gamma: tg, hidden: a.hidden, inPlace: true });
        const after = { ...window.gpuCounts };
        x.free(); res.free();
        return { before, after };
      },
      "read() of a tensor": async () => {
        const got = await tx.read();
        if (got.length !== a.input.length || got.some((v, i) => v !== a.input[i])) wrong.push("read: not the uploaded input, bit for bit");
      },
      'run({ output: "gpu" })': async () => { const t = await n.run({ ...onTensors, output: "gpu" }); t.free(); },
      'runWithSum({ output: "gpu" })': async () => { const t = await n.runWithSum({ ...onTensors, output: "gpu" }); t.output.free(); t.sum.free(); },
      // A decode step's chain: each layer's sum is the next one's residual, freed after it.
      'runWithSum({ output: "gpu" }), chained': async () => {
        chain ??= { x: n.upload(a.input), r: n.upload(a.residual) };
        const t = await n.runWithSum({ input: chain.x, residual: chain.r, gamma: tg, hidden: a.hidden, output: "gpu" });
        chain.x.free(); chain.r.free();
        chain = { x: t.output, r: t.sum };
      },
    };
    const CALLS = 8;
    const per = {};
    for (const [name, call] of Object.entries(kinds)) {
      for (let i = 0; i < 4; i++) await call();
      const spans = [];
      const start = { ...window.gpuCounts };
      for (let i = 0; i < CALLS; i++) spans.push(await call());
      const end = { ...window.gpuCounts };
      const delta = (from, to) => Object.fromEntries(methods.map((m) => [m, (to[m] ?? 0) - (from[m] ?? 0)]));
      // In place: only the call itself (its inputs are uploaded fresh for each, outside the count).
      if (spans[0]) {
        const sum = Object.fromEntries(methods.map((m) => [m, 0]));
        for (const s of spans) for (const [m, k] of Object.entries(delta(s.before, s.after))) sum[m] += k;
        per[name] = sum;
      } else per[name] = delta(start, end);
    }
    // The chain's last output against the f64 reference of its own inputs.
    const x = await chain.x.read(), res = await chain.r.read();
    const last = await n.runWithSum({ input: x, residual: res, gamma: a.gamma, hidden: a.hidden });
    const t = await n.runWithSum({ input: chain.x, residual: chain.r, gamma: tg, hidden: a.hidden, output: "gpu" });
    check("chain", ref.compare({ input: x, residual: res, gamma: a.gamma, hidden: a.hidden }, await t.output.read(), { sum: await t.sum.read() }));
    check("chain, arrays", ref.compare({ input: x, residual: res, gamma: a.gamma, hidden: a.hidden }, last.output, { sum: last.sum }));
    return { per, CALLS, wrong };
  }, METHODS, { init: COUNTING });
  assert.deepEqual(r.wrong, []);
  const only = (row) => Object.fromEntries(METHODS.map((m) => [m, (row[m] ?? 0) * r.CALLS]));
  // One writeBuffer per host array (input, residual, gamma); per result read back, one mapAsync
  // sent at once and a second one task later where the first is still pending (the package
  // asks again: src/gpu/pending.rs says why), never more.
  for (const [kind, results] of [["run, host arrays", 1], ["runWithSum, host arrays", 2]]) {
    const { mapAsync, ...rest } = r.per[kind];
    const want = only({ writeBuffer: 3, submit: 1 });
    delete want.mapAsync;
    assert.deepEqual(rest, want, kind);
    assert.ok(mapAsync >= results * r.CALLS && mapAsync <= 2 * results * r.CALLS, `${kind}: ${mapAsync} mapAsync in ${r.CALLS} calls`);
  }
  // A tensor's read() asks for its map after one empty error scope's round trip (the app's
  // work may be queued before it: src/gpu/pending.rs says why).
  assert.deepEqual(r.per["read() of a tensor"], only({ submit: 1, mapAsync: 1, pushErrorScope: 1, popErrorScope: 1 }));
  for (const kind of ["in place on tensors", 'run({ output: "gpu" })', 'runWithSum({ output: "gpu" })', 'runWithSum({ output: "gpu" }), chained']) {
    assert.deepEqual(r.per[kind], only({ submit: 1 }), kind);
  }
  assert.deepEqual(problems, []);
});

test("pooled results: a freed tensor's buffer goes to the next result, never one still alive, and every result matches the f64 reference", async () => {
  const r = await inPage(async () => {
    const { pkg, seeded, ref } = window.lib;
    const n = await pkg.FusedRmsNorm.create();
    const hidden = 768;
    const cases = Array.from({ length: 12 }, (_, i) => seeded.caseArgs({ rows: 3, hidden, beta: i % 2 === 1, seed: 70 + i }));
    const wrong = [];
    const check = async (what, a, t, sum) => {
      const rep = ref.compare(a, await t.read(), sum ? { sum: await sum.read() } : {});
      if (!rep.ok) wrong.push(`${what}: ${rep.problems.join("; ")}`);
    };
    const gpu = (a, extra = {}) => n.run({ ...a, output: "gpu", ...extra });
    // A stays alive throughout; B is freed; C must get B's buffer, not A's.
    const A = await gpu(cases[0]);
    const B = await gpu(cases[1]);
    const bBuffer = B.buffer;
    B.free();
    const C = await gpu(cases[2]);
    const reused = C.buffer === bBuffer;
    const apart = C.buffer !== A.buffer;
    await check("A, alive while B was freed and C made", cases[0], A);
    await check("C, on B's buffer", cases[2], C);
    // Results in flight together, half freed before the next burst: no two live tensors
    // share a buffer, and each holds its own case.
    const live = [A, C];
    for (let round = 0; round < 4; round++) {
      const batch = cases.slice(3, 12);
      const made = await Promise.all(batch.map((a, i) => (i % 3 === 0 ? n.runWithSum({ ...a, output: "gpu" }) : gpu(a))));
      for (const [i, m] of made.entries()) {
        const [y, sum] = m.output ? [m.output, m.sum] : [m, null];
        await check(`round ${round}, case ${i + 3}`, batch[i], y, sum);
        live.push(y);
        if (sum) live.push(sum);
      }
      const buffers = new Set(live.map((t) => t.buffer));
      if (buffers.size !== live.length) wrong.push(`round ${round}: ${live.length} live tensors on ${buffers.size} buffers`);
      // Free every other one; the next round takes their buffers.
      for (let i = live.length - 1; i >= 2; i -= 2) live.splice(i, 1)[0].free();
    }
    await check("A at the end", cases[0], A);
    await check("C at the end", cases[2], C);
    const stats = n.debugStats();
    for (const t of live) t.free();
    const freed = n.debugStats();
    return { reused, apart, wrong, stats, freed, liveTensors: live.length };
  });
  assert.equal(r.reused, true, "the freed tensor's buffer was not reused");
  assert.equal(r.apart, true);
  assert.deepEqual(r.wrong, []);
  assert.equal(r.stats.liveTensors, r.liveTensors);
  assert.equal(r.freed.liveTensors, 0);
  assert.equal(r.freed.liveBuffers, r.freed.idleBuffers, "every freed tensor's buffer is idle in the pool");
  assert.deepEqual(problems, []);
});

test("named errors: failures only the GPU sees still reject through the Promise, and the refused buffer is not reused", async () => {
  const r = await inPage(async () => {
    const { pkg, seeded, ref } = window.lib;
    const { bufferOf } = await import("/lib/app-gpu.js");
    const n = await pkg.FusedRmsNorm.create();
    const name = async (p) => { try { await p; return "resolved"; } catch (e) { return `${e.name}: ${e.message}`; } };
    const a = seeded.caseArgs({ rows: 2, hidden: 256, seed: 81 });
    const tx = n.upload(a.input), tr = n.upload(a.residual), tg = n.upload(a.gamma);
    const onTensors = { input: tx, residual: tr, gamma: tg, hidden: a.hidden, output: "gpu" };
    // Warm: from here on these calls push no error scopes of their own.
    for (let i = 0; i < 3; i++) { await n.run(a); (await n.run(onTensors)).free(); }
    const out = {};
    // An app's destroyed GPUBuffer: only the GPU process sees it, in the copy's own scope.
    const dead = bufferOf(n.device, a.input, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC);
    dead.destroy();
    out.deadArrays = await name(n.run({ ...a, input: dead }));
    out.deadGpu = await name(n.run({ ...onTensors, input: dead }));
    out.afterDead = ref.compare(a, await n.run(a)).ok;
    // A result tensor's new buffer refused by the GPU (a shape not seen yet, so it is created):
    // MAP_READ cannot go with STORAGE. The call rejects; the refused buffer is destroyed, not
    // pooled, so the next call of that shape (which creates nothing) is right.
    const b = seeded.caseArgs({ rows: 5, hidden: 256, seed: 82 });
    const tensorUsage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC;
    const bx = n.upload(b.input), br = n.upload(b.residual);
    window.poison = { usage: tensorUsage, add: GPUBufferUsage.MAP_READ };
    out.refusedTensor = await name(n.runWithSum({ input: bx, residual: br, gamma: tg, hidden: b.hidden, output: "gpu" }));
    window.poison = null;
    const refused = window.poisoned.splice(0);
    const t = await n.runWithSum({ input: bx, residual: br, gamma: tg, hidden: b.hidden, output: "gpu" });
    out.refusedCount = refused.length;
    out.refusedReused = refused.includes(t.output.buffer) || refused.includes(t.sum.buffer);
    out.afterRefusedTensor = ref.compare({ ...b, gamma: a.gamma }, await t.output.read(), { sum: await t.sum.read() }).problems;
    // A readback's new staging buffer refused (STORAGE cannot go with MAP_READ).
    const c = seeded.caseArgs({ rows: 7, hidden: 256, seed: 83 });
    window.poison = { usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST, add: GPUBufferUsage.STORAGE };
    out.refusedStaging = await name(n.run(c));
    window.poison = null;
    out.refusedStagingCount = window.poisoned.splice(0).length;
    out.afterRefusedStaging = ref.compare(c, await n.run(c)).ok;
    return out;
  }, undefined, { init: COUNTING });
  assert.match(r.deadArrays, /^InvalidStateError: input: expected a live GPUBuffer, got one that was destroyed/);
  assert.match(r.deadGpu, /^InvalidStateError: input: expected a live GPUBuffer, got one that was destroyed/);
  assert.equal(r.afterDead, true);
  assert.ok(r.refusedCount >= 1, "the poisoned call created its result buffers");
  assert.match(r.refusedTensor, /^GpuDeviceError: the GPU rejected the work/);
  assert.equal(r.refusedReused, false, "a buffer the GPU refused went back to the pool");
  assert.deepEqual(r.afterRefusedTensor, []);
  assert.ok(r.refusedStagingCount >= 1);
  assert.match(r.refusedStaging, /^GpuDeviceError: the GPU rejected the work/);
  assert.equal(r.afterRefusedStaging, true);
  // The refusals are the GPU's validation errors, caught by the call's scopes: no console errors.
  assert.deepEqual(problems, []);
});
