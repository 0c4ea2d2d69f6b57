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

/** Which normalization a row gets: RMSNorm (the default) or LayerNorm. */
export type NormKind = "rms" | "layer";

/**
 * `outputDtype`, where `O` is the dtype of `output` and `D` the data's: optional where they
 * are the same, required where they differ, so that a call typed to resolve with f16 results
 * asks for them.
 */
export type OutputDtypeField<D extends Dtype, O extends Dtype> = [O] extends [D]
  ? { /** The dtype of `output` only (default: the data's); `sum` stays the data's. */ outputDtype?: O }
  : { /** The dtype of `output` only (default: the data's); `sum` stays the data's. */ outputDtype: O };

/**
 * What every call takes, its arrays of type `A`. For each row, with `N` the normalization
 * `kind` names and `g = gammaOffset`: `u = input + bias`, `w = postGamma ? N(u)·(postGamma + g)
 * : u`, `v = residual + w` (the `sum`), `y = N(v)·(gamma + g) + beta` (the `output`).
 */
interface FusedRmsNormFields<D extends Dtype, A> {
  /** rows × hidden, row-major. */
  input: A;
  /** rows × hidden, added after `input` (and its post-norm). Omitted: none (QK-norm, a model's final norm). */
  residual?: A;
  /** hidden; the scale applied after normalizing (plus `gammaOffset`). */
  gamma: A;
  /** hidden; the shift applied last. Omitted: zeros. */
  beta?: A;
  /** hidden; added to `input` before anything else. Omitted: none. */
  bias?: A;
  /**
   * hidden; the sandwich's post-norm (Gemma 2/3, OLMo 2): `input (+ bias)` is normalized and
   * scaled by `postGamma + gammaOffset` before the residual is added. Omitted: none.
   */
  postGamma?: A;
  /** Row length: an integer ≥ 1 (a multiple of 4 for f16 data or an f16 output). */
  hidden: number;
  /** Added to the mean square (the variance for LayerNorm): finite and ≥ 0. Default 1e-6. */
  eps?: number;
  /** `"rms"` (default): `x · inverseSqrt(mean(x²) + eps)`; `"layer"`: `(x − mean) · inverseSqrt(variance + eps)`. */
  kind?: NormKind;
  /** Added to every gamma and postGamma: finite, default 0. Gemma's `1 + weight` is 1. */
  gammaOffset?: number;
  /**
   * What `GPUBuffer` arguments hold (default "f32"); typed arrays and tensors carry their own.
   * An `encode` destination holds `outputDtype`'s.
   */
  dtype?: D;
  /** How many rows of `GPUBuffer` arguments larger than their data are data (default: all of `input`). */
  rows?: number;
}

/** `run`'s and `prepare`'s inputs: host arrays, tensors or buffers. */
type FusedRmsNormArgsBase<D extends Dtype> = FusedRmsNormFields<D, FusedRmsNormArray<D>>;

/**
 * Arguments of `run` and `runWithSum` whose results are read back. Lengths: `input` and
 * `residual` rows × hidden, the rest hidden. Every array has the same dtype `D` ("f16" for
 * half-precision data: `Uint16Array` bits or f16 tensors); `output` is `O`, `outputDtype`'s.
 */
export type FusedRmsNormArgs<D extends Dtype = "f32", O extends Dtype = D> = FusedRmsNormArgsBase<D> &
  OutputDtypeField<D, O> & {
    /** Where results go: `"array"` (default) resolves with typed arrays. */
    output?: "array";
    inPlace?: false;
  };

/** f16 arguments (kept for compatibility): `FusedRmsNormArgs<"f16">`. */
export type FusedRmsNormF16Args = FusedRmsNormArgs<"f16">;

/** Arguments whose results stay on the GPU as new `GpuTensor`s (no readback). */
export type FusedRmsNormGpuArgs<D extends Dtype = "f32", O extends Dtype = D> = FusedRmsNormArgsBase<D> &
  OutputDtypeField<D, O> & {
    output: "gpu";
    inPlace?: false;
  };

