// Numerics in headless Chromium's WebGPU: extreme magnitudes, NaN/±Inf poisoning only their
// own row, a randomized sweep against the f64 reference, and rows longer than a workgroup.
// The harness page and its servers: support/page.mjs.
//
//   bash scripts/build.sh && node --test --test-reporter=spec tests/e2e/browsers/numerics.test.mjs
//
// RELIABILITY_SEED=<n> replays the randomized sweep.
import assert from "node:assert/strict";

import { SEED, pageSuite, test } from "../support/page.mjs";

const { inHarness } = pageSuite("webgpu-rmsnorm-numerics-");

// ---------------------------------------------------------------------------------------
// Numerics
// ---------------------------------------------------------------------------------------

test("numerics: rows of ~1e30 and ~1e-30 normalize like rows of ~1; NaN/±Inf poison only their own row", async (t) => {
  const r = await inHarness(async () => {
    const h = await window.harness;
    const out = { failures: [], notes: [] };
    for (const hidden of [5, 768, 4096, 4099, 16384]) {
      for (const eps of [0, 1e-6]) {
        for (const withSum of [false, true]) {
          // Rows alternate ~1, ~1e30, ~1e-30 (the same random pattern, scaled): with eps 0 the
          // scaled rows must come out as the ~1 row does.
          const scales = [1, 1e30, 1e-30, 1e20, 1e-20, 3e37, 1e-35];
          const rows = scales.length;
          const next = h.rng(hidden * 13 + (eps ? 1 : 0));
          // |base| ≥ 0.05, so even the 1e-35 row holds no subnormal (a GPU may flush those).
          const base = Float32Array.from({ length: hidden }, () => (next() < 0.5 ? -1 : 1) * (0.05 + 1.95 * next()));
          const gamma = Float32Array.from({ length: hidden }, () => 3 * next() - 1.5);
          const args = { input: new Float32Array(rows * hidden), residual: new Float32Array(rows * hidden), gamma, hidden, eps };
          for (let r = 0; r < rows; r++)
            for (let i = 0; i < hidden; i++) {
              // input + residual = base · scale exactly (both halves are exact in f32).
              args.input[r * hidden + i] = Math.fround(base[i] * scales[r]) / 2;
              args.residual[r * hidden + i] = Math.fround(base[i] * scales[r]) / 2;
            }
          const got = withSum ? await h.norm.runWithSum(args) : await h.norm.run(args);
          const y = withSum ? got.output : got;
          const rep = withSum ? h.check(args, y, got.sum) : h.check(args, y);
          const what = `hidden ${hidden} eps ${eps} ${withSum ? "runWithSum" : "run"}`;
          if (!rep.ok) out.failures.push(`${what}: ${rep.problems.join("; ")}`);
          if (eps === 0) {
            for (let r = 1; r < rows; r++) {
              let worst = 0;
              for (let i = 0; i < hidden; i++) {
                const a = y[r * hidden + i], b = y[i];
                const e = Math.abs(a - b) / (Math.abs(b) + 1e-30);
                worst = Math.max(worst, Number.isNaN(e) ? Infinity : e);
              }
              // Power-of-two-ish scales are not exact here, so allow f32 rounding of v.
              if (!(worst <= 1e-5)) out.failures.push(`${what}: the row scaled by ${scales[r]} differs from the ~1 row by ${worst} relative`);
            }
          }
        }
      }
    }

    // Poison: NaN, +Inf, -Inf in input or residual, an overflowing input + residual, a NaN
    // in a huge and in a tiny row; the other rows must be exact, the poisoned rows as the
    // formula says (NaN throughout for NaN; Inf·0 = NaN at the Inf and 0·gamma + beta elsewhere).
    for (const hidden of [4, 7, 768, 4096]) {
      for (const beta of [false, true]) {
        const args = h.makeArgs({ rows: 12, hidden, bias: true, beta, eps: 1e-6, seed: hidden + (beta ? 1 : 0), scale: [1, 1, 1, 1, 1, 1, 1, 1, 1e30, 1e-30, 1, 1] });
        const at = (r, i) => r * hidden + (i % hidden);
        args.input[at(1, 3)] = NaN;
        args.residual[at(2, 1)] = Infinity;
        args.input[at(3, 0)] = -Infinity;
        args.input[at(4, 2)] = 3e38;
        args.residual[at(4, 2)] = 3e38; // v = Inf in f32
        args.input[at(5, 1)] = Infinity;
        args.residual[at(5, 1)] = -Infinity; // v = NaN
        args.input[at(6, 0)] = NaN;
        args.input[at(6, 2)] = Infinity; // both
        args.input[at(8, 1)] = NaN; // a NaN in a huge row
        args.residual[at(9, 2)] = -Infinity; // an Inf in a tiny row
        const poisoned = [1, 2, 3, 4, 5, 6, 8, 9];
        const { output, sum } = await h.norm.runWithSum(args);
        const rep = h.check(args, output, sum);
        const what = `poison hidden ${hidden}${beta ? " +beta" : ""}`;
        if (!rep.ok) out.failures.push(`${what}: ${rep.problems.join("; ")}`);
        for (let r = 0; r < 12; r++) {
          const row = output.subarray(r * hidden, (r + 1) * hidden);
          const finite = row.every(Number.isFinite);
          if (poisoned.includes(r) === finite) out.failures.push(`${what}: row ${r} is ${finite ? "finite" : "not finite"}`);
        }
      }
    }

    // A zero row: with eps > 0 it is 0·gamma + beta exactly; with eps 0 it is 0/0, NaN in
    // every column (docs/numerics.md), whatever WGSL's inverseSqrt(0) gives.
    for (const eps of [1e-6, 0]) {
      const args = h.makeArgs({ rows: 3, hidden: 64, beta: true, eps, seed: 5 });
      args.input.fill(0, 64, 128);
      args.residual.fill(0, 64, 128);
      const y = await h.norm.run(args);
      const rep = h.check(args, y, undefined, eps ? undefined : [0, 2]);
      if (!rep.ok) out.failures.push(`zero row, eps ${eps}: ${rep.problems.join("; ")}`);
      if (eps === 0 && !y.subarray(64, 128).every(Number.isNaN)) out.failures.push(`zero row with eps 0: want NaN in every column, got ${Array.from(y.subarray(64, 72)).join(", ")}…`);
    }
    return out;
  });
  for (const n of r.notes) t.diagnostic(n);
  assert.deepEqual(r.failures, []);
});

