// Every overload the runtime accepts, with the exact type each resolves with: f32 and f16
// host data, GPU-resident results, in place, tensors typed by dtype, the timing calls,
// prepare/trim and the device-loss handlers. Type-checked (never run) like use.ts.
import init, {
  FusedRmsNorm,
  type F16Array,
  type FusedRmsNormDebugStats,
  type FusedRmsNormBackendChangeEvent,
  type FusedRmsNormDeviceLostEvent,
  type FusedRmsNormGpuWithSum,
  type FusedRmsNormWithSum,
  type GpuTensor,
} from "webgpu-rmsnorm";
import type { Equal, Expect } from "./exact";

export async function overloads(): Promise<void> {
  // The README's form of init, with an explicit path (no deprecation warning).
  await init({ module_or_path: new URL("webgpu_rmsnorm_bg.wasm", import.meta.url) });
  const norm = await FusedRmsNorm.create({ backend: "auto" });
  const backend: "webgpu" | "cpu" = norm.backend;
  console.log(backend, await FusedRmsNorm.create({ backend: "cpu" }));
  const hidden = 8;
  const f32 = () => new Float32Array(2 * hidden);
  const f16 = () => new Uint16Array(2 * hidden);

  // Host arrays in, host arrays out, by dtype.
  const y32 = await norm.run({ input: f32(), residual: f32(), gamma: new Float32Array(hidden), hidden });
  const y16 = await norm.run({ input: f16(), residual: f16(), gamma: new Uint16Array(hidden), hidden });
  const s16 = await norm.runWithSum({ input: f16(), residual: f16(), gamma: new Uint16Array(hidden), hidden });
  type _ = [
    Expect<Equal<typeof y32, Float32Array>>,
    Expect<Equal<typeof y16, Uint16Array>>,
    Expect<Equal<typeof s16, FusedRmsNormWithSum<"f16">>>,
    Expect<Equal<typeof s16.output, Uint16Array>>,
  ];

  // Into the caller's own arrays: resolves with those very arrays, a fresh one for a result
  // given none.
  const out32 = f32(), sum32 = f32(), out16 = f16();
  const i32 = await norm.run({ input: f32(), residual: f32(), gamma: new Float32Array(hidden), hidden, output: out32 });
  const i16 = await norm.run({ input: f32(), gamma: new Float32Array(hidden), hidden, outputDtype: "f16", output: out16 });
  const both = await norm.runWithSum({ input: f32(), residual: f32(), gamma: new Float32Array(hidden), hidden, output: out32, sum: sum32 });
  const sum16 = f16();
  const sumOnly = await norm.runWithSum({ input: f16(), residual: f16(), gamma: new Uint16Array(hidden), hidden, sum: sum16 });
  const outOnly = await norm.runWithSum({ input: f32(), residual: f32(), gamma: new Float32Array(hidden), hidden, output: out32 });
  type _Into = [
    Expect<Equal<typeof i32, typeof out32>>,
    Expect<Equal<typeof i16, typeof out16>>,
    Expect<Equal<typeof both.output, typeof out32>>,
    Expect<Equal<typeof both.sum, typeof sum32>>,
    Expect<Equal<typeof sumOnly.output, Uint16Array>>,
    Expect<Equal<typeof sumOnly.sum, typeof sum16>>,
    Expect<Equal<typeof outOnly.output, typeof out32>>,
    Expect<Equal<typeof outOnly.sum, Float32Array>>,
  ];

  // upload exactly as the README writes it (no options), and tensors typed by dtype.
  const g32 = norm.upload(new Float32Array(hidden));
  const g16 = norm.upload(new Uint16Array(hidden), { dtype: "f16" });
  const r32 = await g32.read();
  const r16 = await g16.read();
  type _Tensors = [
    Expect<Equal<typeof g32, GpuTensor<"f32">>>,
    Expect<Equal<typeof g16, GpuTensor<"f16">>>,
    Expect<Equal<typeof g16.dtype, "f16">>,
    Expect<Equal<typeof r32, Float32Array>>,
    Expect<Equal<typeof r16, Uint16Array>>,
  ];

  // Results left on the GPU, from host arrays or tensors, f32 and f16.
  const t32 = await norm.run({ input: f32(), residual: f32(), gamma: g32, hidden, output: "gpu" });
  const t16 = await norm.run({ input: f16(), residual: f16(), gamma: g16, hidden, output: "gpu" });
  const w16 = await norm.runWithSum({ input: t16, residual: f16(), gamma: g16, hidden, output: "gpu" });
  type _Gpu = [
    Expect<Equal<typeof t32, GpuTensor<"f32">>>,
    Expect<Equal<typeof t16, GpuTensor<"f16">>>,
    Expect<Equal<typeof w16, FusedRmsNormGpuWithSum<"f16">>>,
  ];

  // In place, both dtypes: resolves with nothing.
  const done32 = await norm.run({ input: t32, residual: norm.upload(f32()), gamma: g32, hidden, inPlace: true });
  const done16 = await norm.runWithSum({ input: w16.output, residual: w16.sum, gamma: g16, hidden, inPlace: true });
  type _InPlace = [Expect<Equal<typeof done32, void>>, Expect<Equal<typeof done16, void>>];

  // Timing calls take either dtype.
  const ms: number = await norm.timeDispatches({ input: f16(), residual: f16(), gamma: g16, hidden }, 10);
  const gpu: number | undefined = await norm.gpuTime({ input: f32(), residual: f32(), gamma: g32, hidden }, 10);

  // Preparing, trimming, counting, and the device-loss handlers.
  await norm.prepare({ hidden, bias: true, sum: true });
  await norm.prepare([{ hidden, dtype: "f16" }, { hidden, inPlace: true }]);
  norm.trim();
  const stats: FusedRmsNormDebugStats = norm.debugStats();
  const counts: number[] = [stats.liveTensors, stats.liveTensorBytes, stats.idleBytes, stats.devicesOpened, stats.pipelines];
  norm.ondevicelost = (e: FusedRmsNormDeviceLostEvent) => console.warn(e.reason, e.message);
  norm.ondevicerestored = () => console.log("re-upload weights");
  norm.ondevicelost = null;
  norm.onbackendchange = (e: FusedRmsNormBackendChangeEvent) => console.warn(`now on ${e.backend}: ${e.reason}`);
  norm.onbackendchange = null;
  const auto = await FusedRmsNorm.create({ backend: "auto", acceptFallbackAdapter: true });
  auto.free();

  // An f16 host array is a Uint16Array, or a Float16Array where the lib has one.
  const bits: F16Array = new Uint16Array(4);
  console.log(ms, gpu, counts, bits, r32, r16);
  [g32, g16, t32, t16, w16.output, w16.sum].forEach((t) => t.free());
  norm.free();
}
