// The API as a web developer meets it, in headless Chromium: typos named with the field they
// probably meant, errors that tell the causes of "no WebGPU" apart, kernels prepared ahead of
// the first call, pooled memory that can be seen and returned, and device-loss handlers.
//
//   bash scripts/build.sh && node --test --test-reporter=spec tests/e2e/browsers/developer-experience.test.mjs
import assert from "node:assert/strict";

import { launchWith } from "../support/chromium.mjs";
import { pageSuite, test } from "../support/page.mjs";

// The throwing ondevicelost handler of the device-loss test is reported by the browser as an
// uncaught error in a promise callback; it is the test's own, and the only one allowed.
const HANDLER_BUG = /a handler's own bug/;
const suite = pageSuite("rmsnorm-dx-", { allowedProblems: HANDLER_BUG });
const { inPage, problems } = suite;

test("typos: an unknown field in args, create, upload or prepare options is a TypeError naming it and the field it resembles", async () => {
  const r = await inPage(async () => {
    const { pkg, seeded } = window.lib;
    const n = await pkg.FusedRmsNorm.create();
    const a = seeded.caseArgs({ rows: 1, hidden: 4, seed: 1 });
    const outcome = async (f) => {
      try {
        return await f().then(() => "resolved", (e) => `${e.name}: ${e.message}`);
      } catch (e) {
        return `${e.name}: ${e.message}`;
      }
    };
    return {
      Eps: await outcome(() => n.run({ ...a, Eps: 1e-3 })),
      outptu: await outcome(() => n.run({ ...a, outptu: "gpu" })),
      inplace: await outcome(() => n.run({ ...a, inplace: true })),
      powerPrefrence: await outcome(() => pkg.FusedRmsNorm.create({ powerPrefrence: "low-power" })),
      dtpye: await outcome(async () => n.upload(a.input, { dtpye: "f32" })),
      Sum: await outcome(() => n.prepare({ hidden: 4, Sum: true })),
      unrelated: await outcome(() => n.timeDispatches({ ...a, colour: "red" }, 1)),
      good: await outcome(() => n.run(a)),
    };
  });
  assert.match(r.Eps, /^TypeError: args\.Eps: .*did you mean eps\?/);
  assert.match(r.outptu, /^TypeError: args\.outptu: .*did you mean output\?/);
  assert.match(r.inplace, /^TypeError: args\.inplace: .*did you mean inPlace\?/);
  assert.match(r.powerPrefrence, /^TypeError: options\.powerPrefrence: .*did you mean powerPreference\?/);
  assert.match(r.dtpye, /^TypeError: options\.dtpye: .*did you mean dtype\?/);
  assert.match(r.Sum, /^TypeError: kernels\.Sum: .*did you mean sum\?/);
  assert.match(r.unrelated, /^TypeError: args\.colour: expected one of input, .*unknown field$/);
  assert.equal(r.good, "resolved");
});

test("unavailable: no navigator.gpu, no adapter and an insecure page give three different WebGpuUnavailableError messages", async () => {
  const create = async () => window.lib.pkg.FusedRmsNorm.create().then(() => "resolved", (e) => `${e.name}: ${e.message}`);
  const noApi = await inPage(create, undefined, { init: () => delete Navigator.prototype.gpu });
  // Without --enable-unsafe-webgpu this Chromium's only adapter (SwiftShader) is blocklisted.
  const plain = await launchWith(["--host-resolver-rules=MAP insecure.test 127.0.0.1"], ["--enable-unsafe-webgpu"]);
  let noAdapter, insecure;
  try {
    noAdapter = await inPage(create, undefined, { on: plain });
    // http on a name other than localhost is not a secure context, whatever it resolves to.
    const { port } = new URL(suite.server.url);
    insecure = await inPage(create, undefined, { on: plain, url: `http://insecure.test:${port}/` });
  } finally {
    await plain.close();
  }
  assert.match(noApi, /^WebGpuUnavailableError: navigator\.gpu: expected WebGPU in this browser, got none/);
  assert.match(noAdapter, /^WebGpuUnavailableError: requestAdapter: expected an adapter, got none: .*offers no adapter/);
  assert.match(insecure, /^WebGpuUnavailableError: navigator\.gpu: expected a secure context.*https.*localhost/);
});

