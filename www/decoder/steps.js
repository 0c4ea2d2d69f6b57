// A prompt then decode steps through a stack (layer.js), each step one command encoder and
// one submission, and how far a step's results are from what was expected: the page, the
// browser suite and the runtime suite run the stack through here.

/**
 * Runs `steps` (the tokens of each: the prompt, then 1s) of the embeddings `x` through
 * `stack`, its normalization steps `way` (layer.js's `step`); resolves with each step's
 * `{ tokens, dispatches, norms, recordMs, stream, final }`: its dispatches (the
 * normalization steps' among them), the CPU time of recording it, and its results read back.
 */
export async function runSteps(stack, x, steps, hidden, way = "package") {
  const out = [];
  let first = 0;
  for (const tokens of steps) {
    stack.write(x.subarray(first * hidden, (first + tokens) * hidden));
    const t0 = performance.now();
    const encoder = stack.device.createCommandEncoder();
    const { dispatches, norms } = stack.step(encoder, tokens, { way });
    const commands = encoder.finish();
    const recordMs = performance.now() - t0;
    stack.device.queue.submit([commands]);
    out.push({ tokens, dispatches, norms, recordMs, ...(await stack.read(tokens)) });
    first += tokens;
  }
  return out;
}

/** The worst |got − want| of a row of `hidden` over the row's largest |want|. */
export function worstOff(got, want, hidden) {
  let worst = 0;
  for (let at = 0; at < got.length; at += hidden) {
    let scale = 0;
    for (let i = 0; i < hidden; i++) scale = Math.max(scale, Math.abs(want[at + i]));
    for (let i = 0; i < hidden; i++) worst = Math.max(worst, Math.abs(got[at + i] - want[at + i]) / scale);
  }
  return worst;
}

/** Each step's rows of a whole-sequence result `all` (reference.js's), by `steps`' tokens. */
export function perStep(all, steps, hidden) {
  let first = 0;
  return steps.map((tokens) => {
    const rows = all.subarray(first * hidden, (first + tokens) * hidden);
    first += tokens;
    return rows;
  });
}

/**
 * Wall time of a step of `tokens` from `position`, submission to the GPU's done, median of
 * `reps`, for each of `ways` (layer.js's `step`: "none" leaves the normalization steps out,
 * for the package's share), taken in turn so that each sees the same clocks.
 */
export async function stepMs(stack, position, tokens, ways = ["package", "none", "plain"], reps = 5) {
  const once = async (way) => {
    stack.seek(position);
    const encoder = stack.device.createCommandEncoder();
    stack.step(encoder, tokens, { way });
    const commands = encoder.finish();
    await stack.device.queue.onSubmittedWorkDone();
    const t0 = performance.now();
    stack.device.queue.submit([commands]);
    await stack.device.queue.onSubmittedWorkDone();
    return performance.now() - t0;
  };
  const runs = Object.fromEntries(ways.map((w) => [w, []]));
  for (let r = 0; r < reps; r++) for (const w of ways) runs[w].push(await once(w));
  const median = (a) => a.sort((x, y) => x - y)[a.length >> 1];
  return Object.fromEntries(ways.map((w) => [w, median(runs[w])]));
}
