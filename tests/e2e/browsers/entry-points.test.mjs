// Every entry point with the same guarantees, in headless Chromium: recovery after a device
// loss on each path (upload, arrays, output "gpu", in place, f16, timing calls, tensor reads),
// bounded timing calls, hostile arguments to upload and the timing calls, one named error
// for every member of a freed object, the module used before init(), what the package relies
// on in wasm-bindgen's glue, a soak of the resident path, and the types under an older
// TypeScript lib.
//
//   bash scripts/build.sh && node --test --test-reporter=spec tests/e2e/browsers/entry-points.test.mjs
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";

import { ROOT } from "../support/repo.mjs";
import { pageSuite, test } from "../support/page.mjs";

const { inPage, problems } = pageSuite("rmsnorm-entry-");

// The calls every recovery test makes, one per entry point. Each returns "ok" or what was
// wrong; `n` is the instance, `lib` the page's modules. Defined in the page (as source).
const KINDS = String.raw`({
  "run (arrays)": async (n, lib, a) => lib.ref.compare(a, await n.run(a)),
  "runWithSum (arrays)": async (n, lib, a) => { const r = await n.runWithSum(a); return lib.ref.compare(a, r.output, { sum: r.sum }); },
  "upload, then read": async (n, lib, a) => {
    const t = n.upload(a.input);
    const back = await t.read();
    t.free();
    return { ok: back.length === a.input.length && back.every((x, i) => Object.is(x, a.input[i])), problems: ["read differs from upload"] };
  },
  "run (output: gpu)": async (n, lib, a) => {
    const g = n.upload(a.gamma);
    const t = await n.run({ ...a, gamma: g, output: "gpu" });
    const r = lib.ref.compare(a, await t.read());
    t.free(); g.free();
    return r;
  },
  "runWithSum (output: gpu)": async (n, lib, a) => {
    const t = await n.runWithSum({ ...a, output: "gpu" });
    const r = lib.ref.compare(a, await t.output.read(), { sum: await t.sum.read() });
    t.output.free(); t.sum.free();
    return r;
  },
  "in place": async (n, lib, a) => {
    const x = n.upload(a.input), r = n.upload(a.residual);
    const none = await n.run({ ...a, input: x, residual: r, inPlace: true });
    const rep = lib.ref.compare(a, await x.read(), { sum: await r.read() });
    x.free(); r.free();
    return none === undefined ? rep : { ok: false, problems: ["in place resolved with a value"] };
  },
  "f16 arrays": async (n, lib, a) => {
    const h = { input: lib.f16.toF16(a.input), residual: lib.f16.toF16(a.residual), gamma: lib.f16.toF16(a.gamma), hidden: a.hidden };
    const out = await n.run(h);
    const wide = { input: lib.f16.fromF16(h.input), residual: lib.f16.fromF16(h.residual), gamma: lib.f16.fromF16(h.gamma), hidden: a.hidden };
    if (!(out instanceof Uint16Array)) return { ok: false, problems: ["f16 result is not a Uint16Array"] };
    return lib.ref.compare(wide, lib.f16.fromF16(out), { tol: 1e-3 });
  },
  "timeDispatches": async (n, lib, a) => { const ms = await n.timeDispatches(a, 3); return { ok: Number.isFinite(ms) && ms >= 0, problems: ["ms " + ms] }; },
  "gpuTime": async (n, lib, a) => { const ms = await n.gpuTime(a, 3); return { ok: ms === undefined || (Number.isFinite(ms) && ms >= 0), problems: ["ms " + ms] }; },
})`;

test("device loss: the next call of each kind works on a new device, whether the loss was reported yet or not", async () => {
  const r = await inPage(async (kindsSource) => {
    const { pkg, seeded } = window.lib;
    const kinds = eval(kindsSource);
    const a = seeded.caseArgs({ rows: 3, hidden: 64, bias: true, beta: true, seed: 7 });
    const failures = [];
    for (const [name, call] of Object.entries(kinds)) {
      for (const when of ["same tick", "after the loss is reported"]) {
        const n = await pkg.FusedRmsNorm.create();
        await n.run(a);
        n.simulateDeviceLoss();
        if (when !== "same tick") await new Promise((ok) => setTimeout(ok, 50));
        try {
          const rep = await call(n, window.lib, a);
          if (!rep.ok) failures.push(`${name}, ${when}: ${rep.problems.join("; ")}`);
          const again = await call(n, window.lib, a);
          if (!again.ok) failures.push(`${name}, ${when}, second call: ${again.problems.join("; ")}`);
          const opened = n.debugStats().devicesOpened;
          if (opened !== 2) failures.push(`${name}, ${when}: ${opened} devices opened, want 2`);
        } catch (e) {
          failures.push(`${name}, ${when}: ${e?.name}: ${e?.message}`);
        }
        n.free();
      }
    }
    return failures;
  }, KINDS);
  assert.deepEqual(r, []);
});

