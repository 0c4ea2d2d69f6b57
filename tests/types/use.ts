// A TypeScript consumer of the whole public API, imported by the package's name. It is
// type-checked (`tsc -p tests/types`), never run: what matters is that a strict app compiles
// against the published .d.ts and that the types are the precise ones, not `any`.
import init, {
  FusedRmsNorm,
  initSync,
  type FusedRmsNormAdapterInfo,
  type FusedRmsNormArgs,
  type FusedRmsNormDebugStats,
  type FusedRmsNormOptions,
  type FusedRmsNormWithSum,
  type InitOutput,
} from "webgpu-rmsnorm";
import type { Equal, Expect } from "./exact";

export type ExactTypes = [
  Expect<Equal<Awaited<ReturnType<typeof init>>, InitOutput>>,
  Expect<Equal<Awaited<ReturnType<typeof FusedRmsNorm.create>>, FusedRmsNorm>>,
  Expect<Equal<FusedRmsNormWithSum["output"], Float32Array>>,
  Expect<Equal<FusedRmsNormWithSum["sum"], Float32Array>>,
  Expect<Equal<FusedRmsNormAdapterInfo["isFallbackAdapter"], boolean>>,
  Expect<Equal<FusedRmsNormAdapterInfo["vendor"], string>>,
  Expect<Equal<FusedRmsNormDebugStats["liveBuffers"], number>>,
  Expect<Equal<NonNullable<FusedRmsNormOptions["powerPreference"]>, "low-power" | "high-performance">>,
  Expect<Equal<FusedRmsNormArgs["hidden"], number>>,
];

// Error names are the contract (`e.name`); the package has no error classes to `instanceof`.
type NormErrorName = "WebGpuUnavailableError" | "GpuDeviceError" | "ShapeError" | "TypeError";

function describeError(e: unknown): string {
  if (!(e instanceof Error)) return String(e);
  switch (e.name as NormErrorName | string) {
    case "WebGpuUnavailableError":
      return `no WebGPU here: ${e.message}`;
    case "GpuDeviceError":
      return `GPU device problem: ${e.message}`;
    case "ShapeError":
    case "TypeError":
      return `bad arguments: ${e.message}`;
    default:
      return `${e.name}: ${e.message}`;
  }
}

export async function main(wasmUrl: URL, wasmBytes: ArrayBuffer): Promise<void> {
  // Both ways to start the module: default fetch from next to the JS, or an explicit URL (what
  // a bundler's `?url` import gives); initSync takes bytes a worker already has.
  const exports: InitOutput = await init();
  await init({ module_or_path: wasmUrl });
  initSync({ module: wasmBytes });
  console.log(exports.memory.buffer.byteLength);

  const norm = await FusedRmsNorm.create();
  const options: FusedRmsNormOptions = { powerPreference: "high-performance" };
  const fast = await FusedRmsNorm.create(options);
  const frugal = await FusedRmsNorm.create({ powerPreference: "low-power" });
  await FusedRmsNorm.create({});

  const info: FusedRmsNormAdapterInfo = norm.adapterInfo;
  const vendor: string = info.vendor;
  const architecture: string = info.architecture;
  const device: string = info.device;
  const description: string = info.description;
  const fallback: boolean = info.isFallbackAdapter;
  console.log(`${vendor} ${architecture} ${device} ${description}${fallback ? " (fallback)" : ""}`);

  const rows = 2;
  const hidden = 8;
  const args: FusedRmsNormArgs = {
    input: new Float32Array(rows * hidden),
    residual: new Float32Array(rows * hidden),
    gamma: new Float32Array(hidden).fill(1),
    hidden,
  };
  const withAll: FusedRmsNormArgs = {
    ...args,
    beta: new Float32Array(hidden),
    bias: new Float32Array(hidden),
    eps: 1e-5,
  };

  const y = await norm.run(args);
  type _RunGivesFloat32Array = Expect<Equal<typeof y, Float32Array>>;
  const first: number = y[0];

  const both = await fast.runWithSum(withAll);
  type _RunWithSumGivesArrays = Expect<Equal<typeof both, FusedRmsNormWithSum>>;
  const { output, sum }: { output: Float32Array; sum: Float32Array } = both;
  console.log(first, output.length, sum.length);

  // An inline literal, as most call sites write it, with no annotation to help inference.
  await frugal.run({ input: y, residual: sum, gamma: args.gamma, hidden, eps: 0 });

  const ms = await norm.timeDispatches(args, 10);
  type _TimeIsNumber = Expect<Equal<typeof ms, number>>;

  const stats: FusedRmsNormDebugStats = norm.debugStats();
  const counts: number[] = [stats.liveBuffers, stats.idleBuffers, stats.wasmMemoryBytes];
  console.log(counts);

  try {
    await norm.run({ ...args, hidden: 3 });
  } catch (e) {
    console.warn(describeError(e));
  }
  const settled = await norm.run(args).then(
    (out) => out.length,
    (e: unknown) => (e instanceof Error && e.name === "ShapeError" ? -1 : -2),
  );
  console.log(settled);

  norm.simulateDeviceLoss();

  // Explicit release, and release by scope through Symbol.dispose.
  fast.free();
  frugal[Symbol.dispose]();
  {
    using scoped = await FusedRmsNorm.create();
    const disposable: Disposable = scoped;
    console.log(disposable, await scoped.run(args));
  }
  norm.free();
}
