// A bundled consumer: Vite resolves "webgpu-rmsnorm" through the package's exports map and
// emits the .wasm as a hashed asset. `?init=url` (default) hands init() the asset URL from a
// `?url` import, the documented way for bundlers; `?init=default` calls init() bare, so the
// glue's own `new URL("…_bg.wasm", import.meta.url)` must survive bundling too.
import init, { FusedRmsNorm } from "webgpu-rmsnorm";
import wasmUrl from "webgpu-rmsnorm/webgpu_rmsnorm_bg.wasm?url";

const CASES = [
  { rows: 3, hidden: 768, bias: true, beta: true, eps: 1e-5 },
  { rows: 1, hidden: 4099 },
  { rows: 5, hidden: 1, beta: true },
  { rows: 0, hidden: 16 },
];
const TOL = 1e-5;

function rng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function makeArgs({ rows, hidden, bias, beta, eps }, seed) {
  const next = rng(seed);
  const filled = (n, lo, hi) => Float32Array.from({ length: n }, () => lo + (hi - lo) * next());
  const args = { input: filled(rows * hidden, -2, 2), residual: filled(rows * hidden, -2, 2), gamma: filled(hidden, -1.5, 1.5), hidden };
  if (bias) args.bias = filled(hidden, -0.5, 0.5);
  if (beta) args.beta = filled(hidden, -0.25, 0.25);
  if (eps !== undefined) args.eps = eps;
  return args;
}

/**
 * Worst error relative to each element's magnitude, against the contract computed in f64.
 * v is summed in f32 in the kernel's order: the kernel must match that, not a different
 * rounding of the same sum.
 */
function worstError({ input, residual, gamma, beta, bias, hidden, eps = 1e-6 }, y) {
  let worst = 0;
  for (let o = 0; o < input.length; o += hidden) {
    const v = new Float64Array(hidden);
    let ss = 0;
    for (let i = 0; i < hidden; i++) {
      const s = Math.fround(input[o + i] + residual[o + i]);
      v[i] = bias ? Math.fround(s + bias[i]) : s;
      ss += v[i] * v[i];
    }
    const inv = 1 / Math.sqrt(ss / hidden + eps);
    for (let i = 0; i < hidden; i++) {
      const core = v[i] * inv * gamma[i];
      const b = beta ? beta[i] : 0;
      const err = Math.abs(y[o + i] - (core + b)) / Math.max(Math.abs(core) + Math.abs(b), 1e-30);
      // NaN compares false: count it as infinitely wrong.
      worst = err <= worst ? worst : Number.isNaN(err) ? Infinity : err;
    }
  }
  return worst;
}

async function main() {
  const how = new URLSearchParams(location.search).get("init") ?? "url";
  await (how === "default" ? init() : init({ module_or_path: wasmUrl }));
  const norm = await FusedRmsNorm.create();
  const results = [];
  for (const [i, c] of CASES.entries()) {
    const args = makeArgs(c, i + 1);
    const y = await norm.run(args);
    const err = worstError(args, y);
    results.push({ ...c, length: y.length, isFloat32Array: y instanceof Float32Array, worst: err, ok: y.length === args.input.length && err <= TOL });
  }
  // A rejection from the bundled module keeps its name.
  const rejected = await norm.run({ ...makeArgs(CASES[0], 9), hidden: 0 }).then(
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
