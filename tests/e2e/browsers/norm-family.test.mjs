// The normalization family in headless Chromium, against the f64 reference of the whole formula
// (www/lib/reference.js): kind rms/layer × a residual or none × the sandwich's postGamma or none
// × gammaOffset 0/1, through every entry point (run, runWithSum, output "gpu", in place,
// encode, GPUBuffer arguments, kernelSource's WGSL run by the test itself, prepare, the timing
// calls), f16 data on both f16 paths, outputDtype both ways, and the CPU backend; the named
// errors of the new fields; LayerNorm rows far from zero, the sandwich on huge and tiny rows,
// and QK-norm's shapes.
//
//   bash scripts/build.sh && node --test --test-reporter=spec tests/e2e/browsers/norm-family.test.mjs
import assert from "node:assert/strict";

import { pageSuite, test } from "../support/page.mjs";
import { FAMILY_VARIANTS } from "../support/family-variants.mjs";

const { inPage, problems } = pageSuite("rmsnorm-family-");

/** Runs `fn(H, arg)` in a page, H being the family's helpers (tests/e2e/support/page/family.js); `backend` is window.backend there. */
const inFamily = (fn, arg, backend = "webgpu") =>
  inPage(async ([fnSource, arg]) => eval(fnSource)(window.lib.family, arg), [String(fn), arg], { query: `?backend=${backend}` });

// Bound calls (norm.bind) have their own sweep: tests/e2e/browsers/bound-calls.test.mjs.
const GPU_ENTRIES = ["run", "runWithSum", "output gpu", "runWithSum output gpu, tensor arguments", "in place", "GPUBuffer arguments", "encode into tensors", "encode in place"];

test("every combination of kind × residual × postGamma × gammaOffset, f32, through run, runWithSum, output gpu, tensors, in place, GPUBuffers and encode: the f64 reference", async (t) => {
  const r = await inFamily(async (H, entries) => {
    const n = await window.lib.pkg.FusedRmsNorm.create();
    return H.sweep(n, { entries, shapes: [{ rows: 3, hidden: 64 }, { rows: 2, hidden: 37 }] });
  }, GPU_ENTRIES);
  assert.deepEqual(r.failures, []);
  assert.equal(r.checked, FAMILY_VARIANTS * 2 * GPU_ENTRIES.length);
  t.diagnostic(`${r.checked} results checked`);
});

const F16_CASES = [["f16", undefined], ["f32", "f16"], ["f16", "f32"]];
for (const shaderF16 of [true, false])
  for (const [dtype, outputDtype] of F16_CASES) test(`${dtype} data${outputDtype ? `, outputDtype ${outputDtype}` : ""}, on the ${shaderF16 ? "shader-f16 (where the adapter has it)" : "packed"} path: every combination, every entry point; f16 results to one f16 rounding`, async (t) => {
    const r = await inFamily(async (H, [entries, shaderF16, dtype, outputDtype]) => {
      const n = await window.lib.pkg.FusedRmsNorm.create({ shaderF16 });
      const s = await H.sweep(n, { entries, dtype, outputDtype, shapes: [{ rows: 3, hidden: 64 }] });
      return { ...s, path: n.debugStats().shaderF16, offered: n.device.features.has("shader-f16") };
    }, [GPU_ENTRIES, shaderF16, dtype, outputDtype ?? null]);
    assert.deepEqual(r.failures, []);
    // In place runs only where the output's dtype is the data's.
    assert.equal(r.checked, FAMILY_VARIANTS * (outputDtype ? GPU_ENTRIES.length - 2 : GPU_ENTRIES.length));
    assert.equal(r.path, shaderF16 && r.offered, "shader-f16 is used exactly where asked for and offered");
    t.diagnostic(`${r.checked} results checked on the ${r.path ? "shader-f16" : "packed"} path`);
  });

