//! The package's TypeScript declarations, written out rather than derived: wasm-bindgen
//! would type every argument as one loose interface and every result as one union, while an
//! app needs the result its call actually resolves with (a `Uint16Array` for f16 data, a
//! `GpuTensor` for `output: "gpu"`, nothing in place) and tensors typed by dtype. The classes
//! are `skip_typescript` in `facade.rs` and `tensor.rs`; the type tests
//! (`tests/types/`) check every overload against what the runtime accepts.

use wasm_bindgen::prelude::*;

#[wasm_bindgen(typescript_custom_section)]
const TYPES: &'static str = r#"
/**
 * WebGPU's `GPUDevice` and `GPUBuffer` where the consumer's types declare WebGPU (the
 * `@webgpu/types` package), else `object`: the package's types need no WebGPU types to compile.
 */
export type WebGpuDevice = typeof globalThis extends { GPUDevice: { prototype: infer P } } ? P : object;
export type WebGpuBuffer = typeof globalThis extends { GPUBuffer: { prototype: infer P } } ? P : object;
/**
 * The same in argument positions, where a fallback of `object` would accept anything: without
 * WebGPU types these are `never`, and only typed arrays and tensors type-check.
 */
export type WebGpuBufferArg = typeof globalThis extends { GPUBuffer: { prototype: infer P } } ? P : never;
export type WebGpuCommandEncoder = typeof globalThis extends { GPUCommandEncoder: { prototype: infer P } } ? P : never;

/** How numbers are stored. Arithmetic is f32 either way. */
export type Dtype = "f32" | "f16";

/**
 * f16 data on the host: the half-precision bits in a `Uint16Array`, or a `Float16Array` where
 * the consumer's TypeScript lib declares one (ES2025 / ESNext).
 */
export type F16Array =
  | Uint16Array
  | (typeof globalThis extends { Float16Array: { prototype: infer P } } ? P : never);

/** Host data of a dtype: `Float32Array` for f32, `F16Array` for f16. */
export type HostArray<D extends Dtype> = D extends "f16" ? F16Array : Float32Array;

/** What a call or a read resolves with for a dtype: f16 results are always `Uint16Array`s of bits. */
export type HostResult<D extends Dtype> = D extends "f16" ? Uint16Array : Float32Array;

/**
 * An array argument: host data, a `GpuTensor` of the same dtype, or a `GPUBuffer` of
 * `norm.device` with `COPY_SRC` usage, read whole as elements of `args.dtype` (default f32)
 * and copied on the GPU.
 */
export type FusedRmsNormArray<D extends Dtype> = HostArray<D> | GpuTensor<D> | WebGpuBufferArg;

/** Data `encode` binds as it is: a `GpuTensor`, or a `GPUBuffer` of `norm.device` with `STORAGE` usage. */
export type FusedRmsNormGpuData<D extends Dtype> = GpuTensor<D> | WebGpuBufferArg;

interface FusedRmsNormArgsBase<D extends Dtype> {
  /** rows × hidden, row-major. */
  input: FusedRmsNormArray<D>;
  /** rows × hidden, added to `input` before normalizing. */
  residual: FusedRmsNormArray<D>;
  /** hidden; the scale applied after normalizing. */
  gamma: FusedRmsNormArray<D>;
  /** hidden; the shift applied last. Omitted: zeros. */
  beta?: FusedRmsNormArray<D>;
  /** hidden; added to every row before normalizing. Omitted: none. */
  bias?: FusedRmsNormArray<D>;
  /** Row length: an integer ≥ 1 (a multiple of 4 for f16). */
  hidden: number;
  /** Added to the mean square: finite and ≥ 0. Default 1e-6. */
  eps?: number;
  /** What `GPUBuffer` arguments hold (default "f32"); typed arrays and tensors carry their own. */
  dtype?: D;
}

/**
 * Arguments of `run` and `runWithSum` whose results are read back. Lengths: `input` and
 * `residual` rows × hidden, the rest hidden. Every array has the same dtype; `D` is "f16"
 * for half-precision data (`Uint16Array` bits or f16 tensors).
 */
export interface FusedRmsNormArgs<D extends Dtype = "f32"> extends FusedRmsNormArgsBase<D> {
  /** Where results go: `"array"` (default) resolves with typed arrays. */
  output?: "array";
  inPlace?: false;
}

/** f16 arguments (kept for compatibility): `FusedRmsNormArgs<"f16">`. */
export type FusedRmsNormF16Args = FusedRmsNormArgs<"f16">;

