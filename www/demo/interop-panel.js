// The Interop card: the package inside an app's own WebGPU work. The app's matmul writes an
// activation into a buffer of its own on norm.device, norm.encode records the normalization
// into the same command encoder, and the app's second matmul reads the result: one submit,
// no readback between. Then the same activation buffer goes to norm.run as a GPUBuffer
// argument. Everything is checked against the f64 reference.
import { bufferOf, emptyBuffer, matmulCpu, matmulKernel, readBuffer } from "../lib/app-gpu.js";
import { compare } from "../lib/reference.js";
import { filled, rng } from "../lib/seeded.js";
import { $, dataTable, nextFrame, pageError, setStatus, showError } from "./dom.js";
import { fmtErr, fmtMs } from "./format.js";
import { makeArgs, readProblem } from "./problem-form.js";

/** The app's matmuls: x = a (rows × K) · w1 (K × hidden), then z = y · w2 (hidden × OUT). */
const K = 64;
const OUT = 16;
const ROWS = 4;

export async function interop(norm) {
  const label = $("interop-label");
  try {
    if (norm.backend !== "webgpu") {
      throw pageError("InvalidStateError", "interop: this card needs the WebGPU backend (norm.device is undefined on the CPU backend)");
    }
    const p = readProblem();
    if (!(Number.isInteger(p.hidden) && p.hidden >= 1)) {
      throw pageError("ShapeError", `hidden: expected an integer >= 1 for the interop card, got ${p.hidden}`);
    }
    const { hidden } = p;
    setStatus("running", `Interop: the app's matmul → norm.encode → the app's matmul, ${ROWS} × ${hidden}…`);
    label.textContent = "Recording…";
    await nextFrame();
    const device = norm.device;
    const S = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC;
    const next = rng(p.seed + 1);
    const a = filled(ROWS * K, next, -1, 1);
    const w1 = filled(K * hidden, next, -0.1, 0.1);
    const w2 = filled(hidden * OUT, next, -0.1, 0.1);
    // The pre-norm with a residual, whatever the preset: this card is about sharing the device.
    const args = makeArgs({ rows: ROWS, hidden, bias: p.bias, beta: p.beta, eps: p.eps, seed: p.seed });
    const up = matmulKernel(device, { rows: ROWS, k: K, n: hidden });
    const down = matmulKernel(device, { rows: ROWS, k: hidden, n: OUT });
    const bytes = ROWS * hidden * 4;
    const x = emptyBuffer(device, bytes, S);
    const y = emptyBuffer(device, bytes, S);
    const sum = emptyBuffer(device, bytes, S);
    const z = emptyBuffer(device, ROWS * OUT * 4, S);
    const residual = bufferOf(device, args.residual, S);
    // Weights as the package's tensors, activations as the app's buffers: both are accepted.
    const weights = { gamma: norm.upload(args.gamma) };
    if (args.beta) weights.beta = norm.upload(args.beta);
    if (args.bias) weights.bias = norm.upload(args.bias);
    const common = { ...weights, hidden, ...(args.eps === undefined ? {} : { eps: args.eps }) };
    try {
      const t0 = performance.now();
      const e = device.createCommandEncoder();
      up.record(e, bufferOf(device, a, S), bufferOf(device, w1, S), x);
      norm.encode(e, { ...common, input: x, residual, output: y, sum });
      down.record(e, y, bufferOf(device, w2, S), z);
      device.queue.submit([e.finish()]);
      const [xs, ys, ss, zs] = await Promise.all([x, y, sum, z].map(async (b) => new Float32Array(await readBuffer(device, b))));
      const ms = performance.now() - t0;
      label.textContent = "Checking…";
      await nextFrame();
      const host = { ...args, input: xs };
      const norms = compare(host, ys, { sum: ss });
      const zWant = matmulCpu(ys, w2, { rows: ROWS, k: hidden, n: OUT });
      const zErr = Math.max(...Array.from(zs, (v, i) => Math.abs(v - zWant[i]) / (Math.abs(zWant[i]) + 1)));
      // The activation buffer as an argument of run: copied on the GPU, not through JavaScript.
      const viaRun = await norm.run({ ...common, input: x, residual });
      const same = viaRun.every((v, i) => Object.is(v, ys[i]));
      render({ hidden, ms, norms, zErr, same });
      const ok = norms.ok && zErr <= 1e-5 && same;
      label.textContent = "Done.";
      setStatus(ok ? "done" : "mismatch", `Interop done: ${ok ? "every check passed" : "a check FAILED"}.`);
    } finally {
      for (const t of Object.values(weights)) t.free();
      for (const b of [x, y, sum, z, residual]) b.destroy();
    }
  } catch (e) {
    label.textContent = "Stopped by an error.";
    $("interop-results").innerHTML = '<p class="placeholder">No result: see the status above.</p>';
    showError(e);
  }
}

function render({ hidden, ms, norms, zErr, same }) {
  const { box, table, body } = dataTable("interop-table", ["step", "what ran", "check"]);
  const steps = [
    ["1. the app's matmul", `x = a · w₁ (${ROWS} × ${K} · ${K} × ${hidden}) into a GPUBuffer of the app's`, "read back for the reference"],
    ["2. norm.encode", "y = RMSNorm(x + residual), sum = x + residual, recorded into the same encoder", `max rel. error vs f64 ${fmtErr(norms.maxRel)}; sum ${norms.ok ? "exact" : "WRONG"}`],
    ["3. the app's matmul", `z = y · w₂ (${hidden} × ${OUT}), reading the package's output buffer`, `max rel. error vs f64 ${fmtErr(zErr)}`],
    ["4. norm.run", "the same x passed as a GPUBuffer argument (copied on the GPU)", same ? "equal to step 2 bit for bit" : "DIFFERS from step 2"],
  ];
  for (const row of steps) {
    const tr = body.insertRow();
    for (const text of row) tr.insertCell().textContent = text;
  }
  table.createCaption().textContent = `Steps 1–3: one command encoder, one submit, ${fmtMs(ms)} including the four readbacks.`;
  const verdict = document.createElement("p");
  verdict.className = "verdict";
  const ok = norms.ok && zErr <= 1e-5 && same;
  verdict.dataset.state = ok ? "ok" : "bad";
  verdict.id = "interop-verdict";
  verdict.textContent = ok ? "Every check passed." : "A check FAILED.";
  $("interop-results").replaceChildren(box, verdict);
}
