// The package's checks outside a browser, run by Deno (its WebGPU is wgpu, the implementation
// Firefox ships) and by Node (the CPU backend, or Dawn where the app provides navigator.gpu).
// tests/e2e/runtimes/deno.test.mjs and tests/e2e/runtimes/node.test.mjs install the packed
// package into a fresh app and run main.mjs there, which imports the package by its name and
// calls `check` below.
// Every result is compared with the f64 reference (www/lib/reference.js); the returned
// report lists failures and how many results each part checked.
import * as ref from "../../../www/lib/reference.js";
import * as seeded from "../../../www/lib/seeded.js";
import * as f16 from "../../../www/lib/f16.js";
import * as appGpu from "../../../www/lib/app-gpu.js";
import { createStack } from "../../../www/decoder/layer.js";
import { referenceStack } from "../../../www/decoder/reference.js";
import { perStep, runSteps, worstOff } from "../../../www/decoder/steps.js";
import { fromTransformers, seededEmbeddings, seededWeights } from "../../../www/decoder/weights.js";
import { familyHelpers } from "./page/family.js";
import { EXPECTED_ARRAY } from "./page/readings.js";

const H = familyHelpers({ ref, seeded, f16, appGpu });
// Into the caller's arrays, two entries of the browser suite's (caller-arrays.test.mjs) many.
const INTO = ["run into an array", "runWithSum into arrays"];
const into = new Set([...H.INTO_ENTRIES, ...H.INTO_GPU_ENTRIES]);
export const GPU_ENTRIES = [...Object.keys(H.ENTRIES).filter((e) => !into.has(e)), ...INTO];
const CPU_ENTRIES = [...H.CPU_ENTRIES, ...INTO];
const F16_CASES = [["f16", undefined], ["f32", "f16"], ["f16", "f32"]];
const SHAPES = [{ rows: 3, hidden: 64 }, { rows: 2, hidden: 37 }];

/** Resolves with the rejection (or the string "resolved"), and "threw NAME" for a synchronous throw. */
async function outcome(f) {
  try {
    return await f().then(() => "resolved", (e) => e);
  } catch (e) {
    return `threw ${e?.name}: ${e?.message}`;
  }
}

const named = (e) => (e instanceof Error ? `${e.name}: ${e.message}` : String(e));

/** Whether `e` is an Error named `name` whose message is `message` (a string), or matches it (a RegExp). */
const isError = (e, name, message) =>
  e instanceof Error && e.name === name && (message instanceof RegExp ? message.test(e.message) : e.message === message);

/** Every family variant through `entries`, f32 and f16 both ways. */
async function family(n, entries, report, f16Paths) {
  const f32 = await H.sweep(n, { entries, shapes: SHAPES });
  report.failures.push(...f32.failures);
  report.checked.family = f32.checked;
  for (const shaderF16 of f16Paths) {
    const m = shaderF16 === undefined ? n : await n.constructor.create({ backend: n.backend, shaderF16 });
    for (const [dtype, outputDtype] of F16_CASES) {
      const s = await H.sweep(m, { entries, dtype, outputDtype, shapes: [SHAPES[0]] });
      report.failures.push(...s.failures);
      const path = m.backend === "cpu" ? "f16" : m.debugStats().shaderF16 ? "f16 shader-f16" : "f16 packed";
      report.checked[path] = (report.checked[path] ?? 0) + s.checked;
    }
    if (m !== n) m.free();
  }
}

/**
 * Bad calls reject with the named error and the message the contract gives (the whole
 * message, or a RegExp anchored on its distinctive part), and a good call after them is right.
 */
async function errors(n, report) {
  const a = seeded.caseArgs({ rows: 3, hidden: 64, bias: true, beta: true, eps: 1e-5, seed: 5 });
  const bad = [
    ["TypeError", "a Float64Array input", { ...a, input: new Float64Array(192) }, `input: ${EXPECTED_ARRAY.required}, got a Float64Array`],
    ["TypeError", "no gamma", { ...a, gamma: undefined }, `gamma: ${EXPECTED_ARRAY.required}, got undefined`],
    ["TypeError", "a misspelt Eps", { ...a, Eps: 1e-5 }, /^args\.Eps: expected one of input, .*, got an unknown field \(did you mean eps\?\)$/],
    ["ShapeError", "input the wrong length", { ...a, input: new Float32Array(100) }, "input: expected a length that is a multiple of hidden (64), got 100"],
    ["ShapeError", "hidden 2.5", { ...a, hidden: 2.5 }, "hidden: expected an integer from 1 to 4294967295, got 2.5"],
    ["ShapeError", "eps -1", { ...a, eps: -1 }, "eps: expected a finite number >= 0, got -1"],
  ];
  for (const [name, what, args, message] of bad)
    for (const method of ["run", "runWithSum"]) {
      const e = await outcome(() => n[method](args));
      if (!isError(e, name, message)) report.failures.push(`${method}, ${what}: want ${name}: ${message}, got ${named(e)}`);
    }
  const rep = ref.compare(a, await n.run(a));
  if (!rep.ok) report.failures.push(`a good call after bad ones: ${rep.problems.join("; ")}`);
  report.checked.errors = bad.length * 2;
}

