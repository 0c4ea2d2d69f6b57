// Calls in flight in headless Chromium's WebGPU: many at once across instances, free() while
// they run, and device loss under them, with recovery on the next call. The harness page
// and its servers: support/page.mjs.
//
//   bash scripts/build.sh && node --test --test-reporter=spec tests/e2e/browsers/concurrency-and-device-loss.test.mjs
//
// RELIABILITY_SEED=<n> replays the concurrency mix.
import assert from "node:assert/strict";

import { SEED, pageSuite, test } from "../support/page.mjs";

const { problems, inHarness } = pageSuite("webgpu-rmsnorm-concurrency-");

// ---------------------------------------------------------------------------------------
// Concurrency
// ---------------------------------------------------------------------------------------

test("concurrency: 200 calls in flight (mixed shapes, options, run/runWithSum) while a second instance is created, used and freed", async (t) => {
  t.diagnostic(`seed ${SEED}`);
  const r = await inHarness(async (seed) => {
    const h = await window.harness;
    const A = h.norm;
    // src/js/freed_guard.js
    const FREED = "run: expected a live FusedRmsNorm, got one that was freed (or never created)";
    const next = h.rng(seed ^ 0x5bd1e995);
    const hiddens = [1, 3, 4, 5, 8, 31, 64, 100, 256, 257, 768, 1000, 1024, 2048, 4096, 4099];
    const tensors = typeof A.upload === "function";
    const make = (i) => {
      const c = {
        rows: Math.floor(next() * 6),
        hidden: hiddens[Math.floor(next() * hiddens.length)],
        bias: next() < 0.5,
        beta: next() < 0.5,
        eps: [undefined, 0, 1e-6, 1e-2][Math.floor(next() * 4)],
        seed: i + 1,
        scale: next() < 0.1 ? [1e30, 1, 1e-30] : 1,
      };
      // Some calls keep their results on the GPU (output: "gpu") and read them back after.
      return { c, args: h.makeArgs(c), withSum: next() < 0.5, gpu: tensors && next() < 0.15 };
    };
    const calls = Array.from({ length: 200 }, (_, i) => make(i));
    const pending = [];
    const launch = (norm, k) => {
      const args = k.gpu ? { ...k.args, output: "gpu" } : k.args;
      const p = (k.withSum ? norm.runWithSum(args) : norm.run(args)).then(async (got) => {
        if (!k.gpu) return got;
        const read = async (t) => { const a = await t.read(); t.free(); return a; };
        return k.withSum ? { output: await read(got.output), sum: await read(got.sum) } : read(got);
      });
      return h.settle(p).then((r) => ({ k, r }));
    };
    const failures = [];
    const verify = ({ k, r }, who) => {
      const what = `${who} ${h.describeArgs(k.args)}${k.withSum ? " runWithSum" : ""}${k.gpu ? " output gpu" : ""}`;
      if (r.err) return failures.push(`${what}: rejected ${r.err.name}: ${r.err.message}`);
      const rep = k.withSum ? h.check(k.args, r.ok.output, r.ok.sum) : h.check(k.args, r.ok);
      if (!rep.ok) failures.push(`${what}: ${rep.problems.join("; ")}`);
    };
    const t0 = performance.now();
    for (let i = 0; i < 100; i++) pending.push(launch(A, calls[i]));
    // A second instance opens while the first 100 are in flight.
    const B = await h.FusedRmsNorm.create();
    for (let i = 100; i < 150; i++) pending.push(launch(A, calls[i]));
    const onB = Array.from({ length: 30 }, (_, i) => launch(B, make(1000 + i)));
    for (let i = 150; i < 175; i++) pending.push(launch(A, calls[i]));
    (await Promise.all(onB)).forEach((x) => verify(x, "B"));
    B.free();
    for (let i = 175; i < 200; i++) pending.push(launch(A, calls[i]));
    (await Promise.all(pending)).forEach((x) => verify(x, "A"));
    const ms = performance.now() - t0;
    const afterFree = await h.settle(B.run(calls[0].args));
    if (afterFree.err?.name !== "InvalidStateError" || afterFree.err.message !== FREED) failures.push(`B.run after B.free(): ${JSON.stringify(afterFree.err ?? "resolved")}`);
    return { failures, ms: Math.round(ms), gpu: calls.filter((k) => k.gpu).length };
  }, SEED);
  t.diagnostic(`230 calls (${r.gpu} with output "gpu") settled in ${r.ms} ms`);
  assert.deepEqual(r.failures, []);
});

