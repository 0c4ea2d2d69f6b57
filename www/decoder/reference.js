// The decoder stack in f64, independent of the package and of the engine's WGSL: Qwen3's
// layer as transformers' Qwen3DecoderLayer computes it, over a whole sequence at once (causal
// attention makes each token's output the same as a prefill then decode steps give it).
//   x ← x + o_proj(attn(rope(q_norm(q)), rope(k_norm(k)), v)),  q, k, v = proj(N(x))
//   x ← x + down(silu(gate(N(x))) · up(N(x)))
// and after the last layer the model's final norm, N(x). N is RMSNorm; rope is NeoX's, the
// angle f32(f32(p) · invFreq[k]) as the models form it, its cos and sin in f64.

/** `[rows × n]` = `a [rows × k]` · `wᵀ`, w `[n × k]`. */
function linear(a, w, rows, k, n) {
  const y = new Float64Array(rows * n);
  for (let r = 0; r < rows; r++) {
    for (let j = 0; j < n; j++) {
      let s = 0;
      for (let i = 0; i < k; i++) s += a[r * k + i] * w[j * k + i];
      y[r * n + j] = s;
    }
  }
  return y;
}

/** RMSNorm of each `width` values of `x`, into a new array. */
function rmsNorm(x, gamma, width, eps) {
  const y = new Float64Array(x.length);
  for (let at = 0; at < x.length; at += width) {
    let ss = 0;
    for (let i = 0; i < width; i++) ss += x[at + i] ** 2;
    const inv = 1 / Math.sqrt(ss / width + eps);
    for (let i = 0; i < width; i++) y[at + i] = x[at + i] * inv * gamma[i];
  }
  return y;
}

/** NeoX's rotation of each head of `d` (at `at`) by position `p`. */
function rope(x, at, d, p, invFreq) {
  for (let k = 0; k < d / 2; k++) {
    const angle = Math.fround(Math.fround(p) * invFreq[k]);
    const c = Math.cos(angle), s = Math.sin(angle);
    const a = x[at + k], b = x[at + k + d / 2];
    x[at + k] = a * c - b * s;
    x[at + k + d / 2] = b * c + a * s;
  }
}

/** One layer's attention block's output (before o_proj), `tokens` at positions 0…. */
function attention(cfg, w, normed, tokens, invFreq) {
  const { hidden: h, qHeads, kvHeads, headDim: d, eps } = cfg;
  const width = (qHeads + 2 * kvHeads) * d;
  const qkv = linear(normed, w.qkv, tokens, h, width);
  for (let t = 0; t < tokens; t++) {
    for (let head = 0; head < qHeads + kvHeads; head++) {
      const at = t * width + head * d;
      const g = head < qHeads ? w.qNorm : w.kNorm;
      qkv.set(rmsNorm(qkv.subarray(at, at + d), g, d, eps), at);
      rope(qkv, at, d, t, invFreq);
    }
  }
  const out = new Float64Array(tokens * qHeads * d);
  const group = qHeads / kvHeads;
  for (let t = 0; t < tokens; t++) {
    for (let head = 0; head < qHeads; head++) {
      const q = t * width + head * d, kvh = Math.floor(head / group);
      const scores = [];
      for (let j = 0; j <= t; j++) {
        let s = 0;
        for (let i = 0; i < d; i++) s += qkv[q + i] * qkv[j * width + (qHeads + kvh) * d + i];
        scores.push(s / Math.sqrt(d));
      }
      const top = Math.max(...scores);
      const e = scores.map((s) => Math.exp(s - top));
      const sum = e.reduce((a, b) => a + b, 0);
      for (let j = 0; j <= t; j++) {
        const v = j * width + (qHeads + kvHeads + kvh) * d;
        for (let i = 0; i < d; i++) out[(t * qHeads + head) * d + i] += (e[j] / sum) * qkv[v + i];
      }
    }
  }
  return out;
}

/**
 * The stack over `tokens` embeddings `x` (Float32Array, tokens × hidden): `{ layers: [the
 * stream after each layer], final: the final norm of the last }`, each a Float64Array.
 */
export function referenceStack(cfg, weights, x, tokens) {
  const { hidden: h, qHeads, headDim: d, inter, eps } = cfg;
  let stream = Float64Array.from(x);
  const layers = [];
  for (const w of weights.layers) {
    const attn = attention(cfg, w, rmsNorm(stream, w.inNorm, h, eps), tokens, weights.invFreq);
    const o = linear(attn, w.o, tokens, qHeads * d, h);
    stream = stream.map((v, i) => v + o[i]);
    const gu = linear(rmsNorm(stream, w.postNorm, h, eps), w.gateUp, tokens, h, 2 * inter);
    const act = new Float64Array(tokens * inter);
    for (let t = 0; t < tokens; t++) {
      for (let i = 0; i < inter; i++) {
        const g = gu[t * 2 * inter + i];
        act[t * inter + i] = (g / (1 + Math.exp(-g))) * gu[t * 2 * inter + inter + i];
      }
    }
    const m = linear(act, w.down, tokens, inter, h);
    stream = stream.map((v, i) => v + m[i]);
    layers.push(stream);
  }
  return { layers, final: rmsNorm(stream, weights.finalNorm, h, eps) };
}
