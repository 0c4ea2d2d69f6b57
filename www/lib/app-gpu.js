// An app's own WebGPU work beside the package, as the demo's interop panel and the interop
// tests do it: buffers of the app's on `norm.device`, a tiny matmul kernel of the app's that
// writes an activation, and a readback of any buffer.

/** A buffer of `data`'s bytes with `usage` (COPY_DST is added, to fill it). */
export function bufferOf(device, data, usage) {
  const b = device.createBuffer({ size: Math.max(4, Math.ceil(data.byteLength / 4) * 4), usage: usage | GPUBufferUsage.COPY_DST });
  device.queue.writeBuffer(b, 0, data);
  return b;
}

/** An empty buffer of `bytes` bytes with `usage`. */
export function emptyBuffer(device, bytes, usage) {
  return device.createBuffer({ size: bytes, usage });
}

/** `bytes` of `buffer` (which needs COPY_SRC), copied into a fresh ArrayBuffer. */
export async function readBuffer(device, buffer, bytes = buffer.size) {
  const staging = device.createBuffer({ size: bytes, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  const e = device.createCommandEncoder();
  e.copyBufferToBuffer(buffer, 0, staging, 0, bytes);
  device.queue.submit([e.finish()]);
  await staging.mapAsync(GPUMapMode.READ);
  const out = staging.getMappedRange().slice(0);
  staging.unmap();
  staging.destroy();
  return out;
}

/**
 * The app's matmul: x (rows × n) = a (rows × k) · w (k × n), one thread per element.
 * `record(encoder, a, w, x)` adds its pass to an encoder of the app's.
 */
export function matmulKernel(device, { rows, k, n }) {
  const pipeline = device.createComputePipeline({
    layout: "auto",
    compute: {
      entryPoint: "main",
      module: device.createShaderModule({
        code: `@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<f32>;
@group(0) @binding(2) var<storage, read_write> x: array<f32>;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) {
  let r = g.x / ${n}u;
  let j = g.x % ${n}u;
  if r >= ${rows}u { return; }
  var s = 0.0;
  for (var i = 0u; i < ${k}u; i++) { s = fma(a[r * ${k}u + i], w[i * ${n}u + j], s); }
  x[g.x] = s;
}`,
      }),
    },
  });
  return {
    record(encoder, a, w, x) {
      const pass = encoder.beginComputePass();
      pass.setPipeline(pipeline);
      pass.setBindGroup(0, device.createBindGroup({
        layout: pipeline.getBindGroupLayout(0),
        entries: [a, w, x].map((buffer, binding) => ({ binding, resource: { buffer, size: binding === 2 ? rows * n * 4 : undefined } })),
      }));
      pass.dispatchWorkgroups(Math.ceil((rows * n) / 64));
      pass.end();
    },
  };
}

/** The matmul in f32 on the CPU, in the kernel's order (fma per term, as Math.fround of a*b+s is not). */
export function matmulCpu(a, w, { rows, k, n }) {
  const x = new Float64Array(rows * n);
  for (let r = 0; r < rows; r++)
    for (let j = 0; j < n; j++) {
      let s = 0;
      for (let i = 0; i < k; i++) s += a[r * k + i] * w[i * n + j];
      x[r * n + j] = s;
    }
  return x;
}
