// The decoder page (www/decoder.html): builds the stack for the chosen shape, runs a prompt and
// decode steps (steps.js), checks the small shape against the f64 reference, and times a
// prefill and a decode step with and without the package's passes.
import init, { FusedRmsNorm } from "../pkg/webgpu_rmsnorm.js";
import { createStack } from "./layer.js";
import { referenceStack } from "./reference.js";
import { perStep, runSteps, stepMs, worstOff } from "./steps.js";
import { PAGE_CONFIG, seededEmbeddings, seededWeights } from "./weights.js";

const SHAPES = {
  small: { hidden: 256, qHeads: 4, kvHeads: 2, headDim: 64, inter: 768, layers: 4, eps: 1e-6, theta: 1e6 },
  qwen: PAGE_CONFIG,
};
// A step's results within this of their row's largest from the f64 reference (docs/numerics.md).
const TOL = 1e-5;

const $ = (id) => document.getElementById(id);
const fmt = (x, d = 2) => (x === undefined ? "—" : x.toFixed(d));

function setStatus(state, text) {
  $("status").dataset.state = state;
  $("status").textContent = text;
}

/** Each step's worst distance from the f64 reference, for the small shape (null otherwise). */
function checked(cfg, weights, x, steps, got) {
  if (cfg !== SHAPES.small) return got.map(() => null);
  const tokens = steps.reduce((a, b) => a + b, 0);
  const ref = referenceStack(cfg, weights, x, tokens);
  const [stream, final] = [ref.layers.at(-1), ref.final].map((all) => perStep(all, steps, cfg.hidden));
  return got.map((g, s) => Math.max(worstOff(g.stream, stream[s], cfg.hidden), worstOff(g.final, final[s], cfg.hidden)));
}

function row(cells) {
  const tr = document.createElement("tr");
  for (const [i, c] of cells.entries()) {
    const td = document.createElement("td");
    if (i === 0) td.className = "way";
    td.textContent = c;
    tr.append(td);
  }
  return tr;
}

async function run(norm) {
  const cfg = SHAPES[$("shape").value];
  const prompt = Number($("prompt").value), decode = Number($("steps").value);
  if (!(Number.isInteger(prompt) && prompt >= 1 && prompt <= 256)) throw new RangeError("prompt tokens: expected an integer from 1 to 256");
  if (!(Number.isInteger(decode) && decode >= 1 && decode <= 64)) throw new RangeError("decode steps: expected an integer from 1 to 64");
  const steps = [prompt, ...Array(decode).fill(1)];
  setStatus("running", "Making the weights and the stack…");
  // The small shape keeps its weights for the reference; the large one lets each layer's go.
  const weights = seededWeights(cfg, 7, { lazy: cfg !== SHAPES.small });
  const stack = createStack(norm, cfg, weights, { maxTokens: prompt + decode });
  try {
    const x = seededEmbeddings(cfg, prompt + decode, 3);
    setStatus("running", "Running the prompt and the decode steps…");
    const got = await runSteps(stack, x, steps, cfg.hidden);
    const off = checked(cfg, weights, x, steps, got);
    setStatus("running", "Timing a prefill and a decode step…");
    const times = [await stepMs(stack, 0, prompt), await stepMs(stack, prompt, 1)];
    const body = $("steps-table").querySelector("tbody");
    body.replaceChildren();
    for (const [s, g] of got.entries()) {
      const t = s < 2 ? times[s] : undefined;
      const share = t && `${((1 - t.none / t.package) * 100).toFixed(0)} %`;
      const vs = off[s] === null ? "not checked" : `${off[s].toExponential(1)} ${off[s] <= TOL ? "ok" : "FAILED"}`;
      body.append(row([s === 0 ? "prefill" : `decode ${s}`, g.tokens, g.dispatches, g.norms, fmt(g.recordMs), fmt(t?.package), fmt(t?.none), share ?? "—", fmt(t?.plain), vs]));
    }
    const failed = off.some((o) => o !== null && !(o <= TOL));
    setStatus(failed ? "error" : "done", failed ? "A step is off the f64 reference." : `Done: ${steps.length} steps of ${cfg.layers} layers.`);
  } finally {
    stack.free();
  }
}

async function main() {
  await init();
  let norm;
  try {
    norm = await FusedRmsNorm.create({ backend: "webgpu" });
  } catch (e) {
    setStatus("error", `This page needs WebGPU: ${e.message}`);
    return;
  }
  $("shape").value = norm.adapterInfo?.isFallbackAdapter ? "small" : "qwen";
  $("run").disabled = false;
  setStatus("ready", `Ready on ${norm.adapterInfo?.description || norm.adapterInfo?.vendor || "this adapter"}.`);
  $("controls").addEventListener("submit", (e) => {
    e.preventDefault();
    $("run").disabled = true;
    run(norm)
      .catch((err) => setStatus("error", `${err.name}: ${err.message}`))
      .finally(() => ($("run").disabled = false));
  });
}

main();
