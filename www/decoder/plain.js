// The same steps without the package, as an engine without it writes them (onnxruntime-web's
// prompt path does the same): the residual add, the norm and the rotation each a pass of the
// engine's own. layer.js records these instead of the package's calls for `way: "plain"`, so
// that the page and the bench can set the two side by side on the same stack.

/** x += o, four values a thread. */
const ADD = /* wgsl */ `
struct P { n: u32, pad0: u32, pad1: u32, pad2: u32 };
@group(0) @binding(0) var<storage, read_write> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> o: array<vec4<f32>>;
@group(0) @binding(2) var<uniform> p: P;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
  if g.x < p.n { x[g.x] += o[g.x]; }
}`;

/**
 * RMSNorm, a workgroup of 64 a row of `width`: rows `r` of `src` whose head `r mod heads` is
 * below `turned` (the others are skipped: a packed row's v heads), into `out`, or over `src`
 * where `inPlace`. Gamma row `r mod heads` where `head_gamma`, else the one row.
 */
const norm = (inPlace) => /* wgsl */ `
struct P { rows: u32, width: u32, heads: u32, turned: u32, eps: f32, head_gamma: u32, pad0: u32, pad1: u32 };
@group(0) @binding(0) var<storage, ${inPlace ? "read_write" : "read"}> src: array<f32>;
@group(0) @binding(1) var<storage, read> gamma: array<f32>;
@group(0) @binding(2) var<uniform> p: P;
${inPlace ? "" : "@group(0) @binding(3) var<storage, read_write> out: array<f32>;"}
var<workgroup> part: array<f32, 64>;
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) g: vec3<u32>, @builtin(local_invocation_index) i: u32) {
  let r = g.x;
  let head = r % p.heads;
  if head >= p.turned { return; }
  let at = r * p.width;
  var ss = 0.0;
  for (var c = i; c < p.width; c += 64u) { ss += src[at + c] * src[at + c]; }
  part[i] = ss;
  for (var s = 32u; s > 0u; s >>= 1u) {
    workgroupBarrier();
    if i < s { part[i] += part[i + s]; }
  }
  workgroupBarrier();
  let inv = inverseSqrt(part[0] / f32(p.width) + p.eps);
  let grow = select(0u, head * p.width, p.head_gamma == 1u);
  for (var c = i; c < p.width; c += 64u) { ${inPlace ? "src" : "out"}[at + c] = src[at + c] * inv * gamma[grow + c]; }
}`;

/** NeoX's rotation of the q and k heads of packed rows, a thread a pair; the step's first position is `pos[0]`. */
const ROPE = /* wgsl */ `
struct P { pairs: u32, half: u32, heads: u32, turned: u32 };
@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@group(0) @binding(1) var<storage, read> inv_freq: array<f32>;
@group(0) @binding(2) var<storage, read> pos: array<i32>;
@group(0) @binding(3) var<uniform> p: P;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
  if g.x >= p.pairs { return; }
  let k = g.x % p.half;
  let turned = g.x / p.half;
  let token = turned / p.turned;
  let head = token * p.heads + turned % p.turned;
  let angle = f32(u32(pos[0]) + token) * inv_freq[k];
  let c = cos(angle);
  let s = sin(angle);
  let at = head * 2u * p.half + k;
  let a = x[at];
  let b = x[at + p.half];
  x[at] = a * c - b * s;
  x[at + p.half] = b * c + a * s;
}`;

/**
 * The plain passes on `device`: `bindNorm`, `bindAdd`, `bindRope` make a pass's bind group and
 * grid; `record(encoder, pass)` records it.
 */
export function plainPasses(device) {
  const make = (code, label) =>
    device.createComputePipeline({ label, layout: "auto", compute: { module: device.createShaderModule({ code, label }), entryPoint: "main" } });
  const pipelines = { add: make(ADD, "plain add"), norm: make(norm(false), "plain rmsnorm"), normInPlace: make(norm(true), "plain rmsnorm in place"), rope: make(ROPE, "plain rope") };
  const uniform = (bytes) => {
    const b = device.createBuffer({ size: bytes.byteLength, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
    device.queue.writeBuffer(b, 0, bytes);
    return b;
  };
  const group = (pipeline, buffers) =>
    device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries: buffers.map((buffer, binding) => ({ binding, resource: { buffer } })) });
  return {
    /** x += o over `n` values (a multiple of 4). */
    bindAdd: (x, o, n) => ({ pipeline: pipelines.add, group: group(pipelines.add, [x, o, uniform(new Uint32Array([n / 4, 0, 0, 0]))]), grid: Math.ceil(n / 4 / 256) }),
    /** `out` (or `src`, without `out`) ← N(`src`) over `rows` rows of `width` (`heads`, `turned`, `headGamma` for packed rows). */
    bindNorm({ src, out, gamma, rows, width, eps, heads = 1, turned = 1, headGamma = false }) {
      const bytes = new ArrayBuffer(32);
      new Uint32Array(bytes).set([rows, width, heads, turned]);
      new Float32Array(bytes, 16, 1)[0] = eps;
      new Uint32Array(bytes, 20, 1)[0] = headGamma ? 1 : 0;
      const pipeline = out ? pipelines.norm : pipelines.normInPlace;
      return { pipeline, group: group(pipeline, [src, gamma, uniform(bytes), ...(out ? [out] : [])]), grid: rows };
    },
    /** The rotation of `tokens` tokens' first `turned` heads of `heads`, heads of `d`. */
    bindRope: ({ qkv, invFreq, pos, tokens, heads, turned, d }) => {
      const pairs = (tokens * turned * d) / 2;
      return { pipeline: pipelines.rope, group: group(pipelines.rope, [qkv, invFreq, pos, uniform(new Uint32Array([pairs, d / 2, heads, turned]))]), grid: Math.ceil(pairs / 256) };
    },
    record(encoder, { pipeline, group: g, grid }) {
      const pass = encoder.beginComputePass();
      pass.setPipeline(pipeline);
      pass.setBindGroup(0, g);
      pass.dispatchWorkgroups(grid);
      pass.end();
    },
  };
}
