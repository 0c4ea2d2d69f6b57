// The `rotary` section: q and k normalized and turned in one dispatch (a packed qkv row, in place), each pass right after a baseline's, with the GPU kept busy and at the driver's clock.
// The baselines: the elementwise kernel that moves q and k's bytes (`out = a`), the same norm
// without the turn (what the stage adds), and the path an app writes without the stage: the
// QK-norm of q and of k, then a rotary pass of its own for each (four passes a step).
import { plainPasses } from "../../www/decoder/plain.js";
import { clockCell } from "./clock.mjs";
import { copyWgsl, randomFloats } from "./raw.mjs";
import { fmt, header, log, noRoofline, note, pct, table } from "./report.mjs";
import { callsAPass, encodeTimed, packageCalls, rawCalls, timePairs } from "./timing.mjs";

// Tokens × (q heads + k heads) × head size: Llama-3-8B-like and Qwen3-like prefill, Gemma-like
// heads of 256, and each at decode (one token). Each token also has k heads of v, passed.
const ROTARY_SHAPES = "2048x32+8x128,4096x16+8x128,2048x16+8x256,1x32+8x128,1x16+8x128,1x16+8x256";
const MODES = [
  { key: "busy", title: "GPU kept busy" },
  { key: "idle", title: "driver-chosen clock" },
];
const FLOOR = 0.95; // fused ÷ `out = a` at prefill
const DECODE_CEILING = 1.2; // fused ÷ the QK-norm alone at decode

function parseRotaryShapes(s) {
  return s.split(",").filter(Boolean).map((t) => {
    const m = /^(\d+)x(\d+)\+(\d+)x(\d+)$/.exec(t.trim());
    if (!m) throw new Error(`--shapes: bad shape ${t} (want TOKENSxQ+KxHEAD, e.g. 2048x32+8x128)`);
    const [tokens, q, k, d] = m.slice(1).map(Number);
    return { tag: `${tokens}×(${q}+${k})×${d}`, tokens, q, k, d };
  });
}

/** A recorder of `n` steps, each the package's QK-norm of q and of k then a rotary pass of each (timestamps at the first pass's beginning and the last's end). */
function unfusedCalls(norm, normArgs, rotaries) {
  return (encoder, n, querySet, at) => {
    for (let s = 0; s < n; s++) {
      if (s === 0) encodeTimed(norm, encoder, normArgs[0], { querySet, beginningOfPassWriteIndex: at });
      else norm.encode(encoder, normArgs[0]);
      norm.encode(encoder, normArgs[1]);
      rotaries.forEach(({ pipeline, group, grid }, i) => {
        const last = s === n - 1 && i === rotaries.length - 1;
        const pass = encoder.beginComputePass(last ? { timestampWrites: { querySet, endOfPassWriteIndex: at + 1 } } : undefined);
        pass.setPipeline(pipeline);
        pass.setBindGroup(0, group);
        pass.dispatchWorkgroups(grid);
        pass.end();
      });
    }
  };
}

/** One shape's tensors, buffers and recorders. */
async function shapeKit(ctx, { tokens, q, k, d }) {
  const { norm, raw } = ctx;
  const plain = plainPasses(ctx.device);
  const heads = q + 2 * k;
  const invFreq = Float32Array.from({ length: d / 2 }, (_, i) => Math.fround(1e6 ** ((-2 * i) / d)));
  const positions = Int32Array.from({ length: tokens }, (_, t) => 4096 + t);
  const where = tokens === 1 ? { position: 4096 } : { positions };
  const qk = tokens * (q + k) * d;
  const gammaOf = (hs, seed) => randomFloats(hs * d, seed).map((v) => 1 + 0.1 * v);
  const t = {
    qkv: norm.upload(randomFloats(tokens * heads * d, 11)),
    gammaHeads: norm.upload(gammaOf(q + k, 3)),
    gamma: norm.upload(gammaOf(1, 4)),
    qk: norm.upload(randomFloats(qk, 12)),
    out: norm.upload(new Float32Array(qk)),
    q: norm.upload(randomFloats(tokens * q * d, 13)),
    k: norm.upload(randomFloats(tokens * k * d, 14)),
  };
  const stage = { hidden: d, eps: 1e-6, inPlace: true, invFreq, ...where };
  const fused = { ...stage, input: t.qkv, gamma: t.gammaHeads, heads, passHeads: k };
  const qkNorm = { input: t.qk, gamma: t.gamma, hidden: d, eps: 1e-6, inPlace: true };
  const copy = await raw.pipeline(copyWgsl(true), "out=a vec4");
  const uniforms = [raw.uniform(new Uint32Array([qk / 4, 0, 0, 0]))];
  // The app's rotary pass: www/decoder's plain one (a thread a pair, WGSL's cos and sin), its
  // tokens' positions consecutive from the first.
  const pos = raw.buffer(4, new Float32Array(new Int32Array([positions[0], 0, 0, 0]).buffer));
  const freq = raw.buffer(d / 2, invFreq);
  const rotaries = [
    [t.q, q],
    [t.k, k],
  ].map(([x, hs]) => plain.bindRope({ qkv: x.buffer, invFreq: freq, pos, tokens, heads: hs, turned: hs, d }));
  const alone = { hidden: d, eps: 1e-6, inPlace: true };
  const normArgs = [
    { ...alone, input: t.q, gamma: t.gamma },
    { ...alone, input: t.k, gamma: t.gamma },
  ];
  const rec = {
    copy: rawCalls(raw, copy, raw.bind(copy, { a: t.qk.buffer, out: t.out.buffer, p: uniforms[0] }), Math.ceil(qk / 4 / 256)),
    fused: packageCalls(norm, fused),
    qkNorm: packageCalls(norm, qkNorm),
    unfused: unfusedCalls(norm, normArgs, rotaries),
  };
  const free = () => {
    for (const x of Object.values(t)) x.free();
    for (const b of [...uniforms, pos, freq]) b.destroy();
  };
  return { rec, free };
}

