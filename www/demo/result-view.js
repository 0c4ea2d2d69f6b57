// The Run button and the Result card: one call on the problem in the controls, its result
// against the f64 reference, its end-to-end and kernel times, the plain loop's time, and a
// preview of the first values.
import { fromF16 } from "../lib/f16.js";
import { plainLoop, plainLoopDoes } from "../lib/plain-loop.js";
import { compare } from "../lib/reference.js";
import { $, setStatus, showError } from "./dom.js";
import { fmtErr, fmtMs } from "./format.js";
import { clearKernelTime, kernelTime, showKernelTime } from "./kernel-time.js";
import { renderPreview } from "./output-preview.js";
import { makeArgs, readProblem, withDtype } from "./problem-form.js";
import { median, timeAsync, timeSync } from "./timing.js";

/** Largest relative error a run may show: f32 per the README; f16 is one rounding (2⁻¹¹). */
const TOLERANCE = { f32: 1e-5, f16: 1e-3 };
const RESULT_FIELDS = ["max-error", "max-rel", "time", "kernel-time", "js-time"];

export async function runOnce(norm) {
  setStatus("running", "Running…");
  for (const id of RESULT_FIELDS) $(id).textContent = "…";
  for (const id of ["first-time", "error-note"]) $(id).textContent = "\u00a0";
  try {
    const problem = readProblem();
    const { dtype } = problem;
    // What the output is: outputDtype's, else the data's.
    const outDtype = problem.outputDtype ?? dtype;
    showDtype(outDtype === dtype ? dtype : `${dtype} → ${outDtype}`);
    const { gpu: args, host } = withDtype(makeArgs(problem), dtype);
    // The first call for a new size also creates that size's buffers; report it apart from
    // the steady state an app running many layers sees.
    const t0 = performance.now();
    const out = await norm.run(args);
    const firstMs = performance.now() - t0;
    const warm = [];
    for (let spent = firstMs; warm.length < 3 && spent < 1000; ) {
      const t = performance.now();
      warm.push(await timeAsync(() => norm.run(args)));
      spent += performance.now() - t;
    }
    $("time").textContent = fmtMs(warm.length ? median(warm) : firstMs);
    $("first-time").textContent = warm.length ? `first call ${fmtMs(firstMs)}, then median of ${warm.length}` : "first call";
    showKernelTime(problem.rows > 0 ? await kernelTime(norm, args, dtype) : null);
    const jsMs = plainLoopDoes(host) ? timeSync(() => plainLoop(host)) : undefined;

    const y = outDtype === "f16" ? fromF16(out) : out;
    const tol = TOLERANCE[outDtype];
    const { ok, maxAbs, maxRel } = compare(host, y, { tol });
    $("max-error").textContent = fmtErr(maxAbs);
    const of = dtype === "f16" ? "the f64 reference of the same halves" : "the f64 reference";
    $("error-note").textContent =
      outDtype === "f16"
        ? `f16 output, against ${of} (one f16 rounding ≈ 4.9e-4 relative)`
        : `f32 output, against ${of}`;
    $("max-rel").textContent = fmtErr(maxRel);
    $("js-time").textContent = jsMs === undefined ? "—" : fmtMs(jsMs);
    $("js-time").title = jsMs === undefined ? "The plain loop is an RMSNorm pre-norm: no baseline for LayerNorm, the sandwich or a parallel block." : "";
    renderPreview(y, host, { ...problem, dtype: outDtype });
    const verdict = ok ? "matches the f64 reference" : "DOES NOT match the f64 reference";
    setStatus(
      ok ? "done" : "mismatch",
      `Done: ${problem.rows} × ${args.hidden} ${problem.rows === 1 ? "row" : "rows"} in ${dtype} on ${norm.backend === "cpu" ? "the CPU backend" : "WebGPU"}, ${verdict} (within ${fmtErr(tol)} relative): ${describeNorm(problem)}${outDtype === dtype ? "" : `, output ${outDtype}`}.`,
    );
  } catch (e) {
    for (const id of RESULT_FIELDS) $(id).textContent = "—";
    clearKernelTime();
    showError(e);
  }
}

/** "RMSNorm, with a residual", "RMSNorm, the sandwich, with a residual, γ + 1", …: what the call normalized. */
function describeNorm({ kind, residual, postGamma, input2, rotary, gammaOffset }) {
  const parts = [kind === "layer" ? "LayerNorm" : "RMSNorm"];
  if (postGamma) parts.push("the sandwich");
  if (input2) parts.push("a parallel block");
  if (rotary) parts.push("then RoPE");
  parts.push(residual ? "with a residual" : "no residual");
  if (gammaOffset) parts.push(`γ + ${gammaOffset}`);
  return parts.join(", ");
}

function showDtype(dtype) {
  const badge = $("result-dtype");
  badge.textContent = dtype;
  badge.dataset.dtype = dtype;
}