/**
 * In place on GPU tensors: `residual` (where there is one) receives `v` and `input` the
 * normalized output `y`; nothing new is allocated. `y` is written over the data, so its dtype
 * is the data's. Resolves when the GPU has the work.
 */
export interface FusedRmsNormInPlaceArgs<D extends Dtype = "f32"> extends FusedRmsNormArgsBase<D> {
  input: GpuTensor<D>;
  residual?: GpuTensor<D>;
  inPlace: true;
  output?: undefined;
  /** In place, the data's dtype only. */
  outputDtype?: D;
}

/** Result of `runWithSum`: the normalized output (`O`, `outputDtype`'s) and `v` (the data's `D`). */
export interface FusedRmsNormWithSum<D extends Dtype = "f32", O extends Dtype = D> {
  output: HostResult<O>;
  sum: HostResult<D>;
}

/** Result of `runWithSum` with `output: "gpu"`. */
export interface FusedRmsNormGpuWithSum<D extends Dtype = "f32", O extends Dtype = D> {
  output: GpuTensor<O>;
  sum: GpuTensor<D>;
}

/** `encode`'s inputs: `run`'s, on the GPU. */
type FusedRmsNormEncodeBase<D extends Dtype> = FusedRmsNormFields<D, FusedRmsNormGpuData<D>>;

/**
 * `encode` into buffers or tensors of the app's: `output` receives the normalized rows (in
 * `outputDtype`) and `sum`, if given, `v` (in the data's dtype); both rows × hidden, neither
 * an input.
 */
export type FusedRmsNormEncodeToArgs<D extends Dtype = "f32", O extends Dtype = D> = FusedRmsNormEncodeBase<D> &
  OutputDtypeField<D, O> & {
    output: FusedRmsNormGpuData<O>;
    sum?: FusedRmsNormGpuData<D>;
    inPlace?: false;
  };

/** `encode` in place: `input ← y`, `residual ← v` (where there is a residual). */
export interface FusedRmsNormEncodeInPlaceArgs<D extends Dtype = "f32"> extends FusedRmsNormEncodeBase<D> {
  inPlace: true;
  output?: undefined;
  sum?: undefined;
  /** In place, the data's dtype only. */
  outputDtype?: D;
}

export type FusedRmsNormEncodeArgs<D extends Dtype = "f32"> =
  | FusedRmsNormEncodeToArgs<D, "f32">
  | FusedRmsNormEncodeToArgs<D, "f16">
  | FusedRmsNormEncodeInPlaceArgs<D>;

/** Arguments of the timing calls: any call whose results are read back. */
export type FusedRmsNormTimedArgs =
  | FusedRmsNormArgs<"f32">
  | FusedRmsNormArgs<"f16">
  | FusedRmsNormArgs<"f32", "f16">
  | FusedRmsNormArgs<"f16", "f32">;

/** A binding of the kernel, as `kernelSource` describes it (its `@binding` in `@group(0)`). */
export interface FusedRmsNormBinding {
  readonly binding: number;
  readonly name: "input" | "residual" | "gamma" | "beta" | "bias" | "post_gamma" | "output" | "sum" | "params";
  /** WebGPU's `GPUBufferBindingType`. */
  readonly type: "read-only-storage" | "storage" | "uniform";
  /** Absent from a call that has no such array: bind any small storage buffer there. */
  readonly optional: boolean;
}

/** How a kernel's arrays hold numbers: f32, `shader-f16` halves, or halves packed in u32s. */
export type FusedRmsNormStorage = "f32" | "f16" | "f16-packed";

/**
 * The kernel as this instance runs it, for an engine's own pipeline. Dispatch
 * `workgroups` (`workgroupsPerRow` workgroups a row, row r being workgroups
 * r·k … r·k + k − 1 of the grid read x first; past `maxComputeWorkgroupsPerDimension`
 * they fold into y) with a uniform buffer of `params.size` bytes (32) laid out as
 * `params.fields`: `rows`, `width` = hidden / `lanes`, `hidden`, `eps` and
 * `gamma_offset` = the call's `gammaOffset` (a uniform, so it needs no kernel of its own).
 */
