// The `decoder` section: www/decoder's Qwen3-like stack (the engine's own kernels, the package
// for every norm and the rotation, one encoder a step) timed a prefill and decode steps at a
// time, each pass of steps right after the same steps without the normalization steps (the
// package's share of the stack's GPU time), and right after the same steps with the engine's
// own add, norm and rotary passes instead (www/decoder/plain.js: the time the package saves).
import { createStack } from "../../www/decoder/layer.js";
import { PAGE_CONFIG, seededEmbeddings, seededWeights } from "../../www/decoder/weights.js";
import { clockCell } from "./clock.mjs";
import { fmt, header, log, note, pct, table } from "./report.mjs";
import { timePairs } from "./timing.mjs";

/**
 * A recorder of `n` steps of `tokens` from `position` (as timing.mjs's pairs take it):
 * timestamps at the first pass's beginning and at the end of an empty pass after the last.
 */
function steps(stack, tokens, position, way) {
  return (encoder, n, querySet, first) => {
    stack.seekIn(encoder, position);
    const begin = encoder.beginComputePass;
    let opened = false;
    encoder.beginComputePass = (d) => {
      const timestampWrites = opened ? undefined : { querySet, beginningOfPassWriteIndex: first };
      opened = true;
      return begin.call(encoder, { ...(d ?? {}), timestampWrites });
    };
    try {
      for (let s = 0; s < n; s++) stack.step(encoder, tokens, { way });
    } finally {
      encoder.beginComputePass = begin;
    }
    encoder.beginComputePass({ timestampWrites: { querySet, endOfPassWriteIndex: first + 1 } }).end();
  };
}

export async function sectionDecoder(ctx, out, { num }) {
  const cfg = { ...PAGE_CONFIG, layers: num("layers", PAGE_CONFIG.layers) };
  const prompt = num("prompt", 128);
  const reps = { busy: num("reps", 5), idle: num("idle-reps", 5) };
  const n = num("decode-steps", 8);
  const idleMs = num("idle-ms", 150);
  header(ctx, `A Qwen3-like decoder stack (${cfg.layers} layers), with and without the package's passes`);
  const stack = createStack(ctx.norm, cfg, seededWeights(cfg, 7, { lazy: true }), { maxTokens: prompt + n });
  stack.write(seededEmbeddings(cfg, prompt, 3));
  const rows = [];
  for (const [what, tokens, position, count] of [["prefill", prompt, 0, 1], ["decode", 1, prompt, n]]) {
    for (const mode of ["busy", "idle"]) {
      note(`${what}, ${mode}: ${reps[mode]} pairs of ${count} step(s), twice`);
      const pair = { n: count, reps: reps[mode], idleMs: mode === "idle" ? idleMs : 0 };
      const ours = steps(stack, tokens, position, "package");
      const none = await timePairs(ctx, steps(stack, tokens, position, "none"), ours, pair);
      const plain = await timePairs(ctx, steps(stack, tokens, position, "plain"), ours, pair);
      rows.push({ what, mode, tokens, none, plain });
    }
  }
  stack.free();
  log(
    `hidden ${cfg.hidden}, ${cfg.qHeads} q + ${cfg.kvHeads} kv heads of ${cfg.headDim}, MLP ${cfg.inter}; prefill ${prompt} tokens from position 0, decode steps from position ${prompt}.` +
      " A pair = one command buffer: a baseline's steps, then the same steps with the package, from the same position; GPU timestamps around each; µs per step, medians over the pairs." +
      " Baselines: the steps without any normalization step (their results wrong: the package's share is 1 − without ÷ with), and with the engine's own add, RMSNorm and rotary passes (plain.js: 6 passes a layer for the package's 3)." +
      ` busy: pairs back to back after a warm-up; idle: ${idleMs} ms idle before each pair (the driver's clock).`,
  );
  table(
    ["step", "GPU", "SM clock", "with the package µs", "without norms µs", "package's share", "with plain passes µs", "package ÷ plain"],
    rows.map(({ what, mode, tokens, none, plain }) => [
      `${what} (${tokens} tokens)`, mode, clockCell([...none.clocks, ...plain.clocks]),
      fmt(none.kernel.us, 1), fmt(none.base.us, 1), pct(1 - 1 / none.ratio), fmt(plain.base.us, 1), `${fmt(plain.ratio, 3)}×`,
    ]),
  );
  out.decoder = { cfg, prompt, decodeSteps: n, rows };
}
