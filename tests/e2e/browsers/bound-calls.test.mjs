// Calls made again, in headless Chromium on both backends: `norm.bind(args)` (a call read and
// checked once, then `encode(encoder)` and `run()`), and the plain in-place `run` and `encode`
// on the same tensors step after step, which find the dispatch made for them. Every family
// variant through the bound entry points against the f64 reference (f32 and f16, GPU and CPU);
// chained steps, each against the reference of its own inputs; a tensor freed and its buffer
// taken by a new tensor; and the named errors: bad arguments at bind, a tensor freed after it,
// a freed bound call, a destroyed GPUBuffer, a lost device, and `encode` on the CPU backend.
//
//   bash scripts/build.sh && node --test --test-reporter=spec tests/e2e/browsers/bound-calls.test.mjs
import assert from "node:assert/strict";

import { pageSuite, test } from "../support/page.mjs";
import { FAMILY_VARIANTS } from "../support/family-variants.mjs";

const { inPage, problems } = pageSuite("rmsnorm-bound-");

/** Runs `fn(H, arg)` in a page, H being the family's helpers (tests/e2e/support/page/family.js). */
const inFamily = (fn, arg, backend = "webgpu") =>
  inPage(async ([fnSource, arg]) => eval(fnSource)(window.lib.family, arg), [String(fn), arg], { query: `?backend=${backend}` });

// Bound entries that write in place (skipped where outputDtype is not the data's): in place,
// encode in place, GPUBuffers in place.
const IN_PLACE = 3;

test("bound calls: every family variant, f32, two shapes, through bound run and encode (in place, into tensors twice, GPUBuffers): the f64 reference", async (t) => {
  const r = await inFamily(async (H) => {
    const n = await window.lib.pkg.FusedRmsNorm.create();
    const s = await H.sweep(n, { entries: H.BOUND_ENTRIES, shapes: [{ rows: 3, hidden: 64 }, { rows: 2, hidden: 37 }] });
    return { ...s, entries: H.BOUND_ENTRIES.length };
  });
  assert.deepEqual(r.failures, []);
  assert.equal(r.entries, 5);
  assert.equal(r.checked, FAMILY_VARIANTS * 2 * 5);
  t.diagnostic(`${r.checked} results checked`);
});

for (const [dtype, outputDtype] of [["f16", undefined], ["f32", "f16"], ["f16", "f32"]])
  test(`bound calls: every family variant, ${dtype} data${outputDtype ? `, outputDtype ${outputDtype}` : ""}: f16 results to one f16 rounding`, async (t) => {
    const r = await inFamily(async (H, [dtype, outputDtype]) => {
      const n = await window.lib.pkg.FusedRmsNorm.create();
      return H.sweep(n, { entries: H.BOUND_ENTRIES, dtype, outputDtype, shapes: [{ rows: 3, hidden: 64 }] });
    }, [dtype, outputDtype ?? null]);
    assert.deepEqual(r.failures, []);
    assert.equal(r.checked, FAMILY_VARIANTS * (outputDtype ? 5 - IN_PLACE : 5));
    t.diagnostic(`${r.checked} results checked`);
  });

