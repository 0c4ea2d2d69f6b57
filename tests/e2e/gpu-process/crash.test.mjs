// Crashes of Chrome's GPU process (DevTools' Browser.crashGpuProcess: what a driver reset or a
// GPU hang does), twice, under a "webgpu" and an "auto" instance in one page: no call hangs,
// every rejection is a named Error, results match the f64 reference once an instance answers
// again; a call bound before a crash (`norm.bind`) rejects GpuDeviceError after it, and one
// bound after it computes right, on the CPU backend too. Chrome's default policy refuses
// WebGPU to a page after its second crash: there the "webgpu" instance rejects
// WebGpuUnavailableError and retries for an adapter at most once a second, and the "auto"
// instance continues on the CPU backend (onbackendchange). With
// --disable-domain-blocking-for-3d-apis both recover on WebGPU after each crash.
//
// The "auto" instance takes SwiftShader's adapter (acceptFallbackAdapter), so that it runs on
// WebGPU here until the browser refuses it.
//
//   bash scripts/build.sh && node --test --test-reporter=spec tests/e2e/gpu-process/crash.test.mjs
import { test, after } from "node:test";
import assert from "node:assert/strict";

import { launchWith } from "../support/chromium.mjs";
import { pageSuite } from "../support/page.mjs";

// The package's page, served; each policy's test opens it in a Chromium of its own.
const suite = pageSuite("webgpu-rmsnorm-gpu-crash-", { browser: false });

const POLICIES = [
  { title: "Chrome's default policy (WebGPU refused after the second crash)", flags: [], refusesAfter: 2 },
  { title: "--disable-domain-blocking-for-3d-apis", flags: ["--disable-domain-blocking-for-3d-apis"], refusesAfter: Infinity },
];

const browsers = new Set();

after(async () => {
  for (const b of browsers) await b.close();
});

// ---------------------------------------------------------------------------------------
// The page's side: installed as window.h once the module is ready. It runs in the page and
// uses nothing of this module's scope. Checks run next to the data; only reports come back.
// ---------------------------------------------------------------------------------------

