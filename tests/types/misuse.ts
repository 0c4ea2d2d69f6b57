// Deliberate misuse that the published types must reject. Every line marked `// misuse:`
// must draw at least one tsc error and no other line may draw any
// (tests/e2e/package/consumers.test.mjs counts them per line), so a declaration loosened to
// `any`, or a typo that breaks the whole file, cannot pass for a rejection. One misuse per
// line: tsc reports each at its own line.
import { FusedRmsNorm, type FusedRmsNormArgs } from "webgpu-rmsnorm";

export async function misuse(norm: FusedRmsNorm, good: FusedRmsNormArgs): Promise<void> {
  const { input, residual, gamma } = good;

  await norm.run({ input: [1, 2, 3, 4], residual, gamma, hidden: 4 }); // misuse: number[] for input
  await norm.run({ input, residual, gamma, hidden: "4" }); // misuse: string hidden
  await norm.run({ input, residual, hidden: 4 }); // misuse: missing gamma
  await norm.run({ input, residual, postGamma: gamma, hidden: 4 }); // misuse: run without gamma (its result is y)
  await norm.runWithSum({ input, residual, postGamma: gamma, beta: gamma, hidden: 4 }); // misuse: beta without gamma
  await norm.run({ input, residual, gamma, hidden: 4, eps: "1e-6" }); // misuse: string eps
  await norm.run({ input, residual: new Float64Array(4), gamma, hidden: 4 }); // misuse: Float64Array residual
  await norm.run({ input, residual, gamma, hidden: 4, gama: gamma }); // misuse: misspelt field
  await norm.run(input); // misuse: a bare array for the arguments object
  await norm.run({ input, residual, gamma, hidden: 4, output: new Uint16Array(4) }); // misuse: f16 output array for an f32 result
  await norm.run({ input, residual, gamma, hidden: 4, output: new Float64Array(4) }); // misuse: Float64Array output
  await norm.run({ input, residual, gamma, hidden: 4, sum: new Float32Array(4) }); // misuse: sum in run
  await norm.run({ input, gamma, hidden: 4, positions: [0, 1, 2, 3], theta: 1e4 }); // misuse: number[] for positions
  await norm.run({ input, gamma, hidden: 4, heads: 2, passHeads: "1", position: 0, theta: 1e4 }); // misuse: a string passHeads
  await norm.run({ input, gamma, hidden: 4, position: 0, theta: 1e4, rotaryStyle: "gptj" }); // misuse: unknown rotaryStyle
  await norm.run({ input, gamma, hidden: 4, kind: "none", position: 0, theta: 1e4 }); // misuse: gamma with kind "none"
  await FusedRmsNorm.create({ powerPreference: "fast" }); // misuse: wrong powerPreference
  await FusedRmsNorm.create("high-performance"); // misuse: options as a string

  const y = await norm.run(good);
  const total: number = y; // misuse: run()'s result treated as a number
  const doubled = y * 2; // misuse: arithmetic on a Float32Array
  const notAwaited: Float32Array = norm.run(good); // misuse: the Promise used as the array
  const { output } = norm.runWithSum(good); // misuse: destructuring the Promise

  norm.adapterInfo.vendor = "someone"; // misuse: adapterInfo is read-only
  norm.adapterInfo = norm.adapterInfo; // misuse: adapterInfo itself is read-only
  await norm.timeDispatches(good); // misuse: missing repeat count
  const made = new FusedRmsNorm(); // misuse: the constructor is private; use create()
  const t16 = norm.upload(new Uint16Array(8));
  await norm.run({ input, residual, gamma: t16, hidden: 4 }); // misuse: an f16 tensor among f32 arrays
  await norm.run({ input: new Uint16Array(8), residual, gamma, hidden: 4 }); // misuse: mixed f16 and f32 arrays
  const wrong: Float32Array = await t16.read(); // misuse: an f16 tensor reads back Uint16Array bits
  norm.upload(new Float32Array(4), { dtype: "f16" }); // misuse: dtype disagrees with the array
  await norm.run({ input, residual, gamma, hidden: 4, inPlace: true }); // misuse: in place on host arrays
  await norm.run({ input, residual, gamma, hidden: 4, Eps: 1e-5 }); // misuse: misspelt eps
  await norm.prepare({ hidden: 4, dtype: "bf16" }); // misuse: no such dtype
  norm.ondevicelost = "reload"; // misuse: a handler must be a function
  await FusedRmsNorm.create({ backend: "wasm" }); // misuse: no such backend


  // The normalization family's fields.
  await norm.run({ input, residual, gamma, hidden: 4, kind: "group" }); // misuse: no such kind
  await norm.run({ input, residual, gamma, hidden: 4, kind: "Layer" }); // misuse: kinds are lower case
  await norm.run({ input, gamma, hidden: 4, gammaOffset: "1" }); // misuse: a string gammaOffset
  await norm.run({ input, gamma, hidden: 4, postGamma: true }); // misuse: postGamma is an array, not a flag
  await norm.run({ input, gamma, hidden: 4, postGamma: t16 }); // misuse: an f16 postGamma among f32 arrays
  await norm.run({ input, gamma, hidden: 4, outputDtype: "bf16" }); // misuse: no such outputDtype
  await norm.run({ input, gamma, hidden: 4, residual: null }); // misuse: an absent residual is left out, not null
  const half: Float32Array = await norm.run({ input, gamma, hidden: 4, outputDtype: "f16" }); // misuse: an f16 output is Uint16Array bits
  const single: Uint16Array = await norm.run({ input: t16, gamma: t16, hidden: 4, outputDtype: "f32" }); // misuse: an f32 output from f16 data is a Float32Array
  const { sum: halfSum } = await norm.runWithSum({ input: t16, gamma: t16, hidden: 4, outputDtype: "f32" });
  const sumAsF32: Float32Array = halfSum; // misuse: the sum stays in the data's dtype
  const x32 = norm.upload(new Float32Array(8));
  await norm.run({ input: x32, gamma, hidden: 4, inPlace: true, outputDtype: "f16" }); // misuse: in place writes y over the data: its dtype only
  await norm.runWithSum({ input: t16, residual: t16, gamma: t16, hidden: 4, inPlace: true, outputDtype: "f32" }); // misuse: in place f16 with an f32 output
  await norm.prepare({ hidden: 4, inPlace: true, outputDtype: "f16" }); // misuse: an in-place kernel of another output dtype
  await norm.prepare({ hidden: 4, residual: "none" }); // misuse: a kernel's residual is a boolean
  norm.kernelSource({ hidden: 4, kind: "rmsnorm" }); // misuse: no such kind in a kernel
  const gpuHalf = await norm.run({ input, gamma, hidden: 4, output: "gpu", outputDtype: "f16" });
  const back: Float32Array = await gpuHalf.read(); // misuse: an f16 output tensor reads back Uint16Array bits

  console.log(total, doubled, notAwaited, output, made, wrong, half, single, sumAsF32, back);
}