/** Arguments whose results stay on the GPU as new `GpuTensor`s (no readback). */
export interface FusedRmsNormGpuArgs<D extends Dtype = "f32"> extends FusedRmsNormArgsBase<D> {
  output: "gpu";
  inPlace?: false;
}

/**
 * In place on GPU tensors: `residual` receives `input + residual (+ bias)` and `input` the
 * normalized output; nothing new is allocated. Resolves when the GPU has the work.
 */
export interface FusedRmsNormInPlaceArgs<D extends Dtype = "f32"> extends FusedRmsNormArgsBase<D> {
  input: GpuTensor<D>;
  residual: GpuTensor<D>;
  inPlace: true;
  output?: undefined;
}

/** Result of `runWithSum`: the normalized output and `input + residual (+ bias)`. */
export interface FusedRmsNormWithSum<D extends Dtype = "f32"> {
  output: HostResult<D>;
  sum: HostResult<D>;
}

/** Result of `runWithSum` with `output: "gpu"`. */
export interface FusedRmsNormGpuWithSum<D extends Dtype = "f32"> {
  output: GpuTensor<D>;
  sum: GpuTensor<D>;
}

interface FusedRmsNormEncodeBase<D extends Dtype> {
  input: FusedRmsNormGpuData<D>;
  residual: FusedRmsNormGpuData<D>;
  gamma: FusedRmsNormGpuData<D>;
  beta?: FusedRmsNormGpuData<D>;
  bias?: FusedRmsNormGpuData<D>;
  hidden: number;
  eps?: number;
  /** What `GPUBuffer` arguments hold (default "f32"). */
  dtype?: D;
}

/**
 * `encode` into buffers or tensors of the app's: `output` receives the normalized rows and
 * `sum`, if given, `input + residual (+ bias)`; both rows × hidden, neither an input.
 */
export interface FusedRmsNormEncodeToArgs<D extends Dtype = "f32"> extends FusedRmsNormEncodeBase<D> {
  output: FusedRmsNormGpuData<D>;
  sum?: FusedRmsNormGpuData<D>;
  inPlace?: false;
}

/** `encode` in place: `input ← y`, `residual ← input + residual (+ bias)`. */
export interface FusedRmsNormEncodeInPlaceArgs<D extends Dtype = "f32"> extends FusedRmsNormEncodeBase<D> {
  inPlace: true;
  output?: undefined;
  sum?: undefined;
}

export type FusedRmsNormEncodeArgs<D extends Dtype = "f32"> =
  | FusedRmsNormEncodeToArgs<D>
  | FusedRmsNormEncodeInPlaceArgs<D>;

/** A binding of the kernel, as `kernelSource` describes it (its `@binding` in `@group(0)`). */
export interface FusedRmsNormBinding {
  readonly binding: number;
  readonly name: "input" | "residual" | "gamma" | "beta" | "bias" | "output" | "sum" | "params";
  /** WebGPU's `GPUBufferBindingType`. */
  readonly type: "read-only-storage" | "storage" | "uniform";
  /** Absent from a call that has no such array: bind any small storage buffer there. */
  readonly optional: boolean;
}

/**
 * The kernel as this instance runs it, for an engine's own pipeline. Dispatch
 * `workgroups` (`workgroupsPerRow` workgroups a row, row r being workgroups
 * r·k … r·k + k − 1 of the grid read x first; past `maxComputeWorkgroupsPerDimension`
 * they fold into y) with a uniform buffer of `params.size` bytes laid out as
 * `params.fields` (`width` = hidden / `lanes`).
 */
export interface FusedRmsNormKernelSource {
  readonly code: string;
  readonly entryPoint: "main";
  readonly bindings: readonly FusedRmsNormBinding[];
  readonly params: {
    readonly size: number;
    readonly fields: readonly {
      readonly name: "rows" | "width" | "hidden" | "eps";
      readonly offset: number;
      readonly type: "u32" | "f32";
    }[];
  };
  readonly lanes: 1 | 4;
  readonly workgroupSize: number;
  /**
   * Workgroups that share a row: 1 without `rows`; given `rows`, more for a call of a few
   * long rows on a GPU, where a row's memory traffic is spread over several of its cores.
   */
  readonly workgroupsPerRow: number;
  /** How arrays hold numbers: f32, `shader-f16` halves, or halves packed in u32s. */
  readonly storage: "f32" | "f16" | "f16-packed";
  /** The grid for `rows`, where `kernelSource` was given them. */
  readonly workgroups?: readonly [number, number, 1];
}

