// Raw WebGPU on the package's own device: roofline kernels, buffers, pipelines, timed passes, warm-up.
// The pipelines run the package's captured kernels, their dispatch grids folded as the package
// folds them; passes are timed with GPU timestamps, and the warm-up brings the GPU to its
// working clock. Also the seeded inputs and the median that every section uses.

// The same kernels as the native bench's bench/native/kernel/roofline.wgsl and roofline_sum.wgsl,
// alike on purpose (the two benches must measure against the same baselines); here they are
// built in a scalar form too, for a hidden that is not a multiple of 4.

/**
 * WGSL of an elementwise kernel, one invocation per element (vec4 when `vec4`), 2-D grid for
 * > 65535 groups: reads `a` and `b`, writes `outs`, runs `body` where `i < p.n`.
 */
function elementwise(vec4, comment, outs, body, { ins = ["a", "b"], outType } = {}) {
  const T = vec4 ? "vec4<f32>" : "f32";
  const storage = [...ins, ...outs].map(
    (name, k) => `@group(0) @binding(${k}) var<storage, ${k < ins.length ? "read" : "read_write"}> ${name}: array<${k < ins.length ? T : (outType ?? T)}>;\n`,
  );
  return `// ${comment}
struct P { n: u32, pad0: u32, pad1: u32, pad2: u32 };
${storage.join("")}@group(0) @binding(${storage.length}) var<uniform> p: P;
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wg.x + wg.y * groups.x) * 256u + lid;
  if i < p.n ${body}
}
`;
}

/** WGSL of `out = a + b`. */
export function addWgsl(vec4) {
  return elementwise(vec4, "out = a + b: the roofline kernel (two reads and one write per element).", ["out"], "{ out[i] = a[i] + b[i]; }");
}

/**
 * WGSL of `out = a + b; out2 = a - b`: two reads and two writes per element, the bytes and
 * the read/write mix of the kernel with the `sum` output (y and v written), with no reduction.
 */
export function addSubWgsl(vec4) {
  return elementwise(vec4, "out = a + b, out2 = a - b: the roofline of a kernel that reads two arrays and writes two.", ["out", "out2"], `{
    let x = a[i];
    let y = b[i];
    out[i] = x + y;
    out2[i] = x - y;
  }`);
}

/**
 * WGSL of `out = a`: one read and one write per element, the bytes of a norm without a
 * residual (input read, output written).
 */
export function copyWgsl(vec4) {
  return elementwise(vec4, "out = a: the roofline of a kernel that reads one array and writes one.", ["out"], "{ out[i] = a[i]; }", { ins: ["a"] });
}

/**
 * WGSL of `out = f16(a + b)` (vec4 only; the halves packed two to a u32, so that no
 * `shader-f16` is needed): two f32 reads and an f16 write per element, the bytes of a norm
 * with a residual and `outputDtype: "f16"`.
 */
export function addHalfWgsl() {
  return elementwise(true, "out = f16(a + b): the roofline of two f32 arrays read and one f16 array written.", ["out"], `{
    let s = a[i] + b[i];
    out[i] = vec2<u32>(pack2x16float(s.xy), pack2x16float(s.zw));
  }`, { outType: "vec2<u32>" });
}

/**
 * WGSL of `out = a + b` with one workgroup of 256 a row, its threads looping over the row:
 * an elementwise kernel laid out as a norm is (rows workgroups), the decode baseline.
 */
export function addRowsWgsl(vec4) {
  const T = vec4 ? "vec4<f32>" : "f32";
  return `// out = a + b, one workgroup of 256 a row: the elementwise kernel with a norm's grid.
struct P { rows: u32, width: u32, pad1: u32, pad2: u32 };
@group(0) @binding(0) var<storage, read> a: array<${T}>;
@group(0) @binding(1) var<storage, read> b: array<${T}>;
@group(0) @binding(2) var<storage, read_write> out: array<${T}>;
@group(0) @binding(3) var<uniform> p: P;
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let row = wg.x + wg.y * groups.x;
  if row >= p.rows { return; }
  let base = row * p.width;
  for (var i = lid; i < p.width; i += 256u) {
    out[base + i] = a[base + i] + b[base + i];
  }
}
`;
}

/** The package's grid: `rows` workgroups, folded into a second dimension past the limit. */
export function grid(count, maxPerDim) {
  if (count <= maxPerDim) return [count, 1];
  const y = Math.ceil(count / maxPerDim);
  return [Math.ceil(count / y), y];
}

/**
 * The bindings a WGSL source declares, in a form for an explicit bind group layout:
 * [{ binding, name, type: "read-only-storage" | "storage" | "uniform" }].
 */
