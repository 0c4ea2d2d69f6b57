// The kernel's own time per dispatch, apart from uploads and readback: GPU timestamps where the
// adapter has them, else (and on the CPU backend) the wall-clock slope of timeDispatches over
// the repeat count.
import { ALL_ARRAY_KEYS } from "../lib/f16.js";
import { $ } from "./dom.js";
import { fmtMs } from "./format.js";
import { median } from "./timing.js";

/** The slope is taken between these two repeat counts… */
const KERNEL_K = [1, 21];
/** …grown until the difference is this many ms, well above the page's timer resolution. */
const KERNEL_MIN_SPAN_MS = 2;
const KERNEL_MAX_K = 2001;

/**
 * The kernel's cost per dispatch on GPU-resident data: every array uploaded once, then the
 * slope of `timeDispatches(args, K)` (K dispatches in one submission, plus one fixed readback)
 * between two K, median of 3 slopes. Upload, submission and readback cancel out of the slope.
 */
export async function kernelTime(norm, args, dtype) {
  const tensors = [];
  // Every field but the arrays as the call has it (hidden, eps, kind, gammaOffset, outputDtype).
  const resident = Object.fromEntries(Object.entries(args).filter(([k]) => !ALL_ARRAY_KEYS.includes(k)));
  try {
    for (const k of ALL_ARRAY_KEYS) {
      if (!args[k]) continue;
      const t = norm.upload(args[k], { dtype });
      tensors.push(t);
      resident[k] = t;
    }
    await norm.timeDispatches(resident, 1); // warm-up: buffers of this size
    let [lo, hi] = KERNEL_K;
    const pairs = async () => {
      const slopes = [];
      const spans = [];
      for (let i = 0; i < 3; i++) {
        const a = await norm.timeDispatches(resident, lo);
        const b = await norm.timeDispatches(resident, hi);
        slopes.push((b - a) / (hi - lo));
        spans.push(b - a);
      }
      return { ms: median(slopes), span: median(spans) };
    };
    let m = await pairs();
    // A fast GPU does 20 small dispatches within the timer's resolution (0.1 ms in a page
    // that is not cross-origin isolated): take more, for a span of a few milliseconds.
    if (m.span < KERNEL_MIN_SPAN_MS && hi < KERNEL_MAX_K) {
      const perDispatch = Math.max(m.ms, 1e-4);
      hi = Math.min(KERNEL_MAX_K, lo + Math.ceil((2.5 * KERNEL_MIN_SPAN_MS) / perDispatch));
      m = await pairs();
    }
    // GPU timestamps, where the adapter has them: the pass's own time over `hi` dispatches.
    const gpu = [];
    for (let i = 0; i < 3; i++) {
      const t = await norm.gpuTime(resident, hi);
      if (t === undefined) break;
      gpu.push(t / hi);
    }
    return { ms: m.ms, lo, hi, gpu: gpu.length ? median(gpu) : undefined, backend: norm.backend };
  } finally {
    for (const t of tensors) t.free();
  }
}

/** Set once at start (the note's tooltip): how this adapter lets the kernel be timed. */
let timerNote = "The package gives the page no GPU timestamps, so this is wall-clock time.";

export function setTimerNote(note) {
  timerNote = note;
}

export function showKernelTime(k) {
  if (!k) {
    $("kernel-time").textContent = "—";
    $("kernel-note").textContent = "no rows to time";
    return;
  }
  const slope = k.ms > 0 ? fmtMs(k.ms) : "below resolution";
  if (k.gpu !== undefined) {
    $("kernel-time").textContent = fmtMs(k.gpu);
    $("kernel-time").dataset.ms = String(k.gpu);
    $("kernel-note").textContent = `GPU timestamps (gpuTime, ${k.hi} dispatches, median of 3); wall-clock slope ${slope}`;
  } else {
    $("kernel-time").textContent = slope;
    $("kernel-time").dataset.ms = String(k.ms);
    const why = k.backend === "cpu" ? "the CPU backend has no GPU timestamps" : "this adapter has no timestamp-query";
    $("kernel-note").textContent = `slope of timeDispatches, K = ${k.lo} → ${k.hi}, median of 3; wall clock (${why})`;
  }
  $("kernel-note").title = timerNote;
}

/** After a failed run: the note says how the time would have been taken. */
export function clearKernelTime() {
  $("kernel-note").textContent = "slope of timeDispatches(args, K) over K";
}
