// Wall-clock timing in a page whose timer is coarse.

export const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/**
 * Milliseconds per call of a synchronous `fn`: repeated until 10 ms pass, since timers in a
 * page that is not cross-origin isolated are coarsened (to 0.1 ms in Chromium, 1 ms in Firefox).
 */
export function timeSync(fn) {
  let reps = 0;
  const t0 = performance.now();
  let t = t0;
  do {
    fn();
    reps++;
    t = performance.now();
  } while (t - t0 < 10);
  return (t - t0) / reps;
}

/**
 * Milliseconds per call of an async `fn`, awaited one after another until `minMs` pass: one
 * call of a fast backend is below the timer's resolution (0.1 ms in Chromium, 1 ms in Firefox,
 * without cross-origin isolation).
 */
export async function timeAsync(fn, minMs = 10) {
  let reps = 0;
  const t0 = performance.now();
  let t = t0;
  do {
    await fn();
    reps++;
    t = performance.now();
  } while (t - t0 < minMs);
  return (t - t0) / reps;
}
