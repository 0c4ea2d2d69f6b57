// The `family` section: each variant of the normalization family timed right after the elementwise kernel that moves its bytes, on the same buffers, with the GPU kept busy and at the clock the driver chooses; at decode, the family against the plain kernel.
import { clockCell } from "./clock.mjs";
import { parseShapes } from "./options.mjs";
import { addHalfWgsl, addRowsWgsl, addWgsl, copyWgsl, randomFloats } from "./raw.mjs";
import { fmt, header, log, noRoofline, note, pct, table } from "./report.mjs";
import { callsAPass, packageCalls, rawCalls, timePairs } from "./timing.mjs";

// Decode, prefill and QK-norm's shapes (65536 heads of 128, 131072 of 64: 8M elements each).
const FAMILY_SHAPES = "1x896,1x4096,16x4096,2048x4096,8192x4096,65536x128,131072x64";
const DECODE_ROWS = 64; // shapes of at most this many rows get the decode table
const LARGE = 8 << 20; // shapes of at least this many elements are held to `floor`

/**
 * Each variant: its key and label, its extra arguments (on resident tensors `t`), whether its
 * output is f16, and the elementwise kernel that moves the same bytes: `a + b` (input and
 * residual read, output written), `out = a` (no residual), `f16(a + b)` (f16 output).
 */
const VARIANTS = [
  { key: "rms", label: "rms", extra: (t) => ({ residual: t.res }), base: "ab" },
  { key: "noResidual", label: "rms, no residual", extra: () => ({}), base: "copy" },
  { key: "f16", label: "rms, f16 output", extra: (t) => ({ residual: t.res, outputDtype: "f16" }), f16: true, base: "half" },
  { key: "layer", label: "layer + bias + beta", extra: (t) => ({ residual: t.res, kind: "layer", bias: t.bias, beta: t.beta }), base: "ab" },
  { key: "sandwich", label: "sandwich (Gemma)", extra: (t) => ({ residual: t.res, postGamma: t.post, gammaOffset: 1 }), base: "ab" },
  { key: "layerSandwich", label: "layer sandwich", extra: (t) => ({ residual: t.res, kind: "layer", postGamma: t.post, beta: t.beta }), base: "ab" },
  // QK-norm then RoPE: heads of 128 (or the row), a position a row, the model's frequencies.
  { key: "rope", label: "rms, no residual, RoPE", extra: (t) => ({ ...t.rope }), base: "copy" },
];
const BASE_LABEL = { ab: "a+b", copy: "out=a", half: "f16(a+b)", rows: "a+b, a workgroup a row" };

/**
 * The two ways the GPU is run. busy: passes back to back after a warm-up, the load going on
 * while the clock is read. idle: `--idle-ms` of nothing before each pair, as a page that
 * uploads and reads back between calls leaves the GPU, so that the driver lowers the clock.
 * `floor`: the least share of its baseline a variant must reach at LARGE shapes.
 */
const MODES = [
  { key: "busy", title: "GPU kept busy", floor: 0.95 },
  { key: "idle", title: "driver-chosen clock", floor: 0.9 },
];
const DECODE_CEILING = 1.3; // a variant ÷ the plain kernel at decode

/** `kernelSource`'s description of the kernel a call with `args` (on tensors) runs for `rows`. */
function kernelOf(args, rows) {
  const k = { hidden: args.hidden, rows, residual: !!args.residual, bias: !!args.bias, beta: !!args.beta, postGamma: !!args.postGamma };
  for (const key of ["kind", "gammaOffset", "outputDtype", "headSize"]) if (args[key] !== undefined) k[key] = args[key];
  if (args.invFreq) k.rotaryDim = 2 * args.invFreq.length;
  return k;
}