export function bindingsOf(code) {
  const out = [];
  const re = /@group\(0\)\s*@binding\((\d+)\)\s*var<(uniform|storage\s*,\s*(read_write|read))>\s*(\w+)/g;
  for (const m of code.matchAll(re)) {
    const type = m[2] === "uniform" ? "uniform" : m[3] === "read_write" ? "storage" : "read-only-storage";
    out.push({ binding: Number(m[1]), name: m[4], type });
  }
  return out.sort((a, b) => a.binding - b.binding);
}

/** The constants the package's prelude sets (WG, SLOTS, HAS_BIAS, ...), and its lanes. */
export function constantsOf(code) {
  const c = {};
  for (const m of code.matchAll(/^const (\w+): (?:u32|bool) = (\w+?)u?;$/gm)) c[m[1]] = m[2] === "true" ? true : m[2] === "false" ? false : Number(m[2]);
  c.lanes = /alias V = vec4<f32>;/.test(code) ? 4 : 1;
  return c;
}

/**
 * The bytes of a buffer for the kernels' uniform block (src/gpu/kernel/params.rs,
 * `Params::SIZE`: rows, width, hidden, eps, then gammaOffset and the rotary stage's words, 0
 * in these benchmarks), in whole 16 bytes.
 */
export const PARAMS_BYTES = 48;

export class Raw {
  /**
   * `warmMiB`: size of each array the warm-up kernel streams (64 MiB on a GPU; less on a CPU
   * adapter). `warmMs`, when given, replaces every warm-up's own length (real Chrome: 1 s).
   */
  constructor(device, { warmMiB = 64, warmMs } = {}) {
    this.device = device;
    this.warmMs = warmMs;
    this.warmFloats = Math.max(1024, Math.floor((warmMiB * 1048576) / 4 / 1024) * 1024);
    this.maxPerDim = device.limits.maxComputeWorkgroupsPerDimension;
    this.pipelines = new Map();
  }

  /** A storage buffer of `floats` f32s, filled from `data` (a Float32Array, repeated to length) when given. */
  buffer(floats, data, extraUsage = 0) {
    const size = Math.max(16, Math.ceil((floats * 4) / 16) * 16);
    const b = this.device.createBuffer({ size, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC | extraUsage });
    if (data) {
      // writeBuffer in pieces of at most 64 MiB from the (large) source array.
      const step = 16 << 20;
      for (let off = 0; off < floats; off += step) {
        const n = Math.min(step, floats - off);
        const src = data.length >= off + n ? data.subarray(off, off + n) : data.subarray(0, n);
        this.device.queue.writeBuffer(b, off * 4, src.buffer, src.byteOffset, n * 4);
      }
    }
    return b;
  }

