// A Qwen3-style decoder stack on the package's device, as an engine records it: the engine's
// own kernels (kernels.js) for the projections, the KV cache, the attention and SwiGLU, and
// the package for every normalization step and the rotation, each bound once per shape
// (`norm.bind`) and recorded into the step's one command encoder. Per layer:
//
//   m ← N(x)              layer 0 (later layers fold it into the previous residual add)
//   qkv ← m · Wqkvᵀ       one matmul: a packed row of q, k and v heads a token
//   qkv ← rope(N(q)), rope(N(k)), v        the package, in place, v heads passed
//   caches[pos…] ← k, v;  attn ← attention(q, caches);  o ← attn · Woᵀ
//   x ← x + o;  o ← N(x)  the package, in place: the residual add and the post-attention norm
//   m ← down(silu(gate(o)) · up(o))
//   x ← x + m;  m ← N(x)  the package, in place: the next layer's input norm (or the final norm)
//
// The activations are the engine's own GPUBuffers; the norm weights are the package's tensors.
// The position of a step's first token is a counter on the GPU (`pos`), which the caches and
// the attention read, which the package's decode calls read as their positions, and which the
// step's last pass moves on: nothing of a decode step is written from the CPU but its token.
import { enginePipelines, matmulGrid } from "./kernels.js";
import { plainPasses } from "./plain.js";

/**
 * The stack for `cfg` (weights.js) with `weights`, caches for `maxTokens` positions, on
 * `norm`'s device. `step(encoder, tokens)` records a step; `write`, `read` and `seek` move its
 * data.
 */
export function createStack(norm, cfg, weights, { maxTokens }) {
  const s = allocate(norm, cfg, weights, maxTokens);
  const shapes = new Map();
  const starts = new Map();
  const { device, act } = s;
  return {
    device,
    /** Records a step of `tokens` into `encoder` (`recordStep`). */
    step(encoder, tokens, options) {
      if (!shapes.has(tokens)) shapes.set(tokens, stepCalls(s, tokens));
      return recordStep(s, shapes.get(tokens), encoder, options);
    },
    /** Writes `tokens` embeddings (Float32Array) as the step's stream. */
    write: (embeddings) => device.queue.writeBuffer(act.x, 0, embeddings),
    /** The stream after the last layer (`x`) and its final norm (`m`) of the last step's `tokens`. */
    read: async (tokens) => ({ stream: await readFloats(device, act.x, tokens * cfg.hidden), final: await readFloats(device, act.m, tokens * cfg.hidden) }),
    /** The next step's first position (0: the caches forgotten). */
    seek: (position) => device.queue.writeBuffer(act.pos, 0, new Int32Array([position, 0, 0, 0])),
    /** The same, recorded into `encoder` (a benchmark's steps from one position, back to back). */
    seekIn(encoder, position) {
      if (!starts.has(position)) starts.set(position, s.made(16, GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST, new Int32Array([position, 0, 0, 0])));
      encoder.copyBufferToBuffer(starts.get(position), 0, act.pos, 0, 16);
    },
    free() {
      for (const shape of shapes.values()) for (const l of shape.perLayer) for (const b of Object.values(l.package)) b?.free();
      for (const l of s.layers) for (const t of [l.inNorm, l.postNorm, l.qkNorm]) t.free();
      s.finalNorm.free();
    },
  };
}

/**
 * The stack's buffers on `norm`'s device: the activations (the engine's `GPUBuffer`s), each
 * layer's weights and caches, the norm weights as the package's tensors, and the pipelines.
 */
