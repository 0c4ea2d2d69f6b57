//! The classes `FusedRmsNorm`, `GpuTensor` and `BoundNorm`, with their options, adapter info,
//! counters and device-loss event.

use wasm_bindgen::prelude::*;

#[wasm_bindgen(typescript_custom_section)]
const CLASSES: &'static str = r#"
/** Options of `FusedRmsNorm.upload`: `dtype`, if given, must match the array. */
export interface GpuTensorOptions<D extends Dtype = Dtype> {
  dtype?: D;
}

/** Options of `FusedRmsNorm.create`. */
export interface FusedRmsNormOptions {
  /**
   * `"webgpu"` (default): the GPU, or a rejection where there is none. `"cpu"`: WebAssembly
   * SIMD in this thread. `"auto"`: WebGPU on a real GPU adapter, the CPU backend where
   * WebGPU is missing, has no adapter, or only a software (fallback) one; and the CPU
   * backend from then on where its device is lost and no new one can be had
   * (`onbackendchange`).
   */
  backend?: "webgpu" | "cpu" | "auto";
  /** With `backend: "auto"`: take a software (fallback) adapter too, rather than the CPU backend (default false). */
  acceptFallbackAdapter?: boolean;
  powerPreference?: "low-power" | "high-performance";
  /** f16 data through WGSL `shader-f16` where the adapter has it (default true); false packs halves in u32s. */
  shaderF16?: boolean;
}