  uniform(u32s) {
    const b = this.device.createBuffer({ size: Math.max(16, u32s.byteLength), usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
    this.device.queue.writeBuffer(b, 0, u32s);
    return b;
  }

  /** The package's Params block: rows, width (hidden / lanes), hidden as f32, eps. */
  params(rows, hidden, lanes, eps = 1e-6) {
    const buf = new ArrayBuffer(PARAMS_BYTES);
    const u = new Uint32Array(buf);
    const f = new Float32Array(buf);
    u[0] = rows;
    u[1] = hidden / lanes;
    f[2] = hidden;
    f[3] = eps;
    return this.uniform(u);
  }

  /** A pipeline from WGSL with an explicit layout built from its declarations (cached by source). */
  async pipeline(code, label) {
    let p = this.pipelines.get(code);
    if (p) return p;
    const d = this.device;
    d.pushErrorScope("validation");
    const module = d.createShaderModule({ code, label });
    const info = await module.getCompilationInfo?.();
    const errors = (info?.messages ?? []).filter((m) => m.type === "error");
    const bindings = bindingsOf(code);
    const layout = d.createBindGroupLayout({
      label,
      entries: bindings.map((b) => ({ binding: b.binding, visibility: GPUShaderStage.COMPUTE, buffer: { type: b.type } })),
    });
    const pipeline = d.createComputePipeline({
      label,
      layout: d.createPipelineLayout({ bindGroupLayouts: [layout] }),
      compute: { module, entryPoint: "main" },
    });
    const err = await d.popErrorScope();
    if (err || errors.length) throw new Error(`${label}: ${err?.message ?? errors.map((m) => `${m.lineNum}:${m.linePos} ${m.message}`).join("; ")}`);
    p = { pipeline, layout, bindings, label };
    this.pipelines.set(code, p);
    return p;
  }

  /** A bind group for `p` from { name: buffer }. */
  bind(p, byName) {
    return this.device.createBindGroup({
      layout: p.layout,
      entries: p.bindings.map((b) => {
        const buffer = byName[b.name];
        if (!buffer) throw new Error(`${p.label}: no buffer for binding ${b.binding} (${b.name})`);
        return { binding: b.binding, resource: { buffer } };
      }),
    });
  }

  /**
   * One compute pass of `n` dispatches, `encode(pass, k)` recording the k-th, timed with GPU
   * timestamps; resolves with the pass's microseconds.
   */
  async timePass(n, encode) {
    const d = this.device;
    if (!this.query) {
      // Made on first use: only the timed sections need the device's timestamp-query.
      this.query = d.createQuerySet({ type: "timestamp", count: 2 });
      this.resolve = d.createBuffer({ size: 16, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC });
      this.read = d.createBuffer({ size: 16, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    }
    const enc = d.createCommandEncoder();
    const pass = enc.beginComputePass({ timestampWrites: { querySet: this.query, beginningOfPassWriteIndex: 0, endOfPassWriteIndex: 1 } });
    for (let k = 0; k < n; k++) encode(pass, k);
    pass.end();
    enc.resolveQuerySet(this.query, 0, 2, this.resolve, 0);
    enc.copyBufferToBuffer(this.resolve, 0, this.read, 0, 16);
    d.queue.submit([enc.finish()]);
    await this.read.mapAsync(GPUMapMode.READ);
    const t = new BigUint64Array(this.read.getMappedRange().slice(0));
    this.read.unmap();
    return Number(t[1] - t[0]) / 1e3;
  }

  /** Records one dispatch of `p` with `group` over `groups` workgroups (folded as the package folds). */
  dispatch(pass, p, group, groups) {
    const [x, y] = grid(groups, this.maxPerDim);
    pass.setPipeline(p.pipeline);
    pass.setBindGroup(0, group);
    pass.dispatchWorkgroups(x, y, 1);
  }

  /** Submits one command buffer of one dispatch (as `dispatch`), untimed. */
  submit(p, group, groups) {
    const enc = this.device.createCommandEncoder();
    const pass = enc.beginComputePass();
    this.dispatch(pass, p, group, groups);
    pass.end();
    this.device.queue.submit([enc.finish()]);
  }

  /**
   * Keeps the GPU busy for `ms` (passes of `a + b` over 64 MiB arrays) so that what follows
   * runs at the working clock, not the idle one.
   */
  async warm(ms) {
    await this.warmUntil(new Promise((r) => setTimeout(r, this.warmMs ?? ms)));
  }

  /** Keeps the GPU busy as `warm` does until `promise` settles (e.g. while the clock is read). */
  async warmUntil(promise) {
    let settled = false;
    promise.then(() => (settled = true), () => (settled = true));
    if (!this.warmKit) {
      const n = this.warmFloats;
      const p = await this.pipeline(addWgsl(true), "warm a+b");
      const a = this.buffer(n), b = this.buffer(n), o = this.buffer(n);
      const u = this.uniform(new Uint32Array([n / 4, 0, 0, 0]));
      this.warmKit = { p, group: this.bind(p, { a, b, out: o, p: u }), groups: Math.ceil(n / 4 / 256) };
    }
    const { p, group, groups } = this.warmKit;
    let inflight = [];
    while (!settled) {
      const enc = this.device.createCommandEncoder();
      const pass = enc.beginComputePass();
      for (let k = 0; k < 100; k++) this.dispatch(pass, p, group, groups);
      pass.end();
      this.device.queue.submit([enc.finish()]);
      inflight.push(this.device.queue.onSubmittedWorkDone());
      if (inflight.length >= 2) await inflight.shift();
    }
    await Promise.all(inflight);
  }

  /** Reads `floats` f32s of `buffer` back. */
  async readBack(buffer, floats) {
    const d = this.device;
    const staging = d.createBuffer({ size: Math.ceil((floats * 4) / 16) * 16, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    const enc = d.createCommandEncoder();
    enc.copyBufferToBuffer(buffer, 0, staging, 0, staging.size);
    d.queue.submit([enc.finish()]);
    await staging.mapAsync(GPUMapMode.READ);
    const out = new Float32Array(staging.getMappedRange().slice(0, floats * 4));
    staging.unmap();
    staging.destroy();
    return out;
  }
}

/** Median of numbers. */
export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** Seeded floats in [-1, 1) (xorshift32), for inputs that are the same on every run. */
export function randomFloats(n, seed = 12345) {
  const out = new Float32Array(n);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = (x >>> 0) / 2147483648 - 1;
  }
  return out;
}

/** The gamma every section passes: seeded, around 1. */
export function gammaFloats(hidden) {
  return randomFloats(hidden, 3).map((v) => 1 + 0.1 * v);
}
