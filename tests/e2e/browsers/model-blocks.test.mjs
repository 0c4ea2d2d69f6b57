// The residual glue of real models, as Hugging Face transformers computes it
// (tests/fixtures/blocks/: Phi's and Cohere's parallel blocks, recorded from the models' own
// forward), through the package on both backends in headless Chromium: the layer's output
// `x + attn + mlp` (the sum) and the next layer's LayerNorm of it (the output), in one call
// with `input2`, through runWithSum on arrays and encode on tensors; each result against the
// model's and against the f64 reference.
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
    x: flat(f.x), attn: flat(f.attn_out), mlp: flat(f.mlp_out), next: flat(f.x_next), normed: flat(f.norm_out),
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
