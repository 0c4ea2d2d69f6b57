// q and k in one dispatch: a packed qkv row (each token's q heads, then k heads, then v
// heads) normalized and turned in one call, its v heads passed as they are (`passHeads`), a
// gamma a head holding q_norm's weight for each q head and k_norm's for each k head. In
// headless Chromium on both backends (WebGPU on SwiftShader):
// - Qwen3's q and k as Hugging Face transformers computes them (tests/fixtures/rotary/qwen3.json,
//   GQA: 4 q heads, 2 kv heads), each value within 1e-5 of its head's largest, v bit for bit;
// - the f64 reference (www/lib/reference.js) through run, f16 output, a start position,
//   tensors in place through run, encode and bind;
// - every bad passHeads a named error, the instance working after them.
//
//   bash scripts/build.sh && node --test --test-reporter=spec tests/e2e/browsers/rotary-packed-qkv.test.mjs
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";

import { pageSuite, test } from "../support/page.mjs";
import { ROOT } from "../support/repo.mjs";

const { inPage } = pageSuite("rmsnorm-rotary-packed-qkv-");

for (const backend of ["cpu", "webgpu"]) test(`a packed qkv row: Qwen3's q and k in one call as transformers computes them, v as it was, every entry point against the f64 reference, bad passHeads named (${backend})`, async () => {
  const fixture = JSON.parse(await readFile(`${ROOT}/tests/fixtures/rotary/qwen3.json`, "utf8"));
  const r = await inPage(async ([f, backend]) => {
    const { pkg, ref, seeded } = window.lib;
    const n = await pkg.FusedRmsNorm.create({ backend });
    const c = f.config, hd = c.head_dim, [hq, hk] = [c.q_heads, c.kv_heads], heads = hq + 2 * hk;
    const F = (a) => new Float32Array(a.flat(2).map(Math.fround));
    const gamma = F([...Array(hq).fill(f.q_norm_weight), ...Array(hk).fill(f.k_norm_weight)]);
    const base = { gamma, hidden: hd, heads, passHeads: hk, eps: c.norm.eps, invFreq: F(f.inv_freq) };
    const out = { backend: n.backend, model: [], reference: [] };
    const check = (what, args, got, tol) => {
      const rep = ref.compare(args, got, tol ? { tol } : {});
      if (!rep.ok) out.reference.push(`${what}: ${rep.problems.join("; ")}`);
    };
    for (const run of f.runs) {
      const tokens = run.positions.length;
      const [q, k, qWant, kWant] = [run.q_proj, run.k_proj, run.q, run.k].map(F);
      const v = seeded.caseArgs({ rows: tokens * hk, hidden: hd, seed: tokens }).input;
      // Each token's row: its q heads, k heads, v heads.
      const qkv = new Float32Array(tokens * heads * hd);
      for (let t = 0; t < tokens; t++) {
        qkv.set(q.subarray(t * hq * hd, (t + 1) * hq * hd), t * heads * hd);
        qkv.set(k.subarray(t * hk * hd, (t + 1) * hk * hd), (t * heads + hq) * hd);
        qkv.set(v.subarray(t * hk * hd, (t + 1) * hk * hd), (t * heads + hq + hk) * hd);
      }
      const args = { ...base, input: qkv, positions: new Int32Array(run.positions) };
      const got = await n.run(args);
      let off = 0, vSame = true;
      for (let t = 0; t < tokens; t++) {
        for (let h = 0; h < heads; h++) {
          const at = (t * heads + h) * hd;
          if (h >= hq + hk) {
            vSame &&= got.subarray(at, at + hd).every((x, i) => Object.is(x, qkv[at + i]));
            continue;
          }
          const want = h < hq ? qWant.subarray((t * hq + h) * hd) : kWant.subarray((t * hk + h - hq) * hd);
          const scale = Math.max(...want.subarray(0, hd).map(Math.abs));
          for (let i = 0; i < hd; i++) off = Math.max(off, Math.abs(got[at + i] - want[i]) / scale);
        }
      }
      out.model.push({ run: run.name, off, vSame });
      check(`${run.name}: run`, args, got);
      check(`${run.name}: f16 output`, args, await n.run({ ...args, outputDtype: "f16" }), 1e-3);
      if (run.positions.every((p, i) => p === run.positions[0] + i)) {
        check(`${run.name}: position`, args, await n.run({ ...args, positions: undefined, position: run.positions[0] }));
      }
      // In place on tensors: q and k turned where they are, v untouched.
      const over = n.upload(qkv);
      await n.run({ ...args, input: over, gamma: n.upload(gamma), inPlace: true });
      check(`${run.name}: in place`, args, await over.read());
      if (backend === "webgpu") {
        const [a, b] = [n.upload(qkv), n.upload(qkv)];
        const e = n.device.createCommandEncoder();
        n.encode(e, { ...args, input: a, gamma: n.upload(gamma), inPlace: true });
        n.device.queue.submit([e.finish()]);
        check(`${run.name}: encode`, args, await a.read());
        const bound = n.bind({ ...args, input: b, gamma: n.upload(gamma), inPlace: true });
        await bound.run();
        check(`${run.name}: bind`, args, await b.read());
        bound.free();
      }
    }
    const message = async (p) => p.then(() => "resolved", (e) => `${e.name}: ${e.message}`);
    const one = { ...base, input: new Float32Array(heads * hd), positions: new Int32Array([3]) };
    out.errors = {
      all: await message(n.run({ ...one, passHeads: heads })),
      fraction: await message(n.run({ ...one, passHeads: 1.5 })),
      residual: await message(n.run({ ...one, residual: new Float32Array(heads * hd) })),
      noStage: await message(n.run({ ...one, positions: undefined, invFreq: undefined, heads: undefined })),
      gamma: await message(n.run({ ...one, gamma: new Float32Array(heads * hd) })),
    };
    out.after = ref.compare(one, await n.run(one)).problems;
    return out;
  }, [fixture, backend], { query: `?backend=${backend}` });
  assert.equal(r.backend, backend);
  assert.equal(r.model.length, 4);
  for (const m of r.model) {
    assert.ok(m.off <= 1e-5, `${m.run}: q and k ${m.off} of a head's largest from transformers'`);
    assert.ok(m.vSame, `${m.run}: the v heads changed`);
  }
  assert.deepEqual(r.reference, []);
  assert.deepEqual(r.errors, {
    all: "ShapeError: passHeads: expected fewer than the heads a token (8), got 8",
    fraction: "ShapeError: passHeads: expected an integer from 0 to 4294967295, got 1.5",
    residual: "TypeError: passHeads: expected 0 or undefined with residual (the heads it passes are stored as the input holds them: a packed qkv row)",
    noStage: "TypeError: positions: missing (passHeads describes a rotary stage: give positions or position)",
    gamma: "ShapeError: gamma: expected length 64 (hidden) or 384 (a gamma a head; in a GPUBuffer, with gammaHeads: true), got 512",
  });
  assert.deepEqual(r.after, [], "the instance works after the refusals");
});
