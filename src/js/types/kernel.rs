//! A kernel as `prepare` compiles it and `kernelSource` describes it for an engine's own
//! pipeline.

use wasm_bindgen::prelude::*;

#[wasm_bindgen(typescript_custom_section)]
const KERNEL: &'static str = r#"
/** A binding of the kernel, as `kernelSource` describes it (its `@binding` in `@group(0)`). */
export interface FusedRmsNormBinding {
  readonly binding: number;
  readonly name: "input" | "residual" | "gamma" | "beta" | "bias" | "post_gamma" | "input2" | "output" | "sum" | "params";
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
      readonly name: "rows" | "width" | "hidden" | "eps" | "gamma_offset" | "rotary_start" | "rotary_heads" | "rotary_scaling" | "rotary_pass";
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
  kind?: NormKind | "none";
  /** Whether calls pass a `residual` (default true). */
  residual?: boolean;
  postGamma?: boolean;
  /** Whether calls pass a parallel block's `input2` (not with `postGamma`). */
  input2?: boolean;
  /** Whether calls pass `gamma` (default true); `false`: a post-norm's sum alone (with `postGamma`, and `sum` or `inPlace`). */
  gamma?: boolean;
  bias?: boolean;
  beta?: boolean;
  sum?: boolean;
  /** Checked as a call checks it; a uniform, so every offset shares the kernel. */
  gammaOffset?: number;
  /** A rotary stage's, as a call gives them: the values of each head that rotate. */
  rotaryDim?: number;
  headSize?: number;
  rotaryStyle?: "neox" | "interleaved";
  /** Whether calls give `positions` (default true), or a start `position`. */
  positions?: boolean;
  /** Whether calls pass a gamma a head (Cohere's QK-norm, rows that are heads); needs `rotaryDim`. */
  gammaHeads?: boolean;
  /** The rows of the app's cos and sin table (`cosSin`) its calls pass; absent: angles from `invFreq`. */
  cosSinPositions?: number;
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
"#;