// Each comparison: [name, baseline, kernel].
const PAIRS = [
  ["fused/copy", "copy", "fused"],
  ["fused/qkNorm", "qkNorm", "fused"],
  ["fused/unfused", "unfused", "fused"],
];

export async function sectionRotary(ctx, out, { opt, num }) {
  const shapes = parseRotaryShapes(opt.shapes ?? ROTARY_SHAPES);
  const real = ctx.kind.realGpu;
  const reps = { busy: num("reps", 5), idle: num("idle-reps", 7) };
  const passUs = num("pass-us", real ? 10000 : 50000);
  const idlePassUs = num("idle-pass-us", 250);
  const maxN = num("max-n", real ? 4000 : 50);
  const idleMs = num("idle-ms", 150);
  header(ctx, "q and k normalized and turned in one dispatch, each pass right after its baseline's");
  const results = [];
  for (const shape of shapes) {
    const kit = await shapeKit(ctx, shape);
    const n = await callsAPass(ctx, kit.rec.copy, { passUs, idlePassUs, maxN });
    const r = { ...shape, n, busy: {}, idle: {} };
    for (const mode of MODES) {
      if (mode.key === "idle") await new Promise((res) => setTimeout(res, num("settle-ms", 1000)));
      note(`${shape.tag} ${mode.title}: ${n[mode.key]} calls a pass, ${reps[mode.key]} pairs each`);
      for (const [name, base, kernel] of PAIRS) {
        r[mode.key][name] = await timePairs(ctx, kit.rec[base], kit.rec[kernel], { n: n[mode.key], reps: reps[mode.key], idleMs: mode.key === "idle" ? idleMs : 0 });
      }
    }
    kit.free();
    results.push(r);
  }
  printRotary(ctx, results, { reps, idleMs, passUs, idlePassUs });
  out.rotary = { shapes: results, reps, idleMs, passUs, idlePassUs };
}

function printRotary(ctx, results, { reps, idleMs, passUs, idlePassUs }) {
  const real = ctx.kind.realGpu;
  log(
    "fused: the package's `encode` of a packed qkv row in place (`heads` q + k + v, `passHeads` v, a gamma a head, positions a token or one `position` at decode, Qwen3's frequencies), one pass a call." +
      " out = a: the elementwise kernel over q and k's values (read once, written once). QK-norm: the package's norm of the same q and k rows in place, no turn." +
      " unfused: the package's QK-norm of a q tensor and a k tensor, then a rotary pass (NeoX, a thread a pair, WGSL's cos and sin) over each: four passes a step." +
      ` A pair = one command buffer, the baseline's n calls then the fused n; ratio = median over the pairs. Busy: ${reps.busy} pairs after a warm-up, n for ~${passUs} µs of out = a; driver's clock: ${reps.idle} pairs, ${idleMs} ms idle before each, n for ~${idlePassUs} µs.`,
  );
  noRoofline(ctx);
  const share = (x) => (real ? pct(1 / x.ratio) : "—");
  const times = (x) => (real ? `${fmt(x.ratio, 2)}×` : "—");
  for (const mode of MODES) {
    const m = mode.key;
    log(`\n### ${mode.title} (targets: fused ≥ ${pct(FLOOR)} of out = a at prefill; ≤ ${fmt(DECODE_CEILING, 1)}× the QK-norm alone at decode)`);
    table(
      ["tokens × (q + k) × head", "SM clock", "calls a pass", "fused µs", "out = a µs", "fused vs out = a", "QK-norm µs", "fused ÷ QK-norm", "unfused µs", "fused ÷ unfused", "saved a step µs"],
      results.map((r) => {
        const [c, qn, un] = PAIRS.map(([name]) => r[m][name]);
        return [r.tag, clockCell(PAIRS.flatMap(([name]) => r[m][name].clocks)), String(r.n[m]), fmt(c.kernel.us, 2), fmt(c.base.us, 2), share(c), fmt(qn.base.us, 2), times(qn), fmt(un.base.us, 2), times(un), fmt(un.base.us - un.kernel.us, 2)];
      }),
    );
  }
}
