// The residual glue of real models, as Hugging Face transformers computes it
// (tests/fixtures/blocks/, recorded from the models' own forward), through the package on
// both backends in headless Chromium:
// - Phi's and Cohere's parallel blocks: the layer's output `x + attn + mlp` (the sum) and the
//   next layer's LayerNorm of it (the output), in one call with `input2`, through runWithSum
//   on arrays and encode on tensors; each result against the model's and the f64 reference;
// - OLMo 2's post-norm alone, `h = x + RMSNorm(attn)·w` with no norm of `h`: a call without
//   gamma, through every entry point (arrays, the caller's array, new tensors, in place,
//   encode, bind, f16 data, the timing calls), the sandwich's sum bit for bit and the
//   model's `h`; and the named errors of what such a call cannot have.
//
//   bash scripts/build.sh && node --test --test-reporter=spec tests/e2e/browsers/model-blocks.test.mjs
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";

import { pageSuite, test } from "../support/page.mjs";
import { ROOT } from "../support/repo.mjs";

const { inPage } = pageSuite("rmsnorm-model-blocks-");

/** A block fixture: its tensors flat, as f32 values. */
async function fixture(name) {
  const f = JSON.parse(await readFile(`${ROOT}/tests/fixtures/blocks/${name}.json`, "utf8"));
  const flat = (rows) => rows.flat().map(Math.fround);
  return {
    x: flat(f.x), attn: flat(f.attn_out), mlp: flat(f.mlp_out ?? []), next: flat(f.x_next ?? []), normed: flat(f.norm_out ?? []), h: flat(f.h ?? []),
    weight: f.norm.weight.map(Math.fround), bias: f.norm.bias?.map(Math.fround), eps: f.norm.eps, kind: f.norm.kind, order: f.sum_order,
  };
}

for (const backend of ["webgpu", "cpu"])
  for (const model of ["phi", "cohere"])
    test(`${model}'s parallel block in one call with input2 is the model's sum and next LayerNorm (${backend})`, async (t) => {
      const f = await fixture(model);
      const r = await inPage(async ([f, backend]) => {
        const { pkg, ref } = window.lib;
        const n = await pkg.FusedRmsNorm.create({ backend });
        const F = (a) => new Float32Array(a);
        const hidden = f.weight.length;
        const args = { input: F(f.attn), input2: F(f.mlp), residual: F(f.x), gamma: F(f.weight), hidden, eps: f.eps, kind: f.kind };
        if (f.bias) args.beta = F(f.bias);
        const results = { arrays: await n.runWithSum(args) };
        if (backend === "webgpu") {
          const t = Object.fromEntries(Object.entries(args).map(([k, v]) => [k, ArrayBuffer.isView(v) ? n.upload(v) : v]));
          const output = n.upload(new Float32Array(f.x.length)), sum = n.upload(new Float32Array(f.x.length));
          const e = n.device.createCommandEncoder();
          n.encode(e, { ...t, output, sum });
          n.device.queue.submit([e.finish()]);
          results["encode on tensors"] = { output: await output.read(), sum: await sum.read() };
        }
        const report = {};
        for (const [entry, { output, sum }] of Object.entries(results)) {
          // The sum against the model's: bit for bit where the model adds in the kernel's order
          // ((attn + mlp) + x); else each order's two roundings, each at most half an ulp of a
          // partial sum no larger than the terms', keep them within 2^-22 of the terms.
          let sumOff = 0, normOff = 0;
          for (let i = 0; i < sum.length; i++) {
            const terms = Math.abs(f.x[i]) + Math.abs(f.attn[i]) + Math.abs(f.mlp[i]);
            sumOff = Math.max(sumOff, Math.abs(sum[i] - f.next[i]) / (terms * 2 ** -23));
          }
          // The output against the model's LayerNorm, relative to its row's largest magnitude.
          for (let r = 0; r * hidden < output.length; r++) {
            const row = f.normed.slice(r * hidden, (r + 1) * hidden);
            const scale = Math.max(...row.map(Math.abs));
            for (let i = 0; i < hidden; i++) normOff = Math.max(normOff, Math.abs(output[r * hidden + i] - row[i]) / scale);
          }
          const exact = sum.every((s, i) => Object.is(s, f.next[i]));
          const rep = ref.compare(args, output, { sum });
          report[entry] = { exact, sumUlps: sumOff, normOff, reference: rep.ok ? "ok" : rep.problems.join("; ") };
        }
        return report;
      }, [f, backend], { query: `?backend=${backend}` });
      for (const [entry, got] of Object.entries(r)) {
        assert.equal(got.reference, "ok", `${entry}: the f64 reference`);
        if (f.order === "(attn_out + mlp_out) + x") assert.ok(got.exact, `${entry}: the sum is the model's bit for bit`);
        assert.ok(got.sumUlps <= 2, `${entry}: the sum is ${got.sumUlps} f32 roundings of its terms from the model's`);
        assert.ok(got.normOff <= 1e-5, `${entry}: the next LayerNorm is ${got.normOff} of the row's largest value from the model's`);
        t.diagnostic(`${entry}: sum ${got.exact ? "bit for bit" : `within ${got.sumUlps.toFixed(2)} roundings`}, LayerNorm within ${got.normOff.toExponential(1)}`);
      }
      assert.equal(Object.keys(r).length, backend === "webgpu" ? 2 : 1);
    });

