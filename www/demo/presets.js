// The Problem card's model presets: which options each model family's normalization step
// uses (the README's table of model families says the same), as the values of the card's
// controls. Choosing one sets the controls; changing any control after makes the problem
// "custom" again. Each preset's result is checked against the f64 reference like any problem.
import { $ } from "./dom.js";

/** Every option a preset sets, and so every control it writes (ids in www/index.html). */
const FIELDS = ["rows", "hidden", "eps", "kind", "residual", "postGamma", "input2", "gammaOffset", "bias", "beta"];

export const PRESETS = {
  llama: {
    label: "Llama / Mistral / Qwen2: RMSNorm pre-norm with the residual add",
    rows: 4, hidden: 4096, eps: "1e-5", kind: "rms", residual: true, postGamma: false, input2: false, gammaOffset: 0, bias: false, beta: false,
  },
  gemma3: {
    label: "Gemma 3: the sandwich (post-norm, residual add, pre-norm) with 1 + γ",
    rows: 4, hidden: 2560, eps: "1e-6", kind: "rms", residual: true, postGamma: true, input2: false, gammaOffset: 1, bias: false, beta: false,
  },
  gpt2: {
    label: "GPT-2: LayerNorm with the residual add, the projection's bias and β",
    rows: 4, hidden: 768, eps: "1e-5", kind: "layer", residual: true, postGamma: false, input2: false, gammaOffset: 0, bias: true, beta: true,
  },
  phi2: {
    label: "Phi-2 / GPT-J: a parallel block's attention and MLP outputs added to the stream, then LayerNorm",
    rows: 4, hidden: 2560, eps: "1e-5", kind: "layer", residual: true, postGamma: false, input2: true, gammaOffset: 0, bias: false, beta: true,
  },
  "qwen3-qk": {
    label: "Qwen3 QK-norm: RMSNorm of each head of 128, no residual, many rows",
    rows: 4096, hidden: 128, eps: "1e-6", kind: "rms", residual: false, postGamma: false, input2: false, gammaOffset: 0, bias: false, beta: false,
  },
  final: {
    label: "A model's final norm: RMSNorm, no residual",
    rows: 4, hidden: 4096, eps: "1e-5", kind: "rms", residual: false, postGamma: false, input2: false, gammaOffset: 0, bias: false, beta: false,
  },
};

/** The control that holds option `key`, and how it is read and written. */
const CONTROLS = {
  rows: { id: "rows", value: true },
  hidden: { id: "hidden", value: true },
  eps: { id: "eps", value: true },
  gammaOffset: { id: "gamma-offset", value: true },
  residual: { id: "residual" },
  postGamma: { id: "post-gamma" },
  input2: { id: "input2" },
  bias: { id: "bias" },
  beta: { id: "beta" },
};

function write(key, value) {
  if (key === "kind") {
    $(`kind-${value}`).checked = true;
    return;
  }
  const c = CONTROLS[key];
  if (c.value) $(c.id).value = String(value);
  else $(c.id).checked = value;
}

/** Fills the preset list and keeps it honest: a control changed by hand makes it "custom". */
export function initPresets() {
  const select = $("preset");
  for (const [key, p] of Object.entries(PRESETS)) select.add(new Option(p.label, key));
  select.addEventListener("change", () => applyPreset(select.value));
  const controls = [...FIELDS.filter((k) => k !== "kind").map((k) => $(CONTROLS[k].id)), $("kind-rms"), $("kind-layer")];
  for (const el of controls) el.addEventListener("input", () => (select.value = "custom"));
}

/** Sets the controls to preset `key` ("custom" leaves them as they are). */
export function applyPreset(key) {
  $("preset").value = key;
  const p = PRESETS[key];
  if (!p) return;
  for (const k of FIELDS) write(k, p[k]);
}
