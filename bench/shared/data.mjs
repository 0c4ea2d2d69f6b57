// Deterministic benchmark data, shared by the Node driver (which bakes gamma and bias into the
// ONNX models) and the page (which feeds the same gamma and bias to our kernel), so both
// implementations compute the same thing and their outputs can be compared element by element.
// Every array has a seed of its own, derived from its size, so that any shape can be made
// without the others.
import { filled, rng } from "../../www/lib/seeded.js";

export const EPS = 1e-6;

const fill = (n, seed, lo, hi) => filled(n, rng(seed), lo, hi);

export function weights(hidden) {
  return { gamma: fill(hidden, 1000 + hidden, 0.5, 1.5), bias: fill(hidden, 2000 + hidden, -0.1, 0.1) };
}

export function activations(rows, hidden) {
  const n = rows * hidden;
  return { input: fill(n, 3000 + n, -1, 1), residual: fill(n, 4000 + n, -1, 1) };
}
