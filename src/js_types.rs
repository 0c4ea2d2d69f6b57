//! The TypeScript declarations that wasm-bindgen cannot derive: argument and result
//! interfaces, and the overloads of `run`/`runWithSum` by where results go and by dtype.

use wasm_bindgen::prelude::*;

#[wasm_bindgen(typescript_custom_section)]
const TYPES: &'static str = r#"
/** Arguments of `run` and `runWithSum`. Lengths: `input` and `residual` rows × hidden, the rest hidden. */
export interface FusedRmsNormArgs {
  /** rows × hidden, row-major. */
  input: Float32Array | GpuTensor;
  /** rows × hidden, added to `input` before normalizing. */
  residual: Float32Array | GpuTensor;
  /** hidden; the scale applied after normalizing. */
  gamma: Float32Array | GpuTensor;
  /** hidden; the shift applied last. Omitted: zeros. */
  beta?: Float32Array | GpuTensor;
  /** hidden; added to every row before normalizing. Omitted: none. */
  bias?: Float32Array | GpuTensor;
  /** Row length: an integer ≥ 1. */
  hidden: number;
  /** Added to the mean square: finite and ≥ 0. Default 1e-6. */
  eps?: number;
  /** Where results go: `"array"` (default) resolves with `Float32Array`s. */
  output?: "array";
  /** See `FusedRmsNormInPlaceArgs`. */
  inPlace?: false;
}

/**
 * f16 data: half-precision bits in `Uint16Array`s (a `Float16Array` is accepted too where the
 * browser has one) or f16 `GpuTensor`s; results are `Uint16Array`s of f16 bits. Math is f32.
 * `hidden` must be a multiple of 4.
 */
export type FusedRmsNormF16Args = Omit<FusedRmsNormArgs, "input" | "residual" | "gamma" | "beta" | "bias"> & {
  input: Uint16Array;
  residual: Uint16Array | GpuTensor;
  gamma: Uint16Array | GpuTensor;
  beta?: Uint16Array | GpuTensor;
  bias?: Uint16Array | GpuTensor;
};

/**
 * In place on GPU tensors: `residual` receives `input + residual (+ bias)` and `input` the
 * normalized output; nothing new is allocated. Resolves when the GPU has the work.
 */
export type FusedRmsNormInPlaceArgs = Omit<FusedRmsNormArgs, "input" | "residual" | "output" | "inPlace"> & {
  input: GpuTensor;
  residual: GpuTensor;
  inPlace: true;
};

/** `FusedRmsNormArgs` whose results stay on the GPU as `GpuTensor`s (no readback). */
export type FusedRmsNormGpuArgs = Omit<FusedRmsNormArgs, "output"> & { output: "gpu" };

/** Result of `runWithSum` with `output: "gpu"`. */
export interface FusedRmsNormGpuWithSum {
  output: GpuTensor;
  sum: GpuTensor;
}

// Overloads of the class's methods (declaration merging) for GPU-resident results, in-place
// updates and f16 arrays.
export interface FusedRmsNorm {
  run(args: FusedRmsNormGpuArgs): Promise<GpuTensor>;
  run(args: FusedRmsNormInPlaceArgs): Promise<void>;
  run(args: FusedRmsNormF16Args): Promise<Uint16Array>;
  runWithSum(args: FusedRmsNormGpuArgs): Promise<FusedRmsNormGpuWithSum>;
  runWithSum(args: FusedRmsNormInPlaceArgs): Promise<void>;
  runWithSum(args: FusedRmsNormF16Args): Promise<{ output: Uint16Array; sum: Uint16Array }>;
}

/** Options of `FusedRmsNorm.upload`: `dtype` must match the array (f16: Uint16Array/Float16Array). */
export interface GpuTensorOptions {
  dtype?: "f32" | "f16";
}

/** Options of `FusedRmsNorm.create`. */
export interface FusedRmsNormOptions {
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
  /** Size of the WebAssembly memory in bytes. */
  readonly wasmMemoryBytes: number;
  /** Whether f16 data goes through WGSL `shader-f16` (else halves packed in u32s). */
  readonly shaderF16: boolean;
}

/** Result of `runWithSum`: the normalized output and `input + residual (+ bias)`. */
export interface FusedRmsNormWithSum {
  output: Float32Array;
  sum: Float32Array;
}
"#;
