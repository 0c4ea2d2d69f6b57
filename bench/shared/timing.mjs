// Timing for the Dawn and Chrome benches: wall-clock loops of calls, dependent chains and independent repeats between GPU timestamps, and paired passes (a baseline right before each kernel pass).
import { sampleClock } from "./clock.mjs";
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

/** How many dispatches `encodeK` (as timePass takes it) needs for ~`targetUs` of GPU time, from one pass of `minN`; at most `maxN`. */
export async function chainLength(raw, encodeK, { targetUs = 10000, maxN = 4000, minN = 8 } = {}) {
  const cal = await raw.timePass(minN, encodeK);
  const per0 = Math.max(cal / minN, 0.05);
  return Math.max(minN, Math.min(maxN, Math.round(targetUs / per0)));
}

/** Timed passes of `n` dispatches: calibrates n to ~`targetUs` of GPU time, then median of `reps`. */
export async function chainTime(raw, encodeK, { targetUs = 10000, maxN = 4000, minN = 8, reps = 5, warmMs = 150 } = {}) {
  const n = await chainLength(raw, encodeK, { targetUs, maxN, minN });
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

// Paired passes. A kernel's time depends on the GPU's clock, and the clock on what ran before
// (a busy GPU is clocked up; one left idle between calls is clocked down by the driver). So a
// kernel is never compared with a baseline timed at another moment: each pair is one command
// buffer holding a pass of the baseline and right after it a pass of the kernel, on the same
// buffers, and the comparison is the median of the pairs' ratios.

/**
 * A recorder of `n` calls of one kernel, each its own compute pass (as the package's `encode`
 * records a call): `record(encoder, timestampWrites)` records one call's pass, with
 * `timestampWrites` (or undefined) on it. The first call's pass writes the timestamp `first`
 * at its beginning and the last call's `first + 1` at its end.
 */
export function passPerCall(record) {
  return (encoder, n, querySet, first) => {
    for (let k = 0; k < n; k++) {
      const w = k === 0 || k === n - 1 ? { querySet } : undefined;
      if (k === 0) w.beginningOfPassWriteIndex = first;
      if (k === n - 1) w.endOfPassWriteIndex = first + 1;
      record(encoder, w);
    }
  };
}

/** A recorder of `n` dispatches in one pass between the two timestamps, `encode(pass, k)` recording the k-th (a dependent chain). */
export function onePass(encode) {
  return (encoder, n, querySet, first) => {
    const pass = encoder.beginComputePass({ timestampWrites: { querySet, beginningOfPassWriteIndex: first, endOfPassWriteIndex: first + 1 } });
    for (let k = 0; k < n; k++) encode(pass, k);
    pass.end();
  };
}

/** Raw WebGPU: one dispatch of `p` with `group` over `groups` workgroups a call, each its own pass. */
export function rawCalls(raw, p, group, groups) {
  return passPerCall((encoder, timestampWrites) => {
    const pass = encoder.beginComputePass(timestampWrites ? { timestampWrites } : undefined);
    raw.dispatch(pass, p, group, groups);
    pass.end();
  });
}

/**
 * The package's own `encode(encoder, args)` a call, the timestamps put on the pass it begins
 * (the API records a call as exactly one compute pass; anything else stops the run).
 */
export function packageCalls(norm, args) {
  return passPerCall((encoder, timestampWrites) => (timestampWrites ? encodeTimed(norm, encoder, args, timestampWrites) : norm.encode(encoder, args)));
}

/** `norm.encode(encoder, args)` with `timestampWrites` on the one compute pass it begins. */
export function encodeTimed(norm, encoder, args, timestampWrites) {
  const begin = encoder.beginComputePass;
  let passes = 0;
  encoder.beginComputePass = (d) => {
    passes++;
    return begin.call(encoder, { ...(d ?? {}), timestampWrites });
  };
  try {
    norm.encode(encoder, args);
  } finally {
    encoder.beginComputePass = begin;
  }
  if (passes !== 1) throw new Error(`encode recorded ${passes} compute passes for one call; the pair timing expects one`);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * `reps` pairs of `n` calls of `base` then `n` of `kernel` (recorders above), each pair one
 * command buffer; µs per call from GPU timestamps. `idleMs` 0: the GPU kept busy (warm-up
 * first, the pairs submitted back to back, the warm-up load going on while the clock is
 * read); `idleMs` > 0: the GPU left idle that long before each pair, so that the driver
 * chooses the clock as it does for a page. `ctx.clock` is read as each pair is submitted
 * (busy: once, while the pairs run). Resolves with { n, base, kernel (spread of µs),
 * ratio: median of kernel ÷ base, ratios, clocks }.
 */
export async function timePairs(ctx, base, kernel, { n, reps, idleMs = 0, warmMs = 500 }) {
  const { device: d, raw } = ctx;
  const querySet = d.createQuerySet({ type: "timestamp", count: 4 * reps });
  const resolve = d.createBuffer({ size: 32 * reps, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC });
  const read = d.createBuffer({ size: 32 * reps, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  // Recorded first: the package's encode costs CPU time, which must not leave the GPU idle.
  const pairs = [];
  for (let r = 0; r < reps; r++) {
    const enc = d.createCommandEncoder();
    base(enc, n, querySet, 4 * r);
    kernel(enc, n, querySet, 4 * r + 2);
    pairs.push(enc.finish());
  }
  const clocks = [];
  if (idleMs > 0) {
    await d.queue.onSubmittedWorkDone();
    for (const cb of pairs) {
      await sleep(idleMs);
      const clock = sampleClock(ctx);
      d.queue.submit([cb]);
      await d.queue.onSubmittedWorkDone();
      clocks.push(await clock);
    }
  } else {
    await raw.warm(warmMs);
    d.queue.submit(pairs);
    const clock = sampleClock(ctx);
    await raw.warmUntil(clock);
    clocks.push(await clock);
  }
  const enc = d.createCommandEncoder();
  enc.resolveQuerySet(querySet, 0, 4 * reps, resolve, 0);
  enc.copyBufferToBuffer(resolve, 0, read, 0, 32 * reps);
  d.queue.submit([enc.finish()]);
  await read.mapAsync(GPUMapMode.READ);
  const t = new BigUint64Array(read.getMappedRange().slice(0));
  read.unmap();
  for (const b of [querySet, resolve, read]) b.destroy();
  const us = (i) => Number(t[i + 1] - t[i]) / 1e3 / n;
  const b = [], k = [], ratios = [];
  for (let r = 0; r < reps; r++) {
    b.push(us(4 * r));
    k.push(us(4 * r + 2));
    ratios.push(k[r] / b[r]);
  }
  return { n, base: spread(b, n), kernel: spread(k, n), ratio: median(ratios), ratios, clocks };
}

/**
 * Calls a pass for each way of running the GPU, from one timed pass of `rec` (a recorder):
 * busy, enough to fill `passUs`; idle, `idlePassUs` (a few of a page's calls); 1 to `maxN`.
 */
export async function callsAPass(ctx, rec, { passUs, idlePassUs, maxN }) {
  const cal = await timePairs(ctx, rec, rec, { n: Math.min(8, maxN), reps: 1, warmMs: 50 });
  const perCall = Math.max(cal.base.us, 0.05);
  const fill = (us) => Math.max(1, Math.min(maxN, Math.round(us / perCall)));
  return { busy: fill(passUs), idle: fill(idlePassUs) };
}
