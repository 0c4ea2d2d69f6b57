// A consumer app of the installed npm package in a browser without WebGPU, as an app written
// for both kinds of browser would open it: `backend: "auto"`. It exposes `window.harness` for
// tests/e2e/support/no-webgpu-suite.mjs to drive (in Firefox ESR and in WebKit); the checks
// run here, next to the data, and only small JSON reports cross back to node. Its page is
// tests/e2e/support/apps/consumer/index.html, as for the Chromium consumer. Inputs, the f64
// reference and f16 conversions are the repository's own (www/lib/), served at /lib/.
import init, { FusedRmsNorm } from "webgpu-rmsnorm";
import { ARRAY_KEYS, argsToF16 as asF16, fromF16, toF16 } from "./lib/f16.js";
import { chainReference, compare, reference } from "./lib/reference.js";
import { caseArgs, describeArgs, randomArgs, rng } from "./lib/seeded.js";

/** The error a call or a getter gave (thrown or rejected), as { name, message }, or null. */
async function failureOf(fn) {
  try {
    await fn();
    return null;
  } catch (e) {
    return { name: e?.name, message: e?.message, isError: e instanceof Error };
  }
}

window.harness = (async () => {
  const wasm = await init();
  const norm = await FusedRmsNorm.create({ backend: "auto" });
  document.getElementById("state").textContent = `ready: ${norm.backend}`;
  return {
    wasm,
    norm,
    FusedRmsNorm,
    ARRAY_KEYS,
    asF16,
    caseArgs,
    chainReference,
    compare,
    describeArgs,
    failureOf,
    fromF16,
    randomArgs,
    reference,
    rng,
    toF16,
  };
})();
// The test reads the failure from the promise itself; this keeps it from also being reported
// as an unhandled rejection.
window.harness.catch(() => {});
