// The `family` section: the normalization family (LayerNorm, no residual, the sandwich, f16 output) through the package's gpuTime, each against the elementwise kernel that moves its bytes.
import { ChainBuffers } from "./chain-buffers.mjs";
import { parseShapes } from "./options.mjs";
import { randomFloats } from "./raw.mjs";
import { fmt, header, log, note, pct, table } from "./report.mjs";
import { spread } from "./timing.mjs";

// Decode, prefill and QK-norm's shapes (65536 heads of 128, 131072 of 64: 8M elements each).
const FAMILY_SHAPES = "1x896,1x4096,16x4096,2048x4096,8192x4096,65536x128,131072x64";

/**
 * Each variant: its extra arguments (on resident tensors `t`), the bytes it must move per
 * call, as arrays of n f32 (`arrays`) and of n f16 (`halves`), and the elementwise kernel that
 * moves the same bytes (its roofline): `a + b`, `out = a`, or `f16(a + b)`.
 */
const VARIANTS = [
  ["rms (plain)", (t) => ({ residual: t.res }), { arrays: 3 }, "ab"],
  ["rms, no residual", () => ({}), { arrays: 2 }, "copy"],
  ["rms, f16 output", (t) => ({ residual: t.res, outputDtype: "f16" }), { arrays: 2, halves: 1 }, "half"],
  ["layer + bias + beta", (t) => ({ residual: t.res, kind: "layer", bias: t.bias, beta: t.beta }), { arrays: 3 }, "ab"],
  ["sandwich (Gemma)", (t) => ({ residual: t.res, postGamma: t.post, gammaOffset: 1 }), { arrays: 3 }, "ab"],
  ["layer sandwich", (t) => ({ residual: t.res, kind: "layer", postGamma: t.post, beta: t.beta }), { arrays: 3 }, "ab"],
];
const BASELINES = [
  ["ab", "a+b µs"],
  ["copy", "out=a µs"],
  ["half", "f16(a+b) µs"],
];

/** `kernelSource`'s description of the kernel a call with `args` (on tensors) runs for `rows`. */
function kernelOf(args, rows) {
  const k = { hidden: args.hidden, rows, residual: !!args.residual, bias: !!args.bias, beta: !!args.beta, postGamma: !!args.postGamma };
  for (const key of ["kind", "gammaOffset", "outputDtype"]) if (args[key] !== undefined) k[key] = args[key];
  return k;
}

export async function sectionFamily(ctx, out, { opt, num }) {
  const { norm, raw } = ctx;
  const shapes = parseShapes(opt.shapes ?? FAMILY_SHAPES);
  const target = num("pass-us", ctx.kind.realGpu ? 10000 : 50000);
  const maxN = num("max-n", ctx.kind.realGpu ? 4000 : 50);
  const reps = num("reps", 5);
  header(ctx, "The normalization family: gpuTime of the package against the a + b chain");
  const results = [];
  const wgsl = {};
  for (const [rows, hidden] of shapes) {
    const tag = `${rows}×${hidden}`;
    note(`${tag} ...`);
    const n = rows * hidden;
    const bufs = new ChainBuffers(ctx, rows, hidden);
    const chain = { targetUs: target, maxN, reps };
    const ab = await bufs.addChain(chain);
    const base = { ab: { ...ab, bytes: 3 * n * 4 } };
    base.copy = { ...(await bufs.copyChain(chain)), bytes: 2 * n * 4 };
    const half = await bufs.addHalfChain(chain);
    if (half) base.half = { ...half, bytes: 2 * n * 4 + n * 2 };
    const t = {
      x: norm.upload(bufs.x),
      res: norm.upload(bufs.res),
      g: norm.upload(bufs.g),
      beta: norm.upload(bufs.beta),
      bias: norm.upload(bufs.bias),
      post: norm.upload(randomFloats(hidden, 6)),
    };
    const r = { tag, ab: base.ab, base, variants: {} };
    for (const [name, extra, moves, baseline] of VARIANTS) {
      const args = { input: t.x, gamma: t.g, hidden, ...extra(t) };
      // As many independent dispatches as the a + b chain needed for its pass length.
      const repeat = Math.max(1, Math.min(10000, ab.n));
      await raw.warm(150);
      const first = await norm.gpuTime(args, repeat);
      if (first === undefined) throw new Error("gpuTime: no timestamp-query on this device");
      const per = [];
      for (let i = 0; i < reps; i++) per.push(((await norm.gpuTime(args, repeat)) * 1000) / repeat);
      r.variants[name] = { ...spread(per, repeat), bytes: n * (4 * moves.arrays + 2 * (moves.halves ?? 0)), baseline };
      // `--dump-wgsl 1`: the WGSL the package dispatched for this shape and variant, in the JSON
      // (family.wgsl["rows×hidden name"]), so that two builds' kernels can be compared.
      if (opt["dump-wgsl"]) wgsl[`${tag} ${name}`] = norm.kernelSource(kernelOf(args, rows)).code;
    }
    for (const v of Object.values(t)) v.free();
    bufs.destroy();
    results.push(r);
  }
  const real = ctx.kind.realGpu;
  log(
    "Baselines, chained (dispatch k reads what k-1 wrote; f16(a+b) independent, its output another dtype), µs = pass / n, median of " +
      `${reps}: \`out = a + b\` (3 arrays), \`out = a\` (2), \`out = f16(a + b)\` (2 f32 arrays and one f16). Each variant: gpuTime(args, repeat) on resident tensors, \`repeat\` INDEPENDENT dispatches in one pass, µs = pass / repeat, median of ${reps}.` +
      " % roofline = the µs of the baseline that moves the variant's bytes ÷ the variant's µs (no residual: out = a; f16 output: f16(a + b); the rest a + b).",
  );
  if (!real) log(`NO ROOFLINE CLAIMS: a CPU adapter (${ctx.kind.name}); µs only.`);
  const names = VARIANTS.map(([name]) => name);
  table(
    ["shape", ...BASELINES.map(([, label]) => label), ...names.flatMap((name) => [`${name} µs`, "%"])],
    results.map((r) => [
      r.tag,
      ...BASELINES.map(([key]) => (r.base[key] ? fmt(r.base[key].us, 2) : "—")),
      ...names.flatMap((name) => {
        const m = r.variants[name];
        const b = r.base[m.baseline];
        return [fmt(m.us, 2), real && b ? pct(b.us / m.us) : "—"];
      }),
    ]),
  );
  out.family = { shapes: results, ...(opt["dump-wgsl"] ? { wgsl } : {}) };
}