for (const backend of ["webgpu", "cpu"])
  test(`chained steps in place (${backend}): plain run and bound run (and on WebGPU plain and bound encode), five steps each on the same tensors, each step against the reference of its own inputs`, async (t) => {
    const r = await inPage(async () => {
      const { pkg, ref, seeded } = window.lib;
      const n = await pkg.FusedRmsNorm.create({ backend: window.backend });
      const gpu = n.backend === "webgpu";
      const failures = [];
      let checked = 0;
      const submit = (record) => {
        const e = n.device.createCommandEncoder();
        record(e);
        n.device.queue.submit([e.finish()]);
      };
      const ways = {
        "norm.run": () => (a) => n.run(a),
        ...(gpu && { "norm.encode": () => async (a) => submit((e) => n.encode(e, a)) }),
        "bound.run": (a) => {
          const b = n.bind(a);
          return Object.assign(() => b.run(), { free: () => b.free() });
        },
        ...(gpu && {
          "bound.encode": (a) => {
            const b = n.bind(a);
            return Object.assign(async () => submit((e) => b.encode(e)), { free: () => b.free() });
          },
        }),
      };
      for (const [name, make] of Object.entries(ways))
        for (const shape of [{ rows: 3, hidden: 256, bias: true, beta: true }, { rows: 1, hidden: 4096 }, { rows: 5, hidden: 37, eps: 0.5 }]) {
          const host = seeded.caseArgs({ ...shape, seed: 5 });
          const t = {};
          for (const k of ["input", "residual", "gamma", "beta", "bias"]) if (host[k]) t[k] = n.upload(host[k]);
          const args = { ...t, hidden: host.hidden, ...(host.eps !== undefined && { eps: host.eps }), inPlace: true };
          const step = make(args);
          let inputs = host;
          for (let i = 0; i < 5; i++) {
            // A fresh argument object each step, as an app writes it.
            await step({ ...args });
            const output = await t.input.read(), sum = await t.residual.read();
            const rep = ref.compare(inputs, output, { sum });
            if (!rep.ok) failures.push(`${name} ${JSON.stringify(shape)} step ${i}: ${rep.problems.join("; ")}`);
            checked++;
            inputs = { ...inputs, input: output, residual: sum };
          }
          step.free?.();
          Object.values(t).forEach((x) => x.free());
        }
      const stats = n.debugStats();
      return { failures, checked, liveTensors: stats.liveTensors, backend: n.backend };
    }, undefined, { query: `?backend=${backend}` });
    assert.equal(r.backend, backend);
    assert.deepEqual(r.failures, []);
    assert.equal(r.checked, (backend === "webgpu" ? 4 : 2) * 3 * 5);
    assert.equal(r.liveTensors, 0);
    t.diagnostic(`${r.checked} steps checked`);
  });

test("the kept dispatch follows its tensors: a freed tensor is an InvalidStateError, new tensors in each other's freed buffers get right results, another eps another result", async () => {
  const r = await inPage(async () => {
    const { pkg, ref, seeded } = window.lib;
    const n = await pkg.FusedRmsNorm.create();
    const failures = [];
    const a = seeded.caseArgs({ rows: 2, hidden: 128, seed: 8 });
    const b = seeded.caseArgs({ rows: 2, hidden: 128, seed: 9 });
    const gamma = n.upload(a.gamma);
    const submit = window.lib.readings.submitter(n);
    const kept = () => n.debugStats().keptDispatchCalls;
    for (const [name, call] of [["run", (x) => n.run(x)], ["encode", async (x) => submit((e) => n.encode(e, x))]]) {
      let input = n.upload(a.input), residual = n.upload(a.residual);
      await call({ input, residual, gamma, hidden: a.hidden, inPlace: true });
      const [inputBuffer, residualBuffer] = [input.buffer, residual.buffer];
      input.free();
      let e;
      try {
        await call({ input, residual, gamma, hidden: a.hidden, inPlace: true });
      } catch (x) {
        e = x;
      }
      if (e?.name !== "InvalidStateError" || e.message !== "input: expected a live GpuTensor, got one that was freed") failures.push(`${name} with a freed tensor: ${e?.name}: ${e?.message}`);
      residual.free();
      // The pool hands the freed buffers to new tensors of their size. Each takes the role of
      // the other's old buffer, so a stale dispatch would write the sum where the output goes.
      const [p, q] = [n.upload(new Float32Array(b.input.length)), n.upload(new Float32Array(b.input.length))];
      [input, residual] = p.buffer === residualBuffer ? [p, q] : [q, p];
      if (input.buffer !== residualBuffer || residual.buffer !== inputBuffer) failures.push(`${name}: the new tensors did not take each other's freed buffers (the check would mean nothing)`);
      n.device.queue.writeBuffer(input.buffer, 0, b.input);
      n.device.queue.writeBuffer(residual.buffer, 0, b.residual);
      // Twice: the second call finds the dispatch the first one made, and only it.
      let inputs = { ...b, gamma: a.gamma };
      for (const step of [1, 2]) {
        const before = kept();
        await call({ input, residual, gamma, hidden: b.hidden, inPlace: true });
        if (kept() - before !== step - 1) failures.push(`${name} step ${step}: ${kept() - before} calls served by a kept dispatch, expected ${step - 1}`);
        const output = await input.read(), sum = await residual.read();
        const rep = ref.compare(inputs, output, { sum });
        if (!rep.ok) failures.push(`${name} on new tensors in each other's freed buffers, step ${step}: ${rep.problems.join("; ")}`);
        inputs = { ...inputs, input: output, residual: sum };
      }
      // The same tensors again with another eps: another dispatch.
      const x = await input.read(), v = await residual.read();
      const before = kept();
      await call({ input, residual, gamma, hidden: b.hidden, eps: 0.25, inPlace: true });
      if (kept() !== before) failures.push(`${name} with eps 0.25: served by the default eps's dispatch`);
      const rep = ref.compare({ input: x, residual: v, gamma: a.gamma, hidden: b.hidden, eps: 0.25 }, await input.read(), { sum: await residual.read() });
      if (!rep.ok) failures.push(`${name} with eps 0.25 after the default: ${rep.problems.join("; ")}`);
      input.free();
      residual.free();
    }
    gamma.free();
    return failures;
  });
  assert.deepEqual(r, []);
});