test("device loss: calls made while the new device opens share it (one device, not one per call), all correct", async () => {
  const r = await inPage(async (kindsSource) => {
    const { pkg, seeded } = window.lib;
    const kinds = eval(kindsSource);
    const a = seeded.caseArgs({ rows: 2, hidden: 128, bias: false, beta: true, seed: 8 });
    const n = await pkg.FusedRmsNorm.create();
    await n.run(a);
    n.simulateDeviceLoss();
    const calls = Object.entries(kinds).flatMap(([name, call]) => [0, 1].map(() => [name, call(n, window.lib, a)]));
    const failures = [];
    for (const [name, p] of calls) {
      try {
        const rep = await p;
        if (!rep.ok) failures.push(`${name}: ${rep.problems.join("; ")}`);
      } catch (e) {
        failures.push(`${name}: ${e?.name}: ${e?.message}`);
      }
    }
    return { failures, opened: n.debugStats().devicesOpened, calls: calls.length };
  }, KINDS);
  assert.deepEqual(r.failures, []);
  assert.equal(r.opened, 2, `${r.calls} calls during one loss opened ${r.opened - 1} new devices`);
});

test("device loss: a tensor of the lost device rejects GpuDeviceError naming the loss on every entry point; the instance keeps working", async () => {
  const r = await inPage(async () => {
    const { pkg, seeded, ref } = window.lib;
    const a = seeded.caseArgs({ rows: 2, hidden: 32, seed: 9 });
    const n = await pkg.FusedRmsNorm.create();
    const old = { x: n.upload(a.input), r: n.upload(a.residual), g: n.upload(a.gamma) };
    n.simulateDeviceLoss();
    const uses = {
      "read()": () => old.x.read(),
      "run (as input)": () => n.run({ ...a, input: old.x }),
      "run (as gamma, output gpu)": () => n.run({ ...a, gamma: old.g, output: "gpu" }),
      "runWithSum (as residual)": () => n.runWithSum({ ...a, residual: old.r }),
      "in place": () => n.run({ ...a, input: old.x, residual: old.r, inPlace: true }),
      "timeDispatches": () => n.timeDispatches({ ...a, input: old.x }, 2),
      "gpuTime": () => n.gpuTime({ ...a, gamma: old.g }, 2),
    };
    const failures = [];
    for (const [name, use] of Object.entries(uses)) {
      const got = await use().then(() => "resolved", (e) => e);
      if (got?.name !== "GpuDeviceError" || !/lost/.test(got.message)) failures.push(`${name}: ${got?.name}: ${got?.message ?? got}`);
    }
    const fresh = ref.compare(a, await n.run(a));
    if (!fresh.ok) failures.push(`a call with arrays after: ${fresh.problems}`);
    return failures;
  });
  assert.deepEqual(r, []);
});

for (const backend of ["webgpu", "cpu"]) test(`timing calls: repeat must be an integer from 1 to 10000, checked before anything is recorded (${backend})`, async () => {
  const r = await inPage(async () => {
    const { pkg, seeded } = window.lib;
    const a = seeded.caseArgs({ rows: 1, hidden: 4, seed: 10 });
    const n = await pkg.FusedRmsNorm.create({ backend: window.backend });
    const SE = "ShapeError", TE = "TypeError";
    const bad = [[-1, SE], [0, SE], [-0, SE], [NaN, SE], [1.5, SE], [1e12, SE], [10001, SE], [2 ** 32 - 1, SE], [Infinity, SE], [-Infinity, SE],
      ["5", TE], [null, TE], [undefined, TE], [{}, TE], [1n, TE], [new Number(3), TE], [[3], TE]];
    const failures = [];
    for (const method of ["timeDispatches", "gpuTime"]) {
      for (const [value, name] of bad) {
        let got;
        try {
          got = await n[method](a, value).then(() => "resolved", (e) => e);
        } catch (e) {
          got = `threw synchronously ${e?.name}`;
        }
        if (got?.name !== name || !got.message.startsWith("repeat:")) failures.push(`${method}(args, ${String(value)}): ${got?.name ?? got}: ${got?.message}`);
      }
      const most = await n[method](a, 10000).then((v) => v, (e) => e);
      if (most instanceof Error) failures.push(`${method}(args, 10000): ${most.name}: ${most.message}`);
    }
    return failures;
  }, undefined, { query: `?backend=${backend}` });
  assert.deepEqual(r, []);
});

