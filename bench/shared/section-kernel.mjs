// The `kernel` section: the package's kernels in a dependent chain, each pass right after a pass of its a + b roofline on the same buffers, and through its public API.
import { ChainBuffers, worstRelative } from "./chain-buffers.mjs";
import { clockCell } from "./clock.mjs";
import { DEFAULT_SHAPES, parseShapes } from "./options.mjs";
import { packageKernel } from "./package-kernel.mjs";
import { fmt, header, log, noRoofline, note, pct, table } from "./report.mjs";
import { chainLength, onePass, spread, timePairs } from "./timing.mjs";

export async function sectionKernel(ctx, out, { opt, num }) {
  const { norm, raw, device } = ctx;
  const shapes = parseShapes(opt.shapes ?? DEFAULT_SHAPES);
  const budgetS = num("budget-s", 1e9);
  const target = num("pass-us", ctx.kind.realGpu ? 10000 : 50000);
  const maxN = num("max-n", ctx.kind.realGpu ? 4000 : 50);
  const reps = num("reps", 5);
  header(ctx, "Kernel time in a dependent chain, each pass right after its baseline's, GPU timestamps, GPU warmed");
  const t0 = performance.now();
  const maxBinding = Math.min(device.limits.maxStorageBufferBindingSize, device.limits.maxBufferSize);
  const results = [];
  for (const [rows, hidden] of shapes) {
    const tag = `${rows}×${hidden}`;
    if ((performance.now() - t0) / 1000 > budgetS) {
      results.push({ tag, skipped: "time budget" });
      continue;
    }
    const n = rows * hidden;
    if (n * 4 > maxBinding) {
      results.push({ tag, skipped: `${n * 4} bytes > the device's binding limit ${maxBinding}` });
      continue;
    }
    note(`${tag} ...`);
    const r = { tag, rows, hidden };
    const bufs = new ChainBuffers(ctx, rows, hidden);
    const { x, res, g, beta, bias } = bufs;
    // The baselines, on the same buffers as the kernels: a + b chained, a ± b not (abSumRepeat
    // says why). One n for every pass of the shape: ~--pass-us of a + b.
    const abChain = await bufs.abChain();
    const base = { ab: onePass(abChain), abSum: onePass(await bufs.abSumRepeat()) };
    const chainN = await chainLength(raw, abChain, { targetUs: target, maxN, minN: Math.min(8, maxN) });
    bufs.restoring();

    const variants = { plain: {}, biasBeta: { bias: true, beta: true }, sum: { sum: true } };
    for (const [name, o] of Object.entries(variants)) {
      const kern = await packageKernel(ctx, rows, hidden, o, { x, r: res });
      const p = await raw.pipeline(kern.code, kern.label);
      const P = raw.params(rows, hidden, kern.lanes);
      const groups = bufs.bindPair(p, o, P);
      // First, one dispatch from the initial data against the package's own result: proves the
      // bindings and the Params block match what the package does.
      if (n <= num("check-max", 8 << 20)) {
        const y = await bufs.dispatchOnce(p, groups[0], kern.groups(rows));
        const want = await bufs.reference(norm, o);
        let worst = worstRelative(y, want.output);
        if (o.sum) worst = Math.max(worst, worstRelative(await bufs.readSum(), want.sum));
        r[`${name}Check`] = worst;
        if (!(worst <= 1e-5)) throw new Error(`${tag} ${name}: raw dispatch of the captured kernel differs from the package's result by ${worst} (relative): bindings or Params changed?`);
      }
      // Pairs: the baseline's chain of n, then the kernel's, one command buffer, GPU kept busy.
      const chain = onePass((pass, k) => raw.dispatch(pass, p, groups[k & 1], kern.groups(rows)));
      r[name] = bufs.restoring(await timePairs(ctx, o.sum ? base.abSum : base.ab, chain, { n: chainN, reps }));
      r[name].bytes = (o.sum ? 4 : 3) * n * 4 + hidden * 4 * (1 + !!o.beta + !!o.bias);
      r[name].baseBytes = (o.sum ? 4 : 3) * n * 4;
      r[name].label = kern.label;
      if (opt["keep-wgsl"]) r[name].code = kern.code;
      P.destroy();
    }

    // Through the package's public API.
    const tx = norm.upload(x), tr = norm.upload(res), tg = norm.upload(g), tbeta = norm.upload(beta), tbias = norm.upload(bias);
    for (const [name, extra] of [["pkgGpuTimePlain", {}], ["pkgGpuTimeBiasBeta", { beta: tbeta, bias: tbias }]]) {
      const repeat = Math.max(1, Math.min(10000, chainN));
      const args = { input: tx, residual: tr, gamma: tg, hidden, ...extra };
      await raw.warm(150);
      const first = await norm.gpuTime(args, repeat);
      if (first === undefined) {
        r[name] = { us: undefined, note: "gpuTime: no timestamp-query" };
        continue;
      }
      const per = [];
      for (let i = 0; i < reps; i++) per.push(((await norm.gpuTime(args, repeat)) * 1000) / repeat);
      r[name] = spread(per, repeat);
    }
    {
      // In-place calls chained through the API (each reads what the previous wrote), left in
      // flight and awaited together: wall time per call (the call's own CPU cost bounds it).
      const est = Math.max(r.plain.kernel.us, 100);
      const k = Math.max(10, Math.min(1000, Math.round(num("chain-us", 50000) / est)));
      const args = { input: tx, residual: tr, gamma: tg, hidden, inPlace: true };
      await norm.run(args);
      await raw.warm(150);
      const per = [];
      for (let i = 0; i < 3; i++) {
        const ps = [];
        const s = performance.now();
        for (let j = 0; j < k; j++) ps.push(norm.run(args));
        await Promise.all(ps);
        await device.queue.onSubmittedWorkDone(); // in-place calls resolve before the GPU is done

        per.push(((performance.now() - s) * 1000) / k);
      }
      r.pkgInPlaceChain = spread(per, k);
    }
    for (const t of [tx, tr, tg, tbeta, tbias]) t.free();
    bufs.destroy();
    results.push(r);
  }
  printKernel(ctx, results, reps);
  out.kernel = { shapes: results };
}

