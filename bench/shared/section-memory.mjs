// The `memory` section: what large buffers cost on this stack, on raw WebGPU only.
// `a + b` in a dependent chain (each dispatch reads what the previous wrote) over arrays of
// several sizes allocated first in the process; the same 256 MiB problem held as two buffers of
// 128 MiB per array; then the same chain on the buffers allocated first and on buffers allocated
// just then, after each of: whole-array `writeBuffer`s, the same bytes written in slices, and
// buffers of that size created and destroyed. Successive samples are printed left to right so
// that drift shows. Run it in a fresh process (or browser): it must own the first allocations.
import { addWgsl, median, randomFloats } from "./raw.mjs";
import { fmt, header, log, note, table } from "./report.mjs";

const MiB = 1 << 20;

export async function sectionMemory(ctx, out, { opt, num }) {
  const { raw, device } = ctx;
  const sizes = (opt["mem-mib"] ?? "128,192,256,384").split(",").map(Number);
  const big = num("mem-big", 256);
  const churn = num("mem-churn", 6);
  // Dawn serves a writeBuffer from its 4 MiB staging ring only below 4 MiB with alignment
  // (DynamicUploader); above that it allocates a staging buffer the size of the write.
  const slice = num("mem-slice-mib", 1);
  const samples = num("samples", 5);
  const limit = Math.min(device.limits.maxStorageBufferBindingSize, device.limits.maxBufferSize);
  header(ctx, `Large buffers: a + b chained over ${sizes.join(", ")} MiB per array; ${big} MiB after uploads and churn`);
  const fits = sizes.filter((s) => s * MiB <= limit);
  if (fits.length < sizes.length) log(`skipped sizes above the device's binding limit (${limit / MiB} MiB): ${sizes.filter((s) => !fits.includes(s)).join(", ")}`);
  const ab = await raw.pipeline(addWgsl(true), "a+b vec4");
  const host = randomFloats((big * MiB) / 4, 7);

  /** Three buffers of `mib` MiB (two activations and a residual to ping-pong), made now. */
  const triple = (mib) => [0, 1, 2].map(() => raw.buffer((mib * MiB) / 4, undefined));
  /**
   * µs per step of a chain of `a + b` over `parts` (each [x0, x1, r, floats]): every step
   * dispatches over every part; `samples` passes of `steps` steps each.
   */
  const chain = async (parts, steps = 20) => {
    const groups = parts.map(([x0, x1, r, n]) => {
      const u = raw.uniform(new Uint32Array([n / 4, 0, 0, 0]));
      return { u, g: [raw.bind(ab, { a: x0, b: r, out: x1, p: u }), raw.bind(ab, { a: x1, b: r, out: x0, p: u })], wgs: Math.ceil(n / 4 / 256) };
    });
    const encode = (pass, k) => {
      for (const p of groups) raw.dispatch(pass, ab, p.g[k & 1], p.wgs);
    };
    await raw.warm(300);
    await raw.timePass(steps, encode);
    const per = [];
    for (let i = 0; i < samples; i++) per.push((await raw.timePass(steps, encode)) / steps);
    for (const p of groups) p.u.destroy();
    return per;
  };
  const whole = (mib) => (b) => [b[0], b[1], b[2], (mib * MiB) / 4];
  const row = (label, mib, per) => {
    const us = median(per);
    return { label, mib, per, us, gbs: (3 * mib * MiB) / (us * 1e-6) / 1e9 };
  };
  const rows = [];

  // 1. Allocated first: every size, and the big size held as two halves.
  const first = Object.fromEntries(fits.map((s) => [s, triple(s)]));
  const halves = [triple(big / 2), triple(big / 2)];
  await device.queue.onSubmittedWorkDone();
  for (const s of fits) {
    note(`first allocations, ${s} MiB ...`);
    rows.push(row(`allocated first, one buffer per array`, s, await chain([whole(s)(first[s])])));
  }
  rows.push(row(`allocated first, two buffers of ${big / 2} MiB per array (two dispatches a step)`, big, await chain(halves.map(whole(big / 2)))));
  const target = first[big] ?? triple(big);

  /** Uploads of `big` MiB into `target[2]`: `churn` times, whole or in slices; ms each. */
  const upload = async (sliceMiB) => {
    const ms = [];
    for (let k = 0; k < churn; k++) {
      const t0 = performance.now();
      const step = sliceMiB ? (sliceMiB * MiB) / 4 : host.length;
      for (let off = 0; off < host.length; off += step) {
        const n = Math.min(step, host.length - off);
        device.queue.writeBuffer(target[2], off * 4, host.buffer, off * 4, n * 4);
      }
      await device.queue.onSubmittedWorkDone();
      ms.push(performance.now() - t0);
    }
    return median(ms);
  };
  const after = async (what, act) => {
    note(`${what} ...`);
    const ms = await act();
    rows.push(row(`${what}: then the buffers allocated first`, big, await chain([whole(big)(target)])));
    const fresh = triple(big);
    rows.push(row(`${what}: then buffers allocated now`, big, await chain([whole(big)(fresh)])));
    for (const b of fresh) b.destroy();
    return ms;
  };
  // 2. The same bytes written in slices (the staging stays small), then whole (one staging
  // allocation the size of the array per write, freed after), then plain allocation churn.
  const slicedMs = await after(`${churn} uploads of ${big} MiB in ${slice} MiB writeBuffers`, () => upload(slice));
  const wholeMs = await after(`${churn} uploads of ${big} MiB as one writeBuffer each`, () => upload(0));
  await after(`${churn} buffers of ${big} MiB created and destroyed`, async () => {
    for (let k = 0; k < churn; k++) {
      const b = raw.buffer((big * MiB) / 4, undefined);
      await device.queue.onSubmittedWorkDone();
      b.destroy();
    }
    await device.queue.onSubmittedWorkDone();
    return 0;
  });
  // 3. The package's own calls of that size: what an app's first call does to what follows.
  const hidden = 4096;
  const gamma = new Float32Array(hidden).fill(1);
  const args = { input: host, residual: host, gamma, hidden };
  await after(`the package's run({ output: "gpu" }) with host arrays of ${big} MiB, freed`, async () => {
    (await ctx.norm.run({ ...args, output: "gpu" })).free();
    await device.queue.onSubmittedWorkDone();
    return 0;
  });
  await after(`the package's run() with host arrays of ${big} MiB, read back`, async () => {
    await ctx.norm.run(args);
    await device.queue.onSubmittedWorkDone();
    return 0;
  });

  log(
    "µs per step of a dependent chain of `a + b` (GPU timestamps; 20 steps a pass; each sample a pass, left to right);" +
      " GB/s counts two reads and one write per element. Uploads: ms per upload of the whole array, awaited (onSubmittedWorkDone)." +
      ` Uploads of ${big} MiB: in ${slice} MiB slices ${fmt(slicedMs)} ms, whole ${fmt(wholeMs)} ms.`,
  );
  table(
    ["buffers", "MiB per array", "µs per step", "GB/s", "samples", "worst / best"],
    rows.map((r) => [r.label, String(r.mib), fmt(r.us), fmt(r.gbs, 0), r.per.map((v) => fmt(v)).join(", "), fmt(Math.max(...r.per) / Math.min(...r.per), 2) + "×"]),
  );
  if (!ctx.kind.realGpu) log(`NOTE: not a GPU (${ctx.kind.name}): memory effects of a GPU cannot show here; µs only.`);
  for (const b of [...Object.values(first).flat(), ...halves.flat()]) b.destroy();
  out.memory = { sizes: fits, big, churn, sliceMiB: slice, uploadMs: { sliced: slicedMs, whole: wholeMs }, rows };
}