// Hostile values, built in the page. Each data value either uploads (and reads back equal) or
// throws a named TypeError/ShapeError; nothing else may come out of wasm.
const HOSTILE = String.raw`(() => {
  const revoked = Proxy.revocable({}, {}); revoked.revoke();
  const detached = new Float32Array(8); structuredClone(detached.buffer, { transfer: [detached.buffer] });
  // Subclasses whose getters lie or throw: the package reads the internal slots instead, so
  // these are valid arrays of their true length.
  class Liar16 extends Uint16Array { get length() { return 1e9; } get byteLength() { return 2e9; } }
  class Thrower32 extends Float32Array { get length() { throw new Error("boom"); } get buffer() { throw new Error("boom"); } }
  class Tagged extends Int32Array { get [Symbol.toStringTag]() { return "Float32Array"; } }
  class Sub32 extends Float32Array {}
  const throwing = new Proxy({}, { get() { throw new Error("boom"); }, getPrototypeOf() { throw new Error("boom"); } });
  const data = {
    "null": () => null, "undefined": () => undefined, "a number": () => 5, "a string": () => "f32", "an Array": () => [1, 2, 3, 4],
    "an object": () => ({}), "a Float64Array": () => new Float64Array(8), "an Int32Array": () => new Int32Array(8),
    "a Uint8Array": () => new Uint8Array(8), "a detached Float32Array": () => detached, "a revoked Proxy": () => revoked.proxy,
    "a Proxy of a Float32Array": () => new Proxy(new Float32Array(8), {}), "a throwing Proxy": () => throwing,
    "a Uint16Array whose length getter lies (valid)": () => new Liar16([1, 2, 3, 4, 5, 6]), "a Float32Array whose getters throw (valid)": () => new Thrower32([5, 6, 7, 8]),
    "an Int32Array tagged Float32Array": () => new Tagged(8), "a symbol": () => Symbol("x"), "a bigint": () => 1n,
    "a function": () => () => 1,
    "a Float32Array (valid)": () => new Float32Array([1, -2, 3.5, 4]), "a Uint16Array (valid)": () => new Uint16Array([0x3c00, 0xc000, 1, 0x7bff]),
    "a subclass of Float32Array (valid)": () => new Sub32([1, 2, 3, 4]), "an empty Float32Array (valid)": () => new Float32Array(0),
  };
  const options = {
    "no options": undefined, "null": null, "{}": {}, "{ dtype: f32 }": { dtype: "f32" }, "{ dtype: f16 }": { dtype: "f16" },
    "{ dtype: bf16 }": { dtype: "bf16" }, "5": 5, "the string f16": "f16", "a throwing getter": { get dtype() { throw new Error("boom"); } },
    "a revoked Proxy": revoked.proxy,
  };
  // The array as its internal slots say, whatever its own getters claim.
  const TA = Object.getPrototypeOf(Uint8Array.prototype);
  const slot = (d, k) => Object.getOwnPropertyDescriptor(TA, k).get.call(d);
  const plain = (d) => new (slot(d, Symbol.toStringTag) === "Uint16Array" ? Uint16Array : Float32Array)(slot(d, "buffer"), slot(d, "byteOffset"), slot(d, "length"));
  const dtypeOf = (d) => (slot(d, Symbol.toStringTag) === "Uint16Array" ? "f16" : "f32");
  return { data, options, plain, dtypeOf };
})()`;

for (const backend of ["webgpu", "cpu"]) test(`hostile arguments: upload × options never throws anything but a named TypeError/ShapeError, and valid ones round-trip (${backend})`, async () => {
  const r = await inPage(async (hostileSource) => {
    const { pkg, seeded, ref } = window.lib;
    const { data, options, plain, dtypeOf } = eval(hostileSource);
    const n = await pkg.FusedRmsNorm.create({ backend: window.backend });
    const failures = [];
    let uploads = 0, refused = 0;
    const acceptable = (dn, on, d) =>
      dn.endsWith("(valid)") && (["no options", "null", "{}"].includes(on) || on === `{ dtype: ${dtypeOf(d)} }`);
    for (const [dn, make] of Object.entries(data)) {
      for (const [on, opt] of Object.entries(options)) {
        const d = make();
        let t;
        try {
          t = opt === undefined ? n.upload(d) : n.upload(d, opt);
        } catch (e) {
          refused++;
          if (!(e instanceof Error) || !["TypeError", "ShapeError"].includes(e.name)) failures.push(`upload(${dn}, ${on}) threw ${e?.name}: ${e?.message}`);
          else if (!/^(data|options)/.test(e.message)) failures.push(`upload(${dn}, ${on}): message does not name the argument: ${e.message}`);
          if (acceptable(dn, on, d)) failures.push(`upload(${dn}, ${on}) refused a valid upload: ${e.message}`);
          continue;
        }
        uploads++;
        if (!acceptable(dn, on, d)) failures.push(`upload(${dn}, ${on}) made a tensor`);
        const back = await t.read();
        const want = plain(d);
        if (back.length !== want.length || !back.every((x, i) => Object.is(x, want[i]))) failures.push(`upload(${dn}, ${on}) read back differently`);
        t.free();
      }
    }
    const a = seeded.caseArgs({ rows: 2, hidden: 8, seed: 11 });
    const after = ref.compare(a, await n.run(a));
    if (!after.ok) failures.push("a good call after the sweep failed");
    n.free();
    return { failures, uploads, refused };
  }, HOSTILE, { query: `?backend=${backend}` });
  assert.deepEqual(r.failures, []);
  assert.ok(r.uploads >= 8 && r.refused > 150, JSON.stringify(r));
});

for (const backend of ["webgpu", "cpu"]) test(`hostile arguments: timeDispatches and gpuTime with hostile args or repeat reject with a named error, never throw (${backend})`, async () => {
  const r = await inPage(async (hostileSource) => {
    const { pkg, seeded, ref } = window.lib;
    const { data } = eval(hostileSource);
    const n = await pkg.FusedRmsNorm.create({ backend: window.backend });
    const a = seeded.caseArgs({ rows: 1, hidden: 4, seed: 12 });
    const argsValues = {
      "null": () => null, "a revoked Proxy": () => Proxy.revocable({}, {}).proxy, "a Float32Array": () => a.input,
      "output: gpu": () => ({ ...a, output: "gpu" }), "inPlace": () => ({ ...a, inPlace: true }),
      ...Object.fromEntries(Object.entries(data).map(([k, make]) => [`input = ${k}`, () => ({ ...a, input: make() })])),
    };
    const repeats = { "2": 2, "-1": -1, "NaN": NaN, "a string": "2", "a throwing object": { valueOf() { throw new Error("boom"); } } };
    const failures = [];
    let calls = 0;
    for (const method of ["timeDispatches", "gpuTime"]) {
      for (const [an, make] of Object.entries(argsValues)) {
        for (const [rn, rep] of Object.entries(repeats)) {
          calls++;
          let p;
          try {
            p = n[method](make(), rep);
          } catch (e) {
            failures.push(`${method}(${an}, ${rn}) threw synchronously: ${e?.name}: ${e?.message}`);
            continue;
          }
          const got = await p.then(() => "resolved", (e) => e);
          // Valid: an f32 array of the true length 4 with a valid repeat.
          const valid = rn === "2" && ["input = a Float32Array (valid)", "input = a subclass of Float32Array (valid)", "input = a Float32Array whose getters throw (valid)"].includes(an);
          if (valid ? got !== "resolved" : !(got instanceof Error && ["TypeError", "ShapeError"].includes(got.name)))
            failures.push(`${method}(${an}, ${rn}): ${got?.name ?? got}: ${got?.message ?? ""}`);
        }
      }
    }
    const after = ref.compare(a, await n.run(a));
    if (!after.ok) failures.push("a good call after the sweep failed");
    return { failures, calls };
  }, HOSTILE, { query: `?backend=${backend}` });
  assertSwept(r, 200);
});