/** One shape's resident tensors, its recorders (the baselines' raw dispatches and the package's encode of each variant), and what to pair. */
async function shapeKit(ctx, rows, hidden, only) {
  const { norm, raw } = ctx;
  const n = rows * hidden;
  const lanes = hidden % 4 === 0 ? 4 : 1;
  const t = {
    x: norm.upload(randomFloats(n, 11)),
    res: norm.upload(randomFloats(n, 22)),
    g: norm.upload(randomFloats(hidden, 3).map((v) => 1 + 0.1 * v)),
    beta: norm.upload(randomFloats(hidden, 4).map((v) => 0.1 * v)),
    bias: norm.upload(randomFloats(hidden, 5).map((v) => 0.1 * v)),
    post: norm.upload(randomFloats(hidden, 6)),
    out: norm.upload(new Float32Array(n)),
  };
  const headSize = Math.min(hidden, 128);
  t.rope = {
    headSize,
    positions: Int32Array.from({ length: rows }, (_, r) => 4096 + r),
    invFreq: Float32Array.from({ length: headSize / 2 }, (_, k) => Math.fround(1e6 ** (-2 * k / headSize))),
  };
  const uniforms = [raw.uniform(new Uint32Array([n / lanes, 0, 0, 0])), raw.uniform(new Uint32Array([rows, hidden / lanes, 0, 0]))];
  const [flat, perRow] = uniforms;
  const groups = Math.ceil(n / lanes / 256);
  const ab = await raw.pipeline(addWgsl(lanes === 4), `a+b vec${lanes}`);
  const copy = await raw.pipeline(copyWgsl(lanes === 4), `out=a vec${lanes}`);
  const byRow = await raw.pipeline(addRowsWgsl(lanes === 4), `a+b a row vec${lanes}`);
  // Every baseline reads the variant's input (and residual) and writes its output.
  const rec = {
    ab: rawCalls(raw, ab, raw.bind(ab, { a: t.x.buffer, b: t.res.buffer, out: t.out.buffer, p: flat }), groups),
    copy: rawCalls(raw, copy, raw.bind(copy, { a: t.x.buffer, out: t.out.buffer, p: flat }), groups),
    rows: rawCalls(raw, byRow, raw.bind(byRow, { a: t.x.buffer, b: t.res.buffer, out: t.out.buffer, p: perRow }), rows),
  };
  if (lanes === 4) {
    t.out16 = norm.upload(new Uint16Array(n), { dtype: "f16" });
    const half = await raw.pipeline(addHalfWgsl(), "f16(a+b) vec4");
    rec.half = rawCalls(raw, half, raw.bind(half, { a: t.x.buffer, b: t.res.buffer, out: t.out16.buffer, p: flat }), groups);
  }
  const variants = VARIANTS.filter((v) => rec[v.base] && (!only || only.includes(v.key)));
  const args = {};
  for (const v of variants) {
    args[v.key] = { input: t.x, gamma: t.g, hidden, ...v.extra(t), output: v.f16 ? t.out16 : t.out };
    rec[v.key] = packageCalls(norm, args[v.key]);
  }
  // Each pair: [what it is called, the baseline's recorder key, the variant's].
  const pairs = variants.map((v) => [v.key, v.base, v.key]);
  if (rows <= DECODE_ROWS) {
    pairs.push(["rms/rows", "rows", "rms"]);
    for (const v of variants.filter((v) => v.key !== "rms")) pairs.push([`${v.key}/rms`, "rms", v.key]);
  }
  if (rec.rope && rec.noResidual) pairs.push(["rope/noResidual", "noResidual", "rope"]);
  const free = () => {
    for (const x of Object.values(t)) x.free?.();
    for (const u of uniforms) u.destroy();
  };
  return { rec, pairs, args, variants, free };
}

export async function sectionFamily(ctx, out, { opt, num }) {
  const { norm } = ctx;
  const shapes = parseShapes(opt.shapes ?? FAMILY_SHAPES);
  const real = ctx.kind.realGpu;
  const passUs = num("pass-us", real ? 10000 : 50000);
  const idlePassUs = num("idle-pass-us", 250);
  const maxN = num("max-n", real ? 4000 : 50);
  const reps = { busy: num("reps", 5), idle: num("idle-reps", 7) };
  const idleMs = num("idle-ms", 150);
  const settleMs = num("settle-ms", 1000);
  header(ctx, "The normalization family, each pass right after its elementwise baseline's, with the GPU kept busy and at the driver's clock");
  const results = [];
  const wgsl = {};
  for (const [rows, hidden] of shapes) {
    const tag = `${rows}×${hidden}`;
    const kit = await shapeKit(ctx, rows, hidden, opt.variants?.split(","));
    const n = await callsAPass(ctx, kit.rec.ab, { passUs, idlePassUs, maxN });
    const r = { tag, rows, hidden, n, busy: {}, idle: {} };
    for (const mode of MODES) {
      // The clock follows the load with a lag: the busy pairs' clock must have fallen before
      // the first idle pair, and risen again (timePairs' warm-up) before the next busy one.
      if (mode.key === "idle") await new Promise((r) => setTimeout(r, settleMs));
      note(`${tag} ${mode.title}: ${kit.pairs.length} comparisons, ${n[mode.key]} calls a pass, ${reps[mode.key]} pairs each`);
      for (const [name, base, kernel] of kit.pairs) {
        const idle = mode.key === "idle" ? idleMs : 0;
        r[mode.key][name] = await timePairs(ctx, kit.rec[base], kit.rec[kernel], { n: n[mode.key], reps: reps[mode.key], idleMs: idle });
      }
    }
    // `--dump-wgsl 1`: the WGSL the package dispatched for this shape and variant, in the JSON
    // (family.wgsl["rows×hidden key"]), so that two builds' kernels can be compared.
    if (opt["dump-wgsl"]) for (const v of kit.variants) wgsl[`${tag} ${v.key}`] = norm.kernelSource(kernelOf(kit.args[v.key], rows)).code;
    kit.free();
    results.push(r);
  }
  printFamily(ctx, results, { reps, idleMs, passUs, idlePassUs });
  out.family = { shapes: results, reps, idleMs, passUs, idlePassUs, ...(opt["dump-wgsl"] ? { wgsl } : {}) };
}

