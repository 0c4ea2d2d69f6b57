// The `family` section: the normalization family (LayerNorm, no residual, the sandwich, f16 output) through the package's gpuTime, against the a + b roofline.
import { ChainBuffers } from "./chain-buffers.mjs";
import { parseShapes } from "./options.mjs";
import { randomFloats } from "./raw.mjs";
import { fmt, header, log, note, pct, table } from "./report.mjs";
import { spread } from "./timing.mjs";

// Decode, prefill and QK-norm's shapes (65536 heads of 128, 131072 of 64: 8M elements each).
const FAMILY_SHAPES = "1x896,1x4096,16x4096,2048x4096,8192x4096,65536x128,131072x64";

/**
 * Each variant: its extra arguments (on resident tensors `t`) and the bytes it must move per
 * call, as arrays of n f32 (`arrays`) and of n f16 (`halves`).
 */
const VARIANTS = [
  ["rms (plain)", (t) => ({ residual: t.res }), { arrays: 3 }],
  ["rms, no residual", () => ({}), { arrays: 2 }],
  ["rms, f16 output", (t) => ({ residual: t.res, outputDtype: "f16" }), { arrays: 2, halves: 1 }],
  ["layer + bias + beta", (t) => ({ residual: t.res, kind: "layer", bias: t.bias, beta: t.beta }), { arrays: 3 }],
  ["sandwich (Gemma)", (t) => ({ residual: t.res, postGamma: t.post, gammaOffset: 1 }), { arrays: 3 }],
  ["layer sandwich", (t) => ({ residual: t.res, kind: "layer", postGamma: t.post, beta: t.beta }), { arrays: 3 }],
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
    const ab = await bufs.addChain({ targetUs: target, maxN, reps });
    const t = {
      x: norm.upload(bufs.x),
      res: norm.upload(bufs.res),
      g: norm.upload(bufs.g),
      beta: norm.upload(bufs.beta),
      bias: norm.upload(bufs.bias),
      post: norm.upload(randomFloats(hidden, 6)),
    };
    const r = { tag, ab: { ...ab, bytes: 3 * n * 4 }, variants: {} };
    for (const [name, extra, moves] of VARIANTS) {
      const args = { input: t.x, gamma: t.g, hidden, ...extra(t) };
      // As many independent dispatches as the a + b chain needed for its pass length.
      const repeat = Math.max(1, Math.min(10000, ab.n));
      await raw.warm(150);
      const first = await norm.gpuTime(args, repeat);
      if (first === undefined) throw new Error("gpuTime: no timestamp-query on this device");
      const per = [];
      for (let i = 0; i < reps; i++) per.push(((await norm.gpuTime(args, repeat)) * 1000) / repeat);
      r.variants[name] = { ...spread(per, repeat), bytes: n * (4 * moves.arrays + 2 * (moves.halves ?? 0)) };
      // `--dump-wgsl 1`: the WGSL the package dispatched for this shape and variant, in the JSON
      // (family.wgsl["rows×hidden name"]), so that two builds' kernels can be compared.
      if (opt["dump-wgsl"]) wgsl[`${tag} ${name}`] = norm.kernelSource(kernelOf(args, rows)).code;
    }
    for (const v of Object.values(t)) v.free();
    bufs.destroy();
    results.push(r);
  }
  const real = ctx.kind.realGpu;
  const bw = (m) => m.bytes / m.us;
  log(
    "a+b: `out = a + b` chained (dispatch k reads what k-1 wrote), µs = pass / n, median of " +
      `${reps}. Each variant: gpuTime(args, repeat) on resident tensors, \`repeat\` INDEPENDENT dispatches in one pass, µs = pass / repeat, median of ${reps}.` +
      " % roofline = (bytes the variant must move / its µs) ÷ (a+b's 3 arrays / its µs): 3 arrays with a residual (2 read, 1 written), 2 without, an f16 output half an array.",
  );
  if (!real) log(`NO ROOFLINE CLAIMS: a CPU adapter (${ctx.kind.name}); µs only.`);
  const names = VARIANTS.map(([name]) => name);
  table(
    ["shape", "a+b µs", ...names.flatMap((name) => [`${name} µs`, "%"])],
    results.map((r) => [
      r.tag,
      fmt(r.ab.us, 2),
      ...names.flatMap((name) => {
        const m = r.variants[name];
        return [fmt(m.us, 2), real ? pct(bw(m) / bw(r.ab)) : "—"];
      }),
    ]),
  );
  out.family = { shapes: results, ...(opt["dump-wgsl"] ? { wgsl } : {}) };
}
