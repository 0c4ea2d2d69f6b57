// The CPU backend's common call of typed arrays (src/js/cpu_call.rs: every array copied into
// scratch memory kept across calls, the result copied out of it), as a plain object and as an
// object with a prototype of its own, in headless Chromium: the same bits for every option of the
// family, f32 and f16 (Uint16Array and Float16Array) data, y in either dtype, with and without
// the sum, the f64 reference met, rows in one block of scratch or many; an
// argument getter that makes a call of its own; the same named errors for bad values, the
// instance working after them; freed instances refused.
//
//   bash scripts/build.sh && node --test --test-reporter=spec tests/e2e/browsers/cpu-call.test.mjs
import assert from "node:assert/strict";

import { pageSuite, test } from "../support/page.mjs";

const { inPage, problems } = pageSuite("rmsnorm-cpu-call-");

test("the common call of typed arrays and the same call on an object with a prototype give the same bits, within the f64 reference (cpu)", async () => {
  const r = await inPage(async () => {
    const { pkg, seeded, ref, f16, readings } = window.lib;
    const n = await pkg.FusedRmsNorm.create({ backend: "cpu" });
    const { withPrototype, sameBits } = readings;
    const failures = [];
    let cases = 0;
    // Rows go through scratch a block at a time (cpu/scratch.rs: blocks of whole rows, BLOCK
    // elements or one row): many blocks and a short last one, a row longer than a block; then
    // calls of one block, and an empty one.
    const shapes = [[37, 4096], [3, 70000], [16, 4096], [1, 4096], [3, 64], [2, 12], [1, 8], [0, 16]];
    const next = seeded.rng(23);
    const filled = (len) => seeded.filled(len, next, -2, 2);
    for (const [rows, hidden] of shapes) {
      for (let j = 0; j < 12; j++) {
        const a = seeded.caseArgs({ rows, hidden, bias: j % 3 !== 0, beta: j % 2 === 0, eps: j % 4 ? 1e-5 : undefined, seed: j + 1 });
        if (j % 4 === 1) delete a.residual;
        if (j % 3 === 2) a.kind = "layer";
        if (j % 5 === 3) a.postGamma = filled(hidden);
        if (j % 4 === 2) a.gammaOffset = 1;
        for (const data of ["f32", "u16", "f16array"]) {
          if (data === "f16array" && typeof Float16Array === "undefined") continue;
          const { bits, host } = f16.argsToF16(a);
          let args = data === "f32" ? a : bits;
          if (data === "f16array") {
            args = { ...bits };
            for (const k of f16.ALL_ARRAY_KEYS) if (args[k]) args[k] = new Float16Array(args[k].buffer);
          }
          const want = data === "f32" ? a : host;
          for (const outputDtype of [undefined, data === "f32" ? "f16" : "f32"]) {
            const call = outputDtype ? { ...args, outputDtype } : args;
            const what = `${rows}×${hidden} #${j} ${data} y ${outputDtype ?? "as data"}`;
            const fast = await n.runWithSum(call);
            const read = await n.runWithSum(withPrototype(call));
            const y = await n.run(call);
            cases++;
            if (!sameBits(fast.output, read.output) || !sameBits(fast.sum, read.sum)) failures.push(`${what}: a plain object and one with a prototype differ`);
            if (!sameBits(y, fast.output)) failures.push(`${what}: run and runWithSum differ`);
            if (Object.getPrototypeOf(y) !== Object.getPrototypeOf(read.output)) failures.push(`${what}: ${y.constructor.name}, with a prototype ${read.output.constructor.name}`);
            const tol = data === "f32" && !outputDtype ? 1e-5 : 1e-3;
            // An f16 sum with a post-norm is residual + w with w formed in f32, one f16 ulp
            // from the reference's v rounded once: y is held to the reference there, and the
            // sum to the other object's bits (above).
            const sum = data !== "f32" && a.postGamma ? undefined : fast.sum;
            const rep = ref.compare(want, fast.output, { sum, tol });
            if (!rep.ok) failures.push(`${what}: ${rep.problems.join("; ")}`);
          }
        }
      }
    }
    // The caller's arrays are read, never written; the results are fresh, not wasm memory.
    const a = seeded.caseArgs({ rows: 4, hidden: 256, bias: true, beta: true, seed: 5 });
    const copies = Object.fromEntries(Object.entries(a).map(([k, v]) => [k, v?.slice ? v.slice() : v]));
    const one = await n.runWithSum(a);
    for (const k of ["input", "residual", "gamma", "beta", "bias"]) if (!sameBits(a[k], copies[k])) failures.push(`${k}: written by the call`);
    const two = await n.runWithSum(a);
    if (one.output.buffer === two.output.buffer || one.output.buffer === one.sum.buffer) failures.push("results share a buffer");
    if (one.output.byteOffset !== 0 || one.output.buffer.byteLength !== one.output.byteLength) failures.push("a result is a view of a bigger buffer");
    one.output.fill(0);
    if (!sameBits(two.output, (await n.run(a)))) failures.push("a result was overwritten by a later call");
    // A getter that makes a call of its own on the same instance, in the middle of reading,
    // with fields the outer call lacks (and without some it has): neither sees the other's.
    let inner;
    const own = { input: a.residual, residual: a.input, gamma: a.gamma, hidden: a.hidden, kind: "layer", eps: 1e-3, gammaOffset: 1 };
    const reentrant = { ...a, get beta() { inner ??= n.run(own); return a.beta; } };
    const outer = await n.run(reentrant);
    if (!sameBits(outer, await n.run(a))) failures.push("a call whose getter made a call of its own: wrong result");
    if (!sameBits(await inner, await n.run(own))) failures.push("the getter's own call: wrong result");
    return { failures, cases };
  });
  assert.deepEqual(r.failures, []);
  assert.ok(r.cases >= 5 * 12 * 2 * 2, `${r.cases} cases`);
});

