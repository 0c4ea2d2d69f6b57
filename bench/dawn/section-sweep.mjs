// The `sweep` section: kernel variants from a JSON list (--wgsl FILE), each checked, then timed in the `kernel` section's chain.
import { readFileSync } from "node:fs";
import { ChainBuffers, worstRelative } from "../shared/chain-buffers.mjs";
import { parseShapes } from "../shared/options.mjs";
import { constantsOf } from "../shared/raw.mjs";
import { fmt, header, log, note, pct, table } from "../shared/report.mjs";
import { chainTime } from "../shared/timing.mjs";

export async function sectionSweep(ctx, out, { opt, num }) {
  const { norm, raw, device } = ctx;
  if (!opt.wgsl) throw new Error("sweep: --wgsl FILE is required (cargo run --release --example bench -- --emit-wgsl FILE --sweep ...)");
  const all = JSON.parse(readFileSync(opt.wgsl, "utf8"));
  const shapes = parseShapes(opt.shapes ?? "1x896,1x4096,16x4096,128x4096");
  const wanted = new Set((opt["sweep-options"] ?? "plain").split(","));
  const reps = num("reps", 5);
  const target = num("pass-us", ctx.kind.realGpu ? 10000 : 50000);
  const maxN = num("max-n", ctx.kind.realGpu ? 4000 : 50);
  const maxWg = device.limits.maxComputeInvocationsPerWorkgroup;
  header(ctx, `Variant sweep in a dependent chain (${opt.wgsl}), GPU timestamps, GPU warmed`);
  const flags = { plain: {}, "bias+beta": { bias: true, beta: true }, sum: { sum: true } };
  const results = [];
  for (const [rows, hidden] of shapes) {
    const tag = `${rows}×${hidden}`;
    const n = rows * hidden;
    const bufs = new ChainBuffers(ctx, rows, hidden);
    const abT = await bufs.addChain({ targetUs: target, maxN, reps, warmMs: 100 });
    note(`${tag}: a+b ${fmt(abT.us, 2)} µs`);
    for (const [name, o] of Object.entries(flags)) {
      if (!wanted.has(name)) continue;
      const cands = all.filter((c) => c.hidden === hidden && c.options === name);
      if (!cands.length) continue;
      const want = n <= num("check-max", 8 << 20) ? await bufs.reference(norm, o) : null;
      for (const c of cands) {
        const consts = constantsOf(c.code);
        const r = { tag, rows, hidden, options: name, knobs: c.knobs, chosen: c.chosen, abUs: abT.us };
        if (consts.WG > maxWg) {
          results.push({ ...r, skipped: `wg ${consts.WG} > device limit ${maxWg}` });
          continue;
        }
        const p = await raw.pipeline(c.code, `${tag} ${name} ${c.knobs}`);
        // A variant may own several rows per workgroup (its ROWS constant), or spread a row
        // over several (SPLIT).
        const workgroups = Math.ceil(rows / (consts.ROWS ?? 1)) * (consts.SPLIT ?? 1);
        const P = raw.params(rows, hidden, consts.lanes);
        const groups = bufs.bindPair(p, o, P);
        // A `nocheck` variant is a bound, not a kernel (experimental-variants.mjs --floor).
        if (want && !c.nocheck) {
          const y = await bufs.dispatchOnce(p, groups[0], workgroups);
          // Relative to the terms of y = v·post·gamma + beta, not to y alone: with beta, y
          // can cancel to near zero, and a variant that sums the row in another order
          // (rounding differently in the last place) would look wrong there.
          let worst = worstRelative(y, want.output, (i) => Math.abs(want.output[i]) + (o.beta ? 2 * Math.abs(bufs.beta[i % hidden]) : 0) + 1e-6);
          if (o.sum) worst = Math.max(worst, worstRelative(await bufs.readSum(), want.sum));
          r.check = worst;
          if (!(worst <= 1e-5)) {
            results.push({ ...r, skipped: `FAILED check: ${worst}` });
            P.destroy();
            continue;
          }
        }
        const t = await chainTime(raw, (pass, k) => raw.dispatch(pass, p, groups[k & 1], workgroups), { targetUs: target, maxN, reps, warmMs: 100 });
        r.us = t.us;
        r.min = t.min;
        r.max = t.max;
        r.bytes = (o.sum ? 4 : 3) * n * 4;
        r.roof = ctx.kind.realGpu ? r.bytes / t.us / ((3 * n * 4) / abT.us) : undefined;
        results.push(r);
        P.destroy();
      }
    }
    bufs.destroy();
  }
  log("µs per dispatch in a dependent chain (as `kernel`); each shape's variants fastest first; * = the variant the emitting build chose. % roofline as in `kernel`.");
  const groups = new Map();
  for (const r of results) {
    const k = `${r.tag} ${r.options}`;
    if (!groups.has(k)) groups.set(k, []);
    groups.get(k).push(r);
  }
  for (const [k, rs] of groups) {
    log(`\n### ${k} (a+b ${fmt(rs[0].abUs, 2)} µs)`);
    rs.sort((a, b) => (a.us ?? Infinity) - (b.us ?? Infinity));
    table(["variant", "µs", "min–max", "/ a+b", "% roofline"], rs.map((r) => [`${r.chosen ? "* " : ""}${r.knobs}`, r.skipped ?? fmt(r.us, 2), r.skipped ? "" : `${fmt(r.min, 2)}–${fmt(r.max, 2)}`, r.us ? fmt(r.us / r.abUs, 2) + "×" : "—", pct(r.roof)]));
  }
  out.sweep = { file: opt.wgsl, results };
}