/** WebGPU objects of this runtime are recognised, and look-alikes are a TypeError that says so. */
async function webgpuObjects(n, report) {
  const a = seeded.caseArgs({ rows: 2, hidden: 64, seed: 9 });
  const buffer = appGpu.bufferOf(n.device, a.input, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC);
  const rep = ref.compare(a, await n.run({ ...a, input: buffer }));
  if (!rep.ok) report.failures.push(`a GPUBuffer input: ${rep.problems.join("; ")}`);
  const t = { input: n.upload(a.input), residual: n.upload(a.residual), gamma: n.upload(a.gamma) };
  const encoder = n.device.createCommandEncoder();
  n.encode(encoder, { ...t, hidden: a.hidden, inPlace: true });
  n.device.queue.submit([encoder.finish()]);
  const inPlace = ref.compare(a, await t.input.read(), { sum: await t.residual.read() });
  if (!inPlace.ok) report.failures.push(`encode in place: ${inPlace.problems.join("; ")}`);
  const fakes = [
    ["an object named GPUCommandEncoder", { [Symbol.toStringTag]: "GPUCommandEncoder", beginComputePass() {} }],
    ["a plain object", {}],
  ];
  for (const [what, fake] of fakes) {
    let e;
    try {
      n.encode(fake, { ...t, hidden: a.hidden, inPlace: true });
      e = "returned";
    } catch (x) {
      e = x;
    }
    const want = "encoder: expected a GPUCommandEncoder of norm.device, got an Object";
    if (!isError(e, "TypeError", want)) report.failures.push(`encode on ${what}: want TypeError: ${want}, got ${named(e)}`);
  }
  const fakeBuffer = { [Symbol.toStringTag]: "GPUBuffer", size: 256, usage: 0x80 };
  const e = await outcome(() => n.run({ ...a, input: fakeBuffer }));
  const want = `input: ${EXPECTED_ARRAY.required}, got an Object`;
  if (!isError(e, "TypeError", want)) report.failures.push(`a look-alike GPUBuffer: want TypeError: ${want}, got ${named(e)}`);
  // A rotary stage's positions in a GPUBuffer, copied on the GPU ahead of the kernel:
  // through run (arrays) and encode (tensors in place).
  const q = seeded.caseArgs({ rows: 6, hidden: 32, bias: false, beta: false, seed: 14 });
  const rope = { input: q.input, gamma: q.gamma, hidden: 32, theta: 1e4, heads: 3, positions: new Int32Array([7, 4095]) };
  const positions = appGpu.bufferOf(n.device, rope.positions, GPUBufferUsage.COPY_SRC);
  const turned = ref.compare(rope, await n.run({ ...rope, positions }));
  if (!turned.ok) report.failures.push(`positions in a GPUBuffer, run: ${turned.problems.join("; ")}`);
  const heads = n.upload(q.input);
  const recorded = n.device.createCommandEncoder();
  n.encode(recorded, { ...rope, input: heads, gamma: n.upload(q.gamma), positions, inPlace: true });
  n.device.queue.submit([recorded.finish()]);
  const turnedInPlace = ref.compare(rope, await heads.read());
  if (!turnedInPlace.ok) report.failures.push(`positions in a GPUBuffer, encode: ${turnedInPlace.problems.join("; ")}`);
  Object.values(t).forEach((x) => x.free());
  buffer.destroy();
  positions.destroy();
  report.checked.webgpuObjects = 2 + fakes.length + 1 + 2;
}

/** gpuTime: a number of milliseconds where the adapter has timestamps, else undefined; never a rejection. */
async function timing(n, report) {
  const a = seeded.caseArgs({ rows: 4, hidden: 256, seed: 3 });
  const ms = await n.gpuTime(a, 3);
  const has = n.device.features.has("timestamp-query");
  if (has ? !(ms > 0 && Number.isFinite(ms)) : ms !== undefined) report.failures.push(`gpuTime with timestamp-query ${has}: ${ms}`);
  const wall = await n.timeDispatches(a, 3);
  if (!(wall >= 0)) report.failures.push(`timeDispatches: ${wall}`);
  report.checked.timing = 2;
  report.timestampQuery = has;
}