test("device loss: hostile arguments to every entry point, the rotary stage's fields included, while the device is lost (same tick and once reported) get the same named errors, never a throw from async calls; then good calls run on one new device", async () => {
  const r = await inPage(async (hostileSource) => {
    const { pkg, seeded, ref } = window.lib;
    const { data } = eval(hostileSource);
    const a = seeded.caseArgs({ rows: 1, hidden: 4, seed: 17 });
    const failures = [];
    let calls = 0;
    const named = (e) => e instanceof Error && ["TypeError", "ShapeError", "InvalidStateError", "GpuDeviceError"].includes(e.name);
    for (const when of ["same tick", "after the loss is reported"]) {
      const n = await pkg.FusedRmsNorm.create();
      const gamma = n.upload(a.gamma);
      n.simulateDeviceLoss();
      if (when !== "same tick") await new Promise((ok) => setTimeout(ok, 50));
      const asyncCalls = {
        run: (v) => n.run({ ...a, input: v }),
        runWithSum: (v) => n.runWithSum({ ...a, residual: v, output: "gpu" }),
        inPlace: (v) => n.run({ ...a, input: v, residual: n.upload(a.residual), inPlace: true }),
        timeDispatches: (v) => n.timeDispatches({ ...a, gamma: v }, 2),
        gpuTime: (v) => n.gpuTime({ ...a, input: v }, 2),
        prepare: (v) => n.prepare({ hidden: v }),
        // The rotary stage's fields, each hostile beside valid others (a GPUBuffer of
        // positions, a passHeads, a gammaHeads, the app's cos and sin).
        positions: (v) => n.run({ ...a, residual: undefined, positions: v, heads: 1, theta: 1e4 }),
        passHeads: (v) => n.run({ ...a, residual: undefined, positions: new Int32Array([0]), theta: 1e4, passHeads: v }),
        gammaHeads: (v) => n.run({ ...a, residual: undefined, position: 3, theta: 1e4, gammaHeads: v }),
        cosSin: (v) => n.run({ ...a, residual: undefined, position: 3, cosSin: v }),
      };
      for (const [dn, make] of Object.entries(data)) {
        const valid = dn.endsWith("(valid)");
        for (const [cn, call] of Object.entries(asyncCalls)) {
          calls++;
          let p;
          try { p = call(make()); } catch (e) { failures.push(`${when}: ${cn}(${dn}) threw ${e?.name}: ${e?.message}`); continue; }
          const got = await p.then(() => "resolved", (e) => e);
          if (got !== "resolved" && !named(got)) failures.push(`${when}: ${cn}(${dn}): ${got?.name ?? got}: ${got?.message ?? ""}`);
          if (valid && cn === "run" && dn === "a Float32Array (valid)" && got !== "resolved") failures.push(`${when}: a valid run rejected: ${got?.message}`);
        }
        for (const [cn, call] of Object.entries({ upload: (v) => n.upload(v), encode: (v) => n.encode(v, { ...a, output: v }) })) {
          calls++;
          try { call(make()); } catch (e) { if (!named(e)) failures.push(`${when}: ${cn}(${dn}) threw ${e?.name}: ${e?.message}`); }
        }
      }
      // The lost device's tensor holds nothing now: named, and arrays still work.
      const stale = await n.run({ ...a, gamma }).then(() => "resolved", (e) => e.name);
      if (stale !== "GpuDeviceError") failures.push(`${when}: a tensor of the lost device: ${stale}`);
      const y = await n.run(a);
      if (!ref.compare(a, y).ok) failures.push(`${when}: a good call after the sweep was wrong`);
      if (n.debugStats().devicesOpened !== 2) failures.push(`${when}: ${n.debugStats().devicesOpened} devices opened, want 2`);
      n.free();
    }
    return { failures, calls };
  }, HOSTILE);
  assertSwept(r, 300);
});