/** Runs every entry point of OLMo 2's post-norm alone in a page; returns each sum and the problems met. */
async function postNormAlone([f, backend]) {
  const { pkg, f16 } = window.lib;
  const n = await pkg.FusedRmsNorm.create({ backend });
  const F = (a) => new Float32Array(a);
  const hidden = f.weight.length, len = f.x.length;
  const args = { input: F(f.attn), residual: F(f.x), postGamma: F(f.weight), hidden, eps: f.eps };
  // The sandwich with some gamma: its sum is the post-norm's, checked against the reference
  // by the family's sweeps.
  const sandwich = (a) => n.runWithSum({ ...a, gamma: a.postGamma });
  const want = (await sandwich(args)).sum;
  const problems = [];
  const sums = {};
  const tensors = (a) => Object.fromEntries(Object.entries(a).map(([k, v]) => [k, ArrayBuffer.isView(v) ? n.upload(v) : v]));
  const r = await n.runWithSum(args);
  if (Object.keys(r).join() !== "sum") problems.push(`runWithSum resolved with ${Object.keys(r)}`);
  sums.arrays = r.sum;
  const mine = new Float32Array(len);
  const into = await n.runWithSum({ ...args, sum: mine });
  if (into.sum !== mine) problems.push("the caller's sum array was not the one resolved");
  sums["the caller's array"] = mine;
  const gpu = await n.runWithSum({ ...args, output: "gpu" });
  if (Object.keys(gpu).join() !== "sum") problems.push(`output "gpu" resolved with ${Object.keys(gpu)}`);
  sums["new tensors"] = await gpu.sum.read();
  const t = tensors(args);
  const none = await n.runWithSum({ ...t, inPlace: true });
  if (none !== undefined) problems.push("in place resolved with a value");
  sums["in place"] = await t.residual.read();
  const input = await t.input.read();
  if (!input.every((v, i) => Object.is(v, args.input[i]))) problems.push("in place wrote the input");
  const boundSum = n.upload(new Float32Array(len));
  const bound = n.bind({ ...tensors(args), sum: boundSum });
  if ((await bound.run()) !== undefined) problems.push("a bound run resolved with a value");
  sums["bind, run"] = await boundSum.read();
  if (backend === "webgpu") {
    const s = n.upload(new Float32Array(len));
    const e = n.device.createCommandEncoder();
    n.encode(e, { ...tensors(args), sum: s });
    n.device.queue.submit([e.finish()]);
    sums.encode = await s.read();
  }
  const { bits, host } = f16.argsToF16(args);
  const half = await n.runWithSum(bits);
  const halfWant = (await sandwich(bits)).sum;
  if (!half.sum.every((v, i) => v === halfWant[i])) problems.push("f16 data: the sum differs from the sandwich's");
  const ms = await n.timeDispatches(args, 2);
  if (!(Number.isFinite(ms) && ms >= 0)) problems.push(`timeDispatches: ${ms}`);
  for (const [entry, sum] of Object.entries(sums)) {
    if (!sum.every((v, i) => Object.is(v, want[i]))) problems.push(`${entry}: the sum differs from the sandwich's`);
  }
  // v = x + w with w formed in f32 here and in the model: within a few ulps of w's terms, as
  // src/reference.rs allows a post-norm's sum (1e-6 of |h| + 2|x| + 8|w|).
  let off = 0;
  for (let i = 0; i < len; i++) {
    const w = Math.abs(f.h[i] - f.x[i]);
    off = Math.max(off, Math.abs(r.sum[i] - f.h[i]) / (1e-6 * (Math.abs(f.h[i]) + 2 * Math.abs(f.x[i]) + 8 * w)));
  }
  if (host.input.length !== len) problems.push("f16: the widened halves");
  return { problems, entries: Object.keys(sums), off };
}