test("debugStats counts what is reused: the kept dispatch serves a repeated call of tensors in place and nothing else; a bound call's steps count as bound", async () => {
  const r = await inPage(async () => {
    const { pkg, ref, seeded } = window.lib;
    const n = await pkg.FusedRmsNorm.create();
    const a = seeded.caseArgs({ rows: 3, hidden: 96, seed: 12 });
    const stats = () => n.debugStats();
    const t = { input: n.upload(a.input), residual: n.upload(a.residual), gamma: n.upload(a.gamma) };
    const delta = async (steps, make) => {
      const [k, b] = [stats().keptDispatchCalls, stats().boundCalls];
      for (let i = 0; i < steps; i++) await make();
      return [stats().keptDispatchCalls - k, stats().boundCalls - b];
    };
    const args = { ...t, hidden: a.hidden, inPlace: true };
    const out = {};
    out.inPlace = await delta(4, () => n.run({ ...args }));
    out.toArrays = await delta(3, () => n.run({ ...t, hidden: a.hidden }));
    out.kinds = await delta(2, () => n.run({ ...args, kind: "layer" }));
    const bound = n.bind(args);
    out.bound = await delta(3, () => bound.run());
    bound.free();
    // Every step was in place on the same tensors: the last result is the reference's of
    // its own inputs, read once more before one more step.
    const [x, v] = [await t.input.read(), await t.residual.read()];
    await n.run({ ...args });
    const rep = ref.compare({ ...a, input: x, residual: v }, await t.input.read(), { sum: await t.residual.read() });
    Object.values(t).forEach((x) => x.free());
    return { out, ok: rep.ok, problems: rep.problems };
  });
  assert.deepEqual(r.problems, []);
  // The first in-place call makes the dispatch; each later one is served by it.
  assert.deepEqual(r.out.inPlace, [3, 0]);
  assert.deepEqual(r.out.toArrays, [0, 0]);
  assert.deepEqual(r.out.kinds, [1, 0]);
  assert.deepEqual(r.out.bound, [0, 3]);
});

