// A consumer app of the installed npm package. It exposes `window.harness` for the test
// to drive through page.evaluate; the checks that decide pass/fail live here, next to the
// data, so only small JSON reports cross back to node. The seeded inputs and the f64
// reference are the repository's own (www/lib/), which package.test.mjs serves at /lib/.
import init, { FusedRmsNorm } from "webgpu-rmsnorm";
import { compare as compareWithReference } from "./lib/reference.js";
import { caseArgs as makeArgs, describeArgs } from "./lib/seeded.js";

/** One result against the reference (`sum` too, for runWithSum): { ok, problems, ... }. */
const compare = (args, output, sum) => compareWithReference(args, output, { sum });

window.harness = (async () => {
  const wasm = await init();
  const norm = await FusedRmsNorm.create();
  document.getElementById("state").textContent = "ready";
  return { wasm, norm, FusedRmsNorm, makeArgs, compare, describeArgs };
})();