test("CPU backend: every combination, f32 and f16 data, outputDtype both ways, through run, runWithSum, tensors, in place and bound calls", async (t) => {
  const r = await inFamily(async (H) => {
    const n = await window.lib.pkg.FusedRmsNorm.create({ backend: "cpu" });
    const failures = [];
    let checked = 0;
    for (const [dtype, outputDtype] of [["f32", undefined], ["f16", undefined], ["f32", "f16"], ["f16", "f32"]]) {
      const s = await H.sweep(n, { entries: H.CPU_ENTRIES, dtype, outputDtype, shapes: [{ rows: 3, hidden: 64 }, { rows: 2, hidden: 12 }] });
      failures.push(...s.failures);
      checked += s.checked;
    }
    return { failures, checked, backend: n.backend, entries: H.CPU_ENTRIES };
  }, undefined, "cpu");
  assert.equal(r.backend, "cpu");
  assert.deepEqual(r.failures, []);
  assert.equal(r.entries.length, 7, "run, runWithSum, output gpu, runWithSum output gpu with tensors, in place, bound run in place and into tensors");
  assert.equal(r.checked, FAMILY_VARIANTS * 2 * (7 + 7 + 5 + 5));
  t.diagnostic(`${r.checked} results checked`);
});

for (const backend of ["webgpu", "cpu"]) test(`timeDispatches and gpuTime take every combination and outputDtype (${backend})`, async () => {
  const r = await inFamily(async (H) => {
    const n = await window.lib.pkg.FusedRmsNorm.create({ backend: window.backend });
    const failures = [];
    for (const v of H.VARIANTS)
      for (const [dtype, outputDtype] of [["f32", undefined], ["f32", "f16"], ["f16", "f32"]]) {
        const { call } = H.inDtype(H.caseOf(v), dtype);
        const args = outputDtype ? { ...call, outputDtype } : call;
        try {
          const ms = await n.timeDispatches(args, 3);
          const gpu = await n.gpuTime(args, 3);
          const ok = Number.isFinite(ms) && ms >= 0 && (gpu === undefined || (n.backend === "webgpu" && Number.isFinite(gpu) && gpu >= 0));
          if (!ok) failures.push(`${H.label(v)} ${dtype}→${outputDtype}: ${ms} ms, gpuTime ${gpu}`);
        } catch (e) {
          failures.push(`${H.label(v)} ${dtype}→${outputDtype}: ${e?.name}: ${e?.message}`);
        }
      }
    return failures;
  }, undefined, backend);
  assert.deepEqual(r, []);
});