test("the kept dispatch and a call's own getters: a tensor freed by a later getter is an InvalidStateError and no other tensor is written; output beside inPlace stays a TypeError", async () => {
  const r = await inPage(async () => {
    const { pkg, seeded } = window.lib;
    const n = await pkg.FusedRmsNorm.create();
    const failures = [];
    const [a, b] = [10, 11].map((seed) => seeded.caseArgs({ rows: 2, hidden: 128, seed }));
    const gamma = n.upload(a.gamma);
    const submit = window.lib.readings.submitter(n);
    for (const [name, call] of [["run", (x) => n.run(x)], ["encode", async (x) => submit((e) => n.encode(e, x))]]) {
      const input = n.upload(a.input), residual = n.upload(a.residual);
      await call({ input, residual, gamma, hidden: a.hidden, inPlace: true });
      await call({ input, residual, gamma, hidden: a.hidden, inPlace: true }); // kept now
      // hidden's getter frees input (already read) and uploads a tensor of its size, which the
      // pool gives input's buffer.
      let other, e;
      const args = { input, residual, gamma, get hidden() { input.free(); other = n.upload(b.input); return a.hidden; }, inPlace: true };
      try {
        await call(args);
      } catch (x) {
        e = x;
      }
      if (e?.name !== "InvalidStateError" || e.message !== "input: expected a live GpuTensor, got one that was freed") failures.push(`${name}, input freed by a getter: ${e?.name}: ${e?.message}`);
      const kept = await other.read();
      if (kept.some((v, i) => !Object.is(v, b.input[i]))) failures.push(`${name}: the tensor made in the getter was written`);
      for (const output of ["array", "gpu"]) {
        let e2;
        try {
          await call({ input: other, residual, gamma, hidden: a.hidden, inPlace: true, output });
        } catch (x) {
          e2 = x;
        }
        const message = name === "run"
          ? `output: expected undefined with inPlace: true (the results overwrite input and residual), got the string "${output}"`
          : `output: expected a GPUBuffer, a GpuTensor or undefined, got the string "${output}"`;
        if (e2?.name !== "TypeError" || e2.message !== message) failures.push(`${name} with inPlace and output "${output}": ${e2?.name}: ${e2?.message}`);
      }
      other.free();
      residual.free();
    }
    gamma.free();
    return failures;
  });
  assert.deepEqual(r, []);
});