test("concurrency: free() with calls in flight: each resolves correctly or rejects GpuDeviceError; a later call rejects InvalidStateError; other instances unaffected", async (t) => {
  const r = await inHarness(async () => {
    const h = await window.harness;
    const A = h.norm;
    // src/js/freed_guard.js
    const FREED = "run: expected a live FusedRmsNorm, got one that was freed (or never created)";
    const failures = [];
    const counts = {};
    const shapes = [[1, 4096], [4, 768], [3, 5], [8, 1024], [2, 4099], [0, 64]];
    for (const when of ["same tick", "after a microtask", "after the first settles", "after a timer"]) {
      const C = await h.FusedRmsNorm.create();
      await C.run(h.makeArgs({ rows: 1, hidden: 4, seed: 1 })); // warm
      const argsC = Array.from({ length: 40 }, (_, i) => {
        // Options follow the shape, so a fresh instance compiles few pipelines (slow on a CPU adapter).
        const j = i % shapes.length;
        const [rows, hidden] = shapes[j];
        return { args: h.makeArgs({ rows, hidden, bias: j % 2 === 0, beta: j % 3 === 0, seed: 50 + i }), withSum: j % 4 === 1 };
      });
      const argsA = argsC.map((k, i) => ({ ...k, args: h.makeArgs({ rows: 1 + (i % 3), hidden: [256, 768, 7][i % 3], beta: true, seed: 500 + i }) }));
      const call = (n, k) => h.settle(k.withSum ? n.runWithSum(k.args) : n.run(k.args));
      const onC = argsC.map((k) => call(C, k));
      const onA = argsA.map((k) => call(A, k));
      if (when === "after a microtask") await null;
      if (when === "after the first settles") await onC[0];
      if (when === "after a timer") await new Promise((ok) => setTimeout(ok, 5));
      C.free();
      const late = await h.settle(C.run(argsC[0].args));
      if (late.err?.name !== "InvalidStateError" || late.err.message !== FREED) failures.push(`${when}: a call after free(): ${JSON.stringify(late.err ?? "resolved")}`);
      const c = (counts[when] = { resolved: 0, rejected: 0 });
      (await Promise.all(onC)).forEach((r, i) => {
        const k = argsC[i];
        if (r.err) {
          c.rejected++;
          if (r.err.name !== "GpuDeviceError") failures.push(`${when}: freed instance's call #${i} rejected ${r.err.name}: ${r.err.message}`);
        } else {
          c.resolved++;
          const rep = k.withSum ? h.check(k.args, r.ok.output, r.ok.sum) : h.check(k.args, r.ok);
          if (!rep.ok) failures.push(`${when}: freed instance's call #${i} resolved WRONG: ${rep.problems.join("; ")}`);
        }
      });
      (await Promise.all(onA)).forEach((r, i) => {
        const k = argsA[i];
        const rep = r.err ? { ok: false, problems: [`${r.err.name}: ${r.err.message}`] } : k.withSum ? h.check(k.args, r.ok.output, r.ok.sum) : h.check(k.args, r.ok);
        if (!rep.ok) failures.push(`${when}: other instance's call #${i}: ${rep.problems.join("; ")}`);
      });
      let again = "ok";
      try {
        C.free();
        C.free();
      } catch (e) {
        again = String(e);
      }
      if (again !== "ok") failures.push(`${when}: a second free() threw ${again}`);
    }
    // README: calls in flight keep the tensors they use alive even if they are freed.
    if (typeof A.upload === "function") {
      const ks = Array.from({ length: 10 }, (_, i) => h.makeArgs({ rows: 1 + (i % 4), hidden: i % 2 ? 512 : 33, bias: true, beta: true, seed: 900 + i }));
      const ps = ks.map((a) => {
        const t = { input: A.upload(a.input), gamma: A.upload(a.gamma), bias: A.upload(a.bias) };
        const p = A.runWithSum({ ...a, ...t });
        for (const x of Object.values(t)) x.free();
        return h.settle(p);
      });
      (await Promise.all(ps)).forEach((r, i) => {
        const rep = r.err ? { ok: false, problems: [`${r.err.name}: ${r.err.message}`] } : h.check(ks[i], r.ok.output, r.ok.sum);
        if (!rep.ok) failures.push(`tensors freed while their call was in flight, call #${i}: ${rep.problems.join("; ")}`);
      });
    }
    return { failures, counts };
  });
  t.diagnostic(`calls of the freed instance (resolved/rejected): ${JSON.stringify(r.counts)}`);
  assert.deepEqual(r.failures, []);
});
// ---------------------------------------------------------------------------------------
// Device loss
// ---------------------------------------------------------------------------------------

