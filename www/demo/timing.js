// Wall-clock timing in a page whose timer is coarse.

export const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/**
 * Milliseconds per call of a synchronous `fn`: repeated until 10 ms pass, since timers in a
 * page that is not cross-origin isolated are coarsened to 0.1 ms.
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
