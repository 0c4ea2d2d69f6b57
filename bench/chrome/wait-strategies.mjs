// The ways a page can wait for a short GPU job in Chrome, shared by the calls and waits sections.
// Chrome's GPU process learns that GPU work finished only when it looks: when it handles a
// wait (mapAsync, onSubmittedWorkDone) whose work is already done, or on its polling timer,
// which every flush from the page pushes 2 ms into the future and which then fires each 1 ms
// (gpu/ipc/service/command_buffer_stub.cc: kHandleMoreWorkPeriodMs, kHandleMoreWorkPeriodBusyMs).
import { packageKernel } from "../dawn/package-kernel.mjs";
import { gammaFloats, randomFloats } from "../dawn/raw.mjs";

/** A promise of the next macrotask (a MessageChannel message: nested setTimeouts clamp to 4 ms). */
export function nextTask() {
  return new Promise((resolve) => {
    const ch = new MessageChannel();
    ch.port1.onmessage = () => resolve();
    ch.port2.postMessage(0);
  });
}

/** A round trip to the GPU process that waits on no GPU work: an error scope pushed and popped. */
export function roundTrip(device) {
  device.pushErrorScope("validation");
  return device.popErrorScope();
}

/** Awaits `p` while sending the GPU process an empty submission every task until it settles (for at most `ms`). */
export async function nudged(device, p, ms = Infinity) {
  let done = false;
  p.then(() => (done = true), () => (done = true));
  const t0 = performance.now();
  while (!done && performance.now() - t0 < ms) {
    device.queue.submit([]);
    await nextTask();
  }
  return p;
}

/**
 * Maps `buffer` for reading at once and, if that map is still pending one task later (it
 * reached the GPU process before the work was done and waits for the timer), unmaps it and
 * asks again: the second request arrives after a short job is done. The fast case of a map
 * sent at once, without its slow case.
 */
export async function mapReasked(buffer) {
  let settled = false;
  const first = buffer.mapAsync(GPUMapMode.READ).then(
    () => (settled = true),
    () => false, // aborted by the unmap below
  );
  await nextTask();
  if (settled) return;
  buffer.unmap();
  await first;
  await buffer.mapAsync(GPUMapMode.READ);
}

/**
 * What `run` with host arrays has to do at the least, in raw WebGPU on the package's device with
 * its kernel: `submit()` uploads both arrays, dispatches once and copies the result into
 * `staging`; the caller maps `staging` however it waits, then `readOut()` copies it out and
 * unmaps. `free()` destroys the buffers.
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
    free() {
      staging.destroy();
      for (const b of Object.values(bufs)) b.destroy();
    },
  };
}