/** A kernel an app will call, for `prepare`: `sum` for `runWithSum`. */
export interface FusedRmsNormKernel {
  hidden: number;
  bias?: boolean;
  beta?: boolean;
  sum?: boolean;
  dtype?: Dtype;
  inPlace?: boolean;
}

/** Options of `FusedRmsNorm.upload`: `dtype`, if given, must match the array. */
export interface GpuTensorOptions<D extends Dtype = Dtype> {
  dtype?: D;
}

/** Options of `FusedRmsNorm.create`. */
export interface FusedRmsNormOptions {
  /**
   * `"webgpu"` (default): the GPU, or a rejection where there is none. `"cpu"`: WebAssembly
   * SIMD in this thread. `"auto"`: WebGPU on a real GPU adapter, the CPU backend where
   * WebGPU is missing, has no adapter, or only a software (fallback) one.
   */
  backend?: "webgpu" | "cpu" | "auto";
  powerPreference?: "low-power" | "high-performance";
  /** f16 data through WGSL `shader-f16` where the adapter has it (default true); false packs halves in u32s. */
  shaderF16?: boolean;
}

/** The WebGPU adapter the instance runs on (WebGPU's `GPUAdapterInfo`). */
export interface FusedRmsNormAdapterInfo {
  readonly vendor: string;
  readonly architecture: string;
  readonly device: string;
  readonly description: string;
  readonly isFallbackAdapter: boolean;
}

/** Counters from `debugStats()`. */
export interface FusedRmsNormDebugStats {
  /** GPU buffers alive: in use by calls in flight, or pooled for reuse. */
  readonly liveBuffers: number;
  /** GPU buffers pooled for reuse. */
  readonly idleBuffers: number;
  /** Bytes of the pooled buffers (released after 5 s idle, or by `trim()`). */
  readonly idleBytes: number;
  /** `GpuTensor`s not yet freed, and their bytes: a tensor never freed shows here. */
  readonly liveTensors: number;
  readonly liveTensorBytes: number;
  /** Size of the WebAssembly memory in bytes. */
  readonly wasmMemoryBytes: number;
  /** Whether f16 data goes through WGSL `shader-f16` (else halves packed in u32s). */
  readonly shaderF16: boolean;
  /** Devices opened: 1, plus one per device loss. */
  readonly devicesOpened: number;
  /** Kernel pipelines compiled so far. */
  readonly pipelines: number;
}

/** What `ondevicelost` is called with (WebGPU's `GPUDeviceLostInfo`). */
export interface FusedRmsNormDeviceLostEvent {
  readonly reason: string;
  readonly message: string;
}

/**
 * Fused residual add + optional bias + RMSNorm on WebGPU.
 *
 * `y = (input + residual + bias) * inverseSqrt(mean((input + residual + bias)²) + eps) * gamma + beta`,
 * row by row. Create with `await FusedRmsNorm.create()`; release with `free()`.
 * Every failure is a Promise rejection with a named `Error` (`WebGpuUnavailableError`,
 * `GpuDeviceError`, `InvalidStateError`, `ShapeError`, `TypeError`).
 */
