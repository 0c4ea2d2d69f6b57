// The package on Chrome's WebGPU implementation (Dawn, through dawn.node) — issue 12 point 4.
// Prints tables; writes the numbers as JSON too (--json FILE).
//
//   node bench/dawn/bench.mjs calls   [--calls 500] [--loops 5]
//   node bench/dawn/bench.mjs kernel  [--shapes 1x896,1x4096,...] [--budget-s 240]
//   node bench/dawn/bench.mjs cliff   [--cliff-rows 4096,8191,8192,16384] [--cliff-hidden 4096]
//   node bench/dawn/bench.mjs sweep   --wgsl FILE [--shapes 1x4096,...] [--sweep-options plain,bias+beta,sum]
//
// `sweep` times kernel variants the package does not necessarily choose, from a JSON list that
// `cargo run --release --example bench -- --emit-wgsl FILE --sweep --shapes ...` writes (the
// WGSL of each variant the native benchmark sweeps), in the same dependent chain as `kernel`,
// each checked first against the package's own result.
//
// Run each section in a fresh process (scripts/bench-dawn.sh does): `cliff` must own the
// process's first large allocations. Exit status 2: no usable GPU (message printed).
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { NoGpu, open } from "./env.mjs";
import { Raw, addSubWgsl, addWgsl, constantsOf, median, randomFloats } from "./raw.mjs";

const DEFAULT_SHAPES = "1x896,1x4096,16x4096,128x4096,1000x4099,2048x4096,16384x4096,32768x896,70000x1024";

const argv = process.argv.slice(2);
const section = argv[0];
const opt = Object.fromEntries(argv.slice(1).reduce((acc, a, i, all) => (a.startsWith("--") ? [...acc, [a.slice(2), all[i + 1] ?? ""]] : acc), []));
const num = (k, d) => (opt[k] === undefined ? d : Number(opt[k]));

const fmt = (x, d = 1) => (x === undefined || x === null || Number.isNaN(x) ? "—" : x >= 1000 ? x.toFixed(0) : x.toFixed(d));
const pct = (x) => (x === undefined || x === null || Number.isNaN(x) ? "—" : `${(x * 100).toFixed(1)} %`);
const log = (...a) => console.log(...a);
const note = (...a) => console.error("  ·", ...a);

function table(head, rows) {
  log(`| ${head.join(" | ")} |`);
  log(`|${head.map(() => "---").join("|")}|`);
  for (const r of rows) log(`| ${r.join(" | ")} |`);
}

function header(ctx, title) {
  const p = ctx.provenance;
  log(`\n## ${title}`);
  log(`adapter: ${ctx.kind.name}; backend: ${ctx.kind.backend}; ${ctx.kind.isCpu ? "CPU adapter" : ctx.kind.isNull ? "NULL BACKEND" : "GPU"}`);
  log(`package: ${p.pkgDir} (wasm sha256 ${p.wasmSha256})${p.snapshot ? `; ${p.snapshot.split("\n").join("; ")}` : ""}`);
  log(`node ${p.node}; dawn.node from ${p.webgpuDir}; flags: ${p.dawnFlags.join(" ")}; timestamp-query: ${ctx.device.features.has("timestamp-query")}`);
  log(`date: ${new Date().toISOString()}`);
}

// ---------------------------------------------------------------------------------------------
// The package's own kernels, captured as it compiles them.

/**
 * The WGSL of the kernel the package dispatches for `rows`×`hidden` with `o` (bias, beta, sum,
 * inPlace): makes one such call with the tap tracking the pipelines it sets, and takes the
 * source that pipeline was compiled from. `data` ({ x, r }) supplies the rows × hidden inputs.
 */