for (const backend of ["webgpu", "cpu"])
  test(`OLMo 2's post-norm alone: a call without gamma writes the sum only, the model's h, on every entry point (${backend})`, async (t) => {
    const f = await fixture("olmo2");
    const r = await inPage(async ([fn, a]) => eval(`(${fn})`)(a), [String(postNormAlone), [f, backend]], { query: `?backend=${backend}` });
    assert.deepEqual(r.problems, []);
    assert.equal(r.entries.length, backend === "webgpu" ? 6 : 5);
    assert.ok(r.off <= 1, `h is ${r.off} of the allowance from the model's`);
    t.diagnostic(`${r.entries.join(", ")}: the sandwich's sum bit for bit; the model's h within ${r.off.toFixed(2)} of the allowance`);
  });

for (const backend of ["webgpu", "cpu"])
  test(`a call without gamma is refused with a named error where it asks for more than a post-norm's sum, and the instance keeps working (${backend})`, async () => {
    const r = await inPage(async (backend) => {
      const { pkg } = window.lib;
      const n = await pkg.FusedRmsNorm.create({ backend });
      const a = { input: new Float32Array(8), residual: new Float32Array(8).fill(1), postGamma: new Float32Array(4).fill(1), hidden: 4 };
      const t = { ...a, input: n.upload(a.input), residual: n.upload(a.residual), postGamma: n.upload(a.postGamma) };
      const got = async (f) => { try { await f(); return "resolved"; } catch (e) { return `${e.name}: ${e.message}`; } };
      const out = {
        run: await got(() => n.run(a)),
        "no postGamma": await got(() => n.runWithSum({ ...a, postGamma: undefined })),
        beta: await got(() => n.runWithSum({ ...a, beta: new Float32Array(4) })),
        outputDtype: await got(() => n.runWithSum({ ...a, outputDtype: "f16" })),
        "an output array": await got(() => n.runWithSum({ ...a, output: new Float32Array(8) })),
        "in place without a residual": await got(() => n.runWithSum({ input: t.input, postGamma: t.postGamma, hidden: 4, inPlace: true })),
        "prepare without postGamma": await got(() => n.prepare({ hidden: 4, gamma: false, sum: true })),
        "prepare without a sum": await got(() => n.prepare({ hidden: 4, gamma: false, postGamma: true })),
      };
      if (backend === "webgpu") {
        out["encode with an output"] = await got(() => n.encode(n.device.createCommandEncoder(), { ...t, output: n.upload(new Float32Array(8)), sum: n.upload(new Float32Array(8)) }));
        out["encode without a sum"] = await got(() => n.encode(n.device.createCommandEncoder(), { ...t }));
      }
      const after = await n.runWithSum(a);
      return { out, after: Array.from(after.sum) };
    }, backend, { query: `?backend=${backend}` });
    const want = {
      run: "TypeError: gamma: missing (a call without gamma computes a post-norm's sum alone: runWithSum, encode or bind with a sum, or inPlace)",
      "no postGamma": "TypeError: gamma: expected a Float32Array (or Uint16Array/Float16Array for f16), a GpuTensor or a GPUBuffer, got undefined",
      beta: "TypeError: beta: expected undefined without gamma (a call without gamma computes a post-norm's sum alone)",
      outputDtype: "TypeError: outputDtype: expected undefined without gamma (the call computes the sum alone)",
      "an output array": "TypeError: output: expected undefined without gamma (the call computes a post-norm's sum alone), got a Float32Array",
      "in place without a residual": "TypeError: residual: missing (a call without gamma computes a post-norm's sum alone, in place over the residual)",
      "prepare without postGamma": "TypeError: gamma: missing (a call without gamma computes a post-norm's sum alone, of postGamma)",
      "prepare without a sum": "TypeError: gamma: missing (a call without gamma computes a post-norm's sum alone: runWithSum, encode or bind with a sum, or inPlace)",
    };
    if (backend === "webgpu") {
      want["encode with an output"] = "TypeError: output: expected undefined without gamma (the call computes a post-norm's sum alone), got a GpuTensor";
      want["encode without a sum"] = want.run;
    }
    assert.deepEqual(r.out, want);
    // x + N(0)·1 = x + 0: the instance still computes.
    assert.deepEqual(r.after, Array(8).fill(1));
  });