for (const backend of ["webgpu", "cpu"]) test(`hostile arguments: encode and kernelSource throw only named errors, and run with hostile GPUBuffer-like values rejects with one; nothing reaches the app's error scope (${backend})`, async () => {
  const r = await inPage(async (hostileSource) => {
    const { pkg, seeded, ref } = window.lib;
    const { data } = eval(hostileSource);
    const n = await pkg.FusedRmsNorm.create({ backend: window.backend });
    const gpu = await pkg.FusedRmsNorm.create();
    const device = gpu.device;
    const a = seeded.caseArgs({ rows: 1, hidden: 4, seed: 16 });
    const S = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC;
    const buffer = (arr) => { const b = device.createBuffer({ size: arr.byteLength, usage: S | GPUBufferUsage.COPY_DST }); device.queue.writeBuffer(b, 0, arr); return b; };
    const dead = buffer(a.input);
    dead.destroy();
    const values = {
      ...data,
      "a look-alike GPUBuffer": () => ({ [Symbol.toStringTag]: "GPUBuffer", size: 16, usage: 0xffff }),
      "a GPUBuffer-tagged Proxy that throws": () => new Proxy({}, { get(_, k) { if (k === Symbol.toStringTag) return "GPUBuffer"; throw new Error("boom"); } }),
      "a destroyed GPUBuffer": () => dead,
      "a GPUBuffer of 3 bytes": () => device.createBuffer({ size: 3, usage: S }),
    };
    const encoders = { "an encoder": () => device.createCommandEncoder(), ...data, "a look-alike encoder": () => ({ [Symbol.toStringTag]: "GPUCommandEncoder" }) };
    const good = () => ({ input: buffer(a.input), residual: buffer(a.residual), gamma: buffer(a.gamma), hidden: 4, output: device.createBuffer({ size: 16, usage: S }) });
    const failures = [];
    let calls = 0;
    const named = (e) => e instanceof Error && ["TypeError", "ShapeError", "InvalidStateError", "GpuDeviceError"].includes(e.name);
    device.pushErrorScope("validation");
    for (const [en, makeEncoder] of Object.entries(encoders)) {
      for (const key of ["input", "gamma", "output", "dtype", "hidden"]) {
        for (const [vn, make] of Object.entries(values)) {
          calls++;
          try {
            n.encode(makeEncoder(), { ...good(), [key]: make() });
          } catch (e) {
            if (!named(e)) failures.push(`encode(${en}, ${key} = ${vn}) threw ${e?.name}: ${e?.message}`);
          }
        }
      }
    }
    for (const [vn, make] of Object.entries(values)) {
      calls++;
      try { n.kernelSource(make()); } catch (e) { if (!named(e)) failures.push(`kernelSource(${vn}) threw ${e?.name}: ${e?.message}`); }
      calls++;
      let p;
      try { p = n.run({ ...a, residual: make() }); } catch (e) { failures.push(`run(residual = ${vn}) threw synchronously: ${e?.name}`); continue; }
      const got = await p.then(() => "resolved", (e) => e);
      if (got !== "resolved" && !named(got)) failures.push(`run(residual = ${vn}): ${got?.name}: ${got?.message}`);
    }
    const scope = await device.popErrorScope();
    // The encoders recorded into are never submitted: what WebGPU made of them cannot leak.
    if (scope) failures.push(`the app's scope caught: ${scope.message}`);
    const after = ref.compare(a, await n.run(a));
    if (!after.ok) failures.push("a good call after the sweep failed");
    return { failures, calls };
  }, HOSTILE, { query: `?backend=${backend}` });
  assertSwept(r, 1000);
});

for (const backend of ["webgpu", "cpu"]) test(`freed objects: every member of a freed instance or tensor fails with InvalidStateError; free() twice is harmless (${backend})`, async () => {
  const r = await inPage(async () => {
    const { pkg, seeded } = window.lib;
    const a = seeded.caseArgs({ rows: 1, hidden: 4, seed: 13 });
    const n = await pkg.FusedRmsNorm.create({ backend: window.backend });
    const t = n.upload(a.input);
    const kept = n.upload(a.residual);
    t.free();
    t.free();
    const outcome = async (f) => {
      try {
        const v = f();
        if (!(v instanceof Promise)) return `returned ${typeof v}`;
        return await v.then(() => "resolved", (e) => `rejected ${e?.name}`);
      } catch (e) {
        return `threw ${e?.name}`;
      }
    };
    const out = {
      "tensor.length": await outcome(() => t.length),
      "tensor.dtype": await outcome(() => t.dtype),
      "tensor.read()": await outcome(() => t.read()),
      "run with the freed tensor": await outcome(() => n.run({ ...a, input: t })),
    };
    n.free();
    n.free();
    n[Symbol.dispose]();
    Object.assign(out, {
      "run": await outcome(() => n.run(a)),
      "runWithSum": await outcome(() => n.runWithSum(a)),
      "timeDispatches": await outcome(() => n.timeDispatches(a, 1)),
      "gpuTime": await outcome(() => n.gpuTime(a, 1)),
      "upload": await outcome(() => n.upload(a.input)),
      "debugStats": await outcome(() => n.debugStats()),
      "adapterInfo": await outcome(() => n.adapterInfo),
      "simulateDeviceLoss": await outcome(() => n.simulateDeviceLoss()),
      "encode": await outcome(() => n.encode(undefined, a)),
      "kernelSource": await outcome(() => n.kernelSource({ hidden: 4 })),
      "device": await outcome(() => n.device),
      // A tensor outlives its instance's free(): it holds what it needs.
      "a live tensor of a freed instance, read()": await outcome(() => kept.read()),
      "new FusedRmsNorm().run": await outcome(() => new pkg.FusedRmsNorm().run(a)),
    });
    return out;
  }, undefined, { query: `?backend=${backend}` });
  const want = {};
  for (const k of Object.keys(r)) want[k] = k.startsWith("run") || ["tensor.read()", "timeDispatches", "gpuTime", "new FusedRmsNorm().run"].includes(k) ? "rejected InvalidStateError" : "threw InvalidStateError";
  want["a live tensor of a freed instance, read()"] = "resolved";
  assert.deepEqual(r, want);
});

