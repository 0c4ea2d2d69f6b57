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

  console.log(total, doubled, notAwaited, output, made);
}
