// Deliberate misuse that the published types must reject. Every line marked `// misuse:`
// must draw at least one tsc error and no other line may draw any (tests/e2e/consumers.test.mjs
// counts them per line), so a declaration loosened to `any`, or a typo that breaks the whole
// file, cannot pass for a rejection. One misuse per line: tsc reports each at its own line.
import { FusedRmsNorm, type FusedRmsNormArgs } from "webgpu-rmsnorm";

export async function misuse(norm: FusedRmsNorm, good: FusedRmsNormArgs): Promise<void> {
  const { input, residual, gamma } = good;

  await norm.run({ input: [1, 2, 3, 4], residual, gamma, hidden: 4 }); // misuse: number[] for input
  await norm.run({ input, residual, gamma, hidden: "4" }); // misuse: string hidden
  await norm.run({ input, residual, hidden: 4 }); // misuse: missing gamma
  await norm.run({ input, residual, gamma, hidden: 4, eps: "1e-6" }); // misuse: string eps
  await norm.run({ input, residual: new Float64Array(4), gamma, hidden: 4 }); // misuse: Float64Array residual
  await norm.run({ input, residual, gamma, hidden: 4, gama: gamma }); // misuse: misspelt field
  await norm.run(input); // misuse: a bare array for the arguments object
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

  console.log(total, doubled, notAwaited, output, made, wrong);
}
