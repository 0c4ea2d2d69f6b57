// Results into the caller's own arrays (`output`, and `runWithSum`'s `sum`, given as typed
// arrays), on both backends in headless Chromium: every combination of the family against the
// f64 reference, f32 and f16 results (Uint16Array and Float16Array), typed-array, tensor and
// GPUBuffer arguments, resolving with the very arrays given and writing nothing around them;
// each named error, the arrays untouched after it and the instance working; a device loss
// and an array transferred or shrunk while the call runs leave the arrays untouched; an array
// over a resizable buffer works.
//
//   bash scripts/build.sh && node --test --test-reporter=spec tests/e2e/browsers/caller-arrays.test.mjs
import assert from "node:assert/strict";

import { pageSuite, test } from "../support/page.mjs";
import { FAMILY_VARIANTS } from "../support/family-variants.mjs";

const { inPage, problems } = pageSuite("rmsnorm-caller-arrays-");

/** Runs `fn(H, arg)` in a page, H being the family's helpers (tests/e2e/support/page/family.js); `backend` is window.backend there. */
const inFamily = (fn, arg, backend) =>
  inPage(async ([fnSource, arg]) => eval(fnSource)(window.lib.family, arg), [String(fn), arg], { query: `?backend=${backend}` });

const DTYPES = [["f32", undefined], ["f16", undefined], ["f32", "f16"], ["f16", "f32"]];

for (const backend of ["webgpu", "cpu"])
  for (const [dtype, outputDtype] of DTYPES)
    test(`every combination of the family, ${dtype} data${outputDtype ? `, outputDtype ${outputDtype}` : ""}, into the caller's arrays through run, runWithSum, Float16Arrays, tensor${backend === "webgpu" ? " and GPUBuffer" : ""} arguments: the f64 reference (${backend})`, async (t) => {
      const r = await inFamily(async (H, [dtype, outputDtype]) => {
        const n = await window.lib.pkg.FusedRmsNorm.create({ backend: window.backend });
        const entries = [...H.INTO_ENTRIES, ...(n.backend === "webgpu" ? H.INTO_GPU_ENTRIES : [])];
        // Short rows; on the CPU backend, for f32, rows of 4096 too, over several of its scratch
        // blocks (on SwiftShader each shape compiles every variant again: one shape there).
        const long = n.backend === "cpu" && dtype === "f32" && !outputDtype;
        const shapes = [{ rows: 3, hidden: 64 }, ...(long ? [{ rows: 2, hidden: 12 }, { rows: 37, hidden: 4096 }] : [])];
        const s = await H.sweep(n, { entries, dtype, outputDtype: outputDtype ?? undefined, shapes });
        return { ...s, entries: entries.length, shapes: shapes.length, backend: n.backend, float16: typeof Float16Array !== "undefined" };
      }, [dtype, outputDtype ?? null], backend);
      assert.equal(r.backend, backend);
      assert.ok(r.float16, "this Chromium has Float16Array");
      assert.deepEqual(r.failures, []);
      assert.equal(r.checked, FAMILY_VARIANTS * r.entries * r.shapes);
      t.diagnostic(`${r.checked} results checked`);
    });

