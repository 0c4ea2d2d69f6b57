// A Qwen3-style decoder stack's shapes and weights: seeded ones (the page, the suite's f64
// check) or those a fixture of Hugging Face transformers' Qwen3DecoderLayer saved. The
// layouts are torch's: a Linear's weight `[out, in]`.
import { filled, rng } from "../lib/seeded.js";

/** The page's default: hidden 1024, 16 q heads and 8 kv heads of 64, MLP 3072, 8 layers. */
export const PAGE_CONFIG = { hidden: 1024, qHeads: 16, kvHeads: 8, headDim: 64, inter: 3072, layers: 8, eps: 1e-6, theta: 1e6 };

/** Qwen3's inverse frequencies as its rotary module computes them, in f32: 1 / θ^(2k / d). */
export function qwenInvFreq({ headDim, theta }) {
  return Float32Array.from({ length: headDim / 2 }, (_, k) => 1 / Math.fround(theta ** Math.fround((2 * k) / headDim)));
}

/**
 * One layer's weights: `qkv` the q, k and v projections stacked (`[(qHeads + 2·kvHeads)·d,
 * hidden]`, one matmul makes a packed qkv row), `gateUp` the gate and up projections stacked.
 */
function seededLayer(cfg, next) {
  const { hidden: h, qHeads, kvHeads, headDim: d, inter } = cfg;
  const linear = (out, inp) => filled(out * inp, next, -1 / Math.sqrt(inp), 1 / Math.sqrt(inp));
  const gamma = (n) => filled(n, next, 0.5, 1.5);
  return {
    inNorm: gamma(h),
    qkv: linear((qHeads + 2 * kvHeads) * d, h),
    qNorm: gamma(d),
    kNorm: gamma(d),
    o: linear(h, qHeads * d),
    postNorm: gamma(h),
    gateUp: linear(2 * inter, h),
    down: linear(h, inter),
  };
}

/**
 * Seeded weights for `cfg`, the final norm's included, and its inverse frequencies. `lazy`:
 * the layers as a generator, each made as it is taken (a large stack's need not all be held).
 */
export function seededWeights(cfg, seed = 7, { lazy = false } = {}) {
  const next = rng(seed);
  const finalNorm = filled(cfg.hidden, rng(seed + 1), 0.5, 1.5);
  function* made() {
    for (let l = 0; l < cfg.layers; l++) yield seededLayer(cfg, next);
  }
  return { layers: lazy ? made() : [...made()], finalNorm, invFreq: qwenInvFreq(cfg) };
}

/** `tokens` rows of embeddings, seeded. */
export function seededEmbeddings(cfg, tokens, seed) {
  return filled(tokens * cfg.hidden, rng(seed), -1, 1);
}

/**
 * A fixture's weights (tests/fixtures/capture_decoder.py: transformers' names, torch's
 * layouts, plain arrays) in this stack's: q, k and v stacked, gate and up stacked.
 */
export function fromTransformers(w) {
  const f = (...parts) => Float32Array.from(parts.flat());
  const layers = w.layers.map((l) => ({
    inNorm: f(l.input_layernorm),
    qkv: f(l.q_proj, l.k_proj, l.v_proj),
    qNorm: f(l.q_norm),
    kNorm: f(l.k_norm),
    o: f(l.o_proj),
    postNorm: f(l.post_attention_layernorm),
    gateUp: f(l.gate_proj, l.up_proj),
    down: f(l.down_proj),
  }));
  return { layers, finalNorm: f(w.norm), invFreq: f(w.inv_freq) };
}
