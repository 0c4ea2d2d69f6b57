// The package inside a forward pass: www/decoder/'s Qwen3-style stack (the engine's own WGSL
// for the projections, the KV cache, the attention and SwiGLU; the package for every norm and
// the rotation, bound once per shape) in headless Chromium on WebGPU (SwiftShader), a prefill
// then decode steps, each step one command encoder: the stream after the last layer and its
// final norm against the f64 reference of the whole stack (www/decoder/reference.js).
//
//   bash scripts/build.sh && node --test --test-reporter=spec tests/e2e/browsers/decoder-layer.test.mjs
import assert from "node:assert/strict";
import { join } from "node:path";

import { pageSuite, test } from "../support/page.mjs";
import { ROOT } from "../support/repo.mjs";

const { inPage } = pageSuite("rmsnorm-decoder-", { mounts: [["/decoder", join(ROOT, "www/decoder")]] });

// Within this of its row's largest value (docs/numerics.md, "A decoder stack").
const TOL = 1e-5;

test("a decoder stack's prefill and decode steps, one encoder a step, meet the f64 reference", async (t) => {
  const r = await inPage(async () => {
    const { pkg } = window.lib;
    const { createStack } = await import("/decoder/layer.js");
    const { seededWeights, seededEmbeddings } = await import("/decoder/weights.js");
    const { referenceStack } = await import("/decoder/reference.js");
    const cfg = { hidden: 64, qHeads: 4, kvHeads: 2, headDim: 16, inter: 128, layers: 2, eps: 1e-6, theta: 1e6 };
    const weights = seededWeights(cfg, 7);
    const [prompt, steps] = [8, 3];
    const embeddings = seededEmbeddings(cfg, prompt + steps, 3);
    const want = referenceStack(cfg, weights, embeddings, prompt + steps);
    const norm = await pkg.FusedRmsNorm.create({ backend: "webgpu" });
    const stack = createStack(norm, cfg, weights, { maxTokens: 16 });
    const h = cfg.hidden;
    // The worst |got − want| of each row over the row's largest |want|.
    const off = (got, ref, first) => {
      let worst = 0;
      for (let t = 0; t < got.length / h; t++) {
        const row = ref.subarray((first + t) * h, (first + t + 1) * h);
        const scale = Math.max(...row.map(Math.abs));
        for (let i = 0; i < h; i++) worst = Math.max(worst, Math.abs(got[t * h + i] - row[i]) / scale);
      }
      return worst;
    };
    const out = [];
    let first = 0;
    for (const tokens of [prompt, ...Array(steps).fill(1)]) {
      stack.write(embeddings.subarray(first * h, (first + tokens) * h));
      const encoder = norm.device.createCommandEncoder();
      const dispatches = stack.step(encoder, tokens);
      norm.device.queue.submit([encoder.finish()]);
      const got = await stack.read(tokens);
      out.push({ tokens, dispatches, stream: off(got.stream, want.layers.at(-1), first), final: off(got.final, want.final, first) });
      first += tokens;
    }
    stack.free();
    return out;
  });
  assert.equal(r.length, 4);
  t.diagnostic(JSON.stringify(r));
  for (const s of r) {
    // Per layer: 4 matmuls, the cache, the attention, SwiGLU and 3 of the package's; layer 0's
    // input norm; the counter.
    assert.equal(s.dispatches, 2 * 10 + 2, `${s.tokens} tokens: dispatches`);
    assert.ok(s.stream <= TOL, `${s.tokens} tokens: the stream ${s.stream} of its row's largest from the reference`);
    assert.ok(s.final <= TOL, `${s.tokens} tokens: the final norm ${s.final} of its row's largest from the reference`);
  }
});
