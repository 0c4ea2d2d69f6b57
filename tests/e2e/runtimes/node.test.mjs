// The packed package in Node: `await init()` with no argument reads the `.wasm` beside the module
// from disk (Node's fetch reads no file: URL), and `backend: "auto"` runs the CPU backend where
// Node has no navigator.gpu: every family variant through the CPU backend's entry points
// against the f64 reference, f16 both ways, and the named errors
// (tests/e2e/support/runtime-suite.mjs).
//
//   bash scripts/build.sh && node --test --test-reporter=spec tests/e2e/runtimes/node.test.mjs
import { test } from "node:test";
import assert from "node:assert/strict";
import { rm } from "node:fs/promises";

import { appWithPackage, runSuite } from "../support/runtime-app.mjs";
import { FAMILY_VARIANTS } from "../support/family-variants.mjs";

test("Node: init() with no argument, then the CPU backend through \"auto\" matches the f64 reference", { timeout: 600_000 }, async (t) => {
  const installed = await appWithPackage("rmsnorm-node-");
  try {
    const r = await runSuite(installed, "cpu", process.execPath, []);
    assert.deepEqual(r.failures, []);
    assert.equal(r.backend, "cpu");
    assert.equal(r.checked.family, FAMILY_VARIANTS * 2 * 9);
    assert.equal(r.checked.f16, FAMILY_VARIANTS * (3 * 9 - 2 * 2));
    assert.equal(r.checked.errors, 12);
    assert.equal(r.checked.rotary, 3 * 6 + 1 + 5, "the rotary stage's checks");
    t.diagnostic(`checked ${JSON.stringify(r.checked)}`);
  } finally {
    await rm(installed.tmp, { recursive: true, force: true });
  }
});