async function packageKernel(ctx, rows, hidden, o, data) {
  const key = `${rows}x${hidden}/bias=${!!o.bias}/beta=${!!o.beta}/sum=${!!o.sum && !o.inPlace}/inPlace=${!!o.inPlace}`;
  ctx.kernels ??= new Map();
  if (ctx.kernels.has(key)) return ctx.kernels.get(key);
  const { norm, seen } = ctx;
  const n = rows * hidden;
  const v = (len, seed) => randomFloats(len, seed);
  const x = data?.x ?? v(n, 1), r = data?.r ?? v(n, 2);
  const args = { gamma: v(hidden, 3), hidden, ...(o.beta ? { beta: v(hidden, 4) } : {}), ...(o.bias ? { bias: v(hidden, 5) } : {}) };
  let used = [];
  seen.tracking = new Set();
  try {
    if (o.inPlace) {
      const tx = norm.upload(x), tr = norm.upload(r);
      await norm.run({ ...args, input: tx, residual: tr, inPlace: true });
      tx.free();
      tr.free();
    } else if (o.sum) {
      const res = await norm.runWithSum({ ...args, input: x, residual: r, output: "gpu" });
      res.output.free();
      res.sum.free();
    } else {
      (await norm.run({ ...args, input: x, residual: r, output: "gpu" })).free();
    }
  } finally {
    used = [...seen.tracking];
    seen.tracking = null;
  }
  const codes = [...new Set(used.map((p) => seen.pipelineCode.get(p)))];
  if (codes.length !== 1 || !codes[0]) {
    throw new Error(`${key}: the package set ${used.length} compute pipeline(s) from ${codes.filter(Boolean).length} known WGSL source(s) in one call; expected exactly one (has its call path changed?)`);
  }
  const code = codes[0];
  const c = constantsOf(code);
  const want = { HAS_BIAS: !!o.bias, HAS_BETA: !!o.beta, WRITE_SUM: !!o.sum || !!o.inPlace, IN_PLACE: !!o.inPlace };
  for (const [k, w] of Object.entries(want)) {
    if (c[k] !== undefined && c[k] !== w) throw new Error(`captured kernel for ${key} has ${k} = ${c[k]}, expected ${w}`);
  }
  // `groups(rows)`: the workgroups a dispatch of `rows` rows needs, SPLIT of them a row.
  const split = c.SPLIT ?? 1;
  const k = {
    code, constants: c, lanes: c.lanes ?? (hidden % 4 === 0 ? 4 : 1), groups: (rows) => rows * split,
    label: `package ${key} wg=${c.WG} slots=${c.SLOTS}${split > 1 ? ` split=${split}` : ""}`,
  };
  ctx.kernels.set(key, k);
  return k;
}

// ---------------------------------------------------------------------------------------------

async function timeLoops(loops, calls, body) {
  await body(Math.min(calls, 50)); // untimed
  const per = [];
  for (let l = 0; l < loops; l++) {
    const t0 = performance.now();
    await body(calls);
    per.push(((performance.now() - t0) * 1000) / calls);
  }
  return { median: median(per), min: Math.min(...per), max: Math.max(...per), loops: per };
}

