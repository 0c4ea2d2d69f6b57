// The rotary stage after the norm (RoPE) in headless Chromium, on both backends (WebGPU on
// SwiftShader):
// - QK-norm and rotation as Hugging Face transformers computes them (tests/fixtures/rotary/):
//   Qwen3 (and with YaRN), Gemma 3's local and global layers, OLMo 2 (the whole projection a
//   row, turned head by head), Phi (LayerNorm with bias, partial rotary), Cohere (interleaved,
//   a γ per head, in one call); positions from an Int32Array, a Uint32Array or one start
//   position; through run, runWithSum, the caller's array, f16 output, new tensors and in
//   place;
// - the f64 reference (www/lib/reference.js) at positions 0, 4095, 32767 and 2^20;
// - every bad value a named error, the instance working after them.
//
//   bash scripts/build.sh && node --test --test-reporter=spec tests/e2e/browsers/rotary.test.mjs
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";

import { pageSuite, test } from "../support/page.mjs";
import { ROOT } from "../support/repo.mjs";

const { inPage } = pageSuite("rmsnorm-rotary-");

// With a QK-norm, and (Llama 3's scaled rope, GPT-J's interleaved partial one) without.
const CASES = ["qwen3", "qwen3_yarn", "gemma3_sliding", "gemma3_full", "olmo2", "phi", "cohere", "llama3", "gptj"];

async function fixture(name) {
  return JSON.parse(await readFile(`${ROOT}/tests/fixtures/rotary/${name}.json`, "utf8"));
}

for (const backend of ["cpu", "webgpu"]) test(`QK-norm then RoPE, and RoPE alone, is what transformers computes for every model (${backend})`, async (t) => {
  const fixtures = await Promise.all(CASES.map(fixture));
  let r = await inPage(async ([fixtures, backend]) => {
    const { pkg, ref } = window.lib;
    const n = await pkg.FusedRmsNorm.create({ backend });
    const F = (a) => new Float32Array(a.flat(2).map(Math.fround));
    const report = [];
    for (const f of fixtures) {
      const c = f.config, hd = c.head_dim;
      // No QK-norm: kind "none", a token's heads one row, nothing normalized.
      const norm = c.norm ?? { kind: "none", over: "projection" };
      for (const [name, heads] of [["q", c.q_heads], ["k", c.kv_heads]]) {
        const weight = f[`${name}_norm_weight`] ?? [];
        for (const run of f.runs) {
          const projected = F(run[`${name}_proj`]), want = F(run[name]);
          const rotary = { invFreq: F(f.inv_freq), rotaryDim: c.rotary_dim, rotaryStyle: c.style, attentionScaling: f.attention_scaling, headSize: hd };
          const base = { eps: norm.eps, kind: norm.kind, gammaOffset: norm.gamma_offset, ...rotary };
          const gammaOf = (w) => (norm.kind === "none" ? {} : { gamma: F(w) });
          if (norm.bias) base.beta = F(f[`${name}_norm_bias`]);
          const over = norm.over === "projection";
          // Positions three ways: Int32Array, Uint32Array, or the first of consecutive ones
          // (rows a token: a head's, one where a row is a token's whole projection). Cohere's
          // γ is a head's, `[heads, head_dim]`: row r takes head r mod heads's.
          const consecutive = run.positions.every((p, i) => p === run.positions[0] + i);
          const ways = [{ positions: new Int32Array(run.positions) }, { positions: new Uint32Array(run.positions) }];
          if (consecutive) ways.push({ position: run.positions[0], heads: over ? 1 : heads });
          const args = { ...base, input: projected, ...gammaOf(weight), hidden: over ? heads * hd : hd };
          for (const [w, way] of ways.entries()) {
            const call = { ...args, ...way };
            const got = w === 0 ? await n.run(call) : w === 1 ? (await n.runWithSum(call)).output : await n.run({ ...call, output: new Float32Array(call.input.length) });
            const rep = ref.compare(call, got);
            if (!rep.ok) report.push({ what: `${f.source.model} ${name} ${run.name} way ${w}: reference`, off: Infinity, problems: rep.problems.join("; ") });
            // Against the model: each value within 1e-5 of its head's largest magnitude.
            let off = 0;
            for (let h = 0; h * hd < want.length; h++) {
              const head = want.subarray(h * hd, (h + 1) * hd);
              const scale = Math.max(...head.map(Math.abs));
              for (let i = 0; i < hd; i++) off = Math.max(off, Math.abs(got[h * hd + i] - head[i]) / scale);
            }
            report.push({ what: `${f.source.model} ${name} ${run.name} way ${w}`, off });
          }
        }
      }
    }
    return { report, backend: n.backend };
  }, [fixtures, backend], { query: `?backend=${backend}` });
  assert.equal(r.backend, backend);
  r = r.report;
  const worst = r.reduce((m, x) => Math.max(m, x.off), 0);
  for (const x of r) assert.ok(x.off <= 1e-5, `${x.what}: ${x.off} of the head's scale from the model's ${x.problems ?? ""}`);
  assert.ok(r.length >= CASES.length * 2 * 4 * 2, `${r.length} runs`);
  assert.ok(r.some((x) => /gpt-j|gptj/i.test(x.what)) && r.some((x) => /llama/i.test(x.what)), "the rotations without a norm ran");
  t.diagnostic(`${r.length} runs, worst ${worst.toExponential(2)} of a head's largest value`);
});