test("device loss: calls in flight reject GpuDeviceError (or resolve correctly); the next call re-creates the device", async (t) => {
  const r = await inHarness(
    async () => {
      const h = await window.harness;
      const D = await h.FusedRmsNorm.create();
      const A = h.norm;
      const failures = [];
      const rounds = [];
      const shapes = [[1, 4096], [4, 768], [3, 5], [16, 1024], [2, 4099]];
      const mk = (i) => {
        const [rows, hidden] = shapes[i % shapes.length];
        return { args: h.makeArgs({ rows, hidden, bias: i % 2 === 0, beta: true, seed: 70 + i }), withSum: i % 3 === 0 };
      };
      const call = (n, k) => h.settle(k.withSum ? n.runWithSum(k.args) : n.run(k.args));
      const good = (k, r) => !r.err && (k.withSum ? h.check(k.args, r.ok.output, r.ok.sum) : h.check(k.args, r.ok)).ok;
      for (let round = 0; round < 3; round++) {
        const ks = Array.from({ length: 30 }, (_, i) => mk(i + round));
        await call(D, ks[0]); // warm (and, after a loss, already recovered)
        const inFlight = ks.map((k) => call(D, k));
        const others = ks.map((k) => call(A, k));
        D.simulateDeviceLoss();
        // A call made in the same tick as the loss, before the browser reports it.
        const sameTick = call(D, ks[1]);
        const c = { resolved: 0, rejected: 0 };
        (await Promise.all(inFlight)).forEach((r, i) => {
          if (r.err) {
            c.rejected++;
            if (r.err.name !== "GpuDeviceError") failures.push(`round ${round}: in-flight #${i} rejected ${r.err.name}: ${r.err.message}`);
          } else {
            c.resolved++;
            if (!good(ks[i], r)) failures.push(`round ${round}: in-flight #${i} resolved WRONG`);
          }
        });
        const st = await sameTick;
        c.sameTick = st.err ? `rejected ${st.err.name}` : good(ks[1], st) ? "resolved correctly" : "resolved WRONG";
        if (!(st.err?.name === "GpuDeviceError" || c.sameTick === "resolved correctly")) failures.push(`round ${round}: the same-tick call ${c.sameTick}`);
        (await Promise.all(others)).forEach((r, i) => {
          if (!good(ks[i], r)) failures.push(`round ${round}: another instance's call #${i} failed: ${JSON.stringify(r.err)}`);
        });
        // The next call, after the in-flight ones have settled, must succeed on a new device.
        const k = mk(7);
        const t0 = performance.now();
        const next = await call(D, k);
        c.recoverMs = Math.round(performance.now() - t0);
        if (!good(k, next)) failures.push(`round ${round}: the call after the loss: ${next.err ? `${next.err.name}: ${next.err.message}` : "WRONG result"}`);
        // And several at once after recovery.
        const after = await Promise.all(ks.slice(0, 10).map((k) => call(D, k)));
        after.forEach((r, i) => { if (!good(ks[i], r)) failures.push(`round ${round}: call #${i} after recovery failed`); });
        c.stats = D.debugStats();
        rounds.push(c);
      }
      // README: a GpuTensor whose device was lost is a GpuDeviceError; arrays still work.
      if (typeof D.upload === "function") {
        const k = mk(3);
        const gamma = D.upload(k.args.gamma);
        D.simulateDeviceLoss();
        await new Promise((ok) => setTimeout(ok, 50));
        const withTensor = await h.settle(D.run({ ...k.args, gamma }));
        const lost = /^gamma: expected a GpuTensor on a live device, got one whose device was lost \(.+\)$/s;
        if (withTensor.err?.name !== "GpuDeviceError" || !lost.test(withTensor.err.message)) failures.push(`a GpuTensor of the lost device: ${JSON.stringify(withTensor.err ?? "resolved")}`);
        const plain = await call(D, k);
        if (!good(k, plain)) failures.push(`arrays after a lost tensor: ${JSON.stringify(plain.err ?? "WRONG")}`);
        gamma.free();
      }
      // Concurrent first calls after a loss, with nothing awaited in between.
      D.simulateDeviceLoss();
      await new Promise((ok) => setTimeout(ok, 50));
      const burst = Array.from({ length: 8 }, (_, i) => mk(i));
      const burstR = await Promise.all(burst.map((k) => call(D, k)));
      burstR.forEach((r, i) => { if (!good(burst[i], r)) failures.push(`burst after loss: call #${i}: ${JSON.stringify(r.err ?? "WRONG")}`); });
      const tail = mk(2);
      if (!good(tail, await call(D, tail))) failures.push("a call after the burst failed");
      D.free();
      return { failures, rounds };
    },
  );
  for (const [i, c] of r.rounds.entries()) t.diagnostic(`round ${i}: ${JSON.stringify(c)}`);
  assert.deepEqual(r.failures, []);
});

test("no console error or uncaught page error in the main page", () => {
  assert.deepEqual(problems, []);
});
