// The interop API as a WebGPU app (with @webgpu/types) writes it: GPUBuffer arguments,
// encode() into its own encoder, kernelSource() for its own pipeline, norm.device and
// tensor.buffer typed as WebGPU's own classes. Compiled by tsconfig.webgpu.json; the
// `@ts-expect-error` lines are misuses that must not compile.
import init, { FusedRmsNorm, type BoundNorm, type FusedRmsNormKernelSource, type GpuTensor } from "webgpu-rmsnorm";

await init();
const norm = await FusedRmsNorm.create();
const device: GPUDevice | undefined = norm.device;
if (!device) throw new Error("CPU backend");
const buf: GPUBuffer = device.createBuffer({ size: 64, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
const gamma: GpuTensor<"f32"> = norm.upload(new Float32Array(16));
const tb: GPUBuffer | undefined = gamma.buffer;

// A rotary stage's positions in a GPUBuffer (a decode loop's counter on the GPU).
await norm.run({ input: buf, gamma, hidden: 16, heads: 1, positions: buf, theta: 1e4 });
// run with GPUBuffers, mixed with arrays and tensors.
const y: Float32Array = await norm.run({ input: buf, residual: buf, gamma, hidden: 16 });
const t: GpuTensor<"f32"> = await norm.run({ input: buf, residual: new Float32Array(16), gamma, hidden: 16, output: "gpu" });
const h: Uint16Array = await norm.run({ input: buf, residual: new Uint16Array(16), gamma: buf, hidden: 16, dtype: "f16" });

// encode into the app's encoder: into buffers, with sum, or in place.
const encoder: GPUCommandEncoder = device.createCommandEncoder();
norm.encode(encoder, { input: buf, residual: buf, gamma, hidden: 16, output: buf, sum: t });
norm.encode(encoder, { input: t, residual: buf, gamma: buf, beta: buf, hidden: 16, inPlace: true });
norm.encode(encoder, { input: buf, residual: buf, gamma: buf, hidden: 16, dtype: "f16", output: buf });
// @ts-expect-error encode takes GPU data only
norm.encode(encoder, { input: new Float32Array(16), residual: buf, gamma, hidden: 16, output: buf });
// @ts-expect-error the result needs somewhere to go
norm.encode(encoder, { input: buf, residual: buf, gamma, hidden: 16 });
// @ts-expect-error in place has no output
norm.encode(encoder, { input: buf, residual: buf, gamma, hidden: 16, inPlace: true, output: buf });
// @ts-expect-error an encoder, not a device
norm.encode(device, { input: buf, residual: buf, gamma, hidden: 16, output: buf });

// bind: a call read and checked once, then recorded or run step after step.
const bound: BoundNorm = norm.bind({ input: t, residual: buf, gamma, hidden: 16, inPlace: true });
bound.encode(encoder);
const ran: Promise<void> = bound.run();
const into = norm.bind({ input: buf, gamma: buf, hidden: 16, dtype: "f16", outputDtype: "f32", output: t });
into.free();
bound[Symbol.dispose]();
// @ts-expect-error bind takes GPU data only
norm.bind({ input: new Float32Array(16), residual: buf, gamma, hidden: 16, inPlace: true });
// @ts-expect-error a bound call's result needs somewhere to go
norm.bind({ input: buf, gamma, hidden: 16 });
// @ts-expect-error a bound call's encode takes the encoder alone
bound.encode(encoder, { input: t, gamma, hidden: 16, inPlace: true });
// @ts-expect-error an encoder, not a device
bound.encode(device);

// The normalization family into the app's encoder: no residual, LayerNorm, the sandwich, an
// f16 output from f32 data (output holds outputDtype's elements, sum the data's).
norm.encode(encoder, { input: buf, gamma, hidden: 16, kind: "layer", output: buf });
norm.encode(encoder, { input: buf, residual: t, gamma, postGamma: buf, gammaOffset: 1, hidden: 16, output: buf, sum: buf });
const half: GpuTensor<"f16"> = await norm.run({ input: buf, gamma, hidden: 16, output: "gpu", outputDtype: "f16" });
norm.encode(encoder, { input: t, residual: buf, gamma, hidden: 16, outputDtype: "f16", output: half, sum: t });
norm.encode(encoder, { input: buf, gamma: buf, hidden: 16, dtype: "f16", outputDtype: "f32", output: t });
norm.encode(encoder, { input: t, gamma, hidden: 16, inPlace: true, kind: "layer" });
// @ts-expect-error an f16 output needs outputDtype: "f16"
norm.encode(encoder, { input: t, gamma, hidden: 16, output: half });
// @ts-expect-error the sum stays in the data's dtype
norm.encode(encoder, { input: t, gamma, hidden: 16, outputDtype: "f16", output: half, sum: half });
// @ts-expect-error in place writes y over the data: its dtype only
norm.encode(encoder, { input: t, gamma, hidden: 16, inPlace: true, outputDtype: "f16" });

// kernelSource for the app's own pipeline.
const k: FusedRmsNormKernelSource = norm.kernelSource({ hidden: 16, beta: true, rows: 4 });
const module: GPUShaderModule = device.createShaderModule({ code: k.code });
const layout: GPUBindGroupLayout = device.createBindGroupLayout({
  entries: k.bindings.map((b) => ({ binding: b.binding, visibility: GPUShaderStage.COMPUTE, buffer: { type: b.type } })),
});
const grid: readonly [number, number, 1] | undefined = k.workgroups;
// A variant's storage and bindings: QK-norm's f16 output from f32 data, and the sandwich.
const qk = norm.kernelSource({ hidden: 128, residual: false, outputDtype: "f16", rows: 65536 });
const stored: [string, string] = [qk.storage, qk.outputStorage];
const sandwich = norm.kernelSource({ hidden: 16, postGamma: true, gammaOffset: 1, sum: true });
const postGamma = sandwich.bindings.find((b) => b.name === "post_gamma");
const offsetField = sandwich.params.fields.find((f) => f.name === "gamma_offset")?.offset;
// Cohere's QK-norm then RoPE: a gamma a head, interleaved pairs, a start position.
const cohere = norm.kernelSource({ hidden: 128, kind: "layer", residual: false, rotaryDim: 128, headSize: 128, rotaryStyle: "interleaved", positions: false, gammaHeads: true });
// QK-norm then RoPE by the app's own cos and sin, a table of 4096 positions.
const cached = norm.kernelSource({ hidden: 128, residual: false, rotaryDim: 64, cosSinPositions: 4096 });
// @ts-expect-error a rotary style is "neox" or "interleaved"
norm.kernelSource({ hidden: 128, rotaryDim: 128, rotaryStyle: "gptj" });
// @ts-expect-error the source is read-only
k.code = "";
export { y, t, h, tb, ran, module, layout, grid, stored, postGamma, offsetField, cohere, cached };