for (const backend of ["cpu", "webgpu"]) test(`far positions, every entry point and f16 output meet the f64 reference (${backend})`, async () => {
  const r = await inPage(async (backend) => {
    const { pkg, seeded, ref } = window.lib;
    const n = await pkg.FusedRmsNorm.create({ backend });
    if (n.backend !== backend) return [`got the ${n.backend} backend`];
    const failures = [];
    for (const start of [0, 1, 4095, 32767, 2 ** 20]) {
      for (const rotaryStyle of ["neox", "interleaved"]) {
        const a = seeded.caseArgs({ rows: 12, hidden: 128, bias: false, beta: true, seed: start % 97 + 1 });
        delete a.residual;
        const args = { ...a, positions: new Uint32Array([start, start + 1, start + 2]), theta: 1e6, rotaryStyle, headSize: 64, rotaryDim: 32 };
        const what = `${rotaryStyle} at ${start}`;
        const y = await n.run(args);
        const rep = ref.compare(args, y);
        if (!rep.ok) failures.push(`${what}: ${rep.problems.join("; ")}`);
        const half = await n.run({ ...args, outputDtype: "f16" });
        const rep16 = ref.compare(args, half, { tol: 1e-3 });
        if (!rep16.ok) failures.push(`${what} f16: ${rep16.problems.join("; ")}`);
        const tensor = await n.run({ ...args, output: "gpu" });
        const read = await tensor.read();
        if (!read.every((v, i) => Object.is(v, y[i]))) failures.push(`${what}: a new tensor differs from the array`);
        tensor.free();
        const each = await n.run({ ...args, positions: undefined, position: start, heads: 4 });
        if (!each.every((v, i) => Object.is(v, y[i]))) failures.push(`${what}: position and positions differ`);
        // In place over a tensor of the input: y as the array call's, bit for bit.
        const over = n.upload(args.input);
        await n.run({ ...args, input: over, inPlace: true });
        const turned = await over.read();
        if (!turned.every((v, i) => Object.is(v, y[i]))) failures.push(`${what}: in place differs from the array`);
        over.free();
      }
    }
    return failures;
  }, backend, { query: `?backend=${backend}` });
  assert.deepEqual(r, []);
});