test("before init(): create() rejects InvalidStateError saying to call `await init()`; after init() it works", async () => {
  const r = await inPage(async () => {
    const { init, pkg, seeded, ref } = window.lib;
    let early;
    try {
      early = await pkg.FusedRmsNorm.create().then(() => "resolved", (e) => `${e.name}: ${e.message}`);
    } catch (e) {
      early = `threw ${e?.name}: ${e?.message}`;
    }
    await init();
    const n = await pkg.FusedRmsNorm.create();
    const a = seeded.caseArgs({ rows: 2, hidden: 8, seed: 14 });
    return { early, after: ref.compare(a, await n.run(a)).ok };
  }, undefined, { query: "?noinit" });
  assert.match(r.early, /^InvalidStateError: .*await init\(\)/);
  assert.equal(r.after, true);
});

test("wasm-bindgen's glue: what src/js/glue.rs relies on holds on live objects of this build", async () => {
  // The names as src/js/glue.rs lists them (the one place they are written for Rust).
  const glue = readFileSync(join(ROOT, "src/js/glue.rs"), "utf8");
  const constant = (name) => glue.match(new RegExp(`pub const ${name}: &str = "([^"]*)";`))?.[1];
  const names = { pointer: constant("POINTER_FIELD"), prefix: constant("INTERNAL_PREFIX") };
  assert.ok(names.pointer && names.prefix, "src/js/glue.rs declares POINTER_FIELD and INTERNAL_PREFIX");
  const r = await inPage(async ({ pointer, prefix }) => {
    const { pkg } = window.lib;
    const n = await pkg.FusedRmsNorm.create();
    const t = n.upload(new Float32Array(4));
    const own = (C) => Object.getOwnPropertyNames(C.prototype);
    const live = [n[pointer], t[pointer]].map((p) => typeof p === "number" && p !== 0);
    t.free();
    n.free();
    return {
      live,
      freed: [n[pointer], t[pointer]],
      members: [own(pkg.FusedRmsNorm).includes("run"), own(pkg.GpuTensor).includes("read"), own(pkg.GpuTensor).includes("length")],
      free: [own(pkg.FusedRmsNorm).includes("free"), own(pkg.GpuTensor).includes("free")],
      internal: own(pkg.GpuTensor).filter((m) => m.startsWith(prefix) && m !== `${prefix}handle`).length > 0,
    };
  }, names);
  const early = await inPage(
    () => window.lib.pkg.FusedRmsNorm.create().then(() => "resolved", (e) => e.name),
    undefined,
    { query: "?noinit" },
  );
  const recheck = (what) =>
    `wasm-bindgen's generated glue no longer has ${what}, which src/js/glue.rs relies on: read pkg/webgpu_rmsnorm.js ` +
    "of this wasm-bindgen for every item glue.rs lists, and change glue.rs and src/js/freed_guard.js to match";
  assert.deepEqual(r.live, [true, true], recheck(`a non-zero ${names.pointer} on live objects`));
  assert.deepEqual(r.freed, [0, 0], recheck(`${names.pointer} = 0 after free()`));
  assert.deepEqual(r.members, [true, true, true], recheck("methods and accessors as own properties of the prototypes"));
  assert.deepEqual(r.free, [true, true], recheck("free() on each class's prototype"));
  assert.equal(r.internal, true, recheck(`its own members named with the prefix ${names.prefix}`));
  assert.equal(early, "InvalidStateError", recheck("its `wasm` binding undefined before init()"));
});

for (const backend of ["webgpu", "cpu"]) test(`soak: upload → run(output: gpu) → free, 2000 times: GPU buffers, live tensors and wasm memory stay flat (${backend})`, async () => {
  const r = await inPage(async () => {
    const { pkg, seeded, ref } = window.lib;
    const a = seeded.caseArgs({ rows: 4, hidden: 256, beta: true, seed: 15 });
    const n = await pkg.FusedRmsNorm.create({ backend: window.backend });
    const gamma = n.upload(a.gamma);
    const step = async () => {
      const x = n.upload(a.input);
      const y = await n.run({ ...a, input: x, gamma, output: "gpu" });
      x.free();
      y.free();
    };
    // Past the bind-group cache's bound (128 groups): from then on nothing may grow.
    for (let i = 0; i < 300; i++) await step();
    const warm = n.debugStats();
    for (let i = 0; i < 1700; i++) await step();
    const end = n.debugStats();
    const y = await n.run({ ...a, gamma, output: "gpu" });
    const ok = ref.compare(a, await y.read()).ok;
    y.free();
    return { warm, end, ok };
  }, undefined, { query: `?backend=${backend}` });
  assert.equal(r.ok, true);
  assert.equal(r.end.liveBuffers, r.warm.liveBuffers, JSON.stringify(r));
  assert.equal(r.end.liveTensors, 1, "only gamma is alive");
  assert.equal(r.end.liveTensors, r.warm.liveTensors);
  assert.equal(r.end.wasmMemoryBytes, r.warm.wasmMemoryBytes);
});

