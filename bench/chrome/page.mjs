// The page's program for `npm run bench:chrome`: opens the packed package in this Chromium with the tap, runs one section, POSTs its tables and JSON back.
// The sections are bench/shared's (the same measurements as Dawn in Node, here behind Chrome's GPU
// process) plus the ones of this folder; console.log lines are the report, collected and sent to
// bench/chrome/serve.py, which prints them and writes the JSON (a GPU machine needs no Node).
import { smiSampler } from "../shared/clock.mjs";
import { parseArgs } from "../shared/options.mjs";
import { Raw } from "../shared/raw.mjs";
import { sectionCalls } from "../shared/section-calls.mjs";
import { sectionFamily } from "../shared/section-family.mjs";
import { sectionKernel } from "../shared/section-kernel.mjs";
import { sectionMemory } from "../shared/section-memory.mjs";
import { sectionDecoder } from "../shared/section-decoder.mjs";
import { sectionRotary } from "../shared/section-rotary.mjs";
import { classify, newSeen, tap } from "../shared/tap.mjs";
import { sectionCallsChrome } from "./section-calls-chrome.mjs";
import { sectionChurn } from "./section-churn.mjs";
import { sectionLayers } from "./section-layers.mjs";
import { sectionWaits } from "./section-waits.mjs";

const q = new URLSearchParams(location.search);
const section = q.get("section") ?? "calls";
const name = q.get("name") ?? section;
const argv = [section, ...(q.get("args") ?? "").split(/\s+/).filter(Boolean)];

// The report: every console.log line, in order; notes (console.error) go to the server's stderr at once.
const lines = [];
const post = (path, body) => fetch(path, { method: "POST", body: typeof body === "string" ? body : JSON.stringify(body) });
const { log: origLog, error: origError } = console;
console.log = (...a) => {
  lines.push(a.join(" "));
  origLog(...a);
};
console.error = (...a) => {
  post("/log", `[${name}] ${a.join(" ")}`).catch(() => {});
  origError(...a);
};

/** nvidia-smi run by the server (serve.py's `/clock`), for clock.mjs's sampler: the SM clock beside the family's pairs. */
const runSmi = (args) =>
  fetch(`/clock?${new URLSearchParams(args.map((a) => ["arg", a]))}`).then(
    async (r) => ({ ok: r.ok, text: await r.text() }),
    (e) => ({ ok: false, text: String(e) }),
  );

/** The package, opened on this browser's navigator.gpu with the tap, and what bench/shared's sections expect of `ctx`. */
async function open() {
  const seen = newSeen();
  tap(navigator.gpu, seen);
  const lib = await import("/pkg/webgpu_rmsnorm.js");
  await lib.default();
  const norm = await lib.FusedRmsNorm.create({ powerPreference: "high-performance" });
  const device = seen.device;
  if (!device) throw new Error("the package opened a device but the tap did not see it");
  device.addEventListener?.("uncapturederror", (ev) => console.error(`[uncaptured error] ${ev.error?.message ?? ev.error}`));
  const kind = classify(seen.adapter);
  const snapshot = await fetch("/pkg/SNAPSHOT.txt").then((r) => (r.ok ? r.text() : null), () => null);
  const wasm = new Uint8Array(await (await fetch("/pkg/webgpu_rmsnorm_bg.wasm")).arrayBuffer());
  const sha = [...new Uint8Array(await crypto.subtle.digest("SHA-256", wasm))].map((b) => b.toString(16).padStart(2, "0")).join("").slice(0, 16);
  const provenance = {
    runtime: `${navigator.userAgent.match(/(HeadlessChrome|Chrome|Chromium)\/[\d.]+/)?.[0] ?? navigator.userAgent} (real browser; fresh browser per section unless churn)`,
    pkgDir: "/pkg", wasmSha256: sha, snapshot: snapshot?.trim() || null, adapter: kind.fields, packageAdapterInfo: { ...norm.adapterInfo },
    userAgent: navigator.userAgent, deviceFeatures: [...device.features].sort(),
    limits: { maxStorageBufferBindingSize: device.limits.maxStorageBufferBindingSize, maxBufferSize: device.limits.maxBufferSize },
  };
  return { norm, lib, device, adapter: seen.adapter, kind, modules: seen.modules, seen, provenance, clock: smiSampler(runSmi) };
}

const SECTIONS = { kernel: sectionKernel, family: sectionFamily, calls: sectionCallsChrome, churn: sectionChurn, layers: sectionLayers, memory: sectionMemory, rotary: sectionRotary, decoder: sectionDecoder, waits: sectionWaits };

async function main() {
  const args = parseArgs(argv);
  const out = { section, name, date: new Date().toISOString() };
  if (section === "ort") {
    // (d) runs `npm run bench`'s own side-by-side (bench/shared/versus-ort.mjs) (its own instance, onnxruntime-web beside it).
    const { sectionOrt } = await import("./section-ort.mjs");
    await sectionOrt(out, args);
    return out;
  }
  if (!SECTIONS[section]) throw new Error(`unknown section ${section} (${Object.keys(SECTIONS).join(", ")}, ort)`);
  const ctx = await open();
  const real = ctx.kind.realGpu;
  // Real Chrome: 1 s of warm-up before every timed pass, so that the GPU's clock is up; a CPU adapter gets less.
  ctx.raw = new Raw(ctx.device, { warmMiB: real ? 64 : 0.25, warmMs: args.num("warm-ms", real ? 1000 : 50) });
  Object.assign(out, { provenance: ctx.provenance, realGpu: real });
  console.log(`[bench:chrome] ${name}: adapter ${JSON.stringify(ctx.kind.fields)}; backend ${ctx.kind.backend}`);
  if (section !== "calls" && !ctx.device.features.has("timestamp-query")) throw new Error(`no timestamp-query on ${ctx.kind.name}: kernel times need GPU timestamps`);
  if (section === "calls") await sectionCalls(ctx, out, args);
  await SECTIONS[section](ctx, out, args);
  ctx.norm.free();
  return out;
}

main().then(
  (out) => post(`/result/${name}`, { lines, out }),
  (e) => post(`/result/${name}`, { lines, out: { section, name }, error: String(e?.stack ?? e) }),
);