for (const backend of ["cpu", "webgpu"]) test(`the app's own cos and sin (cosSin) turn y on every entry point (${backend})`, async () => {
  const r = await inPage(async (backend) => {
    const { pkg, seeded, ref } = window.lib;
    const n = await pkg.FusedRmsNorm.create({ backend });
    if (n.backend !== backend) return [`got the ${n.backend} backend`];
    const failures = [];
    const fail = (what, rep) => rep.ok || failures.push(`${what}: ${rep.problems.join("; ")}`);
    const same = (what, got, want) => got.every((v, i) => Object.is(v, want[i])) || failures.push(`${what} differs from the array call`);
    // Rows of cos and sin that no angle gives: a kernel that formed angles instead fails.
    const held = 50, rotaryDim = 32;
    const cosSin = Float32Array.from({ length: held * rotaryDim }, (_, i) => Math.sin(i * 0.37) * 1.1);
    for (const rotaryStyle of ["neox", "interleaved"]) {
      const a = seeded.caseArgs({ rows: 12, hidden: 128, bias: false, beta: true, seed: 5 });
      delete a.residual;
      const args = { ...a, positions: new Int32Array([49, 0, 17]), cosSin, rotaryStyle, headSize: 64, rotaryDim, attentionScaling: 0.5 };
      const y = await n.run(args);
      fail(`${rotaryStyle}`, ref.compare(args, y));
      fail(`${rotaryStyle} f16`, ref.compare(args, await n.run({ ...args, outputDtype: "f16" }), { tol: 1e-3 }));
      const from = { ...args, positions: undefined, position: 47, heads: 4 };
      fail(`${rotaryStyle} from 47`, ref.compare(from, await n.run(from)));
      const tensor = await n.run({ ...args, output: "gpu" });
      same(`${rotaryStyle}: a new tensor`, await tensor.read(), y);
      const over = n.upload(args.input);
      await n.run({ ...args, input: over, inPlace: true });
      same(`${rotaryStyle}: in place`, await over.read(), y);
      if (backend === "webgpu") {
        const [x1, x2] = [n.upload(args.input), n.upload(args.input)];
        const weights = { gamma: n.upload(args.gamma), beta: n.upload(args.beta) };
        const e = n.device.createCommandEncoder();
        n.encode(e, { ...args, ...weights, input: x1, inPlace: true });
        n.device.queue.submit([e.finish()]);
        same(`${rotaryStyle}: encode`, await x1.read(), y);
        const bound = n.bind({ ...args, ...weights, input: x2, inPlace: true });
        await bound.run();
        same(`${rotaryStyle}: bind`, await x2.read(), y);
        bound.free();
        const src = n.kernelSource({ hidden: 128, rows: 12, beta: true, rotaryDim, headSize: 64, rotaryStyle, cosSinPositions: held }).code;
        if (!/const ROT_TABLE: bool = true;/.test(src)) failures.push(`${rotaryStyle}: kernelSource lacks the table's kernel`);
        if (!new RegExp(`const ROT_POSITIONS_AT: u32 = ${held * rotaryDim}u;`).test(src)) failures.push(`${rotaryStyle}: kernelSource's positions are not after the table`);
      }
    }
    return failures;
  }, backend, { query: `?backend=${backend}` });
  assert.deepEqual(r, []);
});