async function sectionCalls(ctx, out) {
  const { norm, device, raw } = ctx;
  const hidden = num("hidden", 4096), rows = 1, n = rows * hidden;
  const calls = num("calls", 500), loops = num("loops", 5);
  header(ctx, `Call cost: µs per call, ${rows}×${hidden} f32, median of ${loops} loops of ${calls} calls (min–max), GPU warmed`);
  const x = randomFloats(n, 1), r = randomFloats(n, 2), g = randomFloats(hidden, 3).map((v) => 1 + 0.1 * v);
  const tx = norm.upload(x), tr = norm.upload(r), tg = norm.upload(g);
  const inPlace = { input: tx, residual: tr, gamma: tg, hidden, inPlace: true };
  const pkg = {};
  await raw.warm(500);
  pkg.inPlaceAwaited = await timeLoops(loops, calls, async (k) => {
    for (let i = 0; i < k; i++) await norm.run(inPlace);
  });
  await raw.warm(200);
  pkg.inPlaceInFlight = await timeLoops(loops, calls, async (k) => {
    const ps = [];
    for (let i = 0; i < k; i++) ps.push(norm.run(inPlace));
    await Promise.all(ps);
    // An in-place call resolves once the GPU has the work, not when it is done.
    await device.queue.onSubmittedWorkDone();
  });
  await raw.warm(200);
  pkg.runWithSumGpu = await timeLoops(loops, calls, async (k) => {
    for (let i = 0; i < k; i++) {
      const res = await norm.runWithSum({ input: tx, residual: tr, gamma: tg, hidden, output: "gpu" });
      res.output.free();
      res.sum.free();
    }
  });
  await raw.warm(200);
  pkg.runArrays = await timeLoops(loops, calls, async (k) => {
    for (let i = 0; i < k; i++) await norm.run({ input: x, residual: r, gamma: g, hidden });
  });
  tx.free();
  tr.free();
  tg.free();

  // Raw WebGPU on the same device, the package's own in-place kernel for this shape.
  const kern = await packageKernel(ctx, rows, hidden, { inPlace: true }, { x, r });
  const p = await raw.pipeline(kern.code, kern.label);
  const stub = () => raw.buffer(4);
  const bufs = { input: raw.buffer(n, x), residual: raw.buffer(n, r), gamma: raw.buffer(hidden, g), beta: stub(), bias: stub(), params: raw.params(rows, hidden, kern.lanes) };
  const group = raw.bind(p, bufs);
  const submit = () => {
    const enc = device.createCommandEncoder();
    const pass = enc.beginComputePass();
    raw.dispatch(pass, p, group, kern.groups(rows));
    pass.end();
    device.queue.submit([enc.finish()]);
  };
  const rawT = {};
  await raw.warm(200);
  rawT.scopesAwaited = await timeLoops(loops, calls, async (k) => {
    for (let i = 0; i < k; i++) {
      device.pushErrorScope("out-of-memory");
      device.pushErrorScope("validation");
      submit();
      const a = device.popErrorScope(), b = device.popErrorScope();
      const [ea, eb] = await Promise.all([a, b]);
      if (ea || eb) throw new Error(`raw call: ${(ea ?? eb).message}`);
    }
  });
  await raw.warm(200);
  rawT.noAwait = await timeLoops(loops, calls, async (k) => {
    for (let i = 0; i < k; i++) submit();
    await device.queue.onSubmittedWorkDone();
  });
  await raw.warm(200);
  rawT.workDoneAwaited = await timeLoops(loops, calls, async (k) => {
    for (let i = 0; i < k; i++) {
      submit();
      await device.queue.onSubmittedWorkDone();
    }
  });
  await raw.warm(200);
  const paramsBytes = new ArrayBuffer(16);
  new Uint32Array(paramsBytes).set([rows, hidden / kern.lanes]);
  new Float32Array(paramsBytes).set([hidden, 1e-6], 2);
  rawT.scopesFreshObjects = await timeLoops(loops, calls, async (k) => {
    for (let i = 0; i < k; i++) {
      device.pushErrorScope("out-of-memory");
      device.pushErrorScope("validation");
      const params = device.createBuffer({ size: 16, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
      device.queue.writeBuffer(params, 0, paramsBytes);
      const grp = raw.bind(p, { ...bufs, params });
      const enc = device.createCommandEncoder();
      const pass = enc.beginComputePass();
      raw.dispatch(pass, p, grp, kern.groups(rows));
      pass.end();
      device.queue.submit([enc.finish()]);
      params.destroy();
      const [ea, eb] = await Promise.all([device.popErrorScope(), device.popErrorScope()]);
      if (ea || eb) throw new Error(`raw call: ${(ea ?? eb).message}`);
    }
  });
  for (const b of Object.values(bufs)) b.destroy();

  const cell = (t) => `${fmt(t.median)} (${fmt(t.min)}–${fmt(t.max)})`;
  log(`raw WebGPU: JavaScript on the package's own GPUDevice, dispatching the package's own in-place kernel (WGSL captured from its createShaderModule) on buffers and a bind group made once`);
  table(
    ["call", "package µs/call", "raw WebGPU doing the same dispatch", "raw µs/call"],
    [
      ["awaited, in place on resident tensors", cell(pkg.inPlaceAwaited), "submit + two awaited error scopes", cell(rawT.scopesAwaited)],
      ["left in flight, awaited together (+ one onSubmittedWorkDone)", cell(pkg.inPlaceInFlight), "submit, no await (one onSubmittedWorkDone after the loop)", cell(rawT.noAwait)],
      ['`runWithSum({output: "gpu"})` awaited (results freed)', cell(pkg.runWithSumGpu), "—", "—"],
      ["`run` with Float32Arrays, awaited", cell(pkg.runArrays), "—", "—"],
      ["—", "—", "submit + awaited onSubmittedWorkDone", cell(rawT.workDoneAwaited)],
      ["—", "—", "two awaited error scopes + a new params buffer, writeBuffer and bind group per call", cell(rawT.scopesFreshObjects)],
    ],
  );
  log(`package's own cost beyond raw: awaited in place ${fmt(pkg.inPlaceAwaited.median - rawT.scopesAwaited.median)} µs (${fmt(pkg.inPlaceAwaited.median / rawT.scopesAwaited.median, 2)}×), in flight ${fmt(pkg.inPlaceInFlight.median - rawT.noAwait.median)} µs (${fmt(pkg.inPlaceInFlight.median / rawT.noAwait.median, 2)}×)`);
  if (!ctx.kind.realGpu) log(`NOTE: ${ctx.kind.isNull ? "Null backend: nothing executes on a GPU" : "CPU adapter"}; these are not H200 numbers.`);
  out.calls = { hidden, rows, calls, loops, package: pkg, raw: rawT };
}

// ---------------------------------------------------------------------------------------------

/** Host data for the kernel section: one seeded array long enough for the largest shape, viewed. */
function hostData(ctx, n, which) {
  ctx.host ??= {};
  let a = ctx.host[which];
  if (!a || a.length < n) {
    a = ctx.host[which] = randomFloats(n, which === "x" ? 11 : 22);
  }
  return a.subarray(0, n);
}

function parseShapes(s) {
  return s.split(",").filter(Boolean).map((t) => {
    const [r, h] = t.toLowerCase().split("x").map(Number);
    if (!(r >= 1 && h >= 1)) throw new Error(`--shapes: bad shape ${t} (want ROWSxHIDDEN)`);
    return [r, h];
  });
}

/** Timed passes of `n` dispatches: calibrates n to ~`targetUs` of GPU time, then median of `reps`. */
async function chainTime(raw, encodeK, { targetUs = 10000, maxN = 4000, minN = 8, reps = 5, warmMs = 150 } = {}) {
  const cal = await raw.timePass(minN, encodeK);
  const per0 = Math.max(cal / minN, 0.05);
  const n = Math.max(minN, Math.min(maxN, Math.round(targetUs / per0)));
  await raw.warm(warmMs);
  await raw.timePass(n, encodeK); // untimed
  const per = [];
  for (let i = 0; i < reps; i++) per.push((await raw.timePass(n, encodeK)) / n);
  return { us: median(per), min: Math.min(...per), max: Math.max(...per), n };
}

async function sectionKernel(ctx, out) {
  const { norm, raw, device } = ctx;
  const shapes = parseShapes(opt.shapes ?? DEFAULT_SHAPES);
  const budgetS = num("budget-s", 1e9);
  const target = num("pass-us", ctx.kind.realGpu ? 10000 : 50000);
  const maxN = num("max-n", ctx.kind.realGpu ? 4000 : 50);
  const reps = num("reps", 5);
  header(ctx, "Kernel time in a dependent chain, GPU timestamps, GPU warmed");
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
    const lanesAB = hidden % 4 === 0 ? 4 : 1;
    const x = hostData(ctx, n, "x"), res = hostData(ctx, n, "r");
    const g = randomFloats(hidden, 3).map((v) => 1 + 0.1 * v), beta = randomFloats(hidden, 4).map((v) => 0.1 * v), bias = randomFloats(hidden, 5).map((v) => 0.1 * v);
    // Two activations and two residuals to ping-pong: dispatch k reads what k-1 wrote.
    const X = [raw.buffer(n, x), raw.buffer(n)], R = [raw.buffer(n, res), raw.buffer(n)];
    const G = raw.buffer(hidden, g), BETA = raw.buffer(hidden, beta), BIAS = raw.buffer(hidden, bias);
    const stubR = raw.buffer(4), stubW = raw.buffer(4);

    // a + b moving the bytes of the plain kernel: out = a + b, a the previous out.
    const ab = await raw.pipeline(addWgsl(lanesAB === 4), `a+b vec${lanesAB}`);
    const abN = n / lanesAB;
    const abU = raw.uniform(new Uint32Array([abN, 0, 0, 0]));
    const abGroups = [raw.bind(ab, { a: X[0], b: R[0], out: X[1], p: abU }), raw.bind(ab, { a: X[1], b: R[0], out: X[0], p: abU })];
    await raw.warm(300);
    r.ab = await chainTime(raw, (pass, k) => raw.dispatch(pass, ab, abGroups[k & 1], Math.ceil(abN / 256)), { targetUs: target, maxN, reps });
    r.ab.bytes = 3 * n * 4;
    // The `sum` output's own roofline: two reads and two writes (writes cost the memory more
    // than reads), chained the same way (each reads what the previous wrote).
    const abs = await raw.pipeline(addSubWgsl(lanesAB === 4), `a+b,a-b vec${lanesAB}`);
    const absGroups = [raw.bind(abs, { a: X[0], b: R[0], out: X[1], out2: R[1], p: abU }), raw.bind(abs, { a: X[1], b: R[1], out: X[0], out2: R[0], p: abU })];
    r.abSum = await chainTime(raw, (pass, k) => raw.dispatch(pass, abs, absGroups[k & 1], Math.ceil(abN / 256)), { targetUs: target, maxN, reps });
    r.abSum.bytes = 4 * n * 4;

    const variants = { plain: {}, biasBeta: { bias: true, beta: true }, sum: { sum: true } };
    for (const [name, o] of Object.entries(variants)) {
      const kern = await packageKernel(ctx, rows, hidden, o, { x, r: res });
      const p = await raw.pipeline(kern.code, kern.label);
      const P = raw.params(rows, hidden, kern.lanes);
      const common = { gamma: G, beta: o.beta ? BETA : stubR, bias: o.bias ? BIAS : stubR, params: P };
      const groups = o.sum
        ? [raw.bind(p, { ...common, input: X[0], residual: R[0], output: X[1], sum: R[1] }), raw.bind(p, { ...common, input: X[1], residual: R[1], output: X[0], sum: R[0] })]
        : [raw.bind(p, { ...common, input: X[0], residual: R[0], output: X[1], sum: stubW }), raw.bind(p, { ...common, input: X[1], residual: R[0], output: X[0], sum: stubW })];
      // First, one dispatch from the initial data against the package's own result: proves the
      // bindings and the Params block match what the package does.
      if (n <= num("check-max", 8 << 20)) {
        device.queue.writeBuffer(X[0], 0, x.buffer, x.byteOffset, n * 4);
        device.queue.writeBuffer(R[0], 0, res.buffer, res.byteOffset, n * 4);
        const enc = device.createCommandEncoder();
        const pass = enc.beginComputePass();
        raw.dispatch(pass, p, groups[0], kern.groups(rows));
        pass.end();
        device.queue.submit([enc.finish()]);
        const y = await raw.readBack(X[1], n);
        const args = { input: x, residual: res, gamma: g, hidden, ...(o.beta ? { beta } : {}), ...(o.bias ? { bias } : {}) };
        const want = o.sum ? await norm.runWithSum(args) : { output: await norm.run(args) };
        let worst = 0;
        for (let i = 0; i < n; i++) worst = Math.max(worst, Math.abs(y[i] - want.output[i]) / (Math.abs(want.output[i]) + 1e-6));
        if (o.sum) {
          const s = await raw.readBack(R[1], n);
          for (let i = 0; i < n; i++) worst = Math.max(worst, Math.abs(s[i] - want.sum[i]) / (Math.abs(want.sum[i]) + 1e-6));
        }
        r[`${name}Check`] = worst;
        if (!(worst <= 1e-5)) throw new Error(`${tag} ${name}: raw dispatch of the captured kernel differs from the package's result by ${worst} (relative): bindings or Params changed?`);
      }
      await raw.warm(150);
      r[name] = await chainTime(raw, (pass, k) => raw.dispatch(pass, p, groups[k & 1], kern.groups(rows)), { targetUs: target, maxN, reps });
      r[name].bytes = (o.sum ? 4 : 3) * n * 4 + hidden * 4 * (1 + !!o.beta + !!o.bias);
      r[name].kernel = kern.label;
      P.destroy();
    }

    // Through the package's public API.
    const tx = norm.upload(x), tr = norm.upload(res), tg = norm.upload(g), tbeta = norm.upload(beta), tbias = norm.upload(bias);
    for (const [name, extra] of [["pkgGpuTimePlain", {}], ["pkgGpuTimeBiasBeta", { beta: tbeta, bias: tbias }]]) {
      const repeat = Math.max(1, Math.min(10000, r[name === "pkgGpuTimePlain" ? "plain" : "biasBeta"].n));
      const args = { input: tx, residual: tr, gamma: tg, hidden, ...extra };
      await raw.warm(150);
      const first = await norm.gpuTime(args, repeat);
      if (first === undefined) {
        r[name] = { us: undefined, note: "gpuTime: no timestamp-query" };
        continue;
      }
      const per = [];
      for (let i = 0; i < reps; i++) per.push(((await norm.gpuTime(args, repeat)) * 1000) / repeat);
      r[name] = { us: median(per), min: Math.min(...per), max: Math.max(...per), n: repeat };
    }
    {
      // In-place calls chained through the API (each reads what the previous wrote), left in
      // flight and awaited together: wall time per call (the call's own CPU cost bounds it).
      const est = Math.max(r.plain.us, 100);
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
      r.pkgInPlaceChain = { us: median(per), min: Math.min(...per), max: Math.max(...per), n: k };
    }
    for (const t of [tx, tr, tg, tbeta, tbias]) t.free();
    for (const b of [...X, ...R, G, BETA, BIAS, stubR, stubW, abU]) b.destroy();
    results.push(r);
  }

  const real = ctx.kind.realGpu;
  const bw = (t) => t.bytes / t.us; // bytes per µs
  const roof = (r, name) => (real && r[name] && r.ab ? bw(r[name]) / bw(r.ab) : undefined);
  const roofSum = (r) => (real && r.sum && r.abSum ? bw(r.sum) / bw(r.abSum) : undefined);
  log(
    "a+b: `out = a + b` (vec4 where hidden % 4 == 0, else scalar; one element per invocation, 256 per workgroup), 3 arrays moved." +
      " ours: the package's own WGSL (captured from its createShaderModule, checked against its result), dispatched raw on its device." +
      " Chain: dispatch k reads the activation (and, with sum, the residual) dispatch k-1 wrote; one compute pass of n dispatches between two timestamps; µs = pass / n, median of " +
      `${reps} passes.` +
      " % roofline = (bytes the variant must move / its time) ÷ (a+b's bytes / a+b's time): plain and bias+beta move 3 arrays, sum 4." +
      " sum % of a±b: sum's bandwidth over that of `out = a + b; out2 = a - b` (2 reads, 2 writes, as sum moves them), chained the same way.",
  );
  if (!real) log(`NO ROOFLINE CLAIMS: ${ctx.kind.isNull ? "Null backend" : "a CPU adapter"} (${ctx.kind.name}); µs only, and they are not GPU numbers.`);
  table(
    ["shape", "a+b µs", "plain µs", "plain/a+b", "plain % roofline", "bias+beta µs", "% roofline", "sum µs", "% roofline", "a±b µs", "sum % of a±b", "n"],
    results.map((r) =>
      r.skipped
        ? [r.tag, `skipped: ${r.skipped}`, "", "", "", "", "", "", "", "", "", ""]
        : [r.tag, fmt(r.ab.us, 2), fmt(r.plain.us, 2), fmt(r.plain.us / r.ab.us, 2) + "×", pct(roof(r, "plain")), fmt(r.biasBeta.us, 2), pct(roof(r, "biasBeta")), fmt(r.sum.us, 2), pct(roof(r, "sum")), fmt(r.abSum.us, 2), pct(roofSum(r)), `${r.ab.n}/${r.plain.n}`],
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
        r.pkgGpuTimePlain?.us ? fmt(r.pkgGpuTimePlain.us / r.plain.us, 2) + "×" : "—",
        fmt(r.pkgGpuTimeBiasBeta?.us, 2),
        fmt(r.pkgInPlaceChain.us, 1),
        String(r.pkgInPlaceChain.n),
        r.plainCheck === undefined ? "not checked (large)" : [r.plainCheck, r.biasBetaCheck, r.sumCheck].map((v) => (v === 0 ? "0" : v.toExponential(1))).join(" / "),
        r.plain.kernel.replace(/^package \S+ /, ""),
      ]),
  );
  out.kernel = { shapes: results };
}