function installHarness() {
  const { pkg, ref, seeded } = window.lib;
  // A call that has not settled by then hangs, and a poll that has not got what it waits for
  // by then never will: the test fails them rather than wait. Nothing else here is timed.
  const HANG_MS = 20_000;
  const POLL_HANG_MS = 60_000;
  // Calls in a row that must reject WebGpuUnavailableError while the browser refuses WebGPU,
  // and adapter requests to see while calls go on (the instance must ask again, never sooner
  // than src/instance.rs's RETRY_MS after its last try failed).
  const REFUSALS = 5;
  const RETRIES = 3;
  const RETRY_MS = 1000;
  // What a call with good arguments may reject with while a device is lost or refused.
  const ALLOWED = ["GpuDeviceError", "WebGpuUnavailableError"];
  const sleep = (ms) => new Promise((ok) => setTimeout(ok, ms));
  const now = () => performance.now();

  // Every adapter request of the page, the package's included: when it was made.
  const adapterRequests = [];
  const requestAdapter = GPU.prototype.requestAdapter;
  GPU.prototype.requestAdapter = function (...a) {
    adapterRequests.push(now());
    return requestAdapter.apply(this, a);
  };

  const describe = (e) => ({ name: e?.name, message: String(e?.message ?? e), isError: e instanceof Error });

  /** fn()'s promise within HANG_MS: { ok }, { err }, { threw } (synchronously) or { hung }. */
  async function settle(fn) {
    let timer;
    const hang = new Promise((ok) => {
      timer = setTimeout(() => ok({ hung: true }), HANG_MS);
    });
    try {
      let p;
      try {
        p = fn();
      } catch (e) {
        return { threw: describe(e) };
      }
      return await Promise.race([Promise.resolve(p).then((ok) => ({ ok }), (e) => ({ err: describe(e) })), hang]);
    } finally {
      clearTimeout(timer);
    }
  }

  const SHAPES = [
    { rows: 3, hidden: 256, bias: true, beta: true, withSum: true },
    { rows: 1, hidden: 1024 },
    { rows: 5, hidden: 67, beta: true, withSum: true },
    { rows: 2, hidden: 4099, bias: true },
  ];
  let nextSeed = 1;
  /** A call with fresh seeded data; `big` makes it 16 times the rows, to be in flight a while. */
  function makeCall(i, big = false) {
    const { withSum = false, ...shape } = SHAPES[i % SHAPES.length];
    if (big) shape.rows *= 16;
    return { args: seeded.caseArgs({ ...shape, seed: nextSeed++ }), withSum };
  }

  /** Runs k on norm (with `tensors` in place of its arrays): { right }, { wrong }, or settle's others. */
  async function call(norm, k, tensors = {}) {
    const a = { ...k.args, ...tensors };
    const r = await settle(() => (k.withSum ? norm.runWithSum(a) : norm.run(a)));
    if (!("ok" in r)) return r;
    const rep = k.withSum ? ref.compare(k.args, r.ok?.output, { sum: r.ok?.sum }) : ref.compare(k.args, r.ok);
    return rep.ok ? { right: true } : { wrong: rep.problems.join("; ") };
  }

  const label = (r) => (r.right ? "right" : r.wrong ? "WRONG" : r.hung ? "hung" : r.threw ? `threw ${r.threw.name}` : r.err.name);
  const detail = (r) => (r.wrong ? r.wrong : r.err ? `${r.err.name}: ${r.err.message}` : r.threw ? `${r.threw.name}: ${r.threw.message}` : label(r));

  /** What is wrong with an outcome of a call with good arguments, if anything. */
  function problemOf(r, what) {
    if (r.wrong) return `${what} resolved WRONG: ${r.wrong}`;
    if (r.hung) return `${what} hung: no answer in ${HANG_MS / 1000} s`;
    if (r.threw) return `${what} threw synchronously ${r.threw.name}: ${r.threw.message}`;
    if (r.err && !(r.err.isError && ALLOWED.includes(r.err.name) && r.err.message)) {
      return `${what} rejected with ${r.err.isError ? "" : "a non-Error "}${r.err.name}: ${r.err.message} (want a named Error: ${ALLOWED.join(" or ")})`;
    }
    return undefined;
  }

  const tally = (labels) => labels.reduce((c, l) => ({ ...c, [l]: (c[l] ?? 0) + 1 }), {});
  /** ["a", "a", "b"] → "a×2 → b" */
  const runs = (labels) =>
    labels
      .reduce((acc, l) => (acc.at(-1)?.[0] === l ? (acc.at(-1)[1]++, acc) : [...acc, [l, 1]]), [])
      .map(([l, n]) => (n > 1 ? `${l}×${n}` : l))
      .join(" → ");

  const KINDS = { webgpu: { backend: "webgpu" }, auto: { backend: "auto", acceptFallbackAdapter: true } };
  const instances = {};
  let crashAt = 0;
  let crashes = 0;
  const sinceCrash = () => Math.round(now() - crashAt);

  async function setup() {
    const failures = [];
    const report = {};
    for (const [name, options] of Object.entries(KINDS)) {
      const created = await settle(() => pkg.FusedRmsNorm.create(options));
      if (!("ok" in created)) {
        failures.push(`${name}: create(${JSON.stringify(options)}): ${detail(created)}`);
        continue;
      }
      const norm = created.ok;
      const events = { lost: [], restored: [], backendchange: [] };
      norm.ondevicelost = (e) => events.lost.push({ reason: e?.reason, message: e?.message, ms: sinceCrash() });
      norm.ondevicerestored = () => events.restored.push({ ms: sinceCrash() });
      norm.onbackendchange = (e) => events.backendchange.push({ backend: e?.backend, reason: e?.reason, ms: sinceCrash() });
      instances[name] = { norm, events };
      const first = await call(norm, makeCall(0));
      if (!first.right) failures.push(`${name}: the first call: ${detail(first)}`);
      if (norm.backend !== "webgpu") failures.push(`${name}: backend ${JSON.stringify(norm.backend)} before any crash, want "webgpu"`);
      if (!(norm.device instanceof GPUDevice)) failures.push(`${name}: device ${String(norm.device)} before any crash, want a GPUDevice`);
      const { vendor, architecture, description, isFallbackAdapter } = norm.adapterInfo ?? {};
      report[name] = { backend: norm.backend, adapter: { vendor, architecture, description, isFallbackAdapter } };
    }
    // The wrapper above must see the package's requests, or the retry count below means nothing.
    if (adapterRequests.length < 2) failures.push(`the page saw ${adapterRequests.length} adapter requests while creating two instances: the count of retries cannot be trusted`);
    return { failures, report };
  }

  /** Before a crash: each instance gets a tensor (checked to work) to find lost after it. */
  async function prepare() {
    const failures = [];
    for (const [name, s] of Object.entries(instances)) {
      s.deviceBefore = s.norm.device;
      s.lostBefore = s.events.lost.length;
      s.tensorCall = makeCall(1);
      s.tensor = undefined;
      try {
        s.tensor = s.norm.upload(s.tensorCall.args.gamma);
      } catch (e) {
        failures.push(`${name}: upload before crash ${crashes + 1} threw ${e?.name}: ${e?.message}`);
        continue;
      }
      const r = await call(s.norm, s.tensorCall, { gamma: s.tensor });
      if (!r.right) failures.push(`${name}: a call with a tensor before crash ${crashes + 1}: ${detail(r)}`);
      s.bound = await boundStep(s.norm, s.tensorCall.args);
      if (s.bound.problem) failures.push(`${name}: a bound call before crash ${crashes + 1}: ${s.bound.problem}`);
    }
    return failures;
  }

  /**
   * `norm.bind` of `args` in place on new tensors, and its `run()` once: { bound, free,
   * problem } (`free` releases both, `problem` is what was wrong with its result, if anything).
   */
  async function boundStep(norm, args) {
    const t = {};
    let bound;
    const free = () => {
      bound?.free();
      Object.values(t).forEach((x) => x.free());
    };
    try {
      for (const k of ["input", "residual", "gamma"]) t[k] = norm.upload(args[k]);
      bound = norm.bind({ ...t, hidden: args.hidden, inPlace: true });
      const r = await settle(() => bound.run());
      if (!("ok" in r)) return { bound, free, problem: detail(r) };
      const rep = ref.compare({ ...args, bias: undefined, beta: undefined }, await t.input.read(), { sum: await t.residual.read() });
      return { bound, free, problem: rep.ok ? undefined : rep.problems.join("; ") };
    } catch (e) {
      return { bound, free, problem: `threw ${e?.name}: ${e?.message}` };
    }
  }

  /** Starts calls on both instances and marks the crash's time; node crashes the GPU process next. */
  function arm() {
    crashes++;
    for (const s of Object.values(instances)) s.inFlight = Array.from({ length: 8 }, (_, i) => call(s.norm, makeCall(i, true)));
    crashAt = now();
  }

  async function settleInFlight() {
    const failures = [];
    const counts = {};
    for (const [name, s] of Object.entries(instances)) {
      const rs = await Promise.all(s.inFlight);
      counts[name] = tally(rs.map(label));
      rs.forEach((r, i) => {
        const p = problemOf(r, `${name}: call #${i}, in flight at the crash,`);
        if (p) failures.push(p);
      });
    }
    return { failures, counts };
  }

  /** What a poll waits for, from what it has seen: { recoveredMs, labels, requests }. */
  const UNTIL = {
    // A call resolves right.
    right: (s) => s.recoveredMs !== undefined,
    // REFUSALS calls in a row reject WebGpuUnavailableError (or one resolves, which is wrong).
    refused: (s) => s.recoveredMs !== undefined || (s.labels.length >= REFUSALS && s.labels.slice(-REFUSALS).every((l) => l === "WebGpuUnavailableError")),
    // The instance has asked for an adapter RETRIES times since the poll began.
    retried: (s) => s.recoveredMs !== undefined || s.requests.length >= RETRIES,
  };

  /**
   * Calls `name` with good arguments every 200 ms until what `until` names (UNTIL) has
   * happened, or POLL_HANG_MS have passed (`hung`). Reports when a call first resolved right
   * (recoveredMs, from the crash), the outcomes in order, the first message of each
   * rejection's name, the rejections of calls made after the instance had reported the loss,
   * and the page's adapter requests meanwhile (ms from the poll's start).
   */
  async function poll(name, { until = "right" } = {}) {
    const s = instances[name];
    const failures = [];
    const labels = [];
    const messages = {};
    const rejectedAfterLoss = [];
    let recoveredMs;
    let more = 0;
    let hung = false;
    const t0 = now();
    const requests = () => adapterRequests.filter((at) => at >= t0).map((at) => at - t0);
    for (let i = 0; !UNTIL[until]({ recoveredMs, labels, requests: requests() }); i++) {
      if (now() - t0 > POLL_HANG_MS) {
        hung = true;
        break;
      }
      if (i > 0) await sleep(200);
      const lossKnown = s.events.lost.length > s.lostBefore;
      const at = sinceCrash();
      const r = await call(s.norm, makeCall(i));
      labels.push(label(r));
      const p = problemOf(r, `${name}: poll call #${i} (made ${at} ms after the crash)`);
      // The first few say it all; the count says how often.
      if (p && failures.length < 3) failures.push(p);
      else if (p) more++;
      if (r.err) {
        messages[r.err.name] ??= r.err.message;
        if (lossKnown) rejectedAfterLoss.push(`#${i} at ${at} ms: ${r.err.name}: ${r.err.message}`);
      }
      if (r.right) recoveredMs ??= sinceCrash();
    }
    if (more) failures.push(`${name}: and ${more} more poll calls with problems`);
    const seen = requests();
    const gaps = seen.slice(1).map((at, i) => at - seen[i]);
    return { failures, recoveredMs, hung, hangS: POLL_HANG_MS / 1000, labels, outcomes: runs(labels), messages, rejectedAfterLoss, requests: seen.map(Math.round), gaps, retryMs: RETRY_MS, backend: s.norm.backend };
  }

  /** Once `name` answers again: where it runs, calls at once, the tensor of the lost device, new tensors. */
  async function afterRecovery(name, backend) {
    const s = instances[name];
    const norm = s.norm;
    const what = `${name} after crash ${crashes}`;
    const failures = [];
    if (norm.backend !== backend) failures.push(`${what}: backend ${JSON.stringify(norm.backend)}, want "${backend}"`);
    if (backend === "webgpu") {
      if (!(norm.device instanceof GPUDevice)) failures.push(`${what}: device ${String(norm.device)}, want a GPUDevice`);
      else if (norm.device === s.deviceBefore) failures.push(`${what}: device is still the one that was lost`);
    } else if (norm.device !== undefined) failures.push(`${what}: device ${String(norm.device)}, want undefined on the CPU backend`);

    const ks = Array.from({ length: 6 }, (_, i) => makeCall(i));
    (await Promise.all(ks.map((k) => call(norm, k)))).forEach((r, i) => {
      if (!r.right) failures.push(`${what}: call #${i} of 6 at once: ${detail(r)}`);
    });

    let lostTensor;
    if (s.tensor) {
      const r = await call(norm, s.tensorCall, { gamma: s.tensor });
      lostTensor = detail(r);
      // src/call/tensor.rs
      const lost = /^gamma: expected a GpuTensor on a live device, got one whose device was lost \(.+\)$/s;
      if (!(r.err?.isError && r.err.name === "GpuDeviceError" && lost.test(r.err.message))) failures.push(`${what}: a call with a tensor uploaded before the crash: ${detail(r)}, want GpuDeviceError: ${lost}`);
      try {
        s.tensor.free();
      } catch (e) {
        failures.push(`${what}: free() of a tensor of the lost device threw ${e?.name}: ${e?.message}`);
      }
      s.tensor = undefined;
    }

    // A call bound before the crash: its tensors held nothing after it, on either backend.
    if (s.bound?.bound) {
      const r = await settle(() => s.bound.bound.run());
      // src/js/bound.rs
      const lost = /^run: expected a call bound on a live device, got one whose device was lost \(.+\); bind it again, with tensors of the new device, once ondevicerestored is called$/s;
      if (!(r.err?.isError && r.err.name === "GpuDeviceError" && lost.test(r.err.message))) failures.push(`${what}: run() of a call bound before the crash: ${detail(r)}, want GpuDeviceError: ${lost}`);
    }
    s.bound?.free();
    s.bound = undefined;
    // Bound again now: on the CPU backend it computes there.
    const again = await boundStep(norm, makeCall(1).args);
    if (again.problem) failures.push(`${what}: a call bound after the crash: ${again.problem}`);
    again.free();

    const k = makeCall(2);
    let input, gamma;
    try {
      input = norm.upload(k.args.input);
      gamma = norm.upload(k.args.gamma);
    } catch (e) {
      failures.push(`${what}: upload threw ${e?.name}: ${e?.message}`);
    }
    if (input && gamma) {
      const r = await call(norm, k, { input, gamma });
      if (!r.right) failures.push(`${what}: a call on tensors uploaded after the crash: ${detail(r)}`);
      if (backend === "cpu" && input.buffer !== undefined) failures.push(`${what}: a new tensor has a buffer (${String(input.buffer)}) on the CPU backend`);
      if (backend === "webgpu" && !(input.buffer instanceof GPUBuffer)) failures.push(`${what}: a new tensor's buffer is ${String(input.buffer)}, want a GPUBuffer`);
      const back = await settle(() => input.read());
      const same = back.ok instanceof Float32Array && back.ok.length === k.args.input.length && back.ok.every((x, j) => Object.is(x, k.args.input[j]));
      if (!same) failures.push(`${what}: read() of a tensor uploaded after the crash: ${"ok" in back ? "other data" : detail(back)}`);
      input.free();
      gamma.free();
    }
    return { failures, lostTensor };
  }

  /** The browser's answer to the page's own adapter request: whether it refuses WebGPU now. */
  async function pageAdapter() {
    const r = await settle(() => navigator.gpu.requestAdapter());
    return "ok" in r ? (r.ok === null ? "null" : "an adapter") : detail(r);
  }

  const events = () => Object.fromEntries(Object.entries(instances).map(([n, s]) => [n, structuredClone(s.events)]));
  const backends = () => Object.fromEntries(Object.entries(instances).map(([n, s]) => [n, { backend: s.norm.backend, device: String(s.norm.device) }]));

  window.h = { setup, prepare, arm, settleInFlight, poll, afterRecovery, pageAdapter, events, backends, call: async (name) => detail(await call(instances[name].norm, makeCall(3))) };
}