test("CPU backend: every kind of call matches the reference; auto picks it on this fallback adapter; a tensor of the other backend is refused", async () => {
  const r = await inPage(async (kindsSource) => {
    const { pkg, seeded } = window.lib;
    const kinds = eval(kindsSource);
    const failures = [];
    const n = await pkg.FusedRmsNorm.create({ backend: "cpu" });
    const auto = await pkg.FusedRmsNorm.create({ backend: "auto" });
    const gpu = await pkg.FusedRmsNorm.create();
    for (const [shape, seed] of [[[3, 64], 21], [[1, 4099], 22], [[0, 8], 23], [[5, 768], 24]]) {
      const [rows, hidden] = shape;
      const a = seeded.caseArgs({ rows, hidden, bias: true, beta: seed % 2 === 0, eps: seed === 23 ? 0 : 1e-6, seed });
      for (const [name, call] of Object.entries(kinds)) {
        if (name === "f16 arrays" && hidden % 4) continue;
        if (name === "in place" && rows === 0) continue;
        try {
          const rep = await call(n, window.lib, a);
          if (!rep.ok) failures.push(`${name} ${rows}x${hidden}: ${rep.problems.join("; ")}`);
        } catch (e) {
          failures.push(`${name} ${rows}x${hidden}: ${e?.name}: ${e?.message}`);
        }
      }
    }
    const a = seeded.caseArgs({ rows: 2, hidden: 8, seed: 25 });
    const other = await gpu.run({ ...a, input: n.upload(a.input) }).then(() => "resolved", (e) => `${e.name}: ${e.message}`);
    const back = await n.run({ ...a, gamma: gpu.upload(a.gamma) }).then(() => "resolved", (e) => `${e.name}: ${e.message}`);
    return {
      failures,
      backends: [n.backend, auto.backend, gpu.backend],
      info: n.adapterInfo.architecture,
      gpuTime: await n.gpuTime(a, 2),
      other, back,
    };
  }, KINDS);
  assert.deepEqual(r.failures, []);
  assert.deepEqual(r.backends, ["cpu", "cpu", "webgpu"], "auto on SwiftShader (a fallback adapter) is the CPU backend");
  assert.equal(r.info, "cpu");
  assert.equal(r.gpuTime, undefined);
  assert.deepEqual([r.other, r.back], [
    "TypeError: input: expected a GpuTensor of this FusedRmsNorm, got one of another instance",
    "TypeError: gamma: expected a GpuTensor of this FusedRmsNorm, got one of another instance",
  ]);
});

for (const backend of ["webgpu", "cpu"]) test(`the common call on tensors and the same call on an object with a prototype give the same results and the same named errors (${backend})`, async () => {
  const r = await inPage(async () => {
    const { pkg, seeded, ref, readings } = window.lib;
    const n = await pkg.FusedRmsNorm.create({ backend: window.backend });
    const { withPrototype, sameBits } = readings;
    const failures = [];
    const a = seeded.caseArgs({ rows: 3, hidden: 64, bias: true, beta: true, eps: 1e-5, seed: 31 });
    const up = () => ({ input: n.upload(a.input), residual: n.upload(a.residual), gamma: n.upload(a.gamma), beta: n.upload(a.beta), bias: n.upload(a.bias) });
    const results = {};
    for (const form of ["plain", "with a prototype"]) {
      const wrap = form === "plain" ? (o) => o : withPrototype;
      const t = up();
      const base = { ...t, hidden: a.hidden, eps: a.eps };
      const out = await n.run(wrap(base));
      const viaGpu = await n.run(wrap({ ...base, output: "gpu" }));
      const withSum = await n.runWithSum(wrap({ ...base, output: "array" }));
      const none = await n.run(wrap({ ...base, inPlace: true }));
      const checks = [
        ["run", ref.compare(a, out)],
        ["run output gpu", ref.compare(a, await viaGpu.read())],
        ["runWithSum", ref.compare(a, withSum.output, { sum: withSum.sum })],
        ["in place", ref.compare(a, await t.input.read(), { sum: await t.residual.read() })],
      ];
      for (const [name, rep] of checks) if (!rep.ok) failures.push(`${form} ${name}: ${rep.problems.join("; ")}`);
      if (none !== undefined) failures.push(`${form} in place resolved with a value`);
      if (!sameBits(out, withSum.output)) failures.push(`${form}: run and runWithSum differ`);
      // Results kept on the GPU are dispatched through the browser's WebGPU directly, read
      // back ones through wgpu: the same kernel, so the same bits.
      if (!sameBits(out, await viaGpu.read())) failures.push(`${form}: output "gpu" and output "array" differ`);
      results[form] = [out, withSum.sum, await t.input.read(), await t.residual.read()];
      viaGpu.free();
      for (const x of Object.values(t)) x.free();
    }
    // Bit for bit: the two objects must hand the kernel the same numbers (an eps read
    // wrong by a factor of a few stays inside the reference's tolerance).
    results["plain"].forEach((x, i) => { if (!sameBits(x, results["with a prototype"][i])) failures.push(`result ${i}: a plain object and one with a prototype differ`); });
    // f16 tensors, in place and out: the same bits both ways, and the reference within f16's.
    const { toF16, fromF16 } = window.lib.f16;
    const h = { input: toF16(a.input), residual: toF16(a.residual), gamma: toF16(a.gamma) };
    const wide = { input: fromF16(h.input), residual: fromF16(h.residual), gamma: fromF16(h.gamma), hidden: a.hidden };
    const halves = {};
    for (const form of ["plain", "with a prototype"]) {
      const wrap = form === "plain" ? (o) => o : withPrototype;
      const t16 = { input: n.upload(h.input), residual: n.upload(h.residual), gamma: n.upload(h.gamma) };
      const y = await n.run(wrap({ ...t16, hidden: a.hidden }));
      await n.run(wrap({ ...t16, hidden: a.hidden, inPlace: true }));
      halves[form] = [y, await t16.input.read()];
      const rep = ref.compare(wide, fromF16(y), { tol: 1e-3 });
      if (!rep.ok) failures.push(`${form} f16: ${rep.problems.join("; ")}`);
      Object.values(t16).forEach((x) => x.free());
    }
    halves["plain"].forEach((x, i) => { if (!sameBits(x, halves["with a prototype"][i])) failures.push(`f16 result ${i}: a plain object and one with a prototype differ`); });
    const t = up();
    const freed = n.upload(a.input);
    freed.free();
    const base = { ...t, hidden: a.hidden };
    // The messages of src/js/ (args.rs, tensor.rs) and src/call/ (checks.rs, shape.rs).
    const bad = {
      "a freed input": ["InvalidStateError", { ...base, input: freed }, "input: expected a live GpuTensor, got one that was freed"],
      ...readings.badValues(base),
      "inPlace with output gpu": ["TypeError", { ...base, inPlace: true, output: "gpu" }, 'output: expected undefined with inPlace: true (the results overwrite input and residual), got the string "gpu"'],
      "gamma the wrong length": ["ShapeError", { ...base, gamma: t.input }, "gamma: expected length 64 (hidden), got 192"],
    };
    failures.push(...(await readings.rejectAlike(n, bad)));
    const after = await n.run({ ...base, eps: a.eps });
    const rep = ref.compare(a, after);
    if (!rep.ok) failures.push(`a good call after: ${rep.problems.join("; ")}`);
    for (const x of Object.values(t)) x.free();
    return failures;
  }, undefined, { query: `?backend=${backend}` });
  assert.deepEqual(r, []);
});