for (const backend of ["webgpu", "cpu"])
  test(`each bad array is a named error through the Promise, as a plain object or one with a prototype, the arrays untouched and the instance working after it (${backend})`, async () => {
    const r = await inPage(async () => {
      const { pkg, seeded, ref, readings } = window.lib;
      const n = await pkg.FusedRmsNorm.create({ backend: window.backend });
      const a = seeded.caseArgs({ rows: 3, hidden: 64, bias: true, beta: true, seed: 7 });
      const len = a.input.length;
      const failures = [];
      // Every array given is filled with this pattern; after a refusal it must still hold it.
      const kept = [];
      const mark = (x) => {
        new Uint8Array(x.buffer, x.byteOffset, x.byteLength).fill(0x5a);
        kept.push(x);
        return x;
      };
      const f32 = (k = len) => mark(new Float32Array(k));
      const detached = new Float32Array(len);
      structuredClone(detached.buffer, { transfer: [detached.buffer] });
      // One buffer holding several arrays of a call: each apart is fine, overlapping is not.
      const shared = f32(4 * len);
      const wasm = (await window.ready).memory;
      const bad = {
        "output of another length": ["ShapeError", { ...a, output: f32(len - 1) }, /^output: expected length 192 \(the length of input\), got 191$/],
        "output a Uint16Array for an f32 result": ["TypeError", { ...a, output: mark(new Uint16Array(len)) }, /^output: expected f32 data like outputDtype, got f16$/],
        "output a Float32Array for outputDtype f16": ["TypeError", { ...a, outputDtype: "f16", output: f32() }, /^output: expected f16 data like outputDtype, got f32$/],
        "output a Float64Array": ["TypeError", { ...a, output: new Float64Array(len) }, /^output: expected "array", "gpu", a typed array for the result or undefined, got/],
        "output a plain Array": ["TypeError", { ...a, output: Array.from(a.input) }, /^output: expected "array", "gpu", a typed array/],
        "output detached": ["TypeError", { ...a, output: detached }, /^output: expected a typed array over a live buffer, got one whose ArrayBuffer was transferred/],
        "output the input itself": ["TypeError", { ...a, output: a.input }, /^output: expected an array apart from the call's inputs, got one over the same memory as input$/],
        "output over part of the residual": ["TypeError", { ...a, residual: shared.subarray(len, 2 * len), output: shared.subarray(len + 10, 2 * len + 10) }, /same memory as residual$/],
        "output over gamma": ["TypeError", { ...a, gamma: shared.subarray(3 * len, 3 * len + 64), output: shared.subarray(3 * len - 100, 4 * len - 100) }, /same memory as gamma$/],
        "output over the input's end": ["TypeError", { ...a, input: shared.subarray(0, len), output: shared.subarray(len - 1, 2 * len - 1) }, /same memory as input$/],
        "output a view of the module's own memory": ["TypeError", { ...a, output: new Float32Array(wasm.buffer, 0, len) }, /^output: expected an array of the app's own memory, got a view of this module's WebAssembly memory/],
      };
      const untouched = (what) => {
        for (const x of kept) if (x.buffer.byteLength && !new Uint8Array(x.buffer, x.byteOffset, x.byteLength).every((b) => b === 0x5a)) failures.push(`${what}: an array given was written`);
      };
      failures.push(...(await readings.rejectAlike(n, bad)));
      // Beside each other in one buffer, the arrays of a call are fine.
      const apart = await n.run({ ...a, input: shared.subarray(0, len), output: shared.subarray(len, 2 * len) }).then((x) => x, (x) => x);
      if (!(apart instanceof Float32Array) || !ref.compare({ ...a, input: shared.subarray(0, len) }, apart).ok) failures.push(`arrays apart in one buffer: ${apart?.name}: ${apart?.message}`);
      shared.fill(0);
      new Uint8Array(shared.buffer).fill(0x5a);
      for (const [what, [name, args, message]] of Object.entries(bad)) {
        const e = await n.run(args).then(() => null, (x) => x);
        if (!(e instanceof Error) || e.name !== name || !message.test(e.message)) failures.push(`${what}: want ${name} ${message}, got ${e?.name}: ${e?.message}`);
      }
      untouched("run");
      // runWithSum's sum, and sum where there is none to write.
      const sumBad = {
        "sum of another length": ["ShapeError", () => n.runWithSum({ ...a, output: f32(), sum: f32(len + 1) }), /^sum: expected length 192 \(the length of input\), got 193$/],
        "sum f16 for f32 data": ["TypeError", () => n.runWithSum({ ...a, outputDtype: "f16", sum: mark(new Uint16Array(len)) }), /^sum: expected f32 data like input, got f16$/],
        "sum over output": ["TypeError", () => { const b = f32(2 * len); return n.runWithSum({ ...a, output: b.subarray(0, len), sum: b.subarray(len - 4, 2 * len - 4) }); }, /^sum: expected an array apart from output, got one over the same memory$/],
        "sum the residual": ["TypeError", () => n.runWithSum({ ...a, sum: a.residual }), /^sum: expected an array apart from the call's inputs, got one over the same memory as residual$/],
        "sum a string": ["TypeError", () => n.runWithSum({ ...a, sum: "array" }), /^sum: expected undefined or a typed array for the sum, got/],
        "sum in run": ["TypeError", () => n.run({ ...a, sum: f32() }), /^sum: expected undefined in run/],
        "sum with output gpu": ["TypeError", () => n.runWithSum({ ...a, output: "gpu", sum: f32() }), /^sum: expected undefined with output: "gpu"/],
        "output in a timing call": ["TypeError", () => n.timeDispatches({ ...a, output: f32() }, 2), /^output: expected "array" or undefined here/],
        "sum in a timing call": ["TypeError", () => n.timeDispatches({ ...a, sum: f32() }, 2), /^sum: expected undefined in run/],
      };
      for (const [what, [name, call, message]] of Object.entries(sumBad)) {
        let e;
        try {
          e = await call().then(() => null, (x) => x);
        } catch (x) {
          e = `threw ${x}`;
        }
        if (!(e instanceof Error) || e.name !== name || !message.test(e.message)) failures.push(`${what}: want ${name} ${message}, got ${e?.name}: ${e?.message ?? e}`);
      }
      untouched("runWithSum");
      // In place writes over tensors: an array for output or sum beside it is refused.
      const t = { ...a, input: n.upload(a.input), residual: n.upload(a.residual), inPlace: true };
      for (const [k, x] of [["output", f32()], ["sum", f32()]]) {
        const e = await n.runWithSum({ ...t, [k]: x }).then(() => null, (y) => y);
        if (e?.name !== "TypeError" || !e.message.startsWith(`${k}: expected undefined with inPlace: true`)) failures.push(`in place with ${k}: got ${e?.name}: ${e?.message}`);
      }
      t.input.free();
      t.residual.free();
      untouched("in place");
      // An array over a resizable buffer is taken as it is.
      const rab = new ArrayBuffer(4 * len, { maxByteLength: 8 * len });
      const resizable = new Float32Array(rab);
      const r2 = await n.run({ ...a, output: resizable }).then((x) => x, (x) => x);
      if (r2 !== resizable || !ref.compare(a, resizable).ok) failures.push(`an output over a resizable buffer: ${r2?.name}: ${r2?.message}`);
      // The instance still works, into arrays too.
      const y = new Float32Array(len), v = new Float32Array(len);
      const got = await n.runWithSum({ ...a, output: y, sum: v });
      if (got.output !== y || got.sum !== v) failures.push("after the errors: resolved with other arrays");
      const rep = ref.compare(a, y, { sum: v });
      if (!rep.ok) failures.push(`after the errors: ${rep.problems.join("; ")}`);
      return failures;
    }, undefined, { query: `?backend=${backend}` });
    assert.deepEqual(r, []);
  });

test("a device loss while the call runs: a GpuDeviceError, the arrays given untouched; the next call writes them; an array transferred or shrunk while the call runs: a TypeError, its memory untouched (webgpu)", async () => {
  const r = await inPage(async () => {
    const { pkg, seeded, ref } = window.lib;
    const n = await pkg.FusedRmsNorm.create();
    const a = seeded.caseArgs({ rows: 16, hidden: 4096, bias: true, seed: 3 });
    const len = a.input.length;
    const failures = [];
    const marked = () => new Float32Array(len).fill(-1.25);
    const allMarked = (x) => x.every((e) => e === -1.25);
    // Lost under calls in flight (each into arrays of its own), with runs and runWithSums.
    const calls = Array.from({ length: 4 }, (_, i) => ({ y: marked(), v: i % 2 ? marked() : undefined }));
    const pending = calls.map(({ y, v }) => (v ? n.runWithSum({ ...a, output: y, sum: v }) : n.run({ ...a, output: y })).then(() => null, (e) => e));
    n.simulateDeviceLoss();
    const errors = await Promise.all(pending);
    errors.forEach((e, i) => {
      if (e?.name !== "GpuDeviceError") failures.push(`call ${i} in flight: want GpuDeviceError, got ${e?.name ?? "a result"}: ${e?.message}`);
      if (!allMarked(calls[i].y) || (calls[i].v && !allMarked(calls[i].v))) failures.push(`call ${i} in flight: an array given was written`);
    });
    // The next call opens a new device and writes the same arrays.
    const { y, v } = calls[1];
    const got = await n.runWithSum({ ...a, output: y, sum: v });
    if (got.output !== y || got.sum !== v) failures.push("after the loss: resolved with other arrays");
    const rep = ref.compare(a, y, { sum: v });
    if (!rep.ok) failures.push(`after the loss: ${rep.problems.join("; ")}`);
    if (n.debugStats().devicesOpened !== 2) failures.push(`devicesOpened ${n.debugStats().devicesOpened}`);
    // The caller transfers the output's buffer before the result arrives: nothing is written
    // into the memory it moved to, and the call says why.
    const out = marked();
    const call = n.run({ ...a, output: out }).then(() => null, (e) => e);
    const moved = new Float32Array(structuredClone(out.buffer, { transfer: [out.buffer] }));
    const e = await call;
    if (e?.name !== "TypeError" || !/^output: expected the array given to keep its 65536 elements until the call resolved, got one of 0/.test(e.message)) failures.push(`transferred in flight: got ${e?.name}: ${e?.message}`);
    if (!allMarked(moved)) failures.push("transferred in flight: its memory was written");
    // The same for an array whose resizable buffer shrinks meanwhile.
    const rab = new ArrayBuffer(4 * len, { maxByteLength: 4 * len });
    const shrunk = new Float32Array(rab).fill(-1.25);
    const call2 = n.run({ ...a, output: shrunk }).then(() => null, (e) => e);
    rab.resize(4 * (len - 64));
    const e2 = await call2;
    if (e2?.name !== "TypeError" || !/^output: expected the array given to keep its 65536 elements until the call resolved, got one of 0 \(its buffer transferred or resized meanwhile\)/.test(e2.message)) failures.push(`shrunk in flight: got ${e2?.name}: ${e2?.message}`);
    if (!allMarked(shrunk)) failures.push("shrunk in flight: written");
    const again = await n.run({ ...a, output: marked() });
    if (!ref.compare(a, again).ok) failures.push("after the transfer: a wrong result");
    return failures;
  });
  assert.deepEqual(r, []);
});

test("no console error or uncaught page error", () => {
  assert.deepEqual(problems, []);
});