// ---------------------------------------------------------------------------------------
// One crash, and what each instance must do after it.
// ---------------------------------------------------------------------------------------

/** `refused`: the browser refuses WebGPU to the page after this crash (its policy, not the package). */
async function crashAndCheck(t, { page, cdp, crash, refused }) {
  const failures = [];
  failures.push(...(await page.evaluate(() => window.h.prepare())));
  await page.evaluate(() => window.h.arm());
  await cdp.send("Browser.crashGpuProcess");

  const inFlight = await page.evaluate(() => window.h.settleInFlight());
  t.diagnostic(`calls in flight at the crash: ${JSON.stringify(inFlight.counts)}`);
  failures.push(...inFlight.failures);

  const [gpu, auto] = await page.evaluate(
    (refused) => Promise.all([window.h.poll("webgpu", { until: refused ? "refused" : "right" }), window.h.poll("auto")]),
    refused,
  );
  for (const [name, p] of [["webgpu", gpu], ["auto", auto]]) {
    const meanwhile = Object.entries(p.messages).map(([n, m]) => `${n}: ${m}`).join(" | ");
    t.diagnostic(`${name}: ${p.recoveredMs !== undefined ? `computes right again ${p.recoveredMs} ms after the crash, on ${p.backend}` : `no right result in the poll`}; outcomes ${p.outcomes}${meanwhile ? `; ${meanwhile}` : ""}`);
    failures.push(...p.failures);
  }

  failures.push(...(await (refused ? afterRefusal : afterRestart)(t, { page, crash, gpu, auto })));
  assert.deepEqual(failures, []);
}