function printFamily(ctx, results, { reps, idleMs, passUs, idlePassUs }) {
  const real = ctx.kind.realGpu;
  log(
    "Each variant: the package's own `encode` into an app's encoder, on resident tensors (input, residual, gamma, …; output a tensor), one compute pass a call, `n` calls of the same inputs." +
      " Its baseline: the elementwise kernel that moves the same bytes, on the same buffers (reads the variant's input and residual, writes its output), one pass a call, `n` calls:" +
      " `a + b` (3 arrays), `out = a` for no residual (2), `f16(a + b)` for f16 output (2 f32 and one f16)." +
      " A pair = one command buffer: the baseline's n calls, then the variant's n calls, each span between GPU timestamps. % = median over the pairs of (baseline µs ÷ variant µs); µs = the variant's median per call." +
      ` GPU kept busy: ${reps.busy} pairs back to back after a warm-up, n for ~${passUs} µs of a+b. Driver-chosen clock: ${reps.idle} pairs, ${idleMs} ms idle before each, n for ~${idlePassUs} µs of a+b.` +
      " SM clock: nvidia-smi clocks.sm (and the throttle reasons) read as the pairs ran; min–max over the row.",
  );
  noRoofline(ctx);
  const variants = VARIANTS.map((v) => v.key).filter((k) => results.some((r) => r.busy[k]));
  const label = Object.fromEntries(VARIANTS.map((v) => [v.key, v.label]));
  const rel = (x) => (real && x ? pct(1 / x.ratio) : "—");
  const times = (x) => (real && x ? `${fmt(x.ratio, 2)}×` : "—");
  for (const mode of MODES) {
    const m = mode.key;
    const clocks = (r) => clockCell(Object.values(r[m]).flatMap((x) => x.clocks));
    log(`\n### ${mode.title}: each variant against its elementwise baseline (target at 8M elements or more: ≥ ${pct(mode.floor)})`);
    table(
      ["shape", "SM clock", "calls a pass", ...variants.map((k) => `${label[k]} (vs ${BASE_LABEL[VARIANTS.find((v) => v.key === k).base]})`)],
      results.map((r) => [r.tag, clocks(r), String(r.n[m]), ...variants.map((k) => (r[m][k] ? `${rel(r[m][k])} · ${fmt(r[m][k].kernel.us, 2)} µs` : "—"))]),
    );
    const below = results.flatMap((r) =>
      r.rows * r.hidden >= LARGE ? variants.filter((k) => r[m][k] && 1 / r[m][k].ratio < mode.floor).map((k) => `${label[k]} at ${r.tag} (${pct(1 / r[m][k].ratio)})`) : [],
    );
    if (real) log(`Below ${pct(mode.floor)} at 8M elements or more: ${below.length ? below.join("; ") : "none"}.`);
    log(`\n${mode.title}: RoPE after the norm ÷ the same norm alone (median of pair ratios): ${results.map((r) => `${r.tag} ${times(r[m]["rope/noResidual"])}`).join(", ")}`);
    const decode = results.filter((r) => r.rows <= DECODE_ROWS);
    if (!decode.length) continue;
    log(`\n### ${mode.title}, decode: rms against a+b (whole GPU) and a+b with one workgroup of 256 a row (target ≤ 1.00×); each variant against rms (target ≤ ${fmt(DECODE_CEILING, 1)}×); medians of pair ratios`);
    table(
      ["shape", "SM clock", "rms µs", "a+b µs", "rms ÷ a+b", "a+b a row µs", "rms ÷ a+b a row", ...variants.filter((k) => k !== "rms").map((k) => `${label[k]} ÷ rms`)],
      decode.map((r) => [
        r.tag,
        clocks(r),
        fmt(r[m].rms.kernel.us, 2),
        fmt(r[m].rms.base.us, 2),
        times(r[m].rms),
        fmt(r[m]["rms/rows"].base.us, 2),
        times(r[m]["rms/rows"]),
        ...variants.filter((k) => k !== "rms").map((k) => times(r[m][`${k}/rms`])),
      ]),
    );
  }
}
