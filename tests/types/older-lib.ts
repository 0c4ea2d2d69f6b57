// The README's usage, compiled under `lib: ["ES2022", "DOM"]` (tsconfig.es2022.json): a
// consumer without ESNext.Disposable must still be able to type-check against the package.
import init, { FusedRmsNorm, type GpuTensor } from "webgpu-rmsnorm";

export async function main(): Promise<void> {
  await init();
  const norm = await FusedRmsNorm.create();
  const hidden = 4;
  const y: Float32Array = await norm.run({
    input: new Float32Array([1, 2, 3, 4, 5, 6, 7, 8]),
    residual: new Float32Array(8),
    gamma: new Float32Array([1, 1, 1, 1]),
    hidden,
    eps: 1e-6,
  });
  const gamma: GpuTensor = norm.upload(new Float32Array(hidden), { dtype: "f32" });
  const t = await norm.run({ input: y, residual: new Float32Array(8), gamma, hidden, output: "gpu" });
  console.log(await t.read(), norm.adapterInfo.vendor, norm.debugStats().liveBuffers);
  t[Symbol.dispose]();
  gamma.free();
  norm.free();
}