// ---------------------------------------------------------------------------------------------

async function sectionSweep(ctx, out) {
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
    const x = hostData(ctx, n, "x"), res = hostData(ctx, n, "r");
    const g = randomFloats(hidden, 3).map((v) => 1 + 0.1 * v), beta = randomFloats(hidden, 4).map((v) => 0.1 * v), bias = randomFloats(hidden, 5).map((v) => 0.1 * v);
    const X = [raw.buffer(n, x), raw.buffer(n)], R = [raw.buffer(n, res), raw.buffer(n)];
    const G = raw.buffer(hidden, g), BETA = raw.buffer(hidden, beta), BIAS = raw.buffer(hidden, bias);
    const stubR = raw.buffer(4), stubW = raw.buffer(4);
    const lanesAB = hidden % 4 === 0 ? 4 : 1;
    const ab = await raw.pipeline(addWgsl(lanesAB === 4), `a+b vec${lanesAB}`);
    const abN = n / lanesAB;
    const abU = raw.uniform(new Uint32Array([abN, 0, 0, 0]));
    const abGroups = [raw.bind(ab, { a: X[0], b: R[0], out: X[1], p: abU }), raw.bind(ab, { a: X[1], b: R[0], out: X[0], p: abU })];
    await raw.warm(300);
    const abT = await chainTime(raw, (pass, k) => raw.dispatch(pass, ab, abGroups[k & 1], Math.ceil(abN / 256)), { targetUs: target, maxN, reps, warmMs: 100 });
    note(`${tag}: a+b ${fmt(abT.us, 2)} µs`);
    for (const [name, o] of Object.entries(flags)) {
      if (!wanted.has(name)) continue;
      const cands = all.filter((c) => c.hidden === hidden && c.options === name);
      if (!cands.length) continue;
      const args = { input: x, residual: res, gamma: g, hidden, ...(o.beta ? { beta } : {}), ...(o.bias ? { bias } : {}) };
      const want = n <= num("check-max", 8 << 20) ? (o.sum ? await norm.runWithSum(args) : { output: await norm.run(args) }) : null;
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
        const common = { gamma: G, beta: o.beta ? BETA : stubR, bias: o.bias ? BIAS : stubR, params: P };
        const groups = o.sum
          ? [raw.bind(p, { ...common, input: X[0], residual: R[0], output: X[1], sum: R[1] }), raw.bind(p, { ...common, input: X[1], residual: R[1], output: X[0], sum: R[0] })]
          : [raw.bind(p, { ...common, input: X[0], residual: R[0], output: X[1], sum: stubW }), raw.bind(p, { ...common, input: X[1], residual: R[0], output: X[0], sum: stubW })];
        // A `nocheck` variant is a bound, not a kernel (experimental-variants.mjs --floor).
        if (want && !c.nocheck) {
          device.queue.writeBuffer(X[0], 0, x.buffer, x.byteOffset, n * 4);
          device.queue.writeBuffer(R[0], 0, res.buffer, res.byteOffset, n * 4);
          const enc = device.createCommandEncoder();
          const pass = enc.beginComputePass();
          raw.dispatch(pass, p, groups[0], workgroups);
          pass.end();
          device.queue.submit([enc.finish()]);
          const y = await raw.readBack(X[1], n);
          // Relative to the terms of y = v·post·gamma + beta, not to y alone: with beta, y
          // can cancel to near zero, and a variant that sums the row in another order
          // (rounding differently in the last place) would look wrong there.
          let worst = 0;
          for (let i = 0; i < n; i++) {
            const scale = Math.abs(want.output[i]) + (o.beta ? 2 * Math.abs(beta[i % hidden]) : 0) + 1e-6;
            worst = Math.max(worst, Math.abs(y[i] - want.output[i]) / scale);
          }
          if (o.sum) {
            const sv = await raw.readBack(R[1], n);
            for (let i = 0; i < n; i++) worst = Math.max(worst, Math.abs(sv[i] - want.sum[i]) / (Math.abs(want.sum[i]) + 1e-6));
          }
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
    for (const b of [...X, ...R, G, BETA, BIAS, stubR, stubW, abU]) b.destroy();
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

// ---------------------------------------------------------------------------------------------

async function sectionCliff(ctx, out) {
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
  const g = randomFloats(hidden, 3).map((v) => 1 + 0.1 * v);
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
    const grp = raw.bind(p, { ...b, gamma: G, beta: stubR, bias: stubR, sum: stubW, params: P });
    const per = [];
    await raw.timePass(repeat, (pass) => raw.dispatch(pass, p, grp, kern.groups(rows)));
    for (let i = 0; i < reps; i++) per.push((await raw.timePass(repeat, (pass) => raw.dispatch(pass, p, grp, kern.groups(rows)))) / repeat);
    P.destroy();
    return median(per);
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
    const abPer = [];
    await raw.timePass(repeat, (pass) => raw.dispatch(pass, ab, abG, Math.ceil(n / lanes / 256)));
    for (let i = 0; i < reps; i++) abPer.push((await raw.timePass(repeat, (pass) => raw.dispatch(pass, ab, abG, Math.ceil(n / lanes / 256)))) / repeat);
    row.abUpFront = median(abPer);
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

// ---------------------------------------------------------------------------------------------

async function main() {
  const sections = { calls: sectionCalls, kernel: sectionKernel, cliff: sectionCliff, sweep: sectionSweep };
  if (!sections[section]) {
    console.error(`usage: node bench/dawn/bench.mjs ${Object.keys(sections).join("|")} [--options]  (see the file's header)`);
    process.exit(64);
  }
  let ctx;
  try {
    ctx = await open();
  } catch (e) {
    if (e instanceof NoGpu) {
      console.log(`\n[bench:dawn] ${section}: ${e.setup ? "NOT SET UP" : "NO USABLE WEBGPU ADAPTER"} — nothing measured.\n  ${e.message}`);
      if (!e.setup) {
        console.log("  On a machine without a Vulkan GPU Dawn has no adapter (Debian 12's lavapipe lacks a feature Dawn requires).");
        console.log("  Run on the H200 device machine (bash scripts/bench-dawn.sh prepare prints the command); DAWN_FLAGS=backend=null exercises the harness on Dawn's Null backend.");
      }
      process.exit(2);
    }
    throw e;
  }
  ctx.raw = new Raw(ctx.device, { warmMiB: ctx.kind.realGpu ? 64 : 0.25 });
  console.log(`[bench:dawn] ${section}: adapter ${JSON.stringify(ctx.kind.fields)}; backend ${ctx.kind.backend}`);
  const out = { section, provenance: ctx.provenance, realGpu: ctx.kind.realGpu, date: new Date().toISOString() };
  if (ctx.kind.isNull && section !== "calls") {
    console.log(`\n[bench:dawn] ${section}: Dawn's NULL BACKEND (${ctx.kind.name}): no GPU executes anything and timestamps are meaningless;` + " refusing to report kernel times or roofline claims. The package initialized and the harness loaded: that is all this run shows.");
    process.exit(2);
  }
  if (section !== "calls" && !ctx.device.features.has("timestamp-query")) {
    console.log(`\n[bench:dawn] ${section}: the package's device has no timestamp-query (adapter ${ctx.kind.name}); kernel times need GPU timestamps — nothing measured.`);
    process.exit(2);
  }
  if (ctx.kind.isNull) console.log("[bench:dawn] NULL BACKEND: call costs below are CPU-side only (nothing runs on a GPU); not a GPU measurement.");
  await sections[section](ctx, out);
  if (opt.json) {
    mkdirSync(dirname(opt.json), { recursive: true });
    writeFileSync(opt.json, JSON.stringify(out, null, 1));
    note(`wrote ${opt.json}`);
  }
  ctx.norm.free();
  ctx.device.destroy?.();
  // dawn.node keeps the event loop alive after the device is gone; leave explicitly.
  setTimeout(() => process.exit(0), 100);
}

main().catch((e) => {
  console.error(`[bench:dawn] ${section}: FAILED: ${e?.stack ?? e}`);
  process.exit(1);
});
