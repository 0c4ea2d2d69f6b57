// The package inside a forward pass: www/decoder/'s Qwen3-style stack (the engine's own WGSL
// for the projections, the KV cache, the attention and SwiGLU; the package for every norm and
// the rotation, bound once per shape) in headless Chromium on WebGPU (SwiftShader), a prefill
// then decode steps, each step one command encoder: the stream after the last layer and its
// final norm against the f64 reference of the whole stack (www/decoder/reference.js), and
// against what transformers' own Qwen3 model computed with the same weights
// (tests/fixtures/decoder/qwen3.json, by tests/fixtures/capture_decoder.py); and the page,
// www/decoder.html, as `npm run demo` serves it, run through its controls.
//
//   bash scripts/build.sh && node --test --test-reporter=spec tests/e2e/browsers/decoder-layer.test.mjs
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";

import { serve } from "../../../scripts/serve.mjs";
import { launch, watchedPage } from "../support/chromium.mjs";
import { pageSuite, test } from "../support/page.mjs";
import { ROOT } from "../support/repo.mjs";

const { inPage } = pageSuite("rmsnorm-decoder-", { mounts: [["/decoder", join(ROOT, "www/decoder")]] });

// Within this of its row's largest value (docs/numerics.md, "A decoder stack").
const TOL = 1e-5;
// The plain passes turn by WGSL's built-in cos and sin, which WGSL specifies only to 2⁻¹¹
// absolute: a turned value may be off by about twice that of its head's scale.
const PLAIN_TOL = 1e-3;

/**
 * In the page: the stack of `cfg` with `weights` (weights.js's layout, or a fixture's to be
 * laid out so) over `embeddings`, a prompt then single tokens (`steps`: the tokens of each);
 * each step's worst error of the stream and the final norm against `want` (`{ layers, final }`
 * of the whole sequence: reference.js's, or null for it to be computed there; or the fixture's
 * per step).
 */
async function stackInPage({ cfg, weights, embeddings, steps, fixture, way = "package" }) {
  return inPage(async ({ cfg, weights, embeddings, steps, fixture, way }) => {
    const { pkg } = window.lib;
    const { createStack } = await import("/decoder/layer.js");
    const { seededWeights, seededEmbeddings, fromTransformers } = await import("/decoder/weights.js");
    const { referenceStack } = await import("/decoder/reference.js");
    const { runSteps, worstOff, perStep } = await import("/decoder/steps.js");
    const w = weights ? fromTransformers(weights) : seededWeights(cfg, 7);
    const tokens = steps.reduce((a, b) => a + b, 0);
    const x = embeddings ? Float32Array.from(embeddings) : seededEmbeddings(cfg, tokens, 3);
    const h = cfg.hidden;
    let want = fixture;
    if (!want) {
      const ref = referenceStack(cfg, w, x, tokens);
      const [stream, final] = [ref.layers.at(-1), ref.final].map((all) => perStep(all, steps, h));
      want = steps.map((_, s) => ({ stream: stream[s], final: final[s] }));
    }
    const norm = await pkg.FusedRmsNorm.create({ backend: "webgpu" });
    const stack = createStack(norm, cfg, w, { maxTokens: 16 });
    const got = await runSteps(stack, x, steps, h, way);
    stack.free();
    return got.map((g, s) => ({ tokens: g.tokens, dispatches: g.dispatches, norms: g.norms, stream: worstOff(g.stream, want[s].stream, h), final: worstOff(g.final, want[s].final, h) }));
  }, { cfg, weights, embeddings, steps, fixture, way });
}

function assertSteps(t, r, steps, layers, tol, way = "package") {
  t.diagnostic(JSON.stringify(r));
  assert.deepEqual(r.map((s) => s.tokens), steps);
  // Per layer: 4 matmuls, the cache, the attention and SwiGLU; the normalization steps, 3 of
  // the package's or 6 plain passes; layer 0's input norm; the counter.
  const norms = (way === "package" ? 3 : 6) * layers + 1;
  for (const s of r) {
    assert.equal(s.norms, norms, `${s.tokens} tokens: the normalization steps' dispatches`);
    assert.equal(s.dispatches, layers * 7 + norms + 1, `${s.tokens} tokens: dispatches`);
    assert.ok(s.stream <= tol, `${s.tokens} tokens: the stream ${s.stream} of its row's largest away`);
    assert.ok(s.final <= tol, `${s.tokens} tokens: the final norm ${s.final} of its row's largest away`);
  }
}

test("a decoder stack's prefill and decode steps, one encoder a step, meet the f64 reference", async (t) => {
  const cfg = { hidden: 64, qHeads: 4, kvHeads: 2, headDim: 16, inter: 128, layers: 2, eps: 1e-6, theta: 1e6 };
  const steps = [8, 1, 1, 1];
  assertSteps(t, await stackInPage({ cfg, steps }), steps, cfg.layers, TOL);
});

test("the same stack with the engine's own add, norm and rotary passes instead of the package meets the f64 reference", async (t) => {
  const cfg = { hidden: 64, qHeads: 4, kvHeads: 2, headDim: 16, inter: 128, layers: 2, eps: 1e-6, theta: 1e6 };
  const steps = [8, 1, 1, 1];
  assertSteps(t, await stackInPage({ cfg, steps, way: "plain" }), steps, cfg.layers, PLAIN_TOL, "plain");
});

test("the same stack with transformers' Qwen3 weights meets what transformers computed, prefill and decode", async (t) => {
  const f = JSON.parse(readFileSync(join(ROOT, "tests/fixtures/decoder/qwen3.json"), "utf8"));
  const steps = f.steps.map((s) => s.tokens);
  const fixture = f.steps.map(({ stream, final }) => ({ stream, final }));
  const r = await stackInPage({ cfg: f.config, weights: f.weights, embeddings: f.embeddings, steps, fixture });
  assertSteps(t, r, steps, f.config.layers, TOL);
});

test("the decoder page runs the small stack, each step within the f64 reference, with no console error", async () => {
  const server = await serve({ port: 0, mounts: [["/", join(ROOT, "www")], ["/pkg", join(ROOT, "pkg")]] });
  const browser = await launch();
  const problems = [];
  try {
    const page = await watchedPage(await browser.newContext(), problems);
    await page.goto(`${server.url}decoder.html`);
    await page.waitForSelector('#status[data-state="ready"]', { timeout: 20_000 });
    // SwiftShader is a fallback adapter: the page chose the small shape, checked against f64.
    assert.equal(await page.inputValue("#shape"), "small");
    await page.fill("#prompt", "12");
    await page.fill("#steps", "2");
    await page.click("#run");
    await page.waitForSelector('#status[data-state="done"], #status[data-state="error"]', { timeout: 120_000 });
    assert.equal(await page.getAttribute("#status", "data-state"), "done", await page.textContent("#status"));
    const rows = await page.$$eval("#steps-table tbody tr", (trs) => trs.map((tr) => [...tr.cells].map((c) => c.textContent)));
    assert.deepEqual(rows.map((r) => r.slice(0, 4)), [["prefill", "12", "42", "13"], ["decode 1", "1", "42", "13"], ["decode 2", "1", "42", "13"]]);
    for (const r of rows) assert.match(r[9], /^\d\.\de-\d+ ok$/, `${r[0]}: ${r[9]}`);
    for (const r of rows.slice(0, 2)) assert.ok([5, 6, 8].every((c) => Number(r[c]) > 0), `${r[0]}: timed`);
    assert.deepEqual(problems, []);
  } finally {
    await browser.close();
    await server.close();
  }
});
