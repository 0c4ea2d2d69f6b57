// The README's snippets as a TypeScript app writes them, compiled under `lib: ["ES2022",
// "DOM"]` (tsconfig.es2022.json): a consumer without ESNext.Disposable must still be able to
// type-check against the package, and the README's forms must type-check as written.
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

  // GPU-resident tensors: a chain of layers with one readback at the end.
  const embeddings = new Float32Array(8);
  const layers = [{ gamma: norm.upload(new Float32Array(hidden)) }];
  let x = norm.upload(embeddings), residual = norm.upload(new Float32Array(embeddings.length));
  for (const layer of layers) {
    const r = await norm.runWithSum({ input: x, residual, gamma: layer.gamma, hidden, output: "gpu" });
    x.free(); residual.free();
    x = r.output; residual = r.sum;
  }
  const last: Float32Array = await x.read();

  // Preparing kernels, the backend, handlers, and the pool.
  await norm.prepare([
    { hidden: 4096, sum: true },
    { hidden: 4096, bias: true, inPlace: true },
    { hidden: 4096, dtype: "f16" },
  ]);
  const cpu = await FusedRmsNorm.create({ backend: "auto" });
  norm.ondevicelost = ({ reason, message }) => console.warn(reason, message);
  norm.ondevicerestored = () => console.log("upload the weights again");
  norm.trim();
  await init({ module_or_path: new URL("webgpu_rmsnorm_bg.wasm", import.meta.url) });
  console.log(last, cpu.backend);

  // In a worker: errors cross as plain name/message.
  try {
    await norm.run({ input: y, residual: y, gamma: y, hidden: 3 });
  } catch (e) {
    const plain = { name: (e as Error).name, message: (e as Error).message };
    console.log(plain);
  }
  norm.free();
}
