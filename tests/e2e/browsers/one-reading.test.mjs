// Every entry point reads a call's argument object once: each field's getter is called exactly
// once a call, whichever way the call goes (arrays or tensors, the kept dispatch, the CPU
// backend's common call, encode, bind, the timing calls, a call refused), and the results are
// the f64 reference's. In headless Chromium, on both backends.
//
//   bash scripts/build.sh && node --test --test-reporter=spec tests/e2e/browsers/one-reading.test.mjs
import assert from "node:assert/strict";

import { pageSuite, test } from "../support/page.mjs";

const { inPage, problems } = pageSuite("rmsnorm-one-reading-");

for (const backend of ["webgpu", "cpu"])
  test(`each field's getter runs once a call (${backend}): run, runWithSum, in place twice, encode, bind, the timing calls and a refused call`, async () => {
    const r = await inPage(async () => {
      const { pkg, ref, seeded } = window.lib;
      const n = await pkg.FusedRmsNorm.create({ backend: window.backend });
      const gpu = n.backend === "webgpu";
      const failures = [];
      // `fields` behind getters that count their reads.
      const counted = (fields) => {
        const reads = {};
        const o = {};
        for (const [k, v] of Object.entries(fields)) {
          reads[k] = 0;
          Object.defineProperty(o, k, { enumerable: true, get: () => (reads[k]++, v) });
        }
        return { o, reads };
      };
      const once = (what, reads) => {
        for (const [k, c] of Object.entries(reads)) if (c !== 1) failures.push(`${what}: ${k} read ${c} times`);
      };
      const a = seeded.caseArgs({ rows: 3, hidden: 64, bias: true, beta: true, eps: 1e-5, seed: 41 });
      const fields = { input: a.input, residual: a.residual, gamma: a.gamma, beta: a.beta, bias: a.bias, hidden: a.hidden, eps: a.eps, kind: "rms", outputDtype: "f32" };
      for (const sum of [false, true]) {
        const { o, reads } = counted(fields);
        const out = sum ? await n.runWithSum(o) : await n.run(o);
        once(sum ? "runWithSum" : "run", reads);
        const rep = ref.compare(a, sum ? out.output : out, sum ? { sum: out.sum } : {});
        if (!rep.ok) failures.push(`${sum ? "runWithSum" : "run"}: ${rep.problems.join("; ")}`);
      }
      const given = new Float32Array(a.input.length);
      const into = counted({ ...fields, output: given });
      if ((await n.run(into.o)) !== given) failures.push("run into an array: not the caller's array");
      once("run into an array", into.reads);
      const refused = counted({ ...fields, hidden: 48 });
      const e = await n.run(refused.o).then(() => undefined, (x) => x);
      if (e?.name !== "ShapeError") failures.push(`hidden 48: ${e?.name}: ${e?.message}`);
      once("a refused call", refused.reads);
      if (gpu) {
        const timed = counted(fields);
        await n.timeDispatches(timed.o, 2);
        once("timeDispatches", timed.reads);
      }
      // In place on tensors, twice: the second call is the kept dispatch's on WebGPU.
      const t = { input: n.upload(a.input), residual: n.upload(a.residual), gamma: n.upload(a.gamma) };
      let inputs = a;
      for (const step of [1, 2]) {
        const { o, reads } = counted({ ...t, hidden: a.hidden, eps: a.eps, inPlace: true });
        await n.run(o);
        once(`in place, step ${step}`, reads);
        const output = await t.input.read(), sum = await t.residual.read();
        const rep = ref.compare({ ...inputs, beta: undefined, bias: undefined }, output, { sum });
        if (!rep.ok) failures.push(`in place, step ${step}: ${rep.problems.join("; ")}`);
        inputs = { ...inputs, input: output, residual: sum };
      }
      const bound = counted({ ...t, hidden: a.hidden, inPlace: true });
      const b = n.bind(bound.o);
      await b.run();
      await b.run();
      b.free();
      once("bind", bound.reads);
      if (gpu) {
        for (const step of [1, 2]) {
          const { o, reads } = counted({ ...t, hidden: a.hidden, inPlace: true });
          const enc = n.device.createCommandEncoder();
          n.encode(enc, o);
          n.device.queue.submit([enc.finish()]);
          once(`encode, step ${step}`, reads);
        }
      }
      Object.values(t).forEach((x) => x.free());
      return { failures, backend: n.backend };
    }, undefined, { query: `?backend=${backend}` });
    assert.equal(r.backend, backend);
    assert.deepEqual(r.failures, []);
  });

test("no console error or uncaught page error", () => {
  assert.deepEqual(problems, []);
});
