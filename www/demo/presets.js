// The Problem card's model presets: which options each model family's normalization step
// uses (the README's table of model families says the same), as the values of the card's
// controls. Choosing one sets the controls; changing any control after makes the problem
// "custom" again. Each preset's result is checked against the f64 reference like any problem.
import { $ } from "./dom.js";

/** Every option a preset sets, and so every control it writes (ids in www/index.html). */
const FIELDS = ["rows", "hidden", "eps", "kind", "residual", "postGamma", "input2", "rotary", "gammaOffset", "bias", "beta"];

/** What a preset leaves as a plain pre-norm has it. */
const PLAIN = { rows: 4, kind: "rms", residual: true, postGamma: false, input2: false, rotary: false, gammaOffset: 0, bias: false, beta: false };

export const PRESETS = {
  llama: { ...PLAIN, label: "Llama / Mistral / Qwen2: RMSNorm pre-norm with the residual add", hidden: 4096, eps: "1e-5" },
  gemma3: {
    ...PLAIN, label: "Gemma 3: the sandwich (post-norm, residual add, pre-norm) with 1 + γ", hidden: 2560, eps: "1e-6",
    postGamma: true, gammaOffset: 1,
  },
  gpt2: {
    ...PLAIN, label: "GPT-2: LayerNorm with the residual add, the projection's bias and β", hidden: 768, eps: "1e-5",
    kind: "layer", bias: true, beta: true,
  },
  phi2: {
    ...PLAIN, label: "Phi-2 / GPT-J: a parallel block's attention and MLP outputs added to the stream, then LayerNorm",
    hidden: 2560, eps: "1e-5", kind: "layer", input2: true, beta: true,
  },
  "qwen3-qk": {
    ...PLAIN, label: "Qwen3 QK-norm: RMSNorm of each head of 128, no residual, many rows", rows: 4096, hidden: 128,
    eps: "1e-6", residual: false,
  },
  "qwen3-qk-rope": {
    ...PLAIN, label: "Qwen3 QK-norm then RoPE: each head of 128 normalized and turned by its token's position, in one pass",
    rows: 4096, hidden: 128, eps: "1e-6", residual: false, rotary: true,
  },
  final: { ...PLAIN, label: "A model's final norm: RMSNorm, no residual", hidden: 4096, eps: "1e-5", residual: false },
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
  rotary: { id: "rotary" },
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