test("prepare compiles each combination's kernel (the call then compiles none), and kernelSource's WGSL, run by the test on norm.device with the binding table and uniform layout, gives runWithSum's results bit for bit", async (t) => {
  const r = await inFamily(async (H) => {
    const { bufferOf, emptyBuffer, readBuffer } = await import("/lib/app-gpu.js");
    const failures = [];
    let pipelines = 0;
    for (const shaderF16 of [true, false]) {
      const n = await window.lib.pkg.FusedRmsNorm.create({ shaderF16 });
      const device = n.device;
      const half = shaderF16 && device.features.has("shader-f16") ? "f16" : "f16-packed";
      const cases = H.VARIANTS.map((v) => [v, "f32", undefined]).concat(shaderF16 ? [] : H.VARIANTS.filter((_, i) => i % 3 === 0).flatMap((v) => [[v, "f32", "f16"], [v, "f16", "f32"], [v, "f16", undefined]]));
      for (const [v, dtype, outputDtype] of cases) {
        const what = `${H.label(v)}, ${dtype}${outputDtype ? " → " + outputDtype : ""}, shaderF16 ${shaderF16}`;
        const rows = 3, hidden = 64;
        const a = H.caseOf(v, { rows, hidden, seed: 5 });
        const { call, host } = H.inDtype(a, dtype);
        const outD = outputDtype ?? dtype;
        const kernel = { hidden, kind: v.kind, residual: v.residual, postGamma: v.postGamma, input2: !!v.input2, bias: v.bias, beta: v.beta, sum: true, dtype, gammaOffset: v.gammaOffset };
        if (outputDtype) kernel.outputDtype = outputDtype;
        try {
          const before = n.debugStats().pipelines;
          await n.prepare(kernel);
          const prepared = n.debugStats().pipelines;
          const want = await n.runWithSum(outputDtype ? { ...call, outputDtype } : call);
          if (n.debugStats().pipelines !== prepared) failures.push(`${what}: the call compiled a pipeline prepare had not`);
          pipelines += prepared - before;

          const k = n.kernelSource({ ...kernel, rows });
          const names = k.bindings.map((b) => b.name);
          const storage = (d) => (d === "f16" ? half : "f32");
          if (k.storage !== storage(dtype) || k.outputStorage !== storage(outD)) failures.push(`${what}: storage ${k.storage}, outputStorage ${k.outputStorage}`);
          if ((v.postGamma && !names.includes("post_gamma")) || (v.residual && !names.includes("residual")) || names.includes("input2") !== !!v.input2 || names.includes("post_gamma") === !!v.input2) failures.push(`${what}: bindings ${names.join(", ")}`);
          if (k.params.size !== 36) failures.push(`${what}: params.size ${k.params.size}`);
          // A call without a rotary stage: its fields as the package writes them.
          const values = { rows, width: hidden / k.lanes, hidden, eps: 1e-6, gamma_offset: v.gammaOffset, rotary_start: 0, rotary_heads: 1, rotary_scaling: 1, rotary_pass: 0 };
          const params = new DataView(new ArrayBuffer(k.params.size));
          for (const f of k.params.fields) {
            if (!(f.name in values)) failures.push(`${what}: an unknown params field ${f.name}`);
            params[f.type === "u32" ? "setUint32" : "setFloat32"](f.offset, values[f.name], true);
          }
          const gamma16 = k.params.fields.find((f) => f.name === "gamma_offset");
          if (gamma16?.offset !== 16 || gamma16.type !== "f32") failures.push(`${what}: gamma_offset is ${JSON.stringify(gamma16)}`);
          const S = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC;
          const len = rows * hidden;
          const bytes = (d) => len * (d === "f16" ? 2 : 4);
          const data = {
            input: call.input, residual: call.residual, gamma: call.gamma, beta: call.beta, bias: call.bias, post_gamma: call.postGamma, input2: call.input2,
          };
          const buffers = { output: emptyBuffer(device, bytes(outD), S), sum: emptyBuffer(device, bytes(dtype), S), params: bufferOf(device, new Uint8Array(params.buffer), GPUBufferUsage.UNIFORM) };
          for (const [name, arr] of Object.entries(data)) if (arr) buffers[name] = bufferOf(device, arr, S);
          const stub = emptyBuffer(device, 16, S);
          const layout = device.createBindGroupLayout({ entries: k.bindings.map((b) => ({ binding: b.binding, visibility: GPUShaderStage.COMPUTE, buffer: { type: b.type } })) });
          const pipeline = device.createComputePipeline({
            layout: device.createPipelineLayout({ bindGroupLayouts: [layout] }),
            compute: { module: device.createShaderModule({ code: k.code }), entryPoint: k.entryPoint },
          });
          const missing = k.bindings.filter((b) => !buffers[b.name] && !b.optional).map((b) => b.name);
          if (missing.length) failures.push(`${what}: nothing to bind at the required ${missing.join(", ")}`);
          H.submit(device, (e) => {
            const pass = e.beginComputePass();
            pass.setPipeline(pipeline);
            pass.setBindGroup(0, device.createBindGroup({ layout, entries: k.bindings.map((b) => ({ binding: b.binding, resource: { buffer: buffers[b.name] ?? stub } })) }));
            pass.dispatchWorkgroups(...k.workgroups);
            pass.end();
          });
          const y = new (H.typedOf(outD))(await readBuffer(device, buffers.output));
          const s = new (H.typedOf(dtype))(await readBuffer(device, buffers.sum));
          const same = (x, w) => x.length === w.length && x.every((e, i) => Object.is(e, w[i]));
          if (!same(y, want.output) || !same(s, want.sum)) failures.push(`${what}: the WGSL run by hand differs from runWithSum`);
          const rep = window.lib.ref.compare(host, y, { sum: s });
          if (!rep.ok) failures.push(`${what}: ${rep.problems.join("; ")}`);
        } catch (e) {
          failures.push(`${what}: ${e?.name}: ${e?.message}`);
        }
      }
    }
    return { failures, pipelines };
  });
  assert.deepEqual(r.failures, []);
  t.diagnostic(`${r.pipelines} pipelines prepared`);
});

