// A bundled consumer: Vite resolves "webgpu-rmsnorm" through the package's exports map and
// emits the .wasm as a hashed asset. `?init=url` (default) hands init() the asset URL from a
// `?url` import, the documented way for bundlers; `?init=default` calls init() bare, so the
// glue's own `new URL("…_bg.wasm", import.meta.url)` must survive bundling too.
import init, { FusedRmsNorm } from "webgpu-rmsnorm";
import wasmUrl from "webgpu-rmsnorm/webgpu_rmsnorm_bg.wasm?url";
// The repository's seeded inputs and f64 reference, bundled from where they live; the test
// copies www/lib/ next to its copy of this app so that the relative path holds there too.
import { compare } from "../../www/lib/reference.js";
import { randomArgs, rng } from "../../www/lib/seeded.js";

const CASES = [
  { rows: 3, hidden: 768, bias: true, beta: true, eps: 1e-5 },
  { rows: 1, hidden: 4099 },
  { rows: 5, hidden: 1, beta: true },
  { rows: 0, hidden: 16 },
];
const TOL = 1e-5;

async function main() {
  const how = new URLSearchParams(location.search).get("init") ?? "url";
  await (how === "default" ? init() : init({ module_or_path: wasmUrl }));
  const norm = await FusedRmsNorm.create();
  const results = [];
  for (const [i, c] of CASES.entries()) {
    const args = randomArgs(c, rng(i + 1));
    const y = await norm.run(args);
    const { ok, maxRel } = compare(args, y, { tol: TOL });
    results.push({ ...c, length: y.length, isFloat32Array: y instanceof Float32Array, worst: maxRel, ok });
  }
  // A rejection from the bundled module keeps its name.
  const rejected = await norm.run({ ...randomArgs(CASES[0], rng(9)), hidden: 0 }).then(
    () => "resolved",
    (e) => e.name,
  );
  const wasm = performance.getEntriesByType("resource").map((e) => new URL(e.name).pathname).filter((p) => p.endsWith(".wasm"));
  const adapter = norm.adapterInfo.architecture;
  norm.free();
  return { how, wasmUrl, wasm, adapter, results, rejected };
}

const state = document.getElementById("state");
main().then(
  (report) => {
    document.getElementById("report").textContent = JSON.stringify(report, null, 2);
    state.dataset.state = report.results.every((r) => r.ok) && report.rejected === "ShapeError" ? "pass" : "fail";
    state.textContent = state.dataset.state;
  },
  (e) => {
    document.getElementById("report").textContent = `${e?.name}: ${e?.message}\n${e?.stack ?? ""}`;
    state.dataset.state = "error";
    state.textContent = "error";
    console.error(e);
  },
);