function allocate(norm, cfg, weights, maxTokens) {
  const device = norm.device;
  const { hidden: h, qHeads, kvHeads, headDim: d, inter } = cfg;
  const made = (size, usage, data) => {
    const b = device.createBuffer({ size, usage });
    if (data) device.queue.writeBuffer(b, 0, data);
    return b;
  };
  const storage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
  const buffer = (floats, data) => made(Math.max(16, floats * 4), storage, data);
  const uniform = (words) => made(16, GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST, new Uint32Array(words));
  const act = {
    x: buffer(maxTokens * h), m: buffer(maxTokens * h), qkv: buffer(maxTokens * (qHeads + 2 * kvHeads) * d),
    attn: buffer(maxTokens * qHeads * d), o: buffer(maxTokens * h),
    gu: buffer(maxTokens * 2 * inter), act: buffer(maxTokens * inter),
    pos: buffer(4, new Int32Array([0, 0, 0, 0])),
  };
  // Any iterable of layers: a generator lets a large stack's weights go once uploaded.
  const layers = Array.from(weights.layers, (w) => ({
    qkv: buffer(w.qkv.length, w.qkv), o: buffer(w.o.length, w.o),
    gateUp: buffer(w.gateUp.length, w.gateUp), down: buffer(w.down.length, w.down),
    kc: buffer(maxTokens * kvHeads * d), vc: buffer(maxTokens * kvHeads * d),
    inNorm: norm.upload(w.inNorm), postNorm: norm.upload(w.postNorm),
    // A gamma a head: q_norm's weight for each q head, k_norm's for each k head.
    qkNorm: norm.upload(headGammas(w, qHeads, kvHeads, d)),
  }));
  return {
    norm, cfg, device, made, uniform, act, layers,
    finalNorm: norm.upload(weights.finalNorm),
    invFreq: weights.invFreq,
    invFreqBuffer: buffer(weights.invFreq.length, weights.invFreq),
    engine: enginePipelines(device, d),
    plain: plainPasses(device),
  };
}

/** Everything a step of `tokens` tokens records, made at its first step: each layer's calls. */
function stepCalls(s, tokens) {
  const { norm, cfg, act, uniform, engine: k, plain } = s;
  const { hidden: h, qHeads, kvHeads, headDim: d, inter, eps } = cfg;
  const heads = qHeads + 2 * kvHeads, turned = qHeads + kvHeads, row = heads * d;
  const mm = (x, w, y, n, kk) => ({ group: k.matmul.bind(x, w, y, uniform([tokens, n, kk, 0])), grid: matmulGrid(tokens, n) });
  const rows = { hidden: h, eps, rows: tokens };
  // Prefill turns tokens from position 0; a decode step reads its position from the counter.
  const where = tokens > 1 ? { position: 0 } : { positions: act.pos };
  const perLayer = s.layers.map((l, i) => {
    const nextGamma = s.layers[i + 1]?.inNorm ?? s.finalNorm;
    return {
      // The normalization steps two ways, over the same buffers: the package's calls, and
      // the plain passes an engine without it records (plain.js).
      package: {
        // Layer 0's input norm into m; later layers' are the previous layer's residual add.
        inNorm: i === 0 ? norm.bind({ ...rows, input: act.x, gamma: l.inNorm, output: act.m }) : null,
        qk: norm.bind({ input: act.qkv, gamma: l.qkNorm, hidden: d, eps, rows: tokens * heads, heads, passHeads: kvHeads, invFreq: s.invFreq, inPlace: true, ...where }),
        post: norm.bind({ ...rows, input: act.o, residual: act.x, gamma: l.postNorm, inPlace: true }),
        // The residual add of the MLP's output, and the next layer's input norm or the final one.
        next: norm.bind({ ...rows, input: act.m, residual: act.x, gamma: nextGamma, inPlace: true }),
      },
      plain: {
        inNorm: i === 0 ? [plain.bindNorm({ src: act.x, out: act.m, gamma: l.inNorm.buffer, rows: tokens, width: h, eps })] : [],
        qk: [
          plain.bindNorm({ src: act.qkv, gamma: l.qkNorm.buffer, rows: tokens * heads, width: d, eps, heads, turned, headGamma: true }),
          plain.bindRope({ qkv: act.qkv, invFreq: s.invFreqBuffer, pos: act.pos, tokens, heads, turned, d }),
        ],
        post: [plain.bindAdd(act.x, act.o, tokens * h), plain.bindNorm({ src: act.x, out: act.o, gamma: l.postNorm.buffer, rows: tokens, width: h, eps })],
        next: [plain.bindAdd(act.x, act.m, tokens * h), plain.bindNorm({ src: act.x, out: act.m, gamma: nextGamma.buffer, rows: tokens, width: h, eps })],
      },
      qkv: mm(act.m, l.qkv, act.qkv, row, h),
      kv: { group: k.kvAppend.bind(act.qkv, l.kc, l.vc, act.pos, uniform([tokens, kvHeads * d, row, qHeads * d])), grid: [Math.ceil((tokens * kvHeads * d) / 64)] },
      attention: { group: k.attention.bind(act.qkv, l.kc, l.vc, act.pos, act.attn, attentionUniform(s.device, qHeads, kvHeads, row, d)), grid: [tokens * qHeads] },
      o: mm(act.attn, l.o, act.o, h, qHeads * d),
      gateUp: mm(act.o, l.gateUp, act.gu, 2 * inter, h),
      swiglu: { group: k.swiglu.bind(act.gu, act.act, uniform([tokens, inter, 0, 0])), grid: [Math.ceil((tokens * inter) / 64)] },
      down: mm(act.act, l.down, act.m, h, inter),
    };
  });
  return { perLayer, advance: { group: k.advance.bind(act.pos, uniform([tokens, 0, 0, 0])), grid: [1] } };
}