/** After a crash the browser lets the page recover from: both back on WebGPU, right, with tensors of the lost device named. */
async function afterRestart(t, { page, crash, gpu, auto }) {
  const failures = [];
  for (const [name, p] of [["webgpu", gpu], ["auto", auto]]) {
    if (p.recoveredMs === undefined) {
      failures.push(`${name}: no right result after crash ${crash}: polled until the hang limit, ${p.hangS} s (outcomes ${p.outcomes})`);
      continue;
    }
    const r = await page.evaluate((name) => window.h.afterRecovery(name, "webgpu"), name);
    if (r.lostTensor) t.diagnostic(`${name}: a tensor of the lost device: ${r.lostTensor}`);
    failures.push(...r.failures);
  }
  const ev = await page.evaluate(() => window.h.events());
  for (const name of ["webgpu", "auto"]) {
    const e = ev[name];
    t.diagnostic(`${name}: ondevicelost ${JSON.stringify(e.lost)}; ondevicerestored ${JSON.stringify(e.restored)}`);
    if (e.lost.length !== crash) failures.push(`${name}: ondevicelost called ${e.lost.length} times after ${crash} crashes`);
    if (e.restored.length !== crash) failures.push(`${name}: ondevicerestored called ${e.restored.length} times after ${crash} crashes, each followed by a new device`);
    if (e.backendchange.length) failures.push(`${name}: onbackendchange called though WebGPU came back: ${JSON.stringify(e.backendchange)}`);
  }
  return failures;
}