test("prepare: compiles exactly the kernels the calls then use; bad kernels are named errors", async (t) => {
  const r = await inPage(async () => {
    const { pkg, seeded, ref } = window.lib;
    const time = async (f) => { const t0 = performance.now(); await f(); return performance.now() - t0; };
    const a = seeded.caseArgs({ rows: 4, hidden: 768, bias: true, beta: true, seed: 3 });
    const cold = await pkg.FusedRmsNorm.create();
    const coldMs = await time(() => cold.runWithSum(a));
    const warm = await pkg.FusedRmsNorm.create();
    const prepareMs = await time(() => warm.prepare([{ hidden: 768, bias: true, beta: true, sum: true }]));
    const after = warm.debugStats().pipelines;
    let res;
    const firstMs = await time(async () => { res = await warm.runWithSum(a); });
    const outcome = (p) => p.then(() => "resolved", (e) => `${e.name}: ${e.message}`);
    return {
      after,
      afterCall: warm.debugStats().pipelines,
      ok: ref.compare(a, res.output, { sum: res.sum }).ok,
      both: (await outcome(warm.prepare([{ hidden: 64 }, { hidden: 64, dtype: "f16", inPlace: true }]))) + " " + warm.debugStats().pipelines,
      badHidden: await outcome(warm.prepare({ hidden: 0 })),
      badF16: await outcome(warm.prepare({ hidden: 6, dtype: "f16" })),
      notObject: await outcome(warm.prepare(5)),
      ms: { coldFirstCall: coldMs, prepare: prepareMs, preparedFirstCall: firstMs },
    };
  });
  t.diagnostic(`first runWithSum at 4×768 on this adapter: ${JSON.stringify(r.ms)} ms`);
  assert.equal(r.after, 1, "prepare compiled one pipeline");
  assert.equal(r.afterCall, 1, "the call used the prepared pipeline, compiling none");
  assert.equal(r.ok, true);
  assert.equal(r.both, "resolved 3");
  assert.match(r.badHidden, /^ShapeError: hidden:/);
  assert.match(r.badF16, /^ShapeError: hidden: expected a multiple of 4 for f16/);
  assert.match(r.notObject, /^TypeError: kernels:/);
});

test("memory: after 1000 concurrent calls the pool keeps at most 256 idle buffers, releases them after 5 s idle, and trim() releases them at once", async () => {
  const r = await inPage(async () => {
    const { pkg, seeded, ref } = window.lib;
    const n = await pkg.FusedRmsNorm.create();
    const a = seeded.caseArgs({ rows: 8, hidden: 768, seed: 4 });
    await Promise.all(Array.from({ length: 1000 }, () => n.run(a)));
    const burst = n.debugStats();
    n.trim();
    const trimmed = n.debugStats();
    const ok = ref.compare(a, await n.run(a)).ok;
    const used = n.debugStats();
    // Released by the pool's own timer after 5 s idle: waited for, so that only a pool that
    // never releases fails (a busy machine may run the timer late).
    let quiet = n.debugStats();
    for (let waited = 0; quiet.idleBuffers > 0 && waited < 30_000; waited += 250) {
      await new Promise((done) => setTimeout(done, 250));
      quiet = n.debugStats();
    }
    return { burst, trimmed, ok, used, quiet };
  });
  assert.ok(r.burst.idleBuffers <= 256 && r.burst.idleBuffers > 0, JSON.stringify(r.burst));
  assert.equal(r.burst.liveBuffers, r.burst.idleBuffers);
  assert.deepEqual([r.trimmed.liveBuffers, r.trimmed.idleBuffers, r.trimmed.idleBytes], [0, 0, 0]);
  assert.equal(r.ok, true, "calls work after trim()");
  assert.ok(r.used.idleBuffers > 0);
  assert.deepEqual([r.quiet.idleBuffers, r.quiet.liveBuffers], [0, 0], "idle buffers released once no call came for 5 s");
});

test("device loss: ondevicelost is called with the reason, ondevicerestored once the new device is open, a throwing handler changes nothing", async () => {
  const r = await inPage(async () => {
    const { pkg, seeded, ref } = window.lib;
    const n = await pkg.FusedRmsNorm.create();
    const a = seeded.caseArgs({ rows: 2, hidden: 16, seed: 5 });
    const events = [];
    n.ondevicelost = (e) => {
      events.push(`lost ${e.reason}`);
      throw new Error("a handler's own bug");
    };
    n.ondevicerestored = () => events.push("restored");
    const set = typeof n.ondevicelost;
    n.simulateDeviceLoss();
    for (let waited = 0; !events.length && waited < 10_000; waited += 10) await new Promise((done) => setTimeout(done, 10));
    events.push("call");
    const ok = ref.compare(a, await n.run(a)).ok;
    n.ondevicelost = null;
    return { events, ok, set, cleared: n.ondevicelost };
  });
  assert.deepEqual(r.events, ["lost destroyed", "call", "restored"]);
  assert.equal(r.ok, true);
  assert.equal(r.set, "function");
  assert.equal(r.cleared, null);
});

test("no console error or uncaught page error in any page", () => {
  assert.deepEqual(problems.filter((p) => !HANDLER_BUG.test(p)), []);
});