/**
 * Records a step (`stepCalls`' `shape`) into `encoder`, its normalization steps `way`:
 * `"package"` (the package's calls), `"plain"` (the engine's own add, norm and rotary passes),
 * or `"none"` (left out: the results wrong; for timing). Returns the dispatches recorded, all
 * and the normalization steps'.
 */
function recordStep(s, shape, encoder, { way = "package" } = {}) {
  const { engine: k, plain } = s;
  const count = { dispatches: 0, norms: 0 };
  const norms = (l, key) => {
    const calls = way === "package" ? [l.package[key]].filter(Boolean) : way === "plain" ? l.plain[key] : [];
    for (const c of calls) way === "package" ? c.encode(encoder) : plain.record(encoder, c);
    count.dispatches += calls.length;
    count.norms += calls.length;
  };
  const engine = ({ pipeline }, { group, grid: [x, y = 1] }) => {
    const pass = encoder.beginComputePass();
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, group);
    pass.dispatchWorkgroups(x, y);
    pass.end();
    count.dispatches++;
  };
  for (const l of shape.perLayer) {
    norms(l, "inNorm");
    engine(k.matmul, l.qkv);
    norms(l, "qk");
    engine(k.kvAppend, l.kv);
    engine(k.attention, l.attention);
    engine(k.matmul, l.o);
    norms(l, "post");
    engine(k.matmul, l.gateUp);
    engine(k.swiglu, l.swiglu);
    engine(k.matmul, l.down);
    norms(l, "next");
  }
  engine(k.advance, shape.advance);
  return count;
}

/** The attention's uniform block: q heads, kv heads, the packed row's width, 1/√d. */
function attentionUniform(device, qHeads, kvHeads, row, d) {
  const bytes = new ArrayBuffer(16);
  new Uint32Array(bytes, 0, 3).set([qHeads, kvHeads, row]);
  new Float32Array(bytes, 12, 1)[0] = 1 / Math.sqrt(d);
  const b = device.createBuffer({ size: 16, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
  device.queue.writeBuffer(b, 0, bytes);
  return b;
}

/** q_norm's weight for each of the q heads, then k_norm's for each k head. */
function headGammas(w, qHeads, kvHeads, d) {
  const g = new Float32Array((qHeads + kvHeads) * d);
  for (let head = 0; head < qHeads + kvHeads; head++) g.set(head < qHeads ? w.qNorm : w.kNorm, head * d);
  return g;
}

/** `floats` f32s of `buffer`, read back. */
async function readFloats(device, buffer, floats) {
  const staging = device.createBuffer({ size: floats * 4, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  const e = device.createCommandEncoder();
  e.copyBufferToBuffer(buffer, 0, staging, 0, floats * 4);
  device.queue.submit([e.finish()]);
  await staging.mapAsync(GPUMapMode.READ);
  const out = new Float32Array(staging.getMappedRange().slice(0));
  staging.unmap();
  staging.destroy();
  return out;
}