/** The rejection of a call while the browser refuses WebGPU (src/instance.rs, src/gpu/device.rs): no adapter, after a loss. */
const REFUSED = /^requestAdapter: expected an adapter, got none: this browser has WebGPU but offers no adapter here \(.+\) \(asked for after the device was lost: .+; a browser may refuse WebGPU to a page after its GPU process crashed repeatedly\)$/s;

/** After a crash past which the browser refuses WebGPU to the page: "auto" continues on the CPU, "webgpu" rejects and retries. */
async function afterRefusal(t, { page, crash, gpu, auto }) {
  const failures = [];
  if (auto.recoveredMs === undefined) failures.push(`auto: no right result after crash ${crash}: polled until the hang limit, ${auto.hangS} s (outcomes ${auto.outcomes})`);
  else {
    const r = await page.evaluate(() => window.h.afterRecovery("auto", "cpu"));
    if (r.lostTensor) t.diagnostic(`auto: a tensor of the lost device: ${r.lostTensor}`);
    failures.push(...r.failures);
  }
  if (auto.rejectedAfterLoss.length) {
    failures.push(`auto: ${auto.rejectedAfterLoss.length} calls made after ondevicelost rejected (calls made meanwhile resolve from the CPU); the first: ${auto.rejectedAfterLoss[0]}`);
  }

  // "webgpu" rejects WebGpuUnavailableError, naming the cause, never hangs; it may reject
  // GpuDeviceError only until it has learnt that the browser refuses.
  const check = (p, what, { from }) => {
    if (p.hung) failures.push(`webgpu: ${what}: polled until the hang limit, ${p.hangS} s, without seeing what it waited for (outcomes ${p.outcomes}; adapter requests at ${JSON.stringify(p.requests)} ms)`);
    if (p.recoveredMs !== undefined) failures.push(`webgpu: ${what}: resolved though the browser refuses WebGPU (outcomes ${p.outcomes})`);
    const firstRefusal = p.labels.indexOf("WebGpuUnavailableError");
    if (firstRefusal < 0) failures.push(`webgpu: ${what}: never rejected WebGpuUnavailableError (outcomes ${p.outcomes})`);
    else if (p.labels.slice(from ?? firstRefusal).some((l) => l !== "WebGpuUnavailableError")) {
      failures.push(`webgpu: ${what}: outcomes ${p.outcomes}, want ${from === 0 ? "" : "after the first "}WebGpuUnavailableError only`);
    }
    const m = p.messages.WebGpuUnavailableError;
    if (m !== undefined && !REFUSED.test(m)) failures.push(`webgpu: ${what}: WebGpuUnavailableError: ${m}, want ${REFUSED}`);
  };
  check(gpu, `polled after crash ${crash}`, {});

  // Calls go on while the browser refuses: the instance asks for an adapter again on later
  // calls, never sooner than RETRY_MS after its last try failed (the page's clock is the
  // package's: a slow machine can only widen the gaps).
  const retry = await page.evaluate(() => window.h.poll("webgpu", { until: "retried" }));
  t.diagnostic(`webgpu: ${retry.labels.length} calls more (${retry.outcomes}) and ${retry.requests.length} adapter requests, at ${JSON.stringify(retry.requests)} ms`);
  failures.push(...retry.failures);
  check(retry, "polled until it asked for an adapter again", { from: 0 });
  const soon = retry.gaps.filter((ms) => ms < retry.retryMs);
  if (soon.length) failures.push(`webgpu: adapter requests ${JSON.stringify(retry.gaps.map(Math.round))} ms apart, want at most one a second`);

  const ev = await page.evaluate(() => window.h.events());
  t.diagnostic(`events: ${JSON.stringify(ev)}`);
  if (ev.webgpu.lost.length !== crash) failures.push(`webgpu: ondevicelost called ${ev.webgpu.lost.length} times after ${crash} crashes`);
  if (ev.webgpu.restored.length !== crash - 1) failures.push(`webgpu: ondevicerestored called ${ev.webgpu.restored.length} times, want ${crash - 1}: no device opened since crash ${crash}`);
  if (ev.webgpu.backendchange.length) failures.push(`webgpu: onbackendchange called: ${JSON.stringify(ev.webgpu.backendchange)}, but a "webgpu" instance never changes backend`);
  if (ev.auto.lost.length !== crash) failures.push(`auto: ondevicelost called ${ev.auto.lost.length} times after ${crash} crashes`);
  const change = ev.auto.backendchange;
  if (change.length !== 1) failures.push(`auto: onbackendchange called ${change.length} times, want once: ${JSON.stringify(change)}`);
  else if (change[0].backend !== "cpu" || typeof change[0].reason !== "string" || !change[0].reason) failures.push(`auto: onbackendchange called with ${JSON.stringify(change[0])}, want { backend: "cpu", reason: a message }`);

  // Still on the CPU, still right, and no second change, after the others' polling.
  const last = await page.evaluate(() => window.h.call("auto"));
  if (last !== "right") failures.push(`auto: a call at the end: ${last}`);
  const where = await page.evaluate(() => window.h.backends());
  t.diagnostic(`at the end: ${JSON.stringify(where)}`);
  if (where.auto.backend !== "cpu") failures.push(`auto: backend ${where.auto.backend} at the end, want "cpu"`);
  if (where.webgpu.backend !== "webgpu") failures.push(`webgpu: backend ${where.webgpu.backend} at the end, want "webgpu"`);

  // The premise: the browser, not the package, refuses WebGPU to the page now.
  const own = await page.evaluate(() => window.h.pageAdapter());
  if (own !== "null") failures.unshift(`premise: after crash ${crash} the page's own requestAdapter() gives ${own}, not null: the browser does not refuse WebGPU, so the expectations above do not apply`);
  return failures;
}

