// The Problem card: its controls read into a problem, and the problem made into the arguments
// of a call, in f32 or as f16 halves.
import { argsToF16 } from "../lib/f16.js";
import { filled, randomArgs, rng } from "../lib/seeded.js";
import { $, pageError } from "./dom.js";

/** Beyond this the page's own f64 reference and copies would take hundreds of MB. */
export const MAX_ELEMENTS = 1 << 23;
/** A γ near 1 and a small β, as in a trained model, keep the demo's numbers plausible. */
export const DEMO_RANGES = {
  input: [-2, 2],
  residual: [-2, 2],
  input2: [-2, 2],
  gamma: [0.5, 1.5],
  bias: [-0.5, 0.5],
  beta: [-0.1, 0.1],
};

/**
 * The Problem controls as { rows, hidden, bias, beta, eps, seed, dtype, kind, residual,
 * postGamma, input2, rotary, position, gammaOffset, outputDtype } (outputDtype undefined: the
 * data's; position: the rotary stage's first, of consecutive rows).
 */
export function readProblem() {
  const rowsText = $("rows").value.trim();
  const rows = Number(rowsText);
  if (rowsText === "" || !Number.isInteger(rows) || rows < 0) {
    throw pageError("RangeError", `rows: expected an integer >= 0, got ${JSON.stringify($("rows").value)}`);
  }
  // An empty field is 0 to the library, which then says why 0 is wrong.
  const hidden = Number($("hidden").value.trim() || 0);
  const epsText = $("eps").value.trim();
  const eps = epsText === "" ? undefined : Number(epsText);
  const seed = Number($("seed").value) || 0;
  const dtype = document.querySelector('input[name="dtype"]:checked')?.value === "f16" ? "f16" : "f32";
  const width = Number.isInteger(hidden) && hidden > 0 ? hidden : 1;
  if (rows * width > MAX_ELEMENTS) {
    throw pageError(
      "RangeError",
      `rows × hidden: expected at most ${MAX_ELEMENTS.toLocaleString("en")} elements in this demo, got ${(rows * width).toLocaleString("en")}`,
    );
  }
  const kind = document.querySelector('input[name="kind"]:checked')?.value === "layer" ? "layer" : "rms";
  // Any text goes to the library as a number, so that a bad offset earns its named error.
  const offsetText = $("gamma-offset").value.trim();
  const gammaOffset = offsetText === "" ? 0 : Number(offsetText);
  const outputDtype = $("output-dtype").value || undefined;
  return {
    rows, hidden, bias: $("bias").checked, beta: $("beta").checked, eps, seed, dtype,
    kind, residual: $("residual").checked, postGamma: $("post-gamma").checked, input2: $("input2").checked, gammaOffset, outputDtype,
    rotary: $("rotary").checked,
    position: $("rotary").checked ? Number($("rotary-position").value || 0) : undefined,
  };
}

/**
 * `hidden` goes to the library exactly as typed, so a bad value earns its ShapeError; the
 * arrays only need some length meanwhile. The normalization's fields are passed only where
 * they differ from the defaults, so that a plain problem is the plain call.
 */
export function makeArgs({ rows, hidden, bias, beta, eps, seed, kind = "rms", residual = true, postGamma = false, input2 = false, rotary = false, position = 0, gammaOffset = 0, outputDtype }) {
  const width = Number.isInteger(hidden) && hidden > 0 ? hidden : 1;
  const next = rng(seed);
  const args = { ...randomArgs({ rows, hidden: width, bias, beta, eps }, next, DEMO_RANGES), hidden };
  if (!residual) delete args.residual;
  // The post-norm's γ, drawn after the others so that the rest of a seed's data stays the same.
  if (postGamma) args.postGamma = filled(width, next, ...DEMO_RANGES.gamma);
  // A parallel block's second sublayer output, drawn last for the same reason.
  if (input2) args.input2 = filled(rows * width, next, ...DEMO_RANGES.input2);
  // RoPE after the norm: each row one token's head, from `position` on, as Qwen3's θ gives.
  if (rotary) Object.assign(args, { position, theta: 1e6 });
  if (kind !== "rms") args.kind = kind;
  if (gammaOffset !== 0) args.gammaOffset = gammaOffset;
  if (outputDtype) args.outputDtype = outputDtype;
  return args;
}

/**
 * What the GPU gets (`gpu`: f32 arrays, or Uint16Arrays of halves) and the same values as
 * f32 arrays (`host`), which the reference and the plain loop use: in f16 the reference is
 * that of the very halves the kernel read.
 */
export function withDtype(args, dtype) {
  if (dtype !== "f16") return { gpu: args, host: args };
  const { bits, host } = argsToF16(args);
  return { gpu: bits, host };
}
