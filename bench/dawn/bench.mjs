// The Dawn bench's program: one section of the packed package on Chrome's WebGPU (Dawn, through dawn.node), on a real GPU.
// Prints tables; writes the numbers as JSON too (--json FILE).
//
//   node bench/dawn/bench.mjs calls   [--calls 500] [--loops 5]
//   node bench/dawn/bench.mjs kernel  [--shapes 1x896,1x4096,...] [--reps 5] [--budget-s 240] [--keep-wgsl 1]
//   node bench/dawn/bench.mjs cliff   [--cliff-rows 4096,8191,8192,16384] [--cliff-hidden 4096]
//   node bench/dawn/bench.mjs family  [--shapes 1x4096,8192x4096,...] [--reps 5] [--idle-reps 7] [--idle-ms 150] [--settle-ms 1000] [--idle-pass-us 250]
//   node bench/dawn/bench.mjs rotary  [--shapes 2048x32+8x128,1x32+8x128,...] [--reps 5] [--idle-reps 7] [--idle-ms 150] [--idle-pass-us 250]
//   node bench/dawn/bench.mjs decoder [--layers 8] [--prompt 128] [--decode-steps 8] [--reps 5] [--idle-reps 5]
//   node bench/dawn/bench.mjs memory  [--mem-mib 128,192,256,384] [--mem-big 256] [--mem-churn 6] [--mem-slice-mib 1]
//   node bench/dawn/bench.mjs sweep   --wgsl FILE [--shapes 1x4096,...] [--sweep-options plain,bias+beta,sum]
//
// `sweep` times kernel variants the package does not necessarily choose, from a JSON list that
// `cargo run --release --example bench -- --emit-wgsl FILE --sweep --shapes ...` writes (the
// WGSL of each variant the native benchmark sweeps), in the same dependent chain as `kernel`,
// each checked first against the package's own result.
//
// Run each section in a fresh process (scripts/bench-dawn.sh does): `cliff` must own the
// process's first large allocations. Exit status 2: no usable GPU (message printed).
//
// Each section is a module of its own: section-cliff.mjs and section-sweep.mjs here, the
// sections bench/chrome's pages run too in bench/shared/, beside the helpers: options.mjs parses
// the command line, report.mjs prints, timing.mjs and raw.mjs time and dispatch,
// package-kernel.mjs captures the package's kernels (README.md beside this file says what each
// number is).
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { smiSampler } from "../shared/clock.mjs";
import { parseArgs } from "../shared/options.mjs";
import { Raw } from "../shared/raw.mjs";
import { note } from "../shared/report.mjs";
import { sectionCalls } from "../shared/section-calls.mjs";
import { sectionFamily } from "../shared/section-family.mjs";
import { sectionKernel } from "../shared/section-kernel.mjs";
import { sectionMemory } from "../shared/section-memory.mjs";
import { sectionDecoder } from "../shared/section-decoder.mjs";
import { sectionRotary } from "../shared/section-rotary.mjs";
import { NoGpu, open } from "./env.mjs";
import { runSmi } from "./nvidia-smi.mjs";
import { sectionCliff } from "./section-cliff.mjs";
import { sectionSweep } from "./section-sweep.mjs";

const args = parseArgs(process.argv.slice(2));
const { section, opt } = args;

async function main() {
  const sections = { calls: sectionCalls, kernel: sectionKernel, cliff: sectionCliff, sweep: sectionSweep, family: sectionFamily, memory: sectionMemory, rotary: sectionRotary, decoder: sectionDecoder };
  if (!sections[section]) {
    console.error(`usage: node bench/dawn/bench.mjs ${Object.keys(sections).join("|")} [--options]  (see the file's header)`);
    process.exit(64);
  }
  let ctx;
  try {
    ctx = await open();
  } catch (e) {
    if (e instanceof NoGpu) {
      console.log(`\n[bench:dawn] ${section}: ${e.setup ? "NOT SET UP" : "NO USABLE WEBGPU ADAPTER"} — nothing measured.\n  ${e.message}`);
      if (!e.setup) {
        console.log("  On a machine without a Vulkan GPU Dawn has no adapter (Debian 12's lavapipe lacks a feature Dawn requires).");
        console.log("  Run it on a machine with a Vulkan GPU (bash scripts/bench-dawn.sh prepare prints the command); DAWN_FLAGS=backend=null exercises the harness on Dawn's Null backend.");
      }
      process.exit(2);
    }
    throw e;
  }
  ctx.raw = new Raw(ctx.device, { warmMiB: ctx.kind.realGpu ? 64 : 0.25 });
  ctx.clock = smiSampler(runSmi());
  console.log(`[bench:dawn] ${section}: adapter ${JSON.stringify(ctx.kind.fields)}; backend ${ctx.kind.backend}`);
  const out = { section, provenance: ctx.provenance, realGpu: ctx.kind.realGpu, date: new Date().toISOString() };
  if (ctx.kind.isNull && section !== "calls") {
    console.log(`\n[bench:dawn] ${section}: Dawn's NULL BACKEND (${ctx.kind.name}): no GPU executes anything and timestamps are meaningless;` + " refusing to report kernel times or roofline claims. The package initialized and the harness loaded: that is all this run shows.");
    process.exit(2);
  }
  if (section !== "calls" && !ctx.device.features.has("timestamp-query")) {
    console.log(`\n[bench:dawn] ${section}: the package's device has no timestamp-query (adapter ${ctx.kind.name}); kernel times need GPU timestamps — nothing measured.`);
    process.exit(2);
  }
  if (ctx.kind.isNull) console.log("[bench:dawn] NULL BACKEND: call costs below are CPU-side only (nothing runs on a GPU); not a GPU measurement.");
  await sections[section](ctx, out, args);
  if (opt.json) {
    mkdirSync(dirname(opt.json), { recursive: true });
    writeFileSync(opt.json, JSON.stringify(out, null, 1));
    note(`wrote ${opt.json}`);
  }
  ctx.norm.free();
  ctx.device.destroy?.();
  // dawn.node keeps the event loop alive after the device is gone; leave explicitly.
  setTimeout(() => process.exit(0), 100);
}

main().catch((e) => {
  console.error(`[bench:dawn] ${section}: FAILED: ${e?.stack ?? e}`);
  process.exit(1);
});