for (const backend of ["webgpu", "cpu"]) test(`the new fields' named errors reject the Promise (encode: throw) naming the field, and the instance keeps working (${backend})`, async () => {
  const r = await inFamily(async (H) => {
    const n = await window.lib.pkg.FusedRmsNorm.create({ backend: window.backend });
    const v = H.VARIANTS.find((x) => x.postGamma && x.residual);
    const a = H.caseOf(v, { rows: 2, hidden: 8 });
    const t = H.tensors(n, a);
    const TE = "TypeError", SE = "ShapeError";
    const odd = H.caseOf(v, { rows: 2, hidden: 6 });
    // [what, args, the error's name, the field its message starts with]
    const bad = [
      ["an unknown kind", { ...a, kind: "group" }, TE, "kind"],
      ["kind in capitals", { ...a, kind: "LAYER" }, TE, "kind"],
      ["kind a number", { ...a, kind: 1 }, TE, "kind"],
      ["gammaOffset NaN", { ...a, gammaOffset: NaN }, SE, "gammaOffset"],
      ["gammaOffset Infinity", { ...a, gammaOffset: Infinity }, SE, "gammaOffset"],
      ["gammaOffset -Infinity", { ...a, gammaOffset: -Infinity }, SE, "gammaOffset"],
      ["gammaOffset past f32", { ...a, gammaOffset: 1e39 }, SE, "gammaOffset"],
      ["gammaOffset a string", { ...a, gammaOffset: "1" }, TE, "gammaOffset"],
      ["postGamma of another length", { ...a, postGamma: new Float32Array(9) }, SE, "postGamma"],
      ["postGamma of another dtype", { ...a, postGamma: new Uint16Array(8) }, TE, "postGamma"],
      ["postGamma a boolean", { ...a, postGamma: true }, TE, "postGamma"],
      ["input2 with postGamma", { ...a, input2: new Float32Array(16) }, TE, "input2"],
      ["input2 of another length", { ...a, postGamma: undefined, input2: new Float32Array(15) }, SE, "input2"],
      ["input2 of another dtype", { ...a, postGamma: undefined, input2: new Uint16Array(16) }, TE, "input2"],
      ["input2 a number", { ...a, postGamma: undefined, input2: 2 }, TE, "input2"],
      ["outputDtype bf16", { ...a, outputDtype: "bf16" }, TE, "outputDtype"],
      ["outputDtype f16 with hidden 6", { ...odd, outputDtype: "f16" }, SE, "hidden"],
    ];
    const failures = [];
    const expect = (what, got, name, field) => {
      if (!(got instanceof Error) || got.name !== name || !got.message.startsWith(field + ":")) failures.push(`${what}: ${got?.name ?? got}: ${got?.message ?? ""} (want ${name} naming ${field})`);
    };
    const rejection = async (f) => {
      try { return await f().then(() => "resolved", (e) => e); } catch (e) { return "threw synchronously " + e?.name; }
    };
    const thrown = (f) => { try { f(); return "returned"; } catch (e) { return e; } };
    const still = async (what) => {
      const rep = window.lib.ref.compare(a, await n.run(a));
      if (!rep.ok) failures.push(`after ${what}: ${rep.problems.join("; ")}`);
    };
    for (const [what, args, name, field] of bad) {
      expect(`run, ${what}`, await rejection(() => n.run(args)), name, field);
      expect(`runWithSum, ${what}`, await rejection(() => n.runWithSum({ ...args, output: "gpu" })), name, field);
      expect(`timeDispatches, ${what}`, await rejection(() => n.timeDispatches(args, 2)), name, field);
      await still(what);
    }
    // In place, the output is the data's dtype.
    for (const [dtype, outputDtype] of [["f32", "f16"], ["f16", "f32"]]) {
      const { call } = H.inDtype(a, dtype);
      const x = H.tensors(n, call);
      for (const method of ["run", "runWithSum"]) expect(`${method} in place ${dtype} → ${outputDtype}`, await rejection(() => n[method]({ ...x, inPlace: true, outputDtype })), TE, "outputDtype");
      if (n.backend === "webgpu") expect(`encode in place ${dtype} → ${outputDtype}`, thrown(() => n.encode(n.device.createCommandEncoder(), { ...x, inPlace: true, outputDtype })), TE, "outputDtype");
      expect(`prepare in place ${dtype} → ${outputDtype}`, await rejection(() => n.prepare({ hidden: 8, dtype, inPlace: true, outputDtype })), TE, "outputDtype");
      H.free(x, call);
    }
    // encode throws the same errors at once, on tensors.
    if (n.backend === "webgpu") {
      const output = n.upload(new Float32Array(16));
      for (const [what, args, name, field] of bad) {
        const onGpu = { ...args };
        for (const [k, x] of Object.entries(args)) if (ArrayBuffer.isView(x)) onGpu[k] = n.upload(x);
        const out = what.includes("hidden 6") ? n.upload(new Uint16Array(12)) : output;
        expect(`encode, ${what}`, thrown(() => n.encode(n.device.createCommandEncoder(), { ...onGpu, output: out })), name, field);
      }
    }
    // The kernel descriptions check the same fields.
    const kernels = [
      [{ hidden: 8, kind: "group" }, TE, "kind"], [{ hidden: 8, gammaOffset: NaN }, SE, "gammaOffset"],
      [{ hidden: 8, residual: "no" }, TE, "residual"], [{ hidden: 8, postGamma: 1 }, TE, "postGamma"],
      [{ hidden: 8, outputDtype: "bf16" }, TE, "outputDtype"], [{ hidden: 6, outputDtype: "f16" }, SE, "hidden"],
      [{ hidden: 8, input2: "yes" }, TE, "input2"], [{ hidden: 8, input2: true, postGamma: true }, TE, "input2"],
    ];
    for (const [k, name, field] of kernels) {
      expect(`prepare ${JSON.stringify(k)}`, await rejection(() => n.prepare(k)), name, field);
      if (n.backend === "webgpu") expect(`kernelSource ${JSON.stringify(k)}`, thrown(() => n.kernelSource(k)), name, field);
    }
    // On tensors, and after a device loss (the next call opens a new device), the same.
    for (const [what, args, name, field] of bad) {
      const onGpu = { ...args };
      for (const [k, x] of Object.entries(args)) if (ArrayBuffer.isView(x)) onGpu[k] = n.upload(x);
      expect(`run on tensors, ${what}`, await rejection(() => n.run(onGpu)), name, field);
      for (const x of Object.values(onGpu)) if (x !== args.hidden && typeof x?.free === "function") x.free();
    }
    if (n.backend === "webgpu") {
      n.simulateDeviceLoss();
      await new Promise((ok) => setTimeout(ok, 50));
      for (const [what, args, name, field] of bad) expect(`run after a device loss, ${what}`, await rejection(() => n.run(args)), name, field);
      await still("a device loss");
    }
    await still("everything");
    H.free(t, a);
    return failures;
  }, undefined, backend);
  assert.deepEqual(r, []);
});