for (const backend of ["webgpu", "cpu"])
  test(`bind's named errors (${backend}): bad arguments throw as encode's do, a tensor freed after bind and a freed bound call are InvalidStateErrors (run: through the Promise), and the instance keeps working`, async () => {
    const r = await inPage(async () => {
      const { pkg, ref, seeded } = window.lib;
      const n = await pkg.FusedRmsNorm.create({ backend: window.backend });
      const other = await pkg.FusedRmsNorm.create({ backend: window.backend });
      const gpu = n.backend === "webgpu";
      const failures = [];
      const a = seeded.caseArgs({ rows: 2, hidden: 64, seed: 3 });
      const t = { input: n.upload(a.input), residual: n.upload(a.residual), gamma: n.upload(a.gamma) };
      const freed = n.upload(a.gamma);
      freed.free();
      const foreign = other.upload(a.gamma);
      const out = n.upload(new Float32Array(a.input.length));
      const thrown = (f) => {
        try {
          f();
          return "returned";
        } catch (e) {
          return e;
        }
      };
      const rejected = async (f) => {
        let p;
        try {
          p = f();
        } catch (e) {
          return `threw ${e?.name}: ${e?.message}`;
        }
        if (!(p instanceof Promise)) return `returned ${String(p)}`;
        return p.then(() => "resolved", (e) => e);
      };
      /** `message`: the whole message, or a RegExp anchored on its distinctive part. */
      const want = (e, name, message, what) => {
        const said = e instanceof Error && (typeof message === "string" ? e.message === message : message.test(e.message));
        if (!(e instanceof Error) || e.name !== name || !said) failures.push(`${what}: want ${name}: ${message}, got ${e instanceof Error ? `${e.name}: ${e.message}` : String(e)}`);
      };
      const base = { ...t, hidden: a.hidden, inPlace: true };
      const BAD = [
        ["args not an object", 5, "TypeError", /^args: expected an object \{ input, gamma, hidden, .* \}, got the number 5$/],
        ["a host array", { ...base, input: a.input }, "TypeError", "input: expected a GPUBuffer or a GpuTensor (encode records GPU work only: upload host data first), got a Float32Array"],
        ["neither inPlace nor output", { ...t, hidden: a.hidden }, "TypeError", "output: expected a GPUBuffer or a GpuTensor for the result (or inPlace: true), got undefined"],
        ["an unknown key", { ...base, gama: t.gamma }, "TypeError", /^args\.gama: expected one of input, .*, got an unknown field \(did you mean gamma\?\)$/],
        ["hidden not an integer", { ...base, hidden: 6.5 }, "ShapeError", "hidden: expected an integer from 1 to 4294967295, got 6.5"],
        ["a wrong length", { ...base, hidden: 48 }, "ShapeError", "input: expected a length that is a multiple of hidden (48), got 128"],
        ["a freed tensor", { ...base, gamma: freed }, "InvalidStateError", "gamma: expected a live GpuTensor, got one that was freed"],
        ["a tensor of another instance", { ...base, gamma: foreign }, "TypeError", "gamma: expected a GpuTensor of this FusedRmsNorm, got one of another instance"],
        ["an output that is an input", { ...t, hidden: a.hidden, output: t.residual }, "TypeError", "output: expected a buffer other than residual's (one of the two is written)"],
        ["inPlace with an output", { ...base, output: out }, "TypeError", "output: expected no output or sum with inPlace: true (the results overwrite input and residual)"],
      ];
      for (const [what, args, name, pattern] of BAD) want(thrown(() => n.bind(args)), name, pattern, `bind with ${what}`);

      // A tensor freed after bind.
      const b = n.bind(base);
      t.residual.free();
      want(await rejected(() => b.run()), "InvalidStateError", "residual: expected a live GpuTensor, got one that was freed", "run after residual was freed");
      if (gpu) want(thrown(() => b.encode(n.device.createCommandEncoder())), "InvalidStateError", "residual: expected a live GpuTensor, got one that was freed", "encode after residual was freed");
      b.free();
      // A freed bound call.
      t.residual = n.upload(a.residual);
      const c = n.bind({ ...t, hidden: a.hidden, output: out });
      c.free();
      want(await rejected(() => c.run()), "InvalidStateError", "run: expected a live BoundNorm, got one that was freed (or never created)", "run of a freed bound call");
      want(thrown(() => c.encode(gpu ? n.device.createCommandEncoder() : {})), "InvalidStateError", "encode: expected a live BoundNorm, got one that was freed (or never created)", "encode of a freed bound call");
      if (thrown(() => c.free()) !== "returned") failures.push("a second free() threw");
      if (typeof c[Symbol.dispose] !== "function") failures.push("no Symbol.dispose");
      // Encoders: none, a finished one, and the CPU backend.
      const d = n.bind({ ...t, hidden: a.hidden, output: out });
      if (gpu) {
        want(thrown(() => d.encode({})), "TypeError", "encoder: expected a GPUCommandEncoder of norm.device, got an Object", "encode on a plain object");
        // What WebGPU finds later reaches the app's own error scopes, as with norm.encode.
        const done = n.device.createCommandEncoder();
        done.finish();
        n.device.pushErrorScope("validation");
        const returned = thrown(() => d.encode(done));
        const found = await n.device.popErrorScope();
        if (returned !== "returned" && !(returned instanceof TypeError)) failures.push(`encode on a finished encoder threw ${returned?.name}: ${returned?.message}`);
        if (returned === "returned" && !(found instanceof GPUValidationError)) failures.push(`encode on a finished encoder: the app's scope caught ${String(found)}`);
      } else {
        want(thrown(() => d.encode({})), "InvalidStateError", 'encode: expected a call bound on the webgpu backend, got one on the CPU backend (norm.backend is "cpu"): use run()', "encode on the CPU backend");
      }
      // The instance and the bound call keep working.
      const none = await d.run();
      if (none !== undefined) failures.push(`run resolved with ${String(none)}`);
      const rep = ref.compare(a, await out.read());
      if (!rep.ok) failures.push(`a bound run after the errors: ${rep.problems.join("; ")}`);
      const y = await n.run(a);
      if (!ref.compare(a, y).ok) failures.push("a plain run after the errors");
      d.free();
      [...Object.values(t), out].forEach((x) => x.free());
      foreign.free();
      return { failures, backend: n.backend };
    }, undefined, { query: `?backend=${backend}` });
    assert.equal(r.backend, backend);
    assert.deepEqual(r.failures, []);
  });