test("every bad rotary value is a named error and the instance works after it (both backends), and encode, bind and kernelSource take the stage", async () => {
  const r = await inPage(async () => {
    const { pkg } = window.lib;
    const out = {};
    for (const backend of ["cpu", "webgpu"]) {
      const n = await pkg.FusedRmsNorm.create({ backend });
      const hidden = 8, input = new Float32Array(32).fill(1), gamma = new Float32Array(hidden).fill(1);
      const ok = { input, gamma, hidden, positions: new Int32Array([0, 1, 2, 3]), invFreq: new Float32Array(4).fill(1) };
      const cases = {
        "positions length": { ...ok, positions: new Int32Array(3) },
        "negative position": { ...ok, positions: new Int32Array([0, -1, 2, 3]) },
        "positions as an Array": { ...ok, positions: [0, 1, 2, 3] },
        "positions as a Float32Array": { ...ok, positions: new Float32Array(4) },
        "both positions and position": { ...ok, position: 0 },
        "position not an integer": { ...ok, positions: undefined, position: 1.5 },
        "odd rotaryDim": { ...ok, rotaryDim: 3 },
        "rotaryDim beyond the head": { ...ok, rotaryDim: 10 },
        "headSize not dividing hidden": { ...ok, headSize: 3 },
        "theta zero": { ...ok, invFreq: undefined, theta: 0 },
        "theta and invFreq": { ...ok, theta: 1e4 },
        "no frequencies": { ...ok, invFreq: undefined },
        "invFreq length": { ...ok, invFreq: new Float32Array(3) },
        "cosSin and invFreq": { ...ok, cosSin: new Float32Array(32) },
        "cosSin length": { ...ok, invFreq: undefined, cosSin: new Float32Array(12) },
        "cosSin as an Array": { ...ok, invFreq: undefined, cosSin: [1, 0, 0, 1, 1, 0, 0, 1] },
        "cosSin not finite": { ...ok, invFreq: undefined, cosSin: new Float32Array(32).fill(NaN) },
        "position beyond cosSin": { ...ok, invFreq: undefined, cosSin: new Float32Array(24) },
        "scaling not finite": { ...ok, attentionScaling: Infinity },
        "scaling negative": { ...ok, attentionScaling: -1 },
        "unknown style": { ...ok, rotaryStyle: "gptj" },
        "rotaryDim without positions": { input, gamma, hidden, rotaryDim: 4 },
        "kind none with gamma": { ...ok, kind: "none" },
        "kind none without a rotary stage": { input, hidden, kind: "none" },
      };
      const got = {};
      for (const [what, args] of Object.entries(cases)) {
        try {
          await n.run(args);
          got[what] = "resolved";
        } catch (e) {
          got[what] = `${e.name}: ${e.message}`;
        }
      }
      let after;
      try {
        after = (await n.run({ input, gamma, hidden })).length;
      } catch (e) {
        after = `${e.name}: ${e.message}`;
      }
      out[backend] = { got, after, backend: n.backend };
    }
    return out;
  });
  const expect = {
    "positions length": ["ShapeError", "positions:"],
    "negative position": ["ShapeError", "positions:"],
    "positions as an Array": ["TypeError", "positions:"],
    "positions as a Float32Array": ["TypeError", "positions:"],
    "both positions and position": ["TypeError", "position:"],
    "position not an integer": ["ShapeError", "position:"],
    "odd rotaryDim": ["ShapeError", "rotaryDim:"],
    "rotaryDim beyond the head": ["ShapeError", "rotaryDim:"],
    "headSize not dividing hidden": ["ShapeError", "headSize:"],
    "theta zero": ["ShapeError", "theta:"],
    "theta and invFreq": ["TypeError", "theta:"],
    "no frequencies": ["TypeError", "invFreq:"],
    "invFreq length": ["ShapeError", "invFreq:"],
    "cosSin and invFreq": ["TypeError", "cosSin: expected undefined with invFreq"],
    "cosSin length": ["ShapeError", "cosSin: expected a length that is a multiple of rotaryDim (8"],
    "cosSin as an Array": ["TypeError", "cosSin:"],
    "cosSin not finite": ["ShapeError", "cosSin: expected finite numbers, got NaN at 0"],
    "position beyond cosSin": ["ShapeError", "positions: expected positions below 3 (the rows of cosSin), got 3"],
    "scaling not finite": ["ShapeError", "attentionScaling:"],
    "scaling negative": ["ShapeError", "attentionScaling:"],
    "unknown style": ["TypeError", "rotaryStyle:"],
    "rotaryDim without positions": ["TypeError", "positions:"],
    "kind none with gamma": ["TypeError", "gamma: expected undefined with kind \"none\""],
    "kind none without a rotary stage": ["TypeError", "positions: missing (kind \"none\""],
  };
  for (const [backend, { got, after }] of Object.entries(r)) {
    assert.equal(after, 32, `${backend}: the instance works after the errors`);
    for (const [what, [name, field]] of Object.entries(expect)) {
      assert.ok(got[what].startsWith(`${name}: ${field}`), `${backend}, ${what}: ${got[what]}`);
    }
  }
  // encode and bind: the same call recorded into the app's encoder, bit for bit as run's; a
  // decode step's new position is a new encode; kernelSource describes the kernel.
  const gpu = await inPage(async () => {
    const { pkg, seeded } = window.lib;
    const n = await pkg.FusedRmsNorm.create({ backend: "webgpu" });
    const a = seeded.caseArgs({ rows: 8, hidden: 64, bias: false, beta: true, seed: 3 });
    const rope = { position: 4093, heads: 4, theta: 1e6, headSize: 32, rotaryDim: 16, rotaryStyle: "interleaved" };
    const args = { input: n.upload(a.input), gamma: n.upload(a.gamma), beta: n.upload(a.beta), hidden: 64, eps: a.eps, ...rope };
    const same = (x, y) => x.length === y.length && x.every((v, i) => Object.is(v, y[i]));
    const want = (position) => n.run({ input: a.input, gamma: a.gamma, beta: a.beta, hidden: 64, eps: a.eps, ...rope, position });
    const out = {};
    const output = n.upload(new Float32Array(a.input.length));
    const encoded = [];
    for (const position of [4093, 4094]) {
      const e = n.device.createCommandEncoder();
      n.encode(e, { ...args, position, output });
      n.device.queue.submit([e.finish()]);
      encoded.push(same(await output.read(), await want(position)));
    }
    out.encode = encoded;
    const bound = n.bind({ ...args, output });
    await bound.run();
    out.bind = same(await output.read(), await want(4093));
    bound.free();
    const over = n.upload(a.input);
    const e = n.device.createCommandEncoder();
    n.encode(e, { ...args, input: over, inPlace: true });
    n.device.queue.submit([e.finish()]);
    out.inPlace = same(await over.read(), await want(4093));
    const src = n.kernelSource({ hidden: 128, rotaryDim: 64, headSize: 128, rotaryStyle: "interleaved", positions: false, rows: 4 });
    out.source = { table: src.bindings.find((b) => b.binding === 8)?.name, angle: src.code.includes("fn rotary_cos_sin"), fields: src.params.fields.map((f) => f.name).slice(5) };
    return out;
  });
  assert.deepEqual(gpu, { encode: [true, true], bind: true, inPlace: true, source: { table: "rotary", angle: true, fields: ["rotary_start", "rotary_heads", "rotary_scaling", "rotary_pass"] } });
});

