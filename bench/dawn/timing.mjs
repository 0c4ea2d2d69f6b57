// Timing for the Dawn bench: wall-clock loops of calls, dependent chains and independent repeats between GPU timestamps.
import { median } from "./raw.mjs";

/** Median, min and max of per-item µs, with the `n` items each was averaged over. */
export function spread(per, n) {
  return { us: median(per), min: Math.min(...per), max: Math.max(...per), n };
}

/** µs per call of `body(k)` (k calls): one untimed round, then `loops` timed rounds of `calls`. */
export async function timeLoops(loops, calls, body) {
  await body(Math.min(calls, 50)); // untimed
  const per = [];
  for (let l = 0; l < loops; l++) {
    const t0 = performance.now();
    await body(calls);
    per.push(((performance.now() - t0) * 1000) / calls);
  }
  return { median: median(per), min: Math.min(...per), max: Math.max(...per), loops: per };
}

/** Timed passes of `n` dispatches: calibrates n to ~`targetUs` of GPU time, then median of `reps`. */
export async function chainTime(raw, encodeK, { targetUs = 10000, maxN = 4000, minN = 8, reps = 5, warmMs = 150 } = {}) {
  const cal = await raw.timePass(minN, encodeK);
  const per0 = Math.max(cal / minN, 0.05);
  const n = Math.max(minN, Math.min(maxN, Math.round(targetUs / per0)));
  await raw.warm(warmMs);
  await raw.timePass(n, encodeK); // untimed
  const per = [];
  for (let i = 0; i < reps; i++) per.push((await raw.timePass(n, encodeK)) / n);
  return spread(per, n);
}

/**
 * µs per dispatch of one pass of `repeat` dispatches that `encode(pass)` records, all of the
 * same inputs (as the package's gpuTime records them): one untimed pass, then median of `reps`.
 */
export async function independentTime(raw, repeat, reps, encode) {
  const per = [];
  await raw.timePass(repeat, encode);
  for (let i = 0; i < reps; i++) per.push((await raw.timePass(repeat, encode)) / repeat);
  return median(per);
}