export class FusedRmsNorm {
  private constructor();
  /**
   * Opens a WebGPU device. Rejects with `WebGpuUnavailableError` where the browser has no
   * WebGPU or no adapter, `GpuDeviceError` where the device cannot be created,
   * `InvalidStateError` before `await init()`, and `TypeError` for malformed options.
   */
  static create(options?: FusedRmsNormOptions | null): Promise<FusedRmsNorm>;
  /** Normalizes row by row; resolves with a fresh array of `input.length`. */
  run(args: FusedRmsNormArgs<"f32">): Promise<Float32Array>;
  run(args: FusedRmsNormArgs<"f16">): Promise<Uint16Array>;
  /** Results stay on the GPU: resolves with a new `GpuTensor`. */
  run(args: FusedRmsNormGpuArgs<"f32">): Promise<GpuTensor<"f32">>;
  run(args: FusedRmsNormGpuArgs<"f16">): Promise<GpuTensor<"f16">>;
  /** In place: `input ← y`, `residual ← v`; resolves with nothing. */
  run(args: FusedRmsNormInPlaceArgs<"f32"> | FusedRmsNormInPlaceArgs<"f16">): Promise<void>;
  /** As `run`, and also resolves with `sum = input + residual (+ bias)`, the residual stream the next layer takes. */
  runWithSum(args: FusedRmsNormArgs<"f32">): Promise<FusedRmsNormWithSum<"f32">>;
  runWithSum(args: FusedRmsNormArgs<"f16">): Promise<FusedRmsNormWithSum<"f16">>;
  runWithSum(args: FusedRmsNormGpuArgs<"f32">): Promise<FusedRmsNormGpuWithSum<"f32">>;
  runWithSum(args: FusedRmsNormGpuArgs<"f16">): Promise<FusedRmsNormGpuWithSum<"f16">>;
  runWithSum(args: FusedRmsNormInPlaceArgs<"f32"> | FusedRmsNormInPlaceArgs<"f16">): Promise<void>;
  /**
   * Uploads `data` as a tensor calls accept in place of an array. Synchronous; throws
   * `TypeError`, `ShapeError` (too large for one binding) or `InvalidStateError`.
   */
  upload(data: Float32Array, options?: GpuTensorOptions<"f32">): GpuTensor<"f32">;
  upload(data: F16Array, options?: GpuTensorOptions<"f16">): GpuTensor<"f16">;
  /**
   * Runs `args` with the kernel dispatched `repeat` times (an integer from 1 to 10,000) in
   * one submission; resolves with the wall time in milliseconds.
   */
  timeDispatches(args: FusedRmsNormArgs<"f32"> | FusedRmsNormArgs<"f16">, repeat: number): Promise<number>;
  /**
   * As `timeDispatches`, timed on the GPU: the compute pass's milliseconds, or `undefined`
   * where the adapter has no `timestamp-query`.
   */
  gpuTime(args: FusedRmsNormArgs<"f32"> | FusedRmsNormArgs<"f16">, repeat: number): Promise<number | undefined>;
  /**
   * Records the normalization of GPU data into the app's `encoder` (on `norm.device`) as one
   * compute pass: no submission, no await. Throws `TypeError`, `ShapeError`,
   * `InvalidStateError` or `GpuDeviceError` for what is known now; what the GPU finds later
   * reaches the app's own error scopes.
   */
  encode(encoder: WebGpuCommandEncoder, args: FusedRmsNormEncodeArgs<"f32"> | FusedRmsNormEncodeArgs<"f16">): void;
  /** The WGSL, bindings and uniform layout this instance runs for `kernel`. */
  kernelSource(kernel: FusedRmsNormKernel & { rows?: number }): FusedRmsNormKernelSource;
  /** Compiles the kernels an app will use ahead of its first calls. */
  prepare(kernels: FusedRmsNormKernel | readonly FusedRmsNormKernel[]): Promise<void>;
  /** Releases the GPU buffers pooled for reuse (they also go after 5 s idle). */
  trim(): void;
  /** The adapter this instance runs on (on the CPU backend: `architecture: "cpu"`). */
  readonly adapterInfo: FusedRmsNormAdapterInfo;
  /** Which backend runs. */
  readonly backend: "webgpu" | "cpu";
  /**
   * The `GPUDevice` the instance runs on (`undefined` on the CPU backend), for the app's own
   * pipelines; the new one after a device loss. Do not destroy it or change its error handling.
   */
  readonly device: WebGpuDevice | undefined;
  /** Counters for leak checks. */
  debugStats(): FusedRmsNormDebugStats;
  /** Called when the device is lost; tensors of the lost device hold nothing. */
  ondevicelost: ((event: FusedRmsNormDeviceLostEvent) => void) | null;
  /** Called when a new device is open after a loss: upload resident data (weights) again. */
  ondevicerestored: (() => void) | null;
  /** Destroys the GPU device, as a driver reset would; for testing recovery. */
  simulateDeviceLoss(): void;
  /** Releases the instance; calls in flight complete. */
  free(): void;
  [Symbol.dispose](): void;
}

/**
 * Data on the GPU: made by `FusedRmsNorm.upload` or returned with `output: "gpu"`, and
 * accepted by calls wherever an array of its dtype is. Release with `free()`.
 */
export class GpuTensor<D extends Dtype = "f32"> {
  private constructor();
  /** Number of elements. */
  readonly length: number;
  /** Element type on the GPU. */
  readonly dtype: D;
  /**
   * The `GPUBuffer` behind the tensor (`undefined` on the CPU backend), valid until `free()`:
   * `length` elements from offset 0, f16 as packed halves, size rounded up to 16 bytes.
   */
  readonly buffer: WebGpuBuffer | undefined;
  /** Copies the data back: a `Float32Array` for f32, a `Uint16Array` of half bits for f16. */
  read(): Promise<HostResult<D>>;
  free(): void;
  [Symbol.dispose](): void;
}
"#;