test("a gamma a head (Cohere's QK-norm): run, runWithSum, tensors, in place, f16 output, encode and bind meet the f64 reference on both backends; kernelSource describes it; a wrong length is named", async () => {
  const r = await inPage(async () => {
    const { pkg, seeded, ref } = window.lib;
    const out = {};
    const [tokens, heads, hidden] = [3, 4, 16];
    const a = seeded.caseArgs({ rows: tokens * heads, hidden, bias: false, beta: false, seed: 12 });
    // Each head's weight its own: a kernel that read one gamma for all would fail the reference.
    const gamma = Float32Array.from({ length: heads * hidden }, (_, i) => 0.5 + ((i * 37) % 23) / 11);
    const args = { input: a.input, gamma, hidden, kind: "layer", eps: 1e-5, positions: new Int32Array([7, 8, 4093]), invFreq: Float32Array.from({ length: 8 }, (_, k) => Math.fround(5e5 ** (-k / 8))), rotaryStyle: "interleaved" };
    const same = (x, y) => x.length === y.length && x.every((v, i) => Object.is(v, y[i]));
    for (const backend of ["cpu", "webgpu"]) {
      const n = await pkg.FusedRmsNorm.create({ backend });
      const got = {};
      const y = await n.run(args);
      got.run = ref.compare(args, y).problems;
      got.withSum = same((await n.runWithSum(args)).output, y);
      got.f16 = ref.compare(args, await n.run({ ...args, outputDtype: "f16" }), { tol: 1e-3 }).problems;
      const position = { ...args, positions: undefined, position: 7, heads };
      got.position = ref.compare(position, await n.run(position)).problems;
      const over = n.upload(a.input);
      await n.run({ ...args, input: over, gamma: n.upload(gamma), inPlace: true });
      got.inPlace = same(await over.read(), y);
      if (backend === "webgpu") {
        const output = n.upload(new Float32Array(a.input.length));
        const tensors = { ...args, input: n.upload(a.input), gamma: n.upload(gamma) };
        const e = n.device.createCommandEncoder();
        n.encode(e, { ...tensors, output });
        n.device.queue.submit([e.finish()]);
        got.encode = same(await output.read(), y);
        const boundOutput = n.upload(new Float32Array(a.input.length));
        const bound = n.bind({ ...tensors, output: boundOutput });
        await bound.run();
        got.bind = same(await boundOutput.read(), y);
        bound.free();
        const src = n.kernelSource({ hidden, rotaryDim: hidden, rotaryStyle: "interleaved", kind: "layer", residual: false, gammaHeads: true, rows: tokens * heads });
        got.source = src.code.includes("const GAMMA_HEADS: bool = true;");
      }
      try {
        await n.run({ ...args, gamma: gamma.subarray(0, 3 * hidden) });
        got.wrongLength = "resolved";
      } catch (e) {
        got.wrongLength = `${e.name}: ${e.message}`;
      }
      out[backend] = got;
    }
    const n = await pkg.FusedRmsNorm.create();
    for (const [what, kernel] of [["alone", { hidden, gammaHeads: true }], ["noNorm", { hidden, kind: "none", rotaryDim: hidden, gammaHeads: true }]]) {
      try {
        n.kernelSource(kernel);
        out[what] = "returned";
      } catch (e) {
        out[what] = `${e.name}: ${e.message}`;
      }
    }
    return out;
  });
  for (const backend of ["cpu", "webgpu"]) {
    const got = r[backend];
    for (const k of ["run", "f16", "position"]) assert.deepEqual(got[k], [], `${backend} ${k}`);
    assert.equal(got.withSum, true, `${backend}: runWithSum's output is run's`);
    assert.equal(got.inPlace, true, `${backend}: in place over tensors is the arrays' result`);
    assert.equal(got.wrongLength, "ShapeError: gamma: expected length 16 (hidden) or 64 (a gamma a head; in a GPUBuffer, with gammaHeads: true), got 48");
  }
  assert.equal(r.webgpu.encode, true, "encode into the app's encoder is run's result");
  assert.equal(r.webgpu.bind, true, "a bound call's run is run's result");
  assert.equal(r.webgpu.source, true, "kernelSource's WGSL reads a gamma a head");
  assert.equal(r.alone, "TypeError: gammaHeads: expected false or undefined without rotaryDim (a gamma a head is a rotary stage's, where rows are heads)");
  assert.match(r.noNorm, /^TypeError: gammaHeads: expected false or undefined \(kind "none" normalizes nothing/);
});

test("gammaHeads says what a gamma holds: a GPUBuffer's weights a head through run, encode and bind; arrays and tensors on both backends as their length says; a contradiction, a non-boolean, no rotary stage and no gamma are named", async () => {
  const r = await inPage(async () => {
    const { pkg, seeded, ref } = window.lib;
    const { bufferOf } = await import("/lib/app-gpu.js");
    const out = {};
    const [tokens, heads, hidden] = [3, 4, 16];
    const a = seeded.caseArgs({ rows: tokens * heads, hidden, bias: false, beta: false, seed: 13 });
    const gamma = Float32Array.from({ length: heads * hidden }, (_, i) => 0.5 + ((i * 29) % 19) / 9);
    const args = { input: a.input, gamma, hidden, eps: 1e-5, positions: new Int32Array([3, 4, 70000]), invFreq: Float32Array.from({ length: 8 }, (_, k) => Math.fround(1e4 ** (-k / 8))), gammaHeads: true };
    const message = async (p) => p.then(() => "resolved", (e) => `${e.name}: ${e.message}`);
    for (const backend of ["cpu", "webgpu"]) {
      const n = await pkg.FusedRmsNorm.create({ backend });
      const got = {};
      got.arrays = ref.compare(args, await n.run(args)).problems;
      const over = n.upload(a.input);
      await n.run({ ...args, input: over, gamma: n.upload(gamma), inPlace: true });
      got.tensors = ref.compare(args, await over.read()).problems;
      got.contradicted = await message(n.run({ ...args, gammaHeads: false }));
      got.short = await message(n.run({ ...args, gamma: gamma.subarray(0, hidden) }));
      got.notFlag = await message(n.run({ ...args, gammaHeads: 1 }));
      got.noStage = await message(n.run({ input: a.input, gamma: gamma.subarray(0, hidden), hidden, gammaHeads: true }));
      got.noGamma = await message(n.run({ ...args, gamma: undefined, kind: "none" }));
      // An object whose prototype is a tensor is not that tensor.
      got.inherited = await message(n.run({ ...args, input: Object.create(n.upload(a.input)) }));
      out[backend] = got;
    }
    const n = await pkg.FusedRmsNorm.create();
    const device = n.device;
    const COPY = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC;
    // A buffer larger than its weights, as engines round sizes up.
    const padded = new Float32Array(heads * hidden + 12);
    padded.set(gamma);
    const buffers = { ...args, input: bufferOf(device, a.input, COPY), gamma: bufferOf(device, padded, COPY) };
    out.run = ref.compare(args, await n.run(buffers)).problems;
    // Without gammaHeads a buffer is one gamma for every head: its first head's weights.
    const first = { ...args, gamma: Float32Array.from({ length: heads * hidden }, (_, i) => gamma[i % hidden]) };
    out.shared = ref.compare(first, await n.run({ ...buffers, gammaHeads: undefined })).problems;
    const output = n.upload(new Float32Array(a.input.length));
    const e = device.createCommandEncoder();
    n.encode(e, { ...buffers, output });
    device.queue.submit([e.finish()]);
    out.encode = ref.compare(args, await output.read()).problems;
    const boundOutput = n.upload(new Float32Array(a.input.length));
    const bound = n.bind({ ...buffers, output: boundOutput });
    await bound.run();
    out.bind = ref.compare(args, await boundOutput.read()).problems;
    bound.free();
    out.shortBuffer = await message(n.run({ ...buffers, gamma: bufferOf(device, gamma.subarray(0, 2 * hidden), COPY) }));
    out.smallUnsaid = await message(n.run({ ...buffers, gammaHeads: undefined, gamma: bufferOf(device, gamma.subarray(0, hidden / 2), COPY) }));
    // The same refusals from encode (thrown, nothing recorded) and a timing call; the instance works after.
    try {
      n.encode(device.createCommandEncoder(), { ...buffers, output, gamma: bufferOf(device, gamma.subarray(0, 2 * hidden), COPY) });
      out.encodeBad = "returned";
    } catch (e) {
      out.encodeBad = `${e.name}: ${e.message}`;
    }
    out.timedBad = await message(n.timeDispatches({ ...args, gamma: gamma.subarray(0, hidden) }, 2));
    out.after = ref.compare(args, await n.run(buffers)).problems;
    return out;
  });
  for (const backend of ["cpu", "webgpu"]) {
    const got = r[backend];
    assert.deepEqual(got.arrays, [], `${backend}: arrays`);
    assert.deepEqual(got.tensors, [], `${backend}: tensors in place`);
    assert.equal(got.contradicted, "ShapeError: gamma: expected length 16 (hidden, with gammaHeads false), got 64");
    assert.equal(got.short, "ShapeError: gamma: expected length 64 (heads × hidden, with gammaHeads), got 16");
    assert.equal(got.notFlag, "TypeError: gammaHeads: expected a boolean or undefined, got the number 1");
    assert.equal(got.noStage, "TypeError: positions: missing (gammaHeads describes a rotary stage: give positions or position)");
    assert.equal(got.noGamma, "TypeError: gammaHeads: expected false or undefined on a call without gamma");
    assert.match(got.inherited, /^TypeError: input: expected /);
  }
  for (const k of ["run", "shared", "encode", "bind"]) assert.deepEqual(r[k], [], k);
  assert.equal(r.shortBuffer, "ShapeError: gamma: expected length 64 (heads × hidden, with gammaHeads), got 32");
  assert.equal(r.smallUnsaid, "ShapeError: gamma: expected length 16 (hidden) or 64 (a gamma a head; in a GPUBuffer, with gammaHeads: true), got 8");
  assert.equal(r.encodeBad, "ShapeError: gamma: expected length 64 (heads × hidden, with gammaHeads), got 32");
  assert.equal(r.timedBad, "ShapeError: gamma: expected length 64 (heads × hidden, with gammaHeads), got 16");
  assert.deepEqual(r.after, [], "the instance works after the refusals");
});
