// The `calls` section: µs per call of the package's four kinds of call beside raw WebGPU doing the same dispatch.
import { packageKernel } from "./package-kernel.mjs";
import { PARAMS_BYTES, gammaFloats, randomFloats } from "./raw.mjs";
import { fmt, header, log, table } from "./report.mjs";
import { timeLoops } from "./timing.mjs";

export async function sectionCalls(ctx, out, { num }) {
  const { norm, device, raw } = ctx;
  const hidden = num("hidden", 4096), rows = 1, n = rows * hidden;
  const calls = num("calls", 500), loops = num("loops", 5);
  header(ctx, `Call cost: µs per call, ${rows}×${hidden} f32, median of ${loops} loops of ${calls} calls (min–max), GPU warmed`);
  const x = randomFloats(n, 1), r = randomFloats(n, 2), g = gammaFloats(hidden);
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
  const bufs = { input: raw.buffer(n, x), residual: raw.buffer(n, r), gamma: raw.buffer(hidden, g), beta: stub(), bias: stub(), post_gamma: stub(), params: raw.params(rows, hidden, kern.lanes) };
  const group = raw.bind(p, bufs);
  const submit = () => raw.submit(p, group, kern.groups(rows));
  const rawT = {};
  await raw.warm(200);
  // The error scopes stay written out in each timed loop (no helper): an extra awaited
  // function per call would add to the very cost measured.
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
  // The kernels' uniform block (raw.mjs's PARAMS_BYTES); gammaOffset 0.
  const paramsBytes = new ArrayBuffer(PARAMS_BYTES);
  new Uint32Array(paramsBytes).set([rows, hidden / kern.lanes]);
  new Float32Array(paramsBytes).set([hidden, 1e-6], 2);
  rawT.scopesFreshObjects = await timeLoops(loops, calls, async (k) => {
    for (let i = 0; i < k; i++) {
      device.pushErrorScope("out-of-memory");
      device.pushErrorScope("validation");
      const params = device.createBuffer({ size: PARAMS_BYTES, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
      device.queue.writeBuffer(params, 0, paramsBytes);
      raw.submit(p, raw.bind(p, { ...bufs, params }), kern.groups(rows));
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
  if (!ctx.kind.realGpu) log(`NOTE: ${ctx.kind.isNull ? "Null backend: nothing executes on a GPU" : "CPU adapter"}; these are not GPU numbers.`);
  out.calls = { hidden, rows, calls, loops, package: pkg, raw: rawT };
}
