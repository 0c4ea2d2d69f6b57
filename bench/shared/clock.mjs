// The GPU's SM clock as the driver reports it, read beside a timed pair: the sampler over a runner of nvidia-smi, its line parsed, a row's samples summed up.
// Browser-safe (bench/chrome's page imports it): the samples come from a sampler in the context,
// `ctx.clock()` → Promise of nvidia-smi's line or null, made by `smiSampler` over a runner of
// nvidia-smi: bench/dawn/nvidia-smi.mjs's in Node, bench/chrome/serve.py's `/clock` in the browser.

/** nvidia-smi's arguments: the SM clock and why it is below the maximum (a bit mask). */
export const SMI_ARGS = ["--query-gpu=clocks.sm,clocks_throttle_reasons.active", "--format=csv,noheader"];
/** The same, for drivers that no longer know the old field's name. */
export const SMI_ARGS_NEW = ["--query-gpu=clocks.sm,clocks_event_reasons.active", "--format=csv,noheader"];

// NVML's clock event reasons (nvmlClocksEventReason*), by bit.
const REASONS = [
  [0x1, "idle"],
  [0x2, "app clocks"],
  [0x4, "SW power cap"],
  [0x8, "HW slowdown"],
  [0x10, "sync boost"],
  [0x20, "SW thermal"],
  [0x40, "HW thermal"],
  [0x80, "power brake"],
  [0x100, "display clock"],
];

/**
 * One sample from nvidia-smi's first line ("1980 MHz, 0x0000000000000000"):
 * { mhz, reasons: [names] }, or null where there is none or it does not parse.
 */
export function parseSmi(text) {
  const line = (text ?? "").split("\n").find((l) => l.trim());
  const m = line?.match(/^\s*(\d+)\s*MHz\s*,\s*(0x[0-9a-fA-F]+)/);
  if (!m) return null;
  const mask = Number(BigInt(m[2]) & 0xffffn);
  return { mhz: Number(m[1]), reasons: REASONS.filter(([bit]) => mask & bit).map(([, name]) => name) };
}

/**
 * A sampler over `runSmi(args)` → Promise of { ok, text } (nvidia-smi run once with `args`;
 * `text` its output, or why it failed): each call runs it once and resolves with its output,
 * or null once nvidia-smi proved absent or failing. Tries the old field name first, then the
 * new one, and keeps what worked; a failure is told once through `warn`.
 */
export function smiSampler(runSmi, warn = (why) => console.error(`  · nvidia-smi: ${why}; the SM clock is n/a`)) {
  let args = SMI_ARGS;
  let gone = false;
  return async () => {
    if (gone) return null;
    let r = await runSmi(args);
    if (!r.ok && args === SMI_ARGS && /not a valid field|Invalid/i.test(r.text)) r = await runSmi((args = SMI_ARGS_NEW));
    if (r.ok) return r.text;
    gone = true; // no nvidia-smi, or a driver that does not answer: said once, then "n/a"
    warn(r.text.trim() || "failed");
    return null;
  };
}

/** A sampler for machines without nvidia-smi: every sample is null ("n/a"). */
export const noClock = async () => null;

/** A row's samples (parsed or null), as a table cell: "1980 MHz", "345–525 MHz (idle)", or "n/a". */
export function clockCell(samples) {
  const got = samples.filter(Boolean);
  if (!got.length) return "n/a";
  const mhz = got.map((s) => s.mhz);
  const lo = Math.min(...mhz), hi = Math.max(...mhz);
  const reasons = [...new Set(got.flatMap((s) => s.reasons))];
  return `${lo === hi ? lo : `${lo}–${hi}`} MHz${reasons.length ? ` (${reasons.join(", ")})` : ""}`;
}

/** Starts a sample now (the sampler runs while the caller goes on); resolves with the parsed sample or null. */
export function sampleClock(ctx) {
  return (ctx.clock ?? noClock)().then(parseSmi, () => null);
}