for (const policy of POLICIES) {
  // The hang limit of the whole test: every wait inside it has its own.
  test(`two GPU-process crashes under a "webgpu" and an "auto" instance, ${policy.title}`, { timeout: 600_000 }, async (t) => {
    const problems = [];
    const browser = await launchWith(policy.flags);
    browsers.add(browser);
    try {
      const cdp = await browser.newBrowserCDPSession();
      const page = await suite.openPage(browser, { watch: problems });
      await page.evaluate(installHarness);
      const start = await page.evaluate(() => window.h.setup());
      t.diagnostic(`before the crashes: ${JSON.stringify(start.report)}`);
      assert.deepEqual(start.failures, []);

      for (const crash of [1, 2]) {
        const refused = crash >= policy.refusesAfter;
        const title = refused
          ? `crash ${crash}, WebGPU refused: "webgpu" rejects WebGpuUnavailableError and retries at most once a second; "auto" continues on the CPU`
          : `crash ${crash}: both compute right on WebGPU again; tensors of the lost device are GpuDeviceError`;
        await t.test(title, (t) => crashAndCheck(t, { page, cdp, crash, refused }));
      }
      await t.test("no console error or uncaught page error", () => assert.deepEqual(problems, []));
    } finally {
      browsers.delete(browser);
      await browser.close();
    }
  });
}