/** A sweep of `{ failures, calls }` found nothing wrong, over more than `least` calls. */
function assertSwept(r, least) {
  assert.deepEqual(r.failures, []);
  assert.ok(r.calls > least, `${r.calls} calls`);
}

/** Runs tsc on a project of tests/types; resolves with its exit code and output. */
function tsc(project) {
  const bin = createRequire(join(ROOT, "package.json")).resolve("typescript/bin/tsc");
  return new Promise((done) =>
    execFile(process.execPath, [bin, "-p", project, "--listFiles"], { cwd: ROOT }, (e, stdout, stderr) =>
      done({ code: e ? e.code : 0, out: stdout + stderr })),
  );
}

test("types: the package's .d.ts type-checks under lib [es2022, dom], strict, skipLibCheck false", async () => {
  const { code, out } = await tsc("tests/types/tsconfig.es2022.json");
  assert.equal(code, 0, out);
  assert.match(out, /pkg\/webgpu_rmsnorm\.d\.ts/, "tsc did not read the package's types");
  assert.doesNotMatch(out, /lib\.esnext\.disposable/, "the check must run without ESNext.Disposable");
});

test("types: with a lib that has Float16Array, it is accepted as f16 data and results stay Uint16Array", async () => {
  const { code, out } = await tsc("tests/types/tsconfig.esnext.json");
  assert.equal(code, 0, out);
  assert.match(out, /lib\.esnext\.float16\.d\.ts/, "the check must run with Float16Array declared");
});

test("types: with WebGPU's own types (@webgpu/types), GPUBuffer arguments, encode and kernelSource type-check and their misuses do not", async () => {
  const { code, out } = await tsc("tests/types/tsconfig.webgpu.json");
  assert.equal(code, 0, out);
  assert.match(out, /@webgpu\/types\/dist\/index\.d\.ts/, "the check must run with WebGPU's types");
});

test("no console error or uncaught page error in any page", () => {
  assert.deepEqual(problems, []);
});

for (const backend of ["webgpu", "cpu"]) test(`in place, a tensor that is written also passed as a weight is the same TypeError naming the weight on both backends, before any GPU work (${backend})`, async () => {
  const r = await inPage(async () => {
    const { pkg, seeded, ref } = window.lib;
    const n = await pkg.FusedRmsNorm.create({ backend: window.backend });
    const a = seeded.caseArgs({ rows: 2, hidden: 64, bias: true, beta: true, seed: 12 });
    const t = { input: n.upload(a.input), residual: n.upload(a.residual), gamma: n.upload(a.gamma), beta: n.upload(a.beta), bias: n.upload(a.bias) };
    const got = [];
    const cases = [["gamma", "input"], ["beta", "residual"], ["bias", "input"], ["postGamma", "residual"], ["gamma", "residual"]];
    for (const [weight, written] of cases)
      for (const method of ["run", "runWithSum"]) {
        const e = await n[method]({ ...t, hidden: 64, inPlace: true, [weight]: t[written] }).then(() => "resolved", (x) => x);
        got.push(`${method} ${weight} = ${written}: ${e?.name}: ${e?.message}`);
      }
    // Nothing was written, and the instance keeps working.
    const same = (await t.input.read()).every((v, i) => Object.is(v, a.input[i]));
    await n.run({ ...t, hidden: 64, inPlace: true });
    const rep = ref.compare(a, await t.input.read(), { sum: await t.residual.read() });
    return { got, same, ok: rep.ok, problems: rep.problems };
  }, undefined, { query: `?backend=${backend}` });
  for (const line of r.got) {
    const [, weight] = line.match(/^\w+ (\w+) = /);
    assert.ok(line.endsWith(`TypeError: ${weight}: expected a GpuTensor of its own, got one another argument of this call also writes`), line);
  }
  assert.equal(r.got.length, 10);
  assert.ok(r.same, "the refused calls wrote nothing");
  assert.ok(r.ok, r.problems.join("; "));
});