/** What `onbackendchange` is called with: the backend that runs now, and why. */
export interface FusedRmsNormBackendChangeEvent {
  readonly backend: "webgpu" | "cpu";
  readonly reason: string;
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
  /**
   * Calls of tensors in place served by the dispatch kept from the same call before
   * (`run`/`encode`, without decoding their arguments), across every instance of the module.
   */
  readonly keptDispatchCalls: number;
  /** Of those, calls that repeated the call read just before (taken without looking it up). */
  readonly repeatedCalls: number;
  /** Steps taken by `bind`'s calls (`encode()`, `run()`), across every instance. */
  readonly boundCalls: number;
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
  /**
   * Normalizes row by row; resolves with a fresh array of `input.length` in `outputDtype`, or
   * the caller's own where `output` is one.
   */
  run(args: FusedRmsNormArgs<"f32">): Promise<Float32Array>;
  run(args: FusedRmsNormArgs<"f16">): Promise<Uint16Array>;
  run(args: FusedRmsNormArgs<"f32", "f16">): Promise<Uint16Array>;
  run(args: FusedRmsNormArgs<"f16", "f32">): Promise<Float32Array>;
  /** Into the caller's `output` array: resolves with that array. */
  run<Y extends Float32Array>(args: FusedRmsNormIntoArgs<"f32", "f32", Y>): Promise<Y>;
  run<Y extends F16Array>(args: FusedRmsNormIntoArgs<"f16", "f16", Y>): Promise<Y>;
  run<Y extends F16Array>(args: FusedRmsNormIntoArgs<"f32", "f16", Y>): Promise<Y>;
  run<Y extends Float32Array>(args: FusedRmsNormIntoArgs<"f16", "f32", Y>): Promise<Y>;
  /** Results stay on the GPU: resolves with a new `GpuTensor`. */
  run(args: FusedRmsNormGpuArgs<"f32">): Promise<GpuTensor<"f32">>;
  run(args: FusedRmsNormGpuArgs<"f16">): Promise<GpuTensor<"f16">>;
  run(args: FusedRmsNormGpuArgs<"f32", "f16">): Promise<GpuTensor<"f16">>;
  run(args: FusedRmsNormGpuArgs<"f16", "f32">): Promise<GpuTensor<"f32">>;
  /** In place: `input ← y`, `residual ← v`; resolves with nothing. */
  run(args: FusedRmsNormInPlaceArgs<"f32"> | FusedRmsNormInPlaceArgs<"f16">): Promise<void>;
  /** The rotation alone (`kind: "none"`, no gamma): as a norm's call. */
  run(args: FusedRmsNormRotationArgs<"f32">): Promise<Float32Array>;
  run(args: FusedRmsNormRotationArgs<"f16">): Promise<Uint16Array>;
  run(args: FusedRmsNormRotationArgs<"f32", "f16">): Promise<Uint16Array>;
  run(args: FusedRmsNormRotationGpuArgs<"f32">): Promise<GpuTensor<"f32">>;
  run(args: FusedRmsNormRotationGpuArgs<"f16">): Promise<GpuTensor<"f16">>;
  run(args: FusedRmsNormRotationInPlaceArgs<"f32"> | FusedRmsNormRotationInPlaceArgs<"f16">): Promise<void>;
  /** As `run`, and also resolves with `sum = v` (in the data's dtype), the residual stream the next layer takes. */
  runWithSum(args: FusedRmsNormArgs<"f32">): Promise<FusedRmsNormWithSum<"f32">>;
  runWithSum(args: FusedRmsNormArgs<"f16">): Promise<FusedRmsNormWithSum<"f16">>;
  runWithSum(args: FusedRmsNormArgs<"f32", "f16">): Promise<FusedRmsNormWithSum<"f32", "f16">>;
  runWithSum(args: FusedRmsNormArgs<"f16", "f32">): Promise<FusedRmsNormWithSum<"f16", "f32">>;
  /** Into the caller's `sum` array (and `output`, where an array too): resolves with them. */
  runWithSum<S extends Float32Array, Y extends Float32Array | "array" = "array">(args: FusedRmsNormSumIntoArgs<"f32", "f32", S, Y>): Promise<FusedRmsNormWithSumInto<"f32", Y, S>>;
  runWithSum<S extends F16Array, Y extends F16Array | "array" = "array">(args: FusedRmsNormSumIntoArgs<"f16", "f16", S, Y>): Promise<FusedRmsNormWithSumInto<"f16", Y, S>>;
  runWithSum<S extends Float32Array, Y extends F16Array | "array" = "array">(args: FusedRmsNormSumIntoArgs<"f32", "f16", S, Y>): Promise<FusedRmsNormWithSumInto<"f16", Y, S>>;
  runWithSum<S extends F16Array, Y extends Float32Array | "array" = "array">(args: FusedRmsNormSumIntoArgs<"f16", "f32", S, Y>): Promise<FusedRmsNormWithSumInto<"f32", Y, S>>;
  /** Into the caller's `output` array, `sum` fresh: resolves with that array and the sum. */
  runWithSum<Y extends Float32Array>(args: FusedRmsNormIntoArgs<"f32", "f32", Y>): Promise<FusedRmsNormWithSumInto<"f32", Y, Float32Array>>;
  runWithSum<Y extends F16Array>(args: FusedRmsNormIntoArgs<"f16", "f16", Y>): Promise<FusedRmsNormWithSumInto<"f16", Y, Uint16Array>>;
  runWithSum<Y extends F16Array>(args: FusedRmsNormIntoArgs<"f32", "f16", Y>): Promise<FusedRmsNormWithSumInto<"f16", Y, Float32Array>>;
  runWithSum<Y extends Float32Array>(args: FusedRmsNormIntoArgs<"f16", "f32", Y>): Promise<FusedRmsNormWithSumInto<"f32", Y, Uint16Array>>;
  runWithSum(args: FusedRmsNormGpuArgs<"f32">): Promise<FusedRmsNormGpuWithSum<"f32">>;
  runWithSum(args: FusedRmsNormGpuArgs<"f16">): Promise<FusedRmsNormGpuWithSum<"f16">>;
  runWithSum(args: FusedRmsNormGpuArgs<"f32", "f16">): Promise<FusedRmsNormGpuWithSum<"f32", "f16">>;
  runWithSum(args: FusedRmsNormGpuArgs<"f16", "f32">): Promise<FusedRmsNormGpuWithSum<"f16", "f32">>;
  runWithSum(args: FusedRmsNormInPlaceArgs<"f32"> | FusedRmsNormInPlaceArgs<"f16">): Promise<void>;
  /** A post-norm's sum alone (no `gamma`): resolves with `{ sum }`, or nothing in place. */
  runWithSum<S extends Float32Array = Float32Array>(args: FusedRmsNormSumAloneArgs<"f32", S>): Promise<{ sum: S }>;
  runWithSum<S extends F16Array = Uint16Array>(args: FusedRmsNormSumAloneArgs<"f16", S>): Promise<{ sum: S }>;
  runWithSum(args: FusedRmsNormSumAloneGpuArgs<"f32">): Promise<{ sum: GpuTensor<"f32"> }>;
  runWithSum(args: FusedRmsNormSumAloneGpuArgs<"f16">): Promise<{ sum: GpuTensor<"f16"> }>;
  runWithSum(args: FusedRmsNormSumAloneInPlaceArgs<"f32"> | FusedRmsNormSumAloneInPlaceArgs<"f16">): Promise<void>;
  runWithSum(args: FusedRmsNormRotationArgs<"f32">): Promise<FusedRmsNormWithSum<"f32">>;
  runWithSum(args: FusedRmsNormRotationArgs<"f16">): Promise<FusedRmsNormWithSum<"f16">>;
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
  /**
   * Reads and checks `args` (`encode`'s) once, and makes the call's pipeline and bind group:
   * the `BoundNorm`'s `encode(encoder)` and `run()` then cost about what recording the pass
   * by hand does. Throws what `encode` throws for its arguments; on the CPU backend the
   * bound call runs on the CPU.
   */
  bind(args: FusedRmsNormEncodeArgs<"f32"> | FusedRmsNormEncodeArgs<"f16">): BoundNorm;
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
  /**
   * Called when the backend changes: an `"auto"` instance whose device was lost, where no new
   * one can be had, continues on the CPU backend (`backend` becomes `"cpu"`, `device`
   * `undefined`; tensors of the lost device are `GpuDeviceError`s).
   */
  onbackendchange: ((event: FusedRmsNormBackendChangeEvent) => void) | null;
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

/**
 * A normalization bound to its arguments by `norm.bind(args)`, made again step after step
 * without reading or checking them: a tensor freed since (`InvalidStateError`) and a lost
 * device (`GpuDeviceError`: bind again on the new device) are still refused. Release with
 * `free()`; it keeps its tensors' buffers until then.
 */
export class BoundNorm {
  private constructor();
  /**
   * Records the call into `encoder` as one compute pass, as `norm.encode(encoder, args)`
   * does. Throws `TypeError`, `InvalidStateError` (also on the CPU backend) or
   * `GpuDeviceError`.
   */
  encode(encoder: WebGpuCommandEncoder): void;
  /**
   * Runs the call (on the CPU backend, computes it): resolves with nothing once submitted,
   * the results in place or in its `output` and `sum`.
   */
  run(): Promise<void>;
  free(): void;
  [Symbol.dispose](): void;
}
"#;
