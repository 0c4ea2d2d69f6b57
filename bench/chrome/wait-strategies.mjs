// The ways a page can wait for a short GPU job in Chrome, shared by the calls and waits sections.
// Chrome's GPU process learns that GPU work finished only when it looks: when it handles a
// wait (mapAsync, onSubmittedWorkDone) whose work is already done, or on its polling timer,
// which every flush from the page pushes 2 ms into the future and which then fires each 1 ms
// (gpu/ipc/service/command_buffer_stub.cc: kHandleMoreWorkPeriodMs, kHandleMoreWorkPeriodBusyMs).

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
