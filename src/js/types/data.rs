//! The data a call takes: WebGPU objects, dtypes, host arrays and tensors.

use wasm_bindgen::prelude::*;

#[wasm_bindgen(typescript_custom_section)]
const DATA: &'static str = r#"
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
"#;
