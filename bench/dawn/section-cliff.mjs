// The `cliff` section: the package at hidden 4096 across the 128 MiB cliff, beside its kernel on raw buffers and a + b.
import { packageKernel } from "../shared/package-kernel.mjs";
import { addWgsl, gammaFloats, median, randomFloats } from "../shared/raw.mjs";
import { fmt, header, log, note, table } from "../shared/report.mjs";
import { independentTime } from "../shared/timing.mjs";

export async function sectionCliff(ctx, out, { opt, num }) {
  const { norm, raw, device } = ctx;
  const hidden = num("cliff-hidden", 4096);
  const seq = (opt["cliff-rows"] ?? "4096,8191,8192,16384").split(",").map(Number);
  const maxRows = Math.max(...seq);
  const reps = num("reps", 5);
  header(ctx, `The 128 MiB cliff: hidden ${hidden}, rows ${seq.join(" → ")} in one process`);
  if (maxRows * hidden * 4 > Math.min(device.limits.maxStorageBufferBindingSize, device.limits.maxBufferSize)) {
    log(`skipped: ${maxRows}×${hidden} exceeds the device's binding limit`);
    return;
  }
  const nMax = maxRows * hidden;
  const host = { x: randomFloats(nMax, 11), r: randomFloats(nMax, 22) };
  const g = gammaFloats(hidden);
  // The first large allocations of this process: what "allocated once up front" means.
  const up = { input: raw.buffer(nMax, host.x), residual: raw.buffer(nMax, host.r), output: raw.buffer(nMax) };
  const G = raw.buffer(hidden, g), stubR = raw.buffer(4), stubW = raw.buffer(4);
  const ab = await raw.pipeline(addWgsl(hidden % 4 === 0), "a+b");
  const lanes = hidden % 4 === 0 ? 4 : 1;
  await device.queue.onSubmittedWorkDone();
  await raw.warm(500);

  /** Independent dispatches (as gpuTime records them) of the package's kernel `kern` on `b`. */
  const rawIndependent = async (kern, b, rows, repeat) => {
    const p = await raw.pipeline(kern.code, kern.label);
    const P = raw.params(rows, hidden, kern.lanes);
    const grp = raw.bind(p, { ...b, gamma: G, beta: stubR, bias: stubR, post_gamma: stubR, sum: stubW, params: P });
    const us = await independentTime(raw, repeat, reps, (pass) => raw.dispatch(pass, p, grp, kern.groups(rows)));
    P.destroy();
    return us;
  };
  const rows_ = [];
  for (const rows of seq) {
    note(`${rows} rows ...`);
    const n = rows * hidden;
    const args = { input: host.x.subarray(0, n), residual: host.r.subarray(0, n), gamma: g, hidden };
    const row = { rows, mib: (n * 4) / 2 ** 20 };
    // The package as an app calls it: run() at this size (Float32Arrays; the first one also
    // tells which kernel it dispatches), then its own timers.
    const kern = await packageKernel(ctx, rows, hidden, {}, { x: args.input, r: args.residual });
    row.kernel = kern.label;
    await norm.run(args);
    await raw.warm(200);
    // `repeat` for about 10 ms of GPU time, sized from one short timed call.
    const t4 = await norm.gpuTime(args, 4);
    const est = t4 !== undefined ? (t4 * 1000) / 4 : (await rawIndependent(kern, up, rows, 4));
    const repeat = Math.max(4, Math.min(200, Math.round(num("pass-us", 10000) / est)));
    row.repeat = repeat;
    const gt = [];
    if ((await norm.gpuTime(args, repeat)) !== undefined) {
      for (let i = 0; i < reps; i++) gt.push(((await norm.gpuTime(args, repeat)) * 1000) / repeat);
      row.pkgGpuTime = median(gt);
    }
    const slope = [];
    for (let i = 0; i < 3; i++) {
      const t1 = await norm.timeDispatches(args, 1);
      const tr = await norm.timeDispatches(args, repeat + 1);
      slope.push(((tr - t1) * 1000) / repeat);
    }
    row.pkgTimeDispatchesSlope = median(slope);
    // The same kernel on buffers allocated now (after whatever the package allocated and freed).
    const fresh = { input: raw.buffer(n, host.x), residual: raw.buffer(n, host.r), output: raw.buffer(n) };
    await raw.warm(200);
    row.rawFresh = await rawIndependent(kern, fresh, rows, repeat);
    for (const b of Object.values(fresh)) b.destroy();
    // And on the buffers allocated once up front.
    await raw.warm(200);
    row.rawUpFront = await rawIndependent(kern, up, rows, repeat);
    const abU = raw.uniform(new Uint32Array([n / lanes, 0, 0, 0]));
    const abG = raw.bind(ab, { a: up.input, b: up.residual, out: up.output, p: abU });
    row.abUpFront = await independentTime(raw, repeat, reps, (pass) => raw.dispatch(pass, ab, abG, Math.ceil(n / lanes / 256)));
    abU.destroy();
    row.stats = norm.debugStats();
    rows_.push(row);
  }
  log(
    "µs per dispatch. package gpuTime: `gpuTime(Float32Array args, repeat)` after two `run`s at that size (one to GPU tensors, one read back; GPU timestamps, one pass of `repeat` independent dispatches);" +
      " timeDispatches slope: (timeDispatches(args, repeat+1) − timeDispatches(args, 1)) / repeat, wall clock;" +
      " raw: the package's kernel (captured WGSL) dispatched `repeat` times independently on raw buffers, allocated once at the start of this process (up front) or just now (fresh).",
  );
  table(
    ["rows (MiB per array)", "package gpuTime", "package timeDispatches slope", "raw, buffers up front", "raw, fresh buffers", "a+b, up front", "package / up front", "repeat", "live/idle buffers"],
    rows_.map((r) => [
      `${r.rows} (${r.mib.toFixed(1)})`,
      fmt(r.pkgGpuTime),
      fmt(r.pkgTimeDispatchesSlope),
      fmt(r.rawUpFront),
      fmt(r.rawFresh),
      fmt(r.abUpFront),
      r.pkgGpuTime ? fmt(r.pkgGpuTime / r.rawUpFront, 2) + "×" : "—",
      String(r.repeat),
      `${r.stats.liveBuffers}/${r.stats.idleBuffers}`,
    ]),
  );
  if (!ctx.kind.realGpu) log(`NOTE: not a GPU (${ctx.kind.name}): the cliff is a GPU-memory effect and cannot show here.`);
  for (const b of [...Object.values(up), G, stubR, stubW]) b.destroy();
  out.cliff = { hidden, sequence: seq, rows: rows_ };
}
