// Printing for the Dawn and Chrome benches: number formats, markdown tables, progress notes and a section's header.

export const fmt = (x, d = 1) => (x === undefined || x === null || Number.isNaN(x) ? "—" : x >= 1000 ? x.toFixed(0) : x.toFixed(d));
export const pct = (x) => (x === undefined || x === null || Number.isNaN(x) ? "—" : `${(x * 100).toFixed(1)} %`);
export const log = (...a) => console.log(...a);
// Progress goes to stderr, so that stdout holds the tables alone.
export const note = (...a) => console.error("  ·", ...a);

export function table(head, rows) {
  log(`| ${head.join(" | ")} |`);
  log(`|${head.map(() => "---").join("|")}|`);
  for (const r of rows) log(`| ${r.join(" | ")} |`);
}

export function header(ctx, title) {
  const p = ctx.provenance;
  log(`\n## ${title}`);
  log(`adapter: ${ctx.kind.name}; backend: ${ctx.kind.backend}; ${ctx.kind.isCpu ? "CPU adapter" : ctx.kind.isNull ? "NULL BACKEND" : "GPU"}`);
  log(`package: ${p.pkgDir} (wasm sha256 ${p.wasmSha256})${p.snapshot ? `; ${p.snapshot.split("\n").join("; ")}` : ""}`);
  // `runtime`: where the page ran (real Chromium sets it); else Node + dawn.node.
  log(`${p.runtime ?? `node ${p.node}; dawn.node from ${p.webgpuDir}; flags: ${p.dawnFlags.join(" ")}`}; timestamp-query: ${ctx.device.features.has("timestamp-query")}`);
  log(`date: ${new Date().toISOString()}`);
}

/** On an adapter that is no GPU, the line that says its figures make no roofline claims. */
export function noRoofline(ctx) {
  if (!ctx.kind.realGpu) log(`NO ROOFLINE CLAIMS: ${ctx.kind.isNull ? "Null backend" : "a CPU adapter"} (${ctx.kind.name}); µs only, and they are not GPU numbers.`);
}