/**
 * A lost device: reported (ondevicelost); the next call opens a new one (ondevicerestored,
 * once) and computes right there; a tensor of the lost device is a GpuDeviceError naming the loss.
 */
async function deviceLoss(n, report) {
  const a = seeded.caseArgs({ rows: 3, hidden: 128, seed: 11 });
  const kept = n.upload(a.input);
  const lost = new Promise((done) => { n.ondevicelost = done; });
  let restored = 0;
  n.ondevicerestored = () => { restored++; };
  n.simulateDeviceLoss();
  const event = await lost;
  if (typeof event?.reason !== "string") report.failures.push(`ondevicelost got ${JSON.stringify(event)}`);
  const after = await n.run(a).then((y) => y, (e) => e);
  if (after instanceof Error) report.failures.push(`the call after a device loss: ${named(after)}`);
  else {
    const rep = ref.compare(a, after);
    if (!rep.ok) report.failures.push(`the call after a device loss: ${rep.problems.join("; ")}`);
  }
  // The call above ran on the new device, which calls ondevicerestored as it opens.
  if (restored !== 1) report.failures.push(`ondevicerestored called ${restored} times by a call on the new device, want once`);
  const e = await outcome(() => n.run({ ...a, input: kept }));
  const lostTensor = /^input: expected a GpuTensor on a live device, got one whose device was lost \(.+\)$/s;
  if (!isError(e, "GpuDeviceError", lostTensor)) report.failures.push(`a tensor of the lost device: want GpuDeviceError: ${lostTensor}, got ${named(e)}`);
  report.checked.deviceLoss = 3;
}

/**
 * The rotary stage after the norm: NeoX and interleaved, partial, heads narrower than the row,
 * positions from an Int32Array, a Uint32Array or a start, far positions, through run,
 * runWithSum, new tensors, in place and f16 output, the rotation alone (`kind: "none"`), a
 * gamma a head (Cohere's) and a packed qkv row, each against the f64 reference.
 */
async function rotary(n, report) {
  let checked = 0;
  const push = (what, rep) => {
    checked++;
    if (!rep.ok) report.failures.push(`rotary ${what}: ${rep.problems.join("; ")}`);
  };
  for (const [start, rotaryStyle, headSize, rotaryDim] of [[0, "neox", 64, 64], [4095, "interleaved", 64, 32], [2 ** 20, "neox", 32, 16]]) {
    const a = seeded.caseArgs({ rows: 8, hidden: 64, bias: false, beta: true, seed: 11 });
    delete a.residual;
    const args = { ...a, positions: new Int32Array([start, start + 3]), theta: 1e4, rotaryStyle, headSize, rotaryDim };
    const what = `${rotaryStyle} at ${start}`;
    const y = await n.run(args);
    push(what, ref.compare(args, y));
    push(`${what}, Uint32Array and runWithSum`, ref.compare(args, (await n.runWithSum({ ...args, positions: new Uint32Array(args.positions) })).output));
    const from = { ...args, positions: undefined, position: start, heads: 4 };
    const consecutive = { ...args, positions: new Int32Array([start, start + 1]) };
    push(`${what}, from a start`, ref.compare(consecutive, await n.run(from)));
    push(`${what}, f16 output`, ref.compare(args, await n.run({ ...args, outputDtype: "f16" }), { tol: 1e-3 }));
    const t = await n.run({ ...args, output: "gpu" });
    push(`${what}, a new tensor`, ref.compare(args, await t.read()));
    t.free();
    const over = n.upload(args.input);
    await n.run({ ...args, input: over, inPlace: true });
    push(`${what}, in place`, ref.compare(args, await over.read()));
    over.free();
  }
  // The rotation alone (Llama's q: no QK-norm), each token's heads one row.
  const q = seeded.caseArgs({ rows: 3, hidden: 256, bias: true, beta: false, seed: 12 });
  const alone = { input: q.input, residual: q.residual, bias: q.bias, hidden: 256, kind: "none", headSize: 64, position: 131071, theta: 5e5 };
  push("kind none", ref.compare(alone, await n.run(alone)));
  // A gamma a head (Cohere's QK-norm): rows that are heads, each head's weight its own, and
  // the same over tensors in place.
  const c = seeded.caseArgs({ rows: 8, hidden: 32, bias: false, beta: false, seed: 13 });
  const gamma = Float32Array.from({ length: 4 * 32 }, (_, i) => 0.5 + ((i * 37) % 23) / 11);
  const cohere = { input: c.input, gamma, hidden: 32, kind: "layer", positions: new Int32Array([5, 6]), theta: 5e5, rotaryStyle: "interleaved" };
  push("a gamma a head", ref.compare(cohere, await n.run(cohere)));
  const heads = n.upload(c.input);
  await n.run({ ...cohere, input: heads, gamma: n.upload(gamma), inPlace: true });
  push("a gamma a head, in place on tensors", ref.compare(cohere, await heads.read()));
  heads.free();
  // Said by the call (gammaHeads), as a GPUBuffer's size cannot.
  push("gammaHeads", ref.compare(cohere, await n.run({ ...cohere, gammaHeads: true })));
  // q and k of a packed qkv row in one call (3 q heads, 1 k head, 2 v heads passed as they are).
  const qkv = { input: c.input.subarray(0, 12 * 16), gamma: gamma.subarray(0, 4 * 16), hidden: 16, heads: 6, passHeads: 2, positions: new Int32Array([9, 4096]), theta: 1e6 };
  push("a packed qkv row", ref.compare(qkv, await n.run(qkv)));
  // The app's own cos and sin, rows no angle gives, in place where a decode step would be.
  const cosSin = Float32Array.from({ length: 8 * 16 }, (_, i) => Math.cos(i * 0.61) * 0.9);
  const table = { ...qkv, heads: undefined, passHeads: undefined, gamma: gamma.subarray(0, 16), theta: undefined, cosSin, positions: new Int32Array([7, 0]) };
  push("cosSin", ref.compare(table, await n.run(table)));
  report.checked.rotary = checked;
}

