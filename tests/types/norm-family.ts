// The normalization family's fields (`kind`, an optional `residual`, `postGamma`, `input2`,
// `gammaOffset`, `outputDtype`, a post-norm's sum alone without `gamma`) on every entry point,
// with the exact type each call resolves with: `outputDtype` decides the output's dtype and the
// data's decides the sum's.
// Type-checked (never run) like use.ts; the misuses are in misuse.ts, encode and kernelSource
// with WebGPU's types in interop.ts.
import {
  FusedRmsNorm,
  type FusedRmsNormArgs,
  type FusedRmsNormGpuWithSum,
  type FusedRmsNormKernel,
  type FusedRmsNormKernelSource,
  type FusedRmsNormWithSum,
  type GpuTensor,
  type NormKind,
} from "webgpu-rmsnorm";
import type { Equal, Expect } from "./exact";

export async function normFamily(norm: FusedRmsNorm): Promise<void> {
  const rows = 4, hidden = 128;
  const f32 = (n = rows * hidden) => new Float32Array(n);
  const f16 = (n = rows * hidden) => new Uint16Array(n);
  const gamma = f32(hidden), gamma16 = f16(hidden);

  // Llama's pre-norm is today's call; GPT-2's LayerNorm with a bias and a beta.
  const llama = await norm.run({ input: f32(), residual: f32(), gamma, hidden });
  const gpt2 = await norm.runWithSum({ input: f32(), residual: f32(), gamma, beta: f32(hidden), bias: f32(hidden), hidden, kind: "layer", eps: 1e-5 });
  // QK-norm and a final norm: no residual.
  const qk = await norm.run({ input: f32(), gamma, hidden, kind: "rms" });
  const final16 = await norm.run({ input: f16(), gamma: gamma16, hidden });
  // Gemma 3's sandwich: post-norm, residual add, pre-norm, with 1 + γ.
  const gemma = await norm.runWithSum({ input: f32(), residual: f32(), gamma, postGamma: f32(hidden), gammaOffset: 1, hidden });
  // QK-norm then RoPE: Qwen3's q with the model's inverse frequencies; a decode step from
  // one position; OLMo 2's whole projection turned head by head; Phi's partial rotary.
  const qwen = await norm.run({ input: f32(), gamma, hidden, positions: new Int32Array([0, 1]), invFreq: f32(64) });
  const decode = await norm.run({ input: f32(), gamma, hidden, position: 4095, heads: 4, theta: 1e6, rotaryStyle: "neox" });
  const olmoRope = await norm.runWithSum({ input: f32(), gamma, hidden, headSize: 32, positions: new Uint32Array(4), theta: 5e5 });
  const phi = await norm.run({ input: f32(), gamma, beta: f32(hidden), hidden, kind: "layer", rotaryDim: 32, rotaryStyle: "interleaved", attentionScaling: 1.1, position: 0, invFreq: f32(16) });
  // The rotation alone (Llama, GPT-J: no QK-norm), no gamma.
  const llamaQ = await norm.run({ input: f32(), hidden, kind: "none", headSize: 64, position: 7, invFreq: f32(32) });
  const gptjK = await norm.run({ input: f32(), hidden, kind: "none", rotaryDim: 16, rotaryStyle: "interleaved", positions: new Int32Array(4), theta: 1e4, output: "gpu" });
  // q and k of a packed qkv row in one call, its v heads passed.
  const packed = await norm.run({ input: f32(), gamma, hidden, heads: 6, passHeads: 2, position: 7, invFreq: f32(32) });
  type _Packed = Expect<Equal<typeof packed, typeof llamaQ>>;
  // The app's own cos and sin (vLLM's cos_sin_cache) instead of the frequencies.
  const cached = await norm.run({ input: f32(), gamma, hidden, positions: new Int32Array(4), cosSin: f32(64 * 4096) });
  type _Cached = Expect<Equal<typeof cached, Float32Array>>;
  type _Family = [
    Expect<Equal<typeof llamaQ, Float32Array>>,
    Expect<Equal<typeof gptjK, GpuTensor<"f32">>>,
    Expect<Equal<typeof qwen, Float32Array>>,
    Expect<Equal<typeof decode, Float32Array>>,
    Expect<Equal<typeof olmoRope, FusedRmsNormWithSum<"f32">>>,
    Expect<Equal<typeof phi, Float32Array>>,
    Expect<Equal<typeof llama, Float32Array>>,
    Expect<Equal<typeof gpt2, FusedRmsNormWithSum<"f32">>>,
    Expect<Equal<typeof qk, Float32Array>>,
    Expect<Equal<typeof final16, Uint16Array>>,
    Expect<Equal<typeof gemma, FusedRmsNormWithSum<"f32">>>,
  ];

  // outputDtype: an f32 residual stream feeding f16 matmuls, and the other way round. The
  // output takes outputDtype's type, the sum the data's.
  const toHalf = await norm.run({ input: f32(), residual: f32(), gamma, hidden, outputDtype: "f16" });
  const toHalfSum = await norm.runWithSum({ input: f32(), residual: f32(), gamma, hidden, outputDtype: "f16" });
  const toSingle = await norm.run({ input: f16(), residual: f16(), gamma: gamma16, hidden, outputDtype: "f32" });
  const toSingleSum = await norm.runWithSum({ input: f16(), gamma: gamma16, hidden, outputDtype: "f32", kind: "layer" });
  const same = await norm.run({ input: f32(), residual: f32(), gamma, hidden, outputDtype: "f32" });
  type _OutputDtype = [
    Expect<Equal<typeof toHalf, Uint16Array>>,
    Expect<Equal<typeof toHalfSum, FusedRmsNormWithSum<"f32", "f16">>>,
    Expect<Equal<typeof toHalfSum.output, Uint16Array>>,
    Expect<Equal<typeof toHalfSum.sum, Float32Array>>,
    Expect<Equal<typeof toSingle, Float32Array>>,
    Expect<Equal<typeof toSingleSum.output, Float32Array>>,
    Expect<Equal<typeof toSingleSum.sum, Uint16Array>>,
    Expect<Equal<typeof same, Float32Array>>,
  ];

  // Results left on the GPU, in outputDtype.
  const g = norm.upload(gamma);
  const t16 = await norm.run({ input: f32(), gamma: g, hidden, output: "gpu", outputDtype: "f16" });
  const both = await norm.runWithSum({ input: f32(), residual: norm.upload(f32()), gamma: g, postGamma: g, hidden, output: "gpu", outputDtype: "f16" });
  const t32 = await norm.run({ input: t16, gamma: gamma16, hidden, output: "gpu", outputDtype: "f32" });
  type _Gpu = [
    Expect<Equal<typeof t16, GpuTensor<"f16">>>,
    Expect<Equal<typeof both, FusedRmsNormGpuWithSum<"f32", "f16">>>,
    Expect<Equal<typeof both.output, GpuTensor<"f16">>>,
    Expect<Equal<typeof both.sum, GpuTensor<"f32">>>,
    Expect<Equal<typeof t32, GpuTensor<"f32">>>,
    Expect<Equal<Awaited<ReturnType<typeof both.output.read>>, Uint16Array>>,
  ];

  // In place, with or without a residual, every field but another outputDtype.
  const x = norm.upload(f32()), r = norm.upload(f32());
  const done = await norm.run({ input: x, residual: r, gamma: g, postGamma: g, gammaOffset: 1, kind: "layer", hidden, inPlace: true });
  const alone = await norm.runWithSum({ input: x, gamma: g, hidden, inPlace: true, outputDtype: "f32" });
  type _InPlace = [Expect<Equal<typeof done, void>>, Expect<Equal<typeof alone, void>>];

  // A parallel block's second sublayer output; OLMo 2's post-norm alone (no gamma): `{ sum }`.
  const parallel = await norm.runWithSum({ input: f32(), input2: f32(), residual: f32(), gamma, beta: f32(hidden), hidden, kind: "layer" });
  const olmo = await norm.runWithSum({ input: f32(), residual: f32(), postGamma: gamma, hidden });
  const olmo16 = await norm.runWithSum({ input: f16(), residual: f16(), postGamma: gamma16, hidden });
  const olmoGpu = await norm.runWithSum({ input: f32(), residual: f32(), postGamma: g, hidden, output: "gpu" });
  const olmoInPlace = await norm.runWithSum({ input: x, residual: r, postGamma: g, hidden, inPlace: true });
  type _Glue = [
    Expect<Equal<typeof parallel, FusedRmsNormWithSum<"f32">>>,
    Expect<Equal<typeof olmo, { sum: Float32Array }>>,
    Expect<Equal<typeof olmo16, { sum: Uint16Array }>>,
    Expect<Equal<typeof olmoGpu, { sum: GpuTensor<"f32"> }>>,
    Expect<Equal<typeof olmoInPlace, void>>,
  ];

  // The timing calls take every call whose results are read back.
  const ms: number = await norm.timeDispatches({ input: f32(), gamma, hidden, kind: "layer", outputDtype: "f16" }, 5);
  const gpu: number | undefined = await norm.gpuTime({ input: f16(), residual: f16(), gamma: gamma16, postGamma: gamma16, hidden, outputDtype: "f32" }, 5);

  // Kernels for prepare and kernelSource, one per family, and an annotated argument object.
  const kernels: FusedRmsNormKernel[] = [
    { hidden: 4096, sum: true },
    { hidden: 768, kind: "layer", bias: true, beta: true, sum: true },
    { hidden: 128, residual: false },
    { hidden: 2560, postGamma: true, gammaOffset: 1, sum: true },
    { hidden: 4096, outputDtype: "f16", sum: true },
    { hidden: 4096, dtype: "f16", inPlace: true, outputDtype: "f16" },
    { hidden: 2560, kind: "layer", input2: true, beta: true, sum: true },
    { hidden: 2048, postGamma: true, gamma: false, sum: true },
  ];
  await norm.prepare(kernels);
  const k: FusedRmsNormKernelSource = norm.kernelSource({ hidden: 128, residual: false, kind: "layer", outputDtype: "f16", rows: 65536 });
  const kind: NormKind = "layer";
  const args: FusedRmsNormArgs<"f32", "f16"> = { input: f32(), gamma, hidden, kind, outputDtype: "f16" };
  const viaVariable = await norm.run(args);
  type _Described = [
    Expect<Equal<typeof k.outputStorage, "f32" | "f16" | "f16-packed">>,
    Expect<Equal<typeof k.params.fields[number]["name"], "rows" | "width" | "hidden" | "eps" | "gamma_offset" | "rotary_start" | "rotary_heads" | "rotary_scaling" | "rotary_pass">>,
    Expect<Equal<Extract<typeof k.bindings[number]["name"], "post_gamma">, "post_gamma">>,
    Expect<Equal<Extract<typeof k.bindings[number]["name"], "input2">, "input2">>,
    Expect<Equal<typeof viaVariable, Uint16Array>>,
  ];
  console.log(ms, gpu);
}
