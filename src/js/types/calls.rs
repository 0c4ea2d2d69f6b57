//! The argument objects of `run`, `runWithSum`, the timing calls and `encode`, and what
//! they resolve with.

use wasm_bindgen::prelude::*;

#[wasm_bindgen(typescript_custom_section)]
const CALLS: &'static str = r#"
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
 * `kind` names and `g = gammaOffset`: `u = input + input2 + bias`, `w = postGamma ?
 * N(u)·(postGamma + g) : u`, `v = residual + w` (the `sum`), `y = N(v)·(gamma + g) + beta`
 * (the `output`).
 */
interface FusedRmsNormFields<D extends Dtype, A> {
  /** rows × hidden, row-major. */
  input: A;
  /** rows × hidden, added after `input` (and its post-norm). Omitted: none (QK-norm, a model's final norm). */
  residual?: A;
  /**
   * rows × hidden; a parallel block's second sublayer output (GPT-J, Phi-2, Falcon,
   * Command-R: `x + attn(LN(x)) + mlp(LN(x))`), added to `input` before the residual. Not with
   * `postGamma`. Omitted: none.
   */
  input2?: A;
  /**
   * hidden; the scale applied after normalizing (plus `gammaOffset`). With a rotary stage whose
   * rows are heads, heads × hidden: a gamma a head (Cohere's `[heads, head_dim]`), row r taking
   * head r mod heads's (a `GPUBuffer` gamma only with `gammaHeads: true`).
   */
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
  /**
   * The rotary stage (RoPE), applied to each row's `y` after `gamma` and `beta`: each token's
   * position (integers ≥ 0, `heads` rows a token). With it (or `position`), pair `k` of each
   * head turns by `f32(f32(position) · invFreq[k])`, cos and sin times `attentionScaling`.
   * Every entry point; a bound call keeps the positions it was bound with. On the GPU, a
   * `GPUBuffer` of them (32-bit, `COPY_SRC`, from offset 0; `heads` required) is copied into
   * the stage's table ahead of the kernel at each recording: a decode loop's counter can stay
   * on the GPU, and a bound call reads its buffer anew each time.
   */
  positions?: Int32Array | Uint32Array | WebGpuBufferArg;
  /** The rotary stage's first position, of consecutive tokens (decode: the one token). */
  position?: number;
  /**
   * rotaryDim / 2; the model's own inverse frequencies (scaled RoPE included): the only way to
   * match a model exactly. Copied when the call is made.
   */
  invFreq?: Float32Array;
  /**
   * Instead of `invFreq`: `1 / theta^(2k / rotaryDim)`, in f64 rounded to f32. A convenience:
   * models compute it in f32, an ulp away in a third of the entries (7.8e-3 rad at position
   * 131071).
   */
  theta?: number;
  /**
   * Instead of `invFreq`: the app's own cos and sin, a row of `rotaryDim` a position (its
   * `rotaryDim / 2` cosines, then its sines: vLLM's and FlashInfer's `cos_sin_cache`); every
   * position the call turns by below its rows. Times `attentionScaling`. Copied and compared
   * each call: bind a call to record it again without either.
   */
  cosSin?: Float32Array;
  /** The values of each head that rotate, even (default: the head); the rest pass through. */
  rotaryDim?: number;
  /** `"neox"` (default): pairs `(k, k + rotaryDim/2)`; `"interleaved"`: `(2k, 2k + 1)` (GPT-J, Cohere). */
  rotaryStyle?: "neox" | "interleaved";
  /** The factor on cos and sin (YaRN's); finite and > 0, default 1. */
  attentionScaling?: number;
  /** Values of a head, dividing `hidden` (default `hidden`): OLMo 2 normalizes a token's heads as one row. */
  headSize?: number;
  /** Rows a token where rows are heads (default: rows / positions.length, or 1; required with a `GPUBuffer` of positions). */
  heads?: number;
  /**
   * Whether `gamma` holds a weight a head (heads × hidden) rather than one for every head
   * (hidden); default: as its length says, and for a `GPUBuffer` (whose size engines round up)
   * one for every head. Needs a rotary stage.
   */
  gammaHeads?: boolean;
  /**
   * The last heads of each token's rows that pass as they are (default 0): a packed qkv row's
   * v heads, beside the q and k heads normalized and turned in the same dispatch (`hidden` the
   * head size, `heads` every head of a token; a gamma a head holds the turned heads'). Not
   * with `residual` or `bias`.
   */
  passHeads?: number;
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

/**
 * Arguments of `run` and `runWithSum` that write `y` into the caller's own `output`:
 * `input.length` elements of `O` (a `Float32Array` for f32; a `Uint16Array` of half bits or a
 * `Float16Array` for f16), of its own memory (apart from every input). The call resolves with
 * that same array; a call that fails leaves it as it was.
 */
export type FusedRmsNormIntoArgs<D extends Dtype = "f32", O extends Dtype = D, Y extends HostArray<O> = HostArray<O>> =
  FusedRmsNormArgsBase<D> &
    OutputDtypeField<D, O> & {
      /** The array `y` is written into. */
      output: Y;
      inPlace?: false;
    };

/**
 * Arguments of `runWithSum` that write `v` into the caller's own `sum` (`input.length`
 * elements of the data's `D`), and `y` into `output` where it is an array too.
 */
export type FusedRmsNormSumIntoArgs<
  D extends Dtype = "f32",
  O extends Dtype = D,
  S extends HostArray<D> = HostArray<D>,
  Y extends HostArray<O> | "array" = "array",
> = FusedRmsNormArgsBase<D> &
  OutputDtypeField<D, O> & {
    /** The array `y` is written into, or `"array"` (default) for a fresh one. */
    output?: Y;
    /** The array `v` is written into. */
    sum: S;
    inPlace?: false;
  };

/** What `runWithSum` into the caller's arrays resolves with: those arrays, a fresh one for a result not given one. */
export interface FusedRmsNormWithSumInto<O extends Dtype, Y extends HostArray<O> | "array", S> {
  output: Y extends "array" ? HostResult<O> : Y;
  sum: S;
}

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
  | FusedRmsNormEncodeInPlaceArgs<D>
  | RotationFields<FusedRmsNormEncodeToArgs<D, "f32">>
  | RotationFields<FusedRmsNormEncodeToArgs<D, "f16">>
  | RotationFields<FusedRmsNormEncodeInPlaceArgs<D>>
  | (SumAloneFields<D, FusedRmsNormGpuData<D>> & { output?: undefined; sum: FusedRmsNormGpuData<D>; inPlace?: false })
  | (SumAloneFields<D, FusedRmsNormGpuData<D>> & { output?: undefined; sum?: undefined; inPlace: true });

/**
 * A post-norm's sum alone (OLMo 2: `h = x + N(attn(x))·(postGamma + gammaOffset)`, with no
 * norm of `h` in the same step): no `gamma`, so no `y`, no `beta` and no `outputDtype`; only
 * `v` is computed and written (`runWithSum`'s `sum`, `encode`'s `sum`, or over `residual` in
 * place).
 */
type SumAloneFields<D extends Dtype, A> = Omit<FusedRmsNormFields<D, A>, "gamma" | "beta" | "postGamma"> & {
  gamma?: undefined;
  beta?: undefined;
  /** hidden; the post-norm's weight. */
  postGamma: A;
  outputDtype?: undefined;
};

/** `runWithSum` of a post-norm's sum alone, read back (into the caller's `sum` where given). */
export type FusedRmsNormSumAloneArgs<D extends Dtype = "f32", S extends HostArray<D> = HostArray<D>> =
  SumAloneFields<D, FusedRmsNormArray<D>> & { output?: "array"; sum?: S; inPlace?: false };

/** `runWithSum` of a post-norm's sum alone, left on the GPU as a new tensor. */
export type FusedRmsNormSumAloneGpuArgs<D extends Dtype = "f32"> =
  SumAloneFields<D, FusedRmsNormArray<D>> & { output: "gpu"; sum?: undefined; inPlace?: false };

/** `runWithSum` of a post-norm's sum alone in place: `residual ← v`, `input` as it was. */
export type FusedRmsNormSumAloneInPlaceArgs<D extends Dtype = "f32"> =
  SumAloneFields<D, FusedRmsNormArray<D>> & { input: GpuTensor<D>; residual: GpuTensor<D>; inPlace: true; output?: undefined; sum?: undefined };

/**
 * The rotation alone (`kind: "none"`: Llama's, Mistral's and GPT-J's q and k, which have no
 * QK-norm): `y` is the sum, turned by the rotary stage (`positions` or `position`, required);
 * no `gamma`, `beta`, `postGamma` or `gammaOffset`.
 */
type RotationFields<T> = Omit<T, "gamma" | "beta" | "postGamma" | "gammaOffset" | "kind"> & {
  kind: "none";
  gamma?: undefined;
  beta?: undefined;
  postGamma?: undefined;
  gammaOffset?: 0;
};

/** `run` or `runWithSum` of the rotation alone, read back. */
export type FusedRmsNormRotationArgs<D extends Dtype = "f32", O extends Dtype = D> = RotationFields<FusedRmsNormArgs<D, O>>;

/** The rotation alone, left on the GPU as a new tensor. */
export type FusedRmsNormRotationGpuArgs<D extends Dtype = "f32", O extends Dtype = D> = RotationFields<FusedRmsNormGpuArgs<D, O>>;

/** The rotation alone in place: `input ← y` (and `residual ← v` where there is one). */
export type FusedRmsNormRotationInPlaceArgs<D extends Dtype = "f32"> = RotationFields<FusedRmsNormInPlaceArgs<D>>;

/** Arguments of the timing calls: any call whose results are read back. */
export type FusedRmsNormTimedArgs =
  | FusedRmsNormArgs<"f32">
  | FusedRmsNormArgs<"f16">
  | FusedRmsNormArgs<"f32", "f16">
  | FusedRmsNormArgs<"f16", "f32">;
"#;