/**
 * www/decoder's stack, the package inside a forward pass (each norm and the rotation between
 * the engine's own kernels, one encoder a step): a prompt and three decode steps, the stream
 * and the final norm of each against the f64 reference of the whole stack, and with
 * transformers' Qwen3 weights against what transformers computed
 * (tests/fixtures/decoder/qwen3.json).
 */
async function decoder(n, report) {
  const steps = [8, 1, 1, 1];
  const cfg = { hidden: 64, qHeads: 4, kvHeads: 2, headDim: 16, inter: 128, layers: 2, eps: 1e-6, theta: 1e6 };
  const weights = seededWeights(cfg, 7);
  const x = seededEmbeddings(cfg, 11, 3);
  const ref = referenceStack(cfg, weights, x, 11);
  const [stream, final] = [ref.layers.at(-1), ref.final].map((all) => perStep(all, steps, cfg.hidden));
  const f = (await import("../../fixtures/decoder/qwen3.json", { with: { type: "json" } })).default;
  const runs = [
    ["the f64 reference", cfg, weights, x, steps.map((_, s) => ({ stream: stream[s], final: final[s] }))],
    ["transformers' Qwen3", f.config, fromTransformers(f.weights), Float32Array.from(f.embeddings), f.steps],
  ];
  let checked = 0;
  for (const [against, c, w, input, want] of runs) {
    const stack = createStack(n, c, w, { maxTokens: 16 });
    const got = await runSteps(stack, input, steps, c.hidden);
    stack.free();
    for (const [s, g] of got.entries()) {
      for (const what of ["stream", "final"]) {
        checked++;
        const off = worstOff(g[what], want[s][what], c.hidden);
        if (!(off <= 1e-5)) report.failures.push(`decoder step ${s} (${g.tokens} tokens), ${what}: ${off} of its row's largest from ${against}`);
      }
    }
  }
  report.checked.decoder = checked;
}

/**
 * The checks for `backend` ("webgpu": every GPU entry point; "cpu": the CPU backend's), on the
 * package `pkg` whose `init` has not run yet.
 */
export async function check({ init, pkg, backend }) {
  const report = { failures: [], checked: {} };
  await init();
  const n = await pkg.FusedRmsNorm.create({ backend: backend === "cpu" ? "auto" : "webgpu" });
  report.backend = n.backend;
  report.adapter = n.adapterInfo.description || n.adapterInfo.device || n.adapterInfo.architecture;
  if (backend === "cpu") {
    await family(n, CPU_ENTRIES, report, [undefined]);
    await errors(n, report);
    await rotary(n, report);
  } else {
    report.shaderF16Offered = n.device.features.has("shader-f16");
    await family(n, GPU_ENTRIES, report, [true, false]);
    await errors(n, report);
    await rotary(n, report);
    await webgpuObjects(n, report);
    await timing(n, report);
    await decoder(n, report);
    await deviceLoss(n, report);
  }
  n.free();
  return report;
}
