// What the README's fragments take from the page around them (the app's instance, weights,
// kernels and tensors), declared for tests/e2e/package/readme.test.mjs, which compiles every
// ```js and ```ts snippet of the README as a module of its own: a snippet's own declarations
// shadow these, and a name used but declared neither here nor in the snippet is an error.
import type { FusedRmsNorm, GpuTensor } from "webgpu-rmsnorm";

declare global {
  /** The instance: `const norm = await FusedRmsNorm.create()`. */
  const norm: FusedRmsNorm;
  const hidden: number;
  /** Host data the app has: a layer's weights and the embeddings of its tokens. */
  const gammaArray: Float32Array;
  const embeddings: Float32Array;
  /** The model's layers, their weights uploaded. */
  const layers: { gamma: GpuTensor }[];
  /** The app's own kernels, recording into its encoder. */
  const attention: { record(encoder: GPUCommandEncoder, x: GpuTensor): void };
  const mlp: { record(encoder: GPUCommandEncoder, x: GpuTensor): void };
  /** Activations, the residual stream and a weight on the GPU. */
  const x: GpuTensor;
  const residual: GpuTensor;
  const gamma: GpuTensor;
}