function printKernel(ctx, results, reps) {
  const real = ctx.kind.realGpu;
  // % roofline: (the variant's bytes ÷ its time) ÷ (the baseline's bytes ÷ its time), from the median of the pairs' time ratios.
  const roof = (x) => (real ? x.bytes / x.baseBytes / x.ratio : undefined);
  const times = (x) => (real ? `${fmt(x.ratio, 3)}×` : "—");
  log(
    "a+b: `out = a + b` (vec4 where hidden % 4 == 0, else scalar; one element per invocation, 256 per workgroup), 3 arrays moved, chained as the kernels are." +
      " a±b: `out = a + b; out2 = a - b` (2 reads, 2 writes, as sum moves them), every dispatch on the same inputs (chained it overflows)." +
      " ours: the package's own WGSL (captured from its createShaderModule, checked against its result), dispatched raw on its device." +
      " Chain: dispatch k reads the activation (and, with sum, the residual) dispatch k-1 wrote; one compute pass of n dispatches between two timestamps." +
      ` A pair = one command buffer: the baseline's pass (a+b; a±b for sum), then the kernel's, on the same buffers; ${reps} pairs back to back after a warm-up.` +
      " µs = pass / n, median over the pairs; ÷ = median over the pairs of kernel µs ÷ baseline µs." +
      " % roofline = (bytes the variant must move / its time) ÷ (the baseline's bytes / its time): plain and bias+beta move 3 arrays (+ gamma, beta, bias), sum 4." +
      " SM clock: nvidia-smi clocks.sm (and the throttle reasons) read as the pairs ran; min–max over the row.",
  );
  noRoofline(ctx);
  table(
    ["shape", "SM clock", "a+b µs", "plain µs", "plain ÷ a+b", "plain % roofline", "bias+beta µs", "bias+beta ÷ a+b", "% roofline", "a±b µs", "sum µs", "sum ÷ a±b", "sum % of a±b", "n"],
    results.map((r) =>
      r.skipped
        ? [r.tag, `skipped: ${r.skipped}`, ...Array(12).fill("")]
        : [
            r.tag,
            clockCell([r.plain, r.biasBeta, r.sum].flatMap((x) => x.clocks)),
            fmt(r.plain.base.us, 2),
            fmt(r.plain.kernel.us, 2),
            times(r.plain),
            pct(roof(r.plain)),
            fmt(r.biasBeta.kernel.us, 2),
            times(r.biasBeta),
            pct(roof(r.biasBeta)),
            fmt(r.sum.base.us, 2),
            fmt(r.sum.kernel.us, 2),
            times(r.sum),
            pct(roof(r.sum)),
            String(r.plain.n),
          ],
    ),
  );
  log(
    "\nThrough the package's public API on the same data (resident GpuTensors):" +
      " gpuTime(args, repeat) = one pass of `repeat` INDEPENDENT dispatches (all read the same inputs, write the same output), µs = pass / repeat, median of " +
      `${reps};` +
      " in-place chain = `run({inPlace: true})` calls, each reading what the previous wrote, left in flight and awaited together, then onSubmittedWorkDone: WALL µs per call (bounded below by the call's own CPU cost).",
  );
  table(
    ["shape", "gpuTime plain µs", "gpuTime plain / chain plain", "gpuTime bias+beta µs", "in-place chain wall µs/call", "calls", "max rel. diff raw vs package (plain / bias+beta / sum)", "package kernel (plain)"],
    results
      .filter((r) => !r.skipped)
      .map((r) => [
        r.tag,
        fmt(r.pkgGpuTimePlain?.us, 2),
        r.pkgGpuTimePlain?.us ? fmt(r.pkgGpuTimePlain.us / r.plain.kernel.us, 2) + "×" : "—",
        fmt(r.pkgGpuTimeBiasBeta?.us, 2),
        fmt(r.pkgInPlaceChain.us, 1),
        String(r.pkgInPlaceChain.n),
        r.plainCheck === undefined ? "not checked (large)" : [r.plainCheck, r.biasBetaCheck, r.sumCheck].map((v) => (v === 0 ? "0" : v.toExponential(1))).join(" / "),
        r.plain.label.replace(/^package \S+ /, ""),
      ]),
  );
}