export interface FusedRmsNormKernelSource {
  readonly code: string;
  readonly entryPoint: "main";
  readonly bindings: readonly FusedRmsNormBinding[];
  readonly params: {
    readonly size: number;
    readonly fields: readonly {
      readonly name: "rows" | "width" | "hidden" | "eps" | "gamma_offset";
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
  /** How the data's arrays (every binding but `output` and `params`) hold numbers. */
  readonly storage: FusedRmsNormStorage;
  /** How `output` holds numbers: `storage` unless the kernel's `outputDtype` differs. */
  readonly outputStorage: FusedRmsNormStorage;
  /** The grid for `rows`, where `kernelSource` was given them. */
  readonly workgroups?: readonly [number, number, 1];
}

/** What a kernel description has whatever its dtypes. */
interface FusedRmsNormKernelBase {
  hidden: number;
  kind?: NormKind;
  /** Whether calls pass a `residual` (default true). */
  residual?: boolean;
  postGamma?: boolean;
  bias?: boolean;
  beta?: boolean;
  sum?: boolean;
  /** Checked as a call checks it; a uniform, so every offset shares the kernel. */
  gammaOffset?: number;
}

/**
 * A kernel an app will call, for `prepare` and `kernelSource`: `sum` for `runWithSum`,
 * `residual: false` for calls without one, `outputDtype` where the output's dtype differs from
 * the data's (never in place).
 */
export type FusedRmsNormKernel = FusedRmsNormKernelBase &
  (
    | { inPlace?: boolean; dtype?: "f32"; outputDtype?: "f32" }
    | { inPlace?: boolean; dtype: "f16"; outputDtype?: "f16" }
    | { inPlace?: false; dtype?: Dtype; outputDtype?: Dtype }
  );

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
  /** GPU buffers alive: in use by calls in flight or tensors, or pooled for reuse. */
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
 * Fused residual add + normalization on WebGPU: every transformer's normalization step.
 *
 * For every row, with `N` RMSNorm (`kind: "rms"`, the default: `x · inverseSqrt(mean(x²) + eps)`)
 * or LayerNorm (`kind: "layer"`: `(x − m) · inverseSqrt(mean((x − m)²) + eps)`, `m = mean(x)`)
 * and `g = gammaOffset` (default 0):
 *
 *     u = input + bias                                  (bias optional)
 *     w = postGamma ? N(u) · (postGamma + g) : u        (the sandwich's post-norm, optional)
 *     v = residual + w                                  (residual optional: 0) — the `sum`
 *     y = N(v) · (gamma + g) + beta                     (beta optional: 0) — the `output`
 *
 * `output` is in `outputDtype` (default: the data's), `sum` in the data's dtype.
 * Create with `await FusedRmsNorm.create()`; release with `free()`.
 * Every failure is a Promise rejection with a named `Error` (`WebGpuUnavailableError`,
 * `GpuDeviceError`, `InvalidStateError`, `ShapeError`, `TypeError`; on the CPU backend
 * `RangeError` where its wasm memory cannot hold a call).
 */
export class FusedRmsNorm {
  private constructor();
  /**
   * Opens a WebGPU device. Rejects with `WebGpuUnavailableError` where the browser has no
   * WebGPU or no adapter, `GpuDeviceError` where the device cannot be created,
   * `InvalidStateError` before `await init()`, and `TypeError` for malformed options.
   */
  static create(options?: FusedRmsNormOptions | null): Promise<FusedRmsNorm>;
  /** Normalizes row by row; resolves with a fresh array of `input.length` in `outputDtype`. */
  run(args: FusedRmsNormArgs<"f32">): Promise<Float32Array>;
  run(args: FusedRmsNormArgs<"f16">): Promise<Uint16Array>;
  run(args: FusedRmsNormArgs<"f32", "f16">): Promise<Uint16Array>;
  run(args: FusedRmsNormArgs<"f16", "f32">): Promise<Float32Array>;
  /** Results stay on the GPU: resolves with a new `GpuTensor`. */
  run(args: FusedRmsNormGpuArgs<"f32">): Promise<GpuTensor<"f32">>;
  run(args: FusedRmsNormGpuArgs<"f16">): Promise<GpuTensor<"f16">>;
  run(args: FusedRmsNormGpuArgs<"f32", "f16">): Promise<GpuTensor<"f16">>;
  run(args: FusedRmsNormGpuArgs<"f16", "f32">): Promise<GpuTensor<"f32">>;
  /** In place: `input ← y`, `residual ← v`; resolves with nothing. */
  run(args: FusedRmsNormInPlaceArgs<"f32"> | FusedRmsNormInPlaceArgs<"f16">): Promise<void>;
  /** As `run`, and also resolves with `sum = v` (in the data's dtype), the residual stream the next layer takes. */
  runWithSum(args: FusedRmsNormArgs<"f32">): Promise<FusedRmsNormWithSum<"f32">>;
  runWithSum(args: FusedRmsNormArgs<"f16">): Promise<FusedRmsNormWithSum<"f16">>;
  runWithSum(args: FusedRmsNormArgs<"f32", "f16">): Promise<FusedRmsNormWithSum<"f32", "f16">>;
  runWithSum(args: FusedRmsNormArgs<"f16", "f32">): Promise<FusedRmsNormWithSum<"f16", "f32">>;
  runWithSum(args: FusedRmsNormGpuArgs<"f32">): Promise<FusedRmsNormGpuWithSum<"f32">>;
  runWithSum(args: FusedRmsNormGpuArgs<"f16">): Promise<FusedRmsNormGpuWithSum<"f16">>;
  runWithSum(args: FusedRmsNormGpuArgs<"f32", "f16">): Promise<FusedRmsNormGpuWithSum<"f32", "f16">>;
  runWithSum(args: FusedRmsNormGpuArgs<"f16", "f32">): Promise<FusedRmsNormGpuWithSum<"f16", "f32">>;
  runWithSum(args: FusedRmsNormInPlaceArgs<"f32"> | FusedRmsNormInPlaceArgs<"f16">): Promise<void>;
  /**
   * Uploads `data` as a tensor calls accept in place of an array. Synchronous; throws
   * `TypeError`, `ShapeError` (too large for one binding), `RangeError` (the CPU backend's
   * wasm memory full) or `InvalidStateError`.
   */
  upload(data: Float32Array, options?: GpuTensorOptions<"f32">): GpuTensor<"f32">;
  upload(data: F16Array, options?: GpuTensorOptions<"f16">): GpuTensor<"f16">;
  /**
   * Runs `args` with the kernel dispatched `repeat` times (an integer from 1 to 10,000) in
   * one submission; resolves with the wall time in milliseconds.
   */
  timeDispatches(args: FusedRmsNormTimedArgs, repeat: number): Promise<number>;
  /**
   * As `timeDispatches`, timed on the GPU: the compute pass's milliseconds, or `undefined`
   * where the adapter has no `timestamp-query`.
   */
  gpuTime(args: FusedRmsNormTimedArgs, repeat: number): Promise<number | undefined>;
  /**
   * Records the normalization of GPU data into the app's `encoder` (on `norm.device`) as one
   * compute pass: no submission, no await. Throws `TypeError`, `ShapeError`,
   * `InvalidStateError` or `GpuDeviceError` for what is known now; what the GPU finds later
   * reaches the app's own error scopes.
   */
  encode(encoder: WebGpuCommandEncoder, args: FusedRmsNormEncodeArgs<"f32"> | FusedRmsNormEncodeArgs<"f16">): void;
  /** The WGSL, bindings, storage and uniform layout this instance runs for `kernel` (and the grid for `rows`). */
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
   * The `GPUBuffer` behind the tensor (`undefined` on the CPU backend), valid until `free()`
   * (then a later tensor of its size gets it): `length` elements from offset 0, f16 as packed
   * halves, size rounded up to 16 bytes.
   */
  readonly buffer: WebGpuBuffer | undefined;
  /** Copies the data back: a `Float32Array` for f32, a `Uint16Array` of half bits for f16. */
  read(): Promise<HostResult<D>>;
  free(): void;
  [Symbol.dispose](): void;
}
"#;