for (const backend of ["webgpu", "cpu"]) test(`numerics: LayerNorm rows whose mean is 10⁴ times their spread, the sandwich on huge and tiny rows, QK-norm's shapes (hidden 64 and 128, tens of thousands of rows) (${backend})`, async (t) => {
  const r = await inFamily(async (H) => {
    const { seeded, ref } = window.lib;
    const n = await window.lib.pkg.FusedRmsNorm.create({ backend: window.backend });
    const failures = [];
    const check = async (what, args, rows) => {
      try {
        const out = await n.runWithSum(args);
        const rep = ref.compare(args, out.output, { sum: out.sum, rows });
        if (!rep.ok) failures.push(`${what}: ${rep.problems.join("; ")}`);
        return rep.maxRel;
      } catch (e) {
        failures.push(`${what}: ${e?.name}: ${e?.message}`);
      }
    };
    const worst = {};
    // LayerNorm far from zero: rows of spread s around means 1e4·s (either sign), hidden 1024.
    const hidden = 1024, next = seeded.rng(3);
    const far = { input: new Float32Array(6 * hidden), gamma: seeded.filled(hidden, next, 0.5, 1.5), beta: seeded.filled(hidden, next, -0.1, 0.1), hidden, kind: "layer", eps: 1e-5 };
    [[1, 1e4], [1, -1e4], [1e-3, 10], [1e3, 1e7], [0.5, 5e3], [2, -2e4]].forEach(([s, m], r) => {
      for (let i = 0; i < hidden; i++) far.input[r * hidden + i] = m + s * (2 * next() - 1);
    });
    worst.layerFar = await check("LayerNorm, mean 1e4 × spread", far);
    worst.layerFarResidual = await check("LayerNorm, mean 1e4 × spread, with a residual", { ...far, residual: seeded.filled(6 * hidden, next, -0.5, 0.5), bias: seeded.filled(hidden, next, -0.5, 0.5) });
    // The sandwich on rows of ~1e30 and ~1e-30, in either norm and either reduction.
    for (const kind of ["rms", "layer"]) {
      const h = 768, g = seeded.rng(kind.length);
      const a = { input: new Float32Array(4 * h), residual: new Float32Array(4 * h), gamma: seeded.filled(h, g, -1.5, 1.5), postGamma: seeded.filled(h, g, -1.5, 1.5), hidden: h, kind, gammaOffset: 1, eps: 0 };
      [[1e30, 1e30], [1e-30, 1e-30], [1e30, 1], [1e-30, 1e30]].forEach(([si, sr], r) => {
        for (let i = 0; i < h; i++) {
          a.input[r * h + i] = si * (2 * g() - 1);
          a.residual[r * h + i] = sr * (2 * g() - 1);
        }
      });
      worst[`sandwich ${kind}`] = await check(`the ${kind} sandwich on huge and tiny rows`, a);
    }
    // QK-norm: a head's queries normalized per head, no residual (Qwen3; Gemma 3 with 1 + γ).
    for (const [rows, h, gammaOffset] of [[20000, 128, 0], [40000, 64, 1]]) {
      const g = seeded.rng(h);
      const a = { input: seeded.filled(rows * h, g, -4, 4), gamma: seeded.filled(h, g, -1, 1), hidden: h, gammaOffset };
      const sample = Array.from({ length: 200 }, (_, i) => Math.floor((i * rows) / 200)).concat([rows - 1]);
      worst[`qk ${rows}x${h}`] = await check(`QK-norm ${rows}x${h}`, a, sample);
    }
    return { failures, worst };
  }, undefined, backend);
  assert.deepEqual(r.failures, []);
  t.diagnostic(`worst relative errors: ${JSON.stringify(r.worst)}`);
});

test("no console error or uncaught page error", () => {
  assert.deepEqual(problems, []);
});