test("a destroyed GPUBuffer: a bound run rejects InvalidStateError once the GPU has looked, and the instance keeps working", async () => {
  const r = await inPage(async () => {
    const { pkg, ref, seeded } = window.lib;
    const { bufferOf } = await import("/lib/app-gpu.js");
    const n = await pkg.FusedRmsNorm.create();
    const a = seeded.caseArgs({ rows: 2, hidden: 64, seed: 4 });
    const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC;
    const b = { input: bufferOf(n.device, a.input, usage), residual: bufferOf(n.device, a.residual, usage), gamma: bufferOf(n.device, a.gamma, usage) };
    const bound = n.bind({ ...b, hidden: a.hidden, inPlace: true });
    await bound.run();
    b.residual.destroy();
    const e = await bound.run().then(() => "resolved", (x) => x);
    const y = await n.run(a);
    bound.free();
    return { name: e?.name, message: String(e?.message ?? e), right: ref.compare(a, y).ok };
  });
  assert.equal(r.name, "InvalidStateError", r.message);
  assert.match(r.message, /^run: expected a live GPUBuffer, got one that was destroyed \(.+\)$/s);
  assert.ok(r.right);
});

test("device loss: a bound call rejects (run) and throws (encode) GpuDeviceError naming the loss, a new device opens, and a call bound again there is right", async () => {
  const r = await inPage(async () => {
    const { pkg, ref, seeded } = window.lib;
    const n = await pkg.FusedRmsNorm.create();
    const failures = [];
    const a = seeded.caseArgs({ rows: 3, hidden: 128, bias: true, seed: 6 });
    const upload = () => ({ input: n.upload(a.input), residual: n.upload(a.residual), gamma: n.upload(a.gamma), bias: n.upload(a.bias) });
    let t = upload();
    const bound = n.bind({ ...t, hidden: a.hidden, inPlace: true });
    await bound.run();
    // No timer: a new device that never opens hangs the test, and its timeout fails it.
    const restored = new Promise((ok) => { n.ondevicerestored = ok; });
    const device = n.device;
    n.simulateDeviceLoss();
    // src/js/bound.rs: `what` names the member called.
    const lost = (what) => new RegExp(`^${what}: expected a call bound on a live device, got one whose device was lost \\(.+\\); bind it again, with tensors of the new device, once ondevicerestored is called$`, "s");
    const want = (e, what) => { if (e?.name !== "GpuDeviceError" || !lost(what).test(e.message)) failures.push(`${what} after the loss: ${e?.name}: ${e?.message}`); };
    want(await bound.run().then(() => "resolved", (x) => x), "run");
    let thrown;
    try {
      bound.encode(device.createCommandEncoder());
    } catch (x) {
      thrown = x;
    }
    want(thrown, "encode");
    await restored;
    // Still lost: the tensors were the old device's.
    want(await bound.run().then(() => "resolved", (x) => x), "run");
    bound.free();
    Object.values(t).forEach((x) => x.free());
    t = upload();
    const fresh = n.bind({ ...t, hidden: a.hidden, inPlace: true });
    await fresh.run();
    const rep = ref.compare(a, await t.input.read(), { sum: await t.residual.read() });
    if (!rep.ok) failures.push(`a call bound on the new device: ${rep.problems.join("; ")}`);
    if (n.device === device) failures.push("norm.device is still the lost one");
    fresh.free();
    Object.values(t).forEach((x) => x.free());
    return { failures, devicesOpened: n.debugStats().devicesOpened };
  });
  assert.deepEqual(r.failures, []);
  assert.equal(r.devicesOpened, 2);
});

test("no console error or uncaught page error", () => {
  assert.deepEqual(problems, []);
});
