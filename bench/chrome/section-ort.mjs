// (d) End to end against onnxruntime-web's WebGPU SkipSimplifiedLayerNormalization: `npm run bench`'s own measurement (bench/shared/versus-ort.mjs), driven here without Node.
// The models that bench/browser/bench.mjs writes under Node are made in this page
// (bench/shared/onnx-model.mjs is plain JavaScript) and handed to serve.py, which serves them
// back at /models/.
import { EPS, weights } from "../shared/data.mjs";
import { skipSimplifiedLayerNormChain } from "../shared/onnx-model.mjs";
import { parseShapes } from "../shared/options.mjs";
import { fmt, log, note, table } from "../shared/report.mjs";
import { setup, shape } from "../shared/versus-ort.mjs";

export const ORT_SHAPES = "1x4096,16x4096,128x4096,1024x4096,4096x1024";

async function putModel(name, bytes) {
  const r = await fetch(`/models/${name}`, { method: "POST", body: bytes });
  if (!r.ok) throw new Error(`model ${name}: HTTP ${r.status}`);
}

export async function sectionOrt(out, { opt, num }) {
  const env = await setup();
  const shapes = parseShapes(opt.shapes ?? ORT_SHAPES);
  const budgetMs = num("budget-ms", 4000);
  log(`\n## End to end against onnxruntime-web ${env.ort?.web ?? ""} (WebGPU SkipSimplifiedLayerNormalization), same page`);
  log(`adapter (ours): ${JSON.stringify(env.ours)}; ${env.userAgent}; date: ${new Date().toISOString()}`);
  const results = [];
  for (const [rows, hidden] of shapes) {
    const k2 = num("k", rows * hidden <= 8192 ? 101 : 21);
    const { gamma, bias } = weights(hidden);
    const models = {};
    for (const [key, k] of [["one", 1], ["many", k2]]) {
      models[key] = `sslnorm_${rows}x${hidden}_k${k}.onnx`;
      await putModel(models[key], skipSimplifiedLayerNormChain({ rows, hidden, k, eps: EPS, gamma, bias }));
    }
    note(`ort ${rows}×${hidden} ...`);
    results.push(await shape({ rows, hidden, k1: 1, k2, budgetMs, models }));
  }
  const ratio = (a, b) => `${fmt(a / b, 2)}`;
  // The slope is (k-node time − 1-node time) / (k − 1). Where the k−1 extra ops take less than
  // the spread of a single wait (Chrome's GPU process notices finished work on a 1–2 ms
  // timer), the difference is noise and can come out negative: shown as such, not as a ratio.
  const perOp = (r) => {
    const jitter = Math.max(r.oursRunMs.max - r.oursRunMs.min, r.ortRunMs.max - r.ortRunMs.min) * 1000;
    const span = (Math.min(r.oursOpUs.median, r.ortOpUs.median) * (r.k[1] - r.k[0]));
    if (!(r.oursOpUs.median > 0 && r.ortOpUs.median > 0) || span < jitter) return [fmt(r.oursOpUs.median), fmt(r.ortOpUs.median), "noise (the extra ops take less than one wait's spread)"];
    return [fmt(r.oursOpUs.median), fmt(r.ortOpUs.median), ratio(r.oursOpUs.median, r.ortOpUs.median)];
  };
  log("run ms: `norm.run` with Float32Arrays in and out against `session.run` of a one-node model with CPU tensors (median); per-op µs: slope over a 1-node and a K-node chain on GPU-resident data.");
  if (env.ours?.isFallbackAdapter || /swiftshader/i.test(JSON.stringify(env.ours))) log("NO ROOFLINE CLAIMS: a CPU adapter (SwiftShader); ratios of CPU emulation, not GPU numbers.");
  table(
    ["shape", "ours run ms", "ORT run ms", "ours/theirs (end to end)", "ours per-op µs", "ORT per-op µs", "ours/theirs (per op)", "max |ours−f64|", "max |ORT−f64|"],
    results.map((r) => [
      `${r.rows}×${r.hidden}`, fmt(r.oursRunMs.median, 3), fmt(r.ortRunMs.median, 3), ratio(r.oursRunMs.median, r.ortRunMs.median),
      ...perOp(r),
      r.oursCheck.maxAbs.toExponential(1), r.ortCheck.maxAbs.toExponential(1),
    ]),
  );
  out.ort = { env, results };
}
