// The packed package in Deno (npm `deno`, a devDependency): Deno's `navigator.gpu` is wgpu, the
// WebGPU implementation Firefox ships, here on lavapipe. Every entry point and family variant
// against the f64 reference, f16 on both paths, tensors, in place, output "gpu", encode,
// GPUBuffer arguments and look-alikes, the named errors, gpuTime and a device loss
// (tests/e2e/support/runtime-suite.mjs).
//
//   bash scripts/build.sh && node --test --test-reporter=spec tests/e2e/runtimes/deno.test.mjs
import { test } from "node:test";
import assert from "node:assert/strict";
import { rm } from "node:fs/promises";
import { join } from "node:path";

import { ROOT } from "../support/repo.mjs";
import { appWithPackage, runSuite } from "../support/runtime-app.mjs";
import { FAMILY_VARIANTS } from "../support/family-variants.mjs";

const DENO = join(ROOT, "node_modules", ".bin", "deno");

test("Deno: init() with no argument, then every entry point on Deno's WebGPU matches the f64 reference", { timeout: 900_000 }, async (t) => {
  const installed = await appWithPackage("rmsnorm-deno-");
  try {
    // Deno's WebGPU needs a runtime folder for its Vulkan surface code, which headless CI has not.
    const r = await runSuite(installed, "webgpu", DENO, ["run", "--allow-read", "--allow-env", "--allow-net=127.0.0.1"], { XDG_RUNTIME_DIR: process.env.XDG_RUNTIME_DIR ?? "/tmp", NO_COLOR: "1" });
    assert.deepEqual(r.failures, []);
    assert.equal(r.backend, "webgpu");
    // 16 variants × 2 shapes × every GPU entry point (two of them into the caller's arrays,
    // five bound), and each f16 case on both paths (in place takes no other outputDtype).
    assert.equal(r.checked.family, FAMILY_VARIANTS * 2 * 15);
    assert.equal(r.checked["f16 packed"], FAMILY_VARIANTS * (3 * 15 - 2 * 5));
    // lavapipe offers shader-f16, so Deno runs the WGSL f16 path too (Chromium's SwiftShader
    // does not offer it).
    if (/llvmpipe/.test(r.adapter)) assert.equal(r.shaderF16Offered, true, "lavapipe offers shader-f16");
    if (r.shaderF16Offered) assert.equal(r.checked["f16 shader-f16"], FAMILY_VARIANTS * (3 * 15 - 2 * 5));
    assert.deepEqual([r.checked.errors, r.checked.webgpuObjects, r.checked.timing, r.checked.deviceLoss], [12, 7, 2, 3]);
    assert.equal(r.checked.rotary, 3 * 6 + 1 + 5, "the rotary stage's checks");
    assert.equal(r.checked.decoder, 2 * 4 * 2, "www/decoder's stack against the f64 reference and transformers: four steps, the stream and the final norm");
    t.diagnostic(`adapter ${r.adapter}; checked ${JSON.stringify(r.checked)}; shader-f16 ${r.shaderF16Offered}; timestamp-query ${r.timestampQuery}`);
  } finally {
    await rm(installed.tmp, { recursive: true, force: true });
  }
});
