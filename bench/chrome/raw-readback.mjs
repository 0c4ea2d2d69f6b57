// The readback that the calls and waits sections time in raw WebGPU, whatever the wait: the
// least that `run` with host arrays has to do, on the package's device with its kernel.
import { packageKernel } from "../shared/package-kernel.mjs";
import { gammaFloats, randomFloats } from "../shared/raw.mjs";

/**
 * What `run` with host arrays has to do at the least, in raw WebGPU on the package's device with
 * its kernel: `submit()` uploads both arrays, dispatches once and copies the result into
 * `staging`; the caller maps `staging` however it waits, then `readOut()` copies it out and
 * unmaps; `once(wait)` is the three in turn, `wait()` mapping `staging`. `free()` destroys the
 * buffers.
 */
export async function rawReadback(ctx, rows, hidden) {
  const { device, raw } = ctx;
  const n = rows * hidden;
  const x = randomFloats(n, 1), r = randomFloats(n, 2), g = gammaFloats(hidden);
  const kern = await packageKernel(ctx, rows, hidden, {}, { x, r });
  const p = await raw.pipeline(kern.code, kern.label);
  const stub = () => raw.buffer(4);
  const bufs = { input: raw.buffer(n, x), residual: raw.buffer(n, r), gamma: raw.buffer(hidden, g), output: raw.buffer(n), sum: stub(), beta: stub(), bias: stub(), post_gamma: stub(), params: raw.params(rows, hidden, kern.lanes) };
  const group = raw.bind(p, bufs);
  const staging = device.createBuffer({ size: n * 4, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  return {
    x, r, g, staging,
    submit() {
      device.queue.writeBuffer(bufs.input, 0, x);
      device.queue.writeBuffer(bufs.residual, 0, r);
      const enc = device.createCommandEncoder();
      const pass = enc.beginComputePass();
      raw.dispatch(pass, p, group, kern.groups(rows));
      pass.end();
      enc.copyBufferToBuffer(bufs.output, 0, staging, 0, n * 4);
      device.queue.submit([enc.finish()]);
    },
    readOut() {
      new Float32Array(staging.getMappedRange()).slice();
      staging.unmap();
    },
    async once(wait) {
      this.submit();
      await wait();
      this.readOut();
    },
    free() {
      staging.destroy();
      for (const b of Object.values(bufs)) b.destroy();
    },
  };
}