test("numerics: randomized sweep against the f64 reference (max relative error)", async (t) => {
  t.diagnostic(`seed ${SEED} (replay with RELIABILITY_SEED=${SEED})`);
  const r = await inHarness(async (seed) => {
    const h = await window.harness;
    const next = h.rng(seed);
    const pick = (xs) => xs[Math.floor(next() * xs.length)];
    const hiddens = [1, 2, 3, 4, 5, 7, 8, 16, 31, 64, 100, 127, 128, 255, 256, 257, 512, 768, 896, 1000, 1024, 1536, 2048, 2049, 2560, 3072, 4096, 4099, 5120, 8192, 11008, 16384];
    const out = { cases: 0, elements: 0, maxRel: 0, worst: "", failures: [] };
    const started = performance.now();
    // At least 60 cases; more, up to 400, while 12 s last (a loaded machine gets fewer).
    for (let c = 0; c < 400 && (c < 60 || performance.now() - started < 12_000); c++) {
      const hidden = pick(hiddens);
      const rows = 1 + Math.floor(next() * Math.max(1, Math.min(8, 16384 / hidden)));
      // Magnitudes 10^-30 .. 10^30 per row, most near 1.
      const scale = Array.from({ length: rows }, () => (next() < 0.6 ? 1 : 10 ** Math.round(60 * next() - 30)));
      const c0 = { rows, hidden, bias: next() < 0.5, beta: next() < 0.5, eps: pick([0, 1e-6, 1e-5, 1e-2, undefined]), seed: Math.floor(next() * 1e9), scale };
      const args = h.makeArgs(c0);
      const withSum = next() < 0.3;
      const got = withSum ? await h.norm.runWithSum(args) : await h.norm.run(args);
      const rep = withSum ? h.check(args, got.output, got.sum) : h.check(args, got);
      out.cases++;
      out.elements += args.input.length;
      const desc = `${h.describeArgs(args)} scales [${scale.join(",")}] seed ${c0.seed}${withSum ? " runWithSum" : ""}`;
      if (rep.maxRel > out.maxRel) {
        out.maxRel = rep.maxRel;
        out.worst = desc;
      }
      if (!rep.ok) out.failures.push(`${desc}: ${rep.problems.join("; ")}`);
    }
    out.ms = Math.round(performance.now() - started);
    return out;
  }, SEED);
  t.diagnostic(`${r.cases} random cases, ${r.elements} elements in ${r.ms} ms: max relative error vs f64 = ${r.maxRel.toExponential(3)} (${r.worst})`);
  console.log(`# numerics sweep: seed ${SEED}, ${r.cases} cases, max relative error vs f64 = ${r.maxRel.toExponential(3)}`);
  assert.ok(r.cases >= 60, `only ${r.cases} cases ran`);
  assert.deepEqual(r.failures, [], `seed ${SEED}: replay with RELIABILITY_SEED=${SEED}`);
  assert.ok(r.maxRel <= 1e-5, `seed ${SEED}: max relative error ${r.maxRel}`);
});

test("long rows: hidden 2049, 3001, 4099, 8196, 12288 and 16384 run correctly within the adapter's maxComputeInvocationsPerWorkgroup (256 on SwiftShader)", async (t) => {
  const r = await inHarness(async () => {
    const h = await window.harness;
    const n = await h.FusedRmsNorm.create();
    const adapter = await navigator.gpu.requestAdapter();
    const out = { limit: adapter.limits.maxComputeInvocationsPerWorkgroup, failures: [] };
    for (const hidden of [2049, 3001, 4099, 8196, 12288, 16384]) {
      for (const [bias, beta, withSum] of [[false, false, false], [true, true, true]]) {
        const a = h.makeArgs({ rows: 2, hidden, bias, beta, seed: hidden });
        const r = await h.settle(withSum ? n.runWithSum(a) : n.run(a));
        const rep = r.err ? { ok: false, problems: [`${r.err.name}: ${r.err.message.split("\n")[0]}`] } : withSum ? h.check(a, r.ok.output, r.ok.sum) : h.check(a, r.ok);
        if (!rep.ok) out.failures.push(`${h.describeArgs(a)}${withSum ? " runWithSum" : ""}: ${rep.problems.join("; ")}`);
      }
    }
    n.free();
    return out;
  });
  t.diagnostic(`adapter maxComputeInvocationsPerWorkgroup ${r.limit}`);
  assert.deepEqual(r.failures, []);
});