test("rows whose length is not whole 16-byte blocks, over several blocks, as the first call of a page (scratch no larger than the call): the f64 reference and the field-by-field bits (cpu)", async () => {
  const r = await inPage(async () => {
    const { pkg, seeded, ref, readings } = window.lib;
    const n = await pkg.FusedRmsNorm.create({ backend: "cpu" });
    const { withPrototype, sameBits } = readings;
    const failures = [];
    // 20 rows of 4099: blocks of 15 rows, the last block's results ending mid-16-byte block.
    const a = seeded.caseArgs({ rows: 20, hidden: 4099, bias: true, beta: true, seed: 9 });
    const y = await n.run(a);
    const rep = ref.compare(a, y, { tol: 1e-5 });
    if (!rep.ok) failures.push(`run: ${rep.problems.join("; ")}`);
    if (!sameBits(y, await n.run(withPrototype(a)))) failures.push("run: a plain object and one with a prototype differ");
    const both = await n.runWithSum({ ...a, kind: "layer" });
    const rep2 = ref.compare({ ...a, kind: "layer" }, both.output, { sum: both.sum, tol: 1e-5 });
    if (!rep2.ok) failures.push(`runWithSum, layer: ${rep2.problems.join("; ")}`);
    return failures;
  });
  assert.deepEqual(r, []);
});

test("bad values reject with the same named error as a plain object and with a prototype, the instance keeps working; a freed instance rejects (cpu)", async () => {
  const r = await inPage(async () => {
    const { pkg, seeded, ref, readings } = window.lib;
    const n = await pkg.FusedRmsNorm.create({ backend: "cpu" });
    const a = seeded.caseArgs({ rows: 3, hidden: 64, bias: true, beta: true, eps: 1e-5, seed: 31 });
    const detached = new Float32Array(192);
    structuredClone(detached.buffer, { transfer: [detached.buffer] });
    // The messages of src/js/args.rs and src/call/ (checks.rs, shape.rs, plan.rs).
    const { required, optional } = readings.EXPECTED_ARRAY;
    const bad = {
      "input the wrong length": ["ShapeError", { ...a, input: new Float32Array(100) }, "input: expected a length that is a multiple of hidden (64), got 100"],
      "residual the wrong length": ["ShapeError", { ...a, residual: new Float32Array(64) }, "residual: expected length 192 (the length of input), got 64"],
      "gamma the wrong length": ["ShapeError", { ...a, gamma: new Float32Array(63) }, "gamma: expected length 64 (hidden), got 63"],
      "a detached input": ["TypeError", { ...a, input: detached }, "input: expected a typed array over a live buffer, got one whose ArrayBuffer was transferred (detached)"],
      "f16 gamma with f32 data": ["TypeError", { ...a, gamma: new Uint16Array(64) }, "gamma: expected f32 data like input, got f16"],
      "a Float64Array input": ["TypeError", { ...a, input: new Float64Array(192) }, `input: ${required}, got a Float64Array`],
      "a plain Array residual": ["TypeError", { ...a, residual: Array.from(a.residual) }, `residual: ${optional}, got an Array`],
      ...readings.badValues(a),
      "no hidden": ["TypeError", { ...a, hidden: undefined }, "hidden: expected a number (an integer >= 1), got undefined"],
      "kind rmsx": ["TypeError", { ...a, kind: "rmsx" }, 'kind: expected "rms", "layer", "none" or undefined, got the string "rmsx"'],
      "gammaOffset NaN": ["ShapeError", { ...a, gammaOffset: NaN }, "gammaOffset: expected a finite number, got NaN"],
      "gammaOffset a string": ["TypeError", { ...a, gammaOffset: "1" }, 'gammaOffset: expected a number or undefined, got the string "1"'],
      "outputDtype f64": ["TypeError", { ...a, outputDtype: "f64" }, 'outputDtype: expected "f32" or "f16", got the string "f64"'],
      "f16 output of hidden 6": ["ShapeError", { ...seeded.caseArgs({ rows: 2, hidden: 6, seed: 2 }), outputDtype: "f16" }, "hidden: expected a multiple of 4 for f16 output, got 6"],
      "inPlace on arrays": ["TypeError", { ...a, inPlace: true }, "input: expected a GpuTensor with inPlace: true, got host data"],
      "rows 4": ["ShapeError", { ...a, rows: 4 }, "rows: expected 3 (input.length / hidden), got 4"],
      "dtype bf16": ["TypeError", { ...a, dtype: "bf16" }, 'dtype: expected "f32" or "f16", got the string "bf16"'],
      "an input getter that throws": ["TypeError", Object.defineProperty({ ...a }, "input", { get() { throw new Error("boom"); }, enumerable: true }), `input: ${required}, got undefined`],
    };
    const failures = await readings.rejectAlike(n, bad);
    const rep = ref.compare(a, await n.run(a));
    if (!rep.ok) failures.push(`a good call after: ${rep.problems.join("; ")}`);
    const freed = await pkg.FusedRmsNorm.create({ backend: "cpu" });
    freed.free();
    const dead = await freed.run(a).then(() => "resolved", (e) => `${e.name}: ${e.message}`);
    if (dead !== "InvalidStateError: run: expected a live FusedRmsNorm, got one that was freed (or never created)") failures.push(`run after free(): ${dead}`);
    return failures;
  });
  assert.deepEqual(r, []);
});

test("no console error or uncaught page error in any page", () => {
  assert.deepEqual(problems, []);
});
