// The engine's own WGSL for a Qwen3-style decoder layer: the projections, the KV cache, the
// attention, SwiGLU and the position counter. The normalization steps and the rotation are
// the package's (layer.js records them between these). Written to be read, not to be fast:
// a tiled matmul, and one workgroup a query head with an online softmax.

const TILE = 16;

/** y[rows × n] = x[rows × k] · wᵀ, with w `[n, k]` as torch's `nn.Linear` holds it; 16 × 16 tiles. */
const MATMUL = /* wgsl */ `
struct P { rows: u32, n: u32, k: u32, pad: u32 };
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<uniform> p: P;
var<workgroup> xs: array<array<f32, ${TILE}>, ${TILE}>;
var<workgroup> ws: array<array<f32, ${TILE}>, ${TILE}>;
@compute @workgroup_size(${TILE}, ${TILE})
fn main(@builtin(workgroup_id) g: vec3<u32>, @builtin(local_invocation_id) l: vec3<u32>) {
  let row = g.y * ${TILE}u + l.y;
  let col = g.x * ${TILE}u + l.x;
  let wrow = g.x * ${TILE}u + l.y;
  var acc = 0.0;
  for (var t = 0u; t < p.k; t += ${TILE}u) {
    let at = t + l.x;
    xs[l.y][l.x] = 0.0;
    ws[l.y][l.x] = 0.0;
    if row < p.rows && at < p.k { xs[l.y][l.x] = x[row * p.k + at]; }
    if wrow < p.n && at < p.k { ws[l.y][l.x] = w[wrow * p.k + at]; }
    workgroupBarrier();
    for (var i = 0u; i < ${TILE}u; i++) { acc = fma(xs[l.y][i], ws[l.x][i], acc); }
    workgroupBarrier();
  }
  if row < p.rows && col < p.n { y[row * p.n + col] = acc; }
}`;

/**
 * Each token's k and v heads (after the package turned k in the packed qkv rows) into the
 * layer's caches, at the token's position: the step's first position is `pos[0]`.
 */
const KV_APPEND = /* wgsl */ `
struct P { tokens: u32, kv: u32, row: u32, q: u32 };
@group(0) @binding(0) var<storage, read> qkv: array<f32>;
@group(0) @binding(1) var<storage, read_write> kc: array<f32>;
@group(0) @binding(2) var<storage, read_write> vc: array<f32>;
@group(0) @binding(3) var<storage, read> pos: array<i32>;
@group(0) @binding(4) var<uniform> p: P;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
  let i = g.x;
  if i >= p.tokens * p.kv { return; }
  let t = i / p.kv;
  let c = i % p.kv;
  let to = (u32(pos[0]) + t) * p.kv + c;
  kc[to] = qkv[t * p.row + p.q + c];
  vc[to] = qkv[t * p.row + p.q + p.kv + c];
}`;

/**
 * Causal grouped-query attention over the cache: a workgroup of `d` threads a (token, q head),
 * one value of the head a thread; for each cached position up to the token's, the score
 * q·k / √d (a tree reduction), then an online softmax over the v rows.
 */
const attention = (d) => /* wgsl */ `
struct P { q_heads: u32, kv_heads: u32, row: u32, scale: f32 };
@group(0) @binding(0) var<storage, read> qkv: array<f32>;
@group(0) @binding(1) var<storage, read> kc: array<f32>;
@group(0) @binding(2) var<storage, read> vc: array<f32>;
@group(0) @binding(3) var<storage, read> pos: array<i32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;
@group(0) @binding(5) var<uniform> p: P;
var<workgroup> part: array<f32, ${d}>;
var<workgroup> last: u32;
@compute @workgroup_size(${d})
fn main(@builtin(workgroup_id) g: vec3<u32>, @builtin(local_invocation_index) i: u32) {
  let t = g.x / p.q_heads;
  let h = g.x % p.q_heads;
  let kv = h / (p.q_heads / p.kv_heads);
  if i == 0u { last = u32(pos[0]) + t; }
  // The same bound for every thread, as the barriers in the loop need.
  let upto = workgroupUniformLoad(&last);
  let q = qkv[t * p.row + h * ${d}u + i];
  var m = -3.0e38;
  var l = 0.0;
  var acc = 0.0;
  for (var j = 0u; j <= upto; j++) {
    let at = (j * p.kv_heads + kv) * ${d}u + i;
    // Every thread has read the last score before part[0] is written again.
    workgroupBarrier();
    part[i] = q * kc[at];
    for (var s = ${d / 2}u; s > 0u; s >>= 1u) {
      workgroupBarrier();
      if i < s { part[i] += part[i + s]; }
    }
    let score = workgroupUniformLoad(&part[0]) * p.scale;
    let top = max(m, score);
    let c = exp(m - top);
    let e = exp(score - top);
    l = l * c + e;
    acc = acc * c + e * vc[at];
    m = top;
  }
  out[(t * p.q_heads + h) * ${d}u + i] = acc / l;
}`;

/** SwiGLU: act = silu(gate) · up, from the gate and up projections side by side in one row. */
const SWIGLU = /* wgsl */ `
struct P { rows: u32, inter: u32, pad0: u32, pad1: u32 };
@group(0) @binding(0) var<storage, read> gu: array<f32>;
@group(0) @binding(1) var<storage, read_write> act: array<f32>;
@group(0) @binding(2) var<uniform> p: P;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
  let i = g.x;
  if i >= p.rows * p.inter { return; }
  let r = i / p.inter;
  let gate = gu[r * 2u * p.inter + i % p.inter];
  act[i] = gate / (1.0 + exp(-gate)) * gu[r * 2u * p.inter + p.inter + i % p.inter];
}`;

/** The position counter moves on by the step's tokens, on the GPU, after the step. */
const ADVANCE = /* wgsl */ `
struct P { tokens: u32, pad0: u32, pad1: u32, pad2: u32 };
@group(0) @binding(0) var<storage, read_write> pos: array<i32>;
@group(0) @binding(1) var<uniform> p: P;
@compute @workgroup_size(1)
fn main() { pos[0] += i32(p.tokens); }`;

/** The engine's pipelines on `device`, for heads of `d` values; each `.bind(buffers…, uniform)` makes its bind group. */
export function enginePipelines(device, d) {
  const make = (code, label) => {
    const pipeline = device.createComputePipeline({ label, layout: "auto", compute: { module: device.createShaderModule({ code, label }), entryPoint: "main" } });
    const bind = (...buffers) =>
      device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries: buffers.map((buffer, binding) => ({ binding, resource: { buffer } })) });
    return { pipeline, bind };
  };
  return {
    matmul: make(MATMUL, "matmul"),
    kvAppend: make(KV_APPEND, "kv append"),
    attention: make(attention(d), "attention"),
    swiglu: make(SWIGLU, "swiglu"),
    advance: make(ADVANCE, "advance"),
  };
}

/** Workgroups of a matmul of `rows × n`: (n tiles, row tiles). */
export const matmulGrid = (rows, n) => [Math.ceil(n / TILE), Math.ceil(rows / TILE)];
