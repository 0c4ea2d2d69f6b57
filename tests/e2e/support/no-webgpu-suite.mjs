// End to end in a browser without WebGPU, one suite for each such engine: Firefox ESR
// (firefox.test.mjs) and WebKit, Safari's engine (webkit.test.mjs). The packed npm tarball is
// installed into a fresh app and imported by its bare name (as in package.test.mjs);
// `FusedRmsNorm.create({ backend: "auto" })` must choose the CPU backend there, and every result
// is checked against the f64 reference. Then the demo page and the worker example (www/, served
// as scripts/demo.sh does) must be usable on that backend. The checks run in the page; only
// small JSON reports cross back, so the same tests run over WebDriver BiDi (puppeteer, Firefox)
// and classic WebDriver (WebKitWebDriver).
//
// `browser` is what firefox.mjs's firefoxBrowser() and webkit.mjs's launchWebKit() resolve
// with: `open(url, problems)` → a page with `evaluate(fn, ...args)`, `waitFor(fn, ms, ...args)`,
// `click(selector)` and `close()`, its console errors and uncaught exceptions pushed into
// `problems`; and `close()`.
import { test as nodeTest, before, after } from "node:test";
import assert from "node:assert/strict";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

import { serve } from "../../../scripts/serve.mjs";
import { ROOT } from "./repo.mjs";
import { CASES } from "./cases.mjs";
import { installIntoConsumerApp } from "./tarball.mjs";

const CONSUMER = fileURLToPath(new URL("./apps/no-webgpu-consumer/", import.meta.url));

// A page's evaluate has no timeout of its own: a hung call must fail its test, not stall CI.
const test = (name, fn) => nodeTest(name, { timeout: 90_000 }, fn);

/** The seed of the random sweep: RMSNORM_SEED=<n> replays one run. */
const SEED = Number(process.env.RMSNORM_SEED ?? Date.now() % 1_000_000);

/** True once a page's #status has settled: ready, or why not. */
const SETTLED = () => ["ready", "error", "unavailable"].includes(document.getElementById("status")?.dataset.state);

/** Done once a run leaves "running" and #run is enabled again. */
const RUN_DONE = () => !["running", "ready"].includes(document.getElementById("status").dataset.state) && !document.getElementById("run").disabled;

/** Done once the card whose button is #`id` has filled its #`id`-progress and is enabled again. */
const CARD_DONE = (id) => {
  const p = document.getElementById(`${id}-progress`);
  return p.value === p.max && p.max > 1 && !document.getElementById(id).disabled;
};

/** #status as { state, text }. */
const STATUS = () => ({ state: document.getElementById("status").dataset.state, text: document.getElementById("status").textContent.trim() });

/**
 * Registers the suite: `name` is the engine as the test titles say it ("Firefox ESR"), `short`
 * its short name ("Firefox"), `userAgent` what its navigator.userAgent must match (so that the
 * suite is testing the engine it names), `launch()` resolves with its browser (and throws,
 * saying how to install it, where it is missing).
 */
export function noWebGpuSuite({ name, short, userAgent, launch }) {
  let tmp, server, demoServer, browser, page;
  let harnessState = "not started";
  const problems = [];

  /** Runs `fn(harness, arg)` in the consumer page; fails on a console or page error meanwhile. */
  async function inPage(fn, arg) {
    assert.equal(harnessState, "ready", "the consumer page's init() and create({ backend: \"auto\" })");
    const result = await page.evaluate(
      async (source, arg) => {
        const h = await window.harness;
        // Functions do not cross from node into the page: the body travels as source.
        return (0, eval)(`(${source})`)(h, arg);
      },
      fn.toString(),
      arg,
    );
    assert.deepEqual(problems, [], "console errors or page errors in the consumer page");
    return result;
  }

  before(async () => {
    // The browser first: where it is missing, say how to install it before packing anything.
    browser = await launch();
    let app;
    ({ tmp, app } = await installIntoConsumerApp(`webgpu-rmsnorm-${short.toLowerCase()}-`, CONSUMER));
    server = await serve({ port: 0, mounts: [["/", app], ["/lib", join(ROOT, "www/lib")]] });
    demoServer = await serve({ port: 0, mounts: [["/", join(ROOT, "www")], ["/pkg", join(ROOT, "pkg")]] });
    page = await browser.open(server.url, problems);
    harnessState = await page.evaluate(() =>
      (window.harness ?? Promise.reject(new Error("main.js did not run: no window.harness"))).then(
        () => "ready",
        (e) => `rejected: ${e?.name}: ${e?.message}`,
      ),
    );
    if (harnessState !== "ready") harnessState += `; page problems: ${JSON.stringify(problems)}`;
  }, { timeout: 120_000 });

  after(async () => {
    await page?.close().catch(() => {});
    await browser?.close();
    await server?.close();
    await demoServer?.close();
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  /** Opens `path` of the demo server, runs `fn(page)`, and fails on its console or page errors. */
  async function onDemoPage(path, fn) {
    const own = [];
    const p = await browser.open(`${demoServer.url}${path}`, own);
    try {
      await fn(p);
    } finally {
      await p.close();
    }
    assert.deepEqual(own, [], `console errors or page errors in ${path || "the demo"}`);
  }

  test(`${name} has no WebGPU; create({ backend: "auto" }) resolves with the CPU backend`, async (t) => {
    const report = await inPage(async (h) => ({
      userAgent: navigator.userAgent,
      gpu: "gpu" in navigator && Boolean(navigator.gpu),
      secure: window.isSecureContext,
      backend: h.norm.backend,
      info: { ...h.norm.adapterInfo },
      state: document.getElementById("state").textContent,
      explicit: await h.FusedRmsNorm.create({ backend: "cpu" }).then((n) => {
        const b = n.backend;
        n.free();
        return b;
      }),
    }));
    t.diagnostic(report.userAgent);
    assert.match(report.userAgent, userAgent, `the page runs in ${name}`);
    assert.equal(report.secure, true, "the page is a secure context (127.0.0.1)");
    assert.equal(report.gpu, false, `this ${short} has no navigator.gpu: the test would not be testing the fallback`);
    assert.equal(report.backend, "cpu");
    assert.equal(report.state, "ready: cpu");
    assert.equal(report.info.vendor, "");
    assert.equal(report.info.architecture, "cpu");
    assert.equal(report.info.isFallbackAdapter, true);
    assert.equal(report.explicit, "cpu", 'create({ backend: "cpu" })');
  });

  test("create() and create({ backend: \"webgpu\" }) reject with WebGpuUnavailableError naming navigator.gpu", async () => {
    const failures = await inPage(async (h) => ({
      default: await h.failureOf(() => h.FusedRmsNorm.create()),
      webgpu: await h.failureOf(() => h.FusedRmsNorm.create({ backend: "webgpu" })),
      badBackend: await h.failureOf(() => h.FusedRmsNorm.create({ backend: "wasm" })),
    }));
    for (const which of ["default", "webgpu"]) {
      const f = failures[which];
      assert.ok(f, `${which}: create() resolved`);
      assert.equal(f.isError, true, `${which}: a real Error`);
      assert.equal(f.name, "WebGpuUnavailableError", `${which}: ${f.message}`);
      assert.match(f.message, /^navigator\.gpu: expected WebGPU in this browser, got none \(.+\)$/, which);
    }
    assert.equal(failures.badBackend?.name, "TypeError", `backend "wasm": ${JSON.stringify(failures.badBackend)}`);
    assert.equal(failures.badBackend.message, 'options.backend: expected "webgpu", "cpu" or "auto", got the string "wasm"');
  });

  for (const method of ["run", "runWithSum"]) {
    test(`${method}() on the CPU backend matches the f64 reference${method === "runWithSum" ? " (sum bit for bit)" : ""}: ${CASES.length} cases`, async () => {
      const failures = await inPage(
        async (h, { method, cases }) => {
          const failures = [];
          for (const [i, c] of cases.entries()) {
            const args = h.caseArgs({ ...c, seed: i + 1 });
            const got = await h.norm[method](args);
            const r = method === "run" ? h.compare(args, got) : h.compare(args, got.output, { sum: got.sum });
            if (!r.ok) failures.push(`${h.describeArgs(args)}: ${r.problems.join("; ")}`);
          }
          return failures;
        },
        { method, cases: CASES },
      );
      assert.deepEqual(failures, []);
    });
  }

  test("random shapes and options on the CPU backend: 300 cases within 1e-5 of the f64 reference", async (t) => {
    t.diagnostic(`seed ${SEED} (RMSNORM_SEED=${SEED} replays it)`);
    const report = await inPage(
      async (h, seed) => {
        const next = h.rng(seed);
        const pick = (xs) => xs[Math.floor(next() * xs.length)];
        const failures = [];
        let maxRel = 0;
        for (let i = 0; i < 300; i++) {
          const hidden = next() < 0.7 ? 1 + Math.floor(next() * 70) : 1 + Math.floor(next() * 5000);
          const rows = Math.floor(next() * (hidden > 1000 ? 5 : 24));
          const c = { rows, hidden, bias: next() < 0.5, beta: next() < 0.5, eps: pick([undefined, 0, 1e-6, 1e-5, 1e-2]) };
          const args = h.caseArgs({ ...c, seed: seed + i });
          // Scaled rows too: huge and tiny values must normalize like values of ~1.
          const scale = pick([1, 1, 1, 1e-30, 1e30, 1e-3, 1e3]);
          if (scale !== 1) for (const k of ["input", "residual"]) args[k] = args[k].map((x) => x * scale);
          const withSum = next() < 0.5;
          const got = withSum ? await h.norm.runWithSum(args) : await h.norm.run(args);
          const r = withSum ? h.compare(args, got.output, { sum: got.sum }) : h.compare(args, got);
          maxRel = Math.max(maxRel, r.maxRel);
          if (!r.ok) failures.push(`#${i} ${h.describeArgs(args)} ×${scale}${withSum ? " withSum" : ""}: ${r.problems.join("; ")}`);
        }
        return { failures, maxRel };
      },
      SEED,
    );
    t.diagnostic(`max relative error ${report.maxRel.toExponential(2)}`);
    assert.deepEqual(report.failures, []);
  });

  test("f16 (Uint16Array halves) on the CPU backend: within 1e-3 of the reference of the widened halves", async (t) => {
    const report = await inPage(async (h) => {
      const failures = [];
      let maxRel = 0;
      // One f16 rounding: 2⁻¹¹ relative, but results below f16's smallest normal (6.1e-5) are
      // subnormal halves, spaced 2⁻²⁴ apart, so half of that is allowed on top of 1e-3 relative.
      const FLOOR = 2 ** -25;
      const within = (label, got, want) => {
        for (let i = 0; i < want.y.length; i++) {
          const err = Math.abs(got[i] - want.y[i]);
          if (Math.abs(want.y[i]) >= 2 ** -14) maxRel = Math.max(maxRel, err / want.scale[i]);
          if (!(err <= 1e-3 * want.scale[i] + FLOOR)) {
            failures.push(`${label}: y[${i}] = ${got[i]}, want ${want.y[i]} (scale ${want.scale[i]})`);
            return;
          }
        }
      };
      let seed = 1;
      for (const hidden of [4, 8, 768, 4096])
        for (const rows of [0, 1, 3])
          for (const [bias, beta] of [[false, false], [true, true], [true, false]]) {
            const { bits, host } = h.asF16(h.caseArgs({ rows, hidden, bias, beta, seed: seed++ }));
            const label = `f16 ${h.describeArgs(host)}`;
            const want = h.reference(host);
            const y = await h.norm.run(bits);
            if (!(y instanceof Uint16Array) || y.length !== host.input.length) {
              failures.push(`${label}: run gave ${Object.prototype.toString.call(y)} of ${y?.length}, not a Uint16Array of ${host.input.length}`);
              continue;
            }
            within(label, h.fromF16(y), want);
            const both = await h.norm.runWithSum(bits);
            within(`${label} runWithSum`, h.fromF16(both.output), want);
            // The sum is stored as halves too: one rounding of the f32 v, no more.
            const sum = h.fromF16(both.sum);
            for (let i = 0; i < want.v.length; i++) {
              if (!(Math.abs(sum[i] - want.v[i]) <= 2 ** -11 * Math.abs(want.v[i]) + FLOOR)) {
                failures.push(`${label} sum[${i}] = ${sum[i]}, want ${want.v[i]} within one f16 rounding`);
                break;
              }
            }
          }
      return { failures, maxRel };
    });
    t.diagnostic(`max relative error ${report.maxRel.toExponential(2)} where the result is a normal half (one f16 rounding is at most 4.9e-4)`);
    assert.deepEqual(report.failures, []);
  });

  test("GpuTensors on the CPU backend: upload, output \"gpu\", runWithSum chains, in place, f16, read, free", async () => {
    const failures = await inPage(async (h) => {
      const { norm } = h;
      const failures = [];
      const check = (what, ok, detail = "") => ok || failures.push(`${what}${detail ? `: ${detail}` : ""}`);
      const baseline = norm.debugStats().liveTensors;
      const args = h.caseArgs({ rows: 5, hidden: 768, bias: true, beta: true, eps: 1e-5, seed: 42 });
      const t = {};
      for (const k of h.ARRAY_KEYS) t[k] = norm.upload(args[k]);
      check("upload: dtype f32 and length", t.input.dtype === "f32" && t.input.length === args.input.length);
      const readBack = await t.input.read();
      check("read() of an upload gives the same values", readBack instanceof Float32Array && readBack.every((x, i) => Object.is(x, args.input[i])));

      const y = await norm.run({ ...t, hidden: 768, eps: 1e-5, output: "gpu" });
      check("run output \"gpu\" is a GpuTensor", typeof y?.read === "function" && y.length === args.input.length, String(y));
      const ry = h.compare(args, await y.read());
      check("run output \"gpu\" matches", ry.ok, ry.problems.join("; "));
      y.free();

      // Host arrays and tensors mixed in one call.
      const mixed = await norm.runWithSum({ ...args, input: t.input, gamma: t.gamma, output: "gpu" });
      const rm = h.compare(args, await mixed.output.read(), { sum: await mixed.sum.read() });
      check("runWithSum output \"gpu\", mixed arguments", rm.ok, rm.problems.join("; "));
      mixed.output.free();
      mixed.sum.free();

      // In place: residual ← input + residual + bias, input ← the normalized output.
      const x = norm.upload(args.input);
      const r = norm.upload(args.residual);
      const none = await norm.run({ input: x, residual: r, gamma: t.gamma, bias: t.bias, beta: t.beta, hidden: 768, eps: 1e-5, inPlace: true });
      check("in place resolves undefined", none === undefined, String(none));
      const ri = h.compare(args, await x.read(), { sum: await r.read() });
      check("in place matches (sum bit for bit)", ri.ok, ri.problems.join("; "));
      x.free();
      r.free();

      // A residual chain kept resident, as a model's layers run it.
      const hidden = 256;
      const next = h.rng(7);
      const first = h.randomArgs({ rows: 2, hidden }, next);
      const layers = Array.from({ length: 8 }, () => h.randomArgs({ rows: 0, hidden, bias: true, beta: true }, next));
      let cx = norm.upload(first.input);
      let cr = norm.upload(first.residual);
      for (const w of layers) {
        const o = await norm.runWithSum({ input: cx, residual: cr, gamma: w.gamma, bias: w.bias, beta: w.beta, hidden, output: "gpu" });
        cx.free();
        cr.free();
        cx = o.output;
        cr = o.sum;
      }
      const chain = await cx.read();
      cx.free();
      cr.free();
      const want = h.chainReference({ input: first.input, residual: first.residual, layers, hidden }).output;
      let maxAbs = 0;
      let maxMag = 0;
      for (let i = 0; i < want.length; i++) {
        maxAbs = Math.max(maxAbs, Math.abs(chain[i] - want[i]) || (Number.isNaN(chain[i]) ? Infinity : 0));
        maxMag = Math.max(maxMag, Math.abs(want[i]));
      }
      check("an 8-layer resident chain matches the JS chain", maxAbs <= 1e-4 * maxMag, `max |Δ| ${maxAbs}, max |y| ${maxMag}`);

      // f16 tensors: the bits go in and come back unchanged; a run on them rounds once.
      const { bits, host } = h.asF16(h.caseArgs({ rows: 3, hidden: 64, bias: true, seed: 5 }));
      const f = {};
      for (const k of h.ARRAY_KEYS) if (bits[k]) f[k] = norm.upload(bits[k], { dtype: "f16" });
      const fb = await f.input.read();
      check("f16 upload: dtype and bits", f.input.dtype === "f16" && fb instanceof Uint16Array && fb.every((b, i) => b === bits.input[i]));
      const fy = await norm.run({ ...f, hidden: 64, output: "gpu" });
      const fyBits = await fy.read();
      check("f16 output \"gpu\" reads a Uint16Array", fy.dtype === "f16" && fyBits instanceof Uint16Array);
      const rf = h.compare(host, h.fromF16(fyBits), { tol: 1e-3 });
      check("f16 output \"gpu\" matches", rf.ok, rf.problems.join("; "));
      fy.free();
      for (const k of Object.keys(f)) f[k].free();

      // A freed tensor is an InvalidStateError, to use and to read; the instance keeps working.
      const gone = norm.upload(args.gamma);
      gone.free();
      const e1 = await h.failureOf(() => gone.read());
      check("read() of a freed tensor", e1?.name === "InvalidStateError" && e1.message === "read: expected a live GpuTensor, got one that was freed (or never created)", JSON.stringify(e1));
      const e2 = await h.failureOf(() => norm.run({ ...args, gamma: gone }));
      check("a freed tensor as an argument", e2?.name === "InvalidStateError" && e2.message === "gamma: expected a live GpuTensor, got one that was freed", JSON.stringify(e2));
      // A tensor of another instance is a TypeError.
      const other = await h.FusedRmsNorm.create({ backend: "cpu" });
      const foreign = other.upload(args.gamma);
      const e3 = await h.failureOf(() => norm.run({ ...args, gamma: foreign }));
      check("a tensor of another instance", e3?.name === "TypeError" && e3.message === "gamma: expected a GpuTensor of this FusedRmsNorm, got one of another instance", JSON.stringify(e3));
      foreign.free();
      other.free();

      for (const k of h.ARRAY_KEYS) t[k].free();
      check("every tensor freed", norm.debugStats().liveTensors === baseline, `liveTensors ${norm.debugStats().liveTensors}, was ${baseline}`);
      const after = h.compare(args, await norm.run(args));
      check("a run after all that", after.ok, after.problems.join("; "));
      return failures;
    });
    assert.deepEqual(failures, []);
  });

  test("CPU backend results are fresh arrays: not wasm memory, not each other's, intact after a bigger call grows wasm memory", async () => {
    const problems = await inPage(async (h) => {
      const out = [];
      const { norm, wasm } = h;
      const small = h.caseArgs({ rows: 2, hidden: 8, bias: true, seed: 5 });
      const a = await norm.run(small);
      const b = await norm.run(small);
      const { output, sum } = await norm.runWithSum(small);
      const halves = await norm.run(h.asF16(small).bits);
      const all = [a, b, output, sum, halves];
      const keep = all.map((x) => x.slice());
      if (new Set(all.map((x) => x.buffer)).size !== all.length) out.push("two results share an ArrayBuffer");
      if (all.some((x) => x.buffer === wasm.memory.buffer)) out.push("a result is a view of wasm memory");
      if (all.some((x) => x.byteOffset !== 0 || x.buffer.byteLength !== x.byteLength)) out.push("a result is a view into a larger buffer");
      a.fill(7);
      if (!h.compare(small, b).ok) out.push("writing one result changed another");
      // Larger than anything before: its copies grow wasm memory, detaching every old view.
      const pages = wasm.memory.buffer.byteLength / 65536;
      const big = h.caseArgs({ rows: 64, hidden: 65536, seed: 6 });
      if (!h.compare(big, await norm.run(big)).ok) out.push("the big call is wrong");
      if (wasm.memory.buffer.byteLength / 65536 <= pages) out.push(`the big call did not grow wasm memory (${pages} pages)`);
      const same = (x, y) => x.length === y.length && x.every((v, i) => Object.is(v, y[i]));
      if (!all.slice(1).every((x, i) => same(x, keep[i + 1]))) out.push("a result changed after wasm memory grew");
      if (!h.compare(small, await norm.run(small)).ok) out.push("a small call after the growth is wrong");
      return out;
    });
    assert.deepEqual(problems, []);
  });

  test("errors by name on the CPU backend: ShapeError, TypeError, InvalidStateError; the instance keeps working", async () => {
    const report = await inPage(async (h) => {
      const args = h.caseArgs({ rows: 3, hidden: 5, bias: true, beta: true, seed: 3 });
      const out = {};
      for (const method of ["run", "runWithSum"]) {
        out[`${method} input length`] = await h.failureOf(() => h.norm[method]({ ...args, input: new Float32Array(16) }));
        out[`${method} gamma length`] = await h.failureOf(() => h.norm[method]({ ...args, gamma: new Float32Array(4) }));
        out[`${method} hidden 2.5`] = await h.failureOf(() => h.norm[method]({ ...args, hidden: 2.5 }));
        out[`${method} eps -1`] = await h.failureOf(() => h.norm[method]({ ...args, eps: -1 }));
        out[`${method} Float64Array input`] = await h.failureOf(() => h.norm[method]({ ...args, input: new Float64Array(args.input) }));
        out[`${method} plain Array residual`] = await h.failureOf(() => h.norm[method]({ ...args, residual: Array.from(args.residual) }));
        out[`${method} f16 hidden 5`] = await h.failureOf(() => h.norm[method](h.asF16(args).bits));
      }
      out["upload Float64Array"] = await h.failureOf(() => h.norm.upload(new Float64Array(4)));
      out["timeDispatches repeat 0"] = await h.failureOf(() => h.norm.timeDispatches(args, 0));
      const freed = await h.FusedRmsNorm.create({ backend: "cpu" });
      freed.free();
      out["run after free()"] = await h.failureOf(() => freed.run(args));
      out["upload after free()"] = await h.failureOf(() => freed.upload(args.gamma));
      // Rejections, never synchronous throws, for the calls that return Promises.
      let sync = null;
      try {
        h.norm.run({ ...args, input: new Float64Array(15) }).catch(() => {});
      } catch (e) {
        sync = `${e.name}: ${e.message}`;
      }
      const r = h.compare(args, await h.norm.run(args));
      const timing = {
        gpuTime: typeof (await h.norm.gpuTime(args, 3)),
        timeDispatches: await h.norm.timeDispatches(args, 3),
      };
      return { out, sync, afterOk: r.ok, afterProblems: r.problems, timing };
    });
    // The messages of src/js/ (args.rs, freed_guard.js) and src/call/ (checks.rs, shape.rs, plan.rs).
    const array = "a Float32Array (or Uint16Array/Float16Array for f16), a GpuTensor";
    const freed = (member) => `${member}: expected a live FusedRmsNorm, got one that was freed (or never created)`;
    const want = {
      "input length": ["ShapeError", "input: expected a length that is a multiple of hidden (5), got 16"],
      "gamma length": ["ShapeError", "gamma: expected length 5 (hidden), got 4"],
      "hidden 2.5": ["ShapeError", "hidden: expected an integer from 1 to 4294967295, got 2.5"],
      "eps -1": ["ShapeError", "eps: expected a finite number >= 0, got -1"],
      "Float64Array input": ["TypeError", `input: expected ${array} or a GPUBuffer, got a Float64Array`],
      "plain Array residual": ["TypeError", `residual: expected ${array}, a GPUBuffer or undefined, got an Array`],
      "f16 hidden 5": ["ShapeError", "hidden: expected a multiple of 4 for f16 data, got 5"],
    };
    const once = {
      "upload Float64Array": ["TypeError", "data: expected a Float32Array (f32) or a Uint16Array/Float16Array (f16), got a Float64Array"],
      "timeDispatches repeat 0": ["ShapeError", "repeat: expected an integer from 1 to 10000, got 0"],
      "run after free()": ["InvalidStateError", freed("run")],
      "upload after free()": ["InvalidStateError", freed("upload")],
    };
    const every = [...["run", "runWithSum"].flatMap((m) => Object.entries(want).map(([what, w]) => [`${m} ${what}`, w])), ...Object.entries(once)];
    for (const [what, [name, message]] of every) {
      const f = report.out[what];
      assert.ok(f, `${what}: resolved`);
      assert.equal(f.isError, true, `${what}: a real Error`);
      assert.equal(`${f.name}: ${f.message}`, `${name}: ${message}`, what);
    }
    assert.equal(report.sync, null, "run() with bad arguments rejects instead of throwing");
    assert.ok(report.afterOk, `a valid run after the errors: ${report.afterProblems.join("; ")}`);
    assert.equal(report.timing.gpuTime, "undefined", "gpuTime() resolves undefined on the CPU backend");
    assert.ok(typeof report.timing.timeDispatches === "number" && report.timing.timeDispatches >= 0, `timeDispatches: ${report.timing.timeDispatches}`);
  });

  test(`the demo page in ${short}: loads on the CPU backend, says so, and a Run matches the reference`, async (t) => {
    await onDemoPage("", async (demo) => {
      await demo.waitFor(SETTLED, 30_000);
      const status = await demo.evaluate(STATUS);
      assert.equal(status.state, "ready", status.text);
      const shown = await demo.evaluate(() => ({
        choice: document.querySelector('input[name="backend"]:checked')?.value,
        backend: document.getElementById("adapter").dataset.backend,
        field: document.querySelector('#adapter [data-field="backend"]').textContent,
        panelVisible: !document.getElementById("no-webgpu").hidden,
        panel: document.getElementById("no-webgpu").textContent,
        reason: document.getElementById("no-webgpu-reason").textContent,
        runDisabled: document.getElementById("run").disabled,
      }));
      assert.equal(shown.choice, "auto", "the backend control starts on auto");
      assert.equal(shown.backend, "cpu");
      assert.match(shown.field, /^CPU/);
      assert.ok(shown.panelVisible, "the WebGPU-missing panel is shown");
      assert.match(shown.reason, /navigator\.gpu/);
      assert.match(shown.panel, /CPU backend is running/);
      assert.equal(shown.runDisabled, false, "#run is enabled: the CPU backend runs");

      // A problem through the controls, then Run.
      await demo.evaluate(() => {
        const set = (id, v) => {
          const el = document.getElementById(id);
          el.value = v;
          el.dispatchEvent(new Event("input", { bubbles: true }));
        };
        set("rows", "6");
        set("hidden", "1000");
        set("eps", "1e-6");
        set("seed", "3");
      });
      await demo.click("#run");
      await demo.waitFor(RUN_DONE, 60_000);
      const done = await demo.evaluate(STATUS);
      assert.equal(done.state, "done", done.text);
      assert.match(done.text, /6 × 1000/);
      const shownRun = await demo.evaluate(() => ({
        maxError: Number.parseFloat(document.getElementById("max-error").textContent),
        maxRel: Number.parseFloat(document.getElementById("max-rel").textContent),
        time: document.getElementById("time").textContent,
      }));
      assert.ok(Number.isFinite(shownRun.maxError) && shownRun.maxError < 1e-4, `#max-error is ${shownRun.maxError}`);
      assert.ok(Number.isFinite(shownRun.maxRel) && shownRun.maxRel <= 1e-5, `#max-rel is ${shownRun.maxRel}`);
      t.diagnostic(`demo in ${short}, 6 × 1000 on the CPU backend: max error ${shownRun.maxError}, ${shownRun.time} end to end`);

      // The pipeline card on the CPU backend: its labels name no GPU.
      await demo.click("#pipeline");
      await demo.waitFor(CARD_DONE, 60_000, "pipeline");
      const chain = await demo.evaluate(() => ({
        status: document.getElementById("status").textContent,
        text: document.getElementById("pipeline-results").textContent,
        ways: [...document.querySelectorAll("#pipeline-results tbody tr")].map((tr) => tr.dataset.way),
        maxRel: Number.parseFloat(document.getElementById("pipeline-max-rel")?.textContent),
      }));
      assert.deepEqual(chain.ways, ["resident", "inplace", "roundtrip"], chain.status);
      assert.match(chain.text, /The three final outputs agree/);
      assert.ok(chain.maxRel < 1e-4, `#pipeline-max-rel is ${chain.maxRel}`);
      assert.match(chain.text, /tensors live in wasm memory: no GPU buffers/);
      assert.doesNotMatch(chain.text.replace("no GPU buffers", ""), /GPU/, "no GPU wording on the CPU backend");

      // The backend control: WebGPU is a dead end here, the CPU backend runs again.
      await demo.click("#backend-webgpu");
      await demo.waitFor(() => document.getElementById("status").dataset.state === "unavailable", 30_000);
      const dead = await demo.evaluate(() => ({
        reason: document.getElementById("no-webgpu-reason").textContent,
        runDisabled: document.getElementById("run").disabled,
      }));
      assert.match(dead.reason, /^WebGpuUnavailableError: navigator\.gpu: expected WebGPU in this browser/);
      assert.equal(dead.runDisabled, true, "#run is disabled with WebGPU chosen");
      await demo.click("#backend-cpu");
      await demo.waitFor(() => document.getElementById("status").dataset.state === "ready", 30_000);
      const again = await demo.evaluate(() => ({
        backend: document.getElementById("adapter").dataset.backend,
        runDisabled: document.getElementById("run").disabled,
      }));
      assert.equal(again.backend, "cpu");
      assert.equal(again.runDisabled, false, "#run is enabled again on CPU");

      // The size sweep: the CPU backend and the JS loop only, WebGPU being unavailable.
      await demo.evaluate(() => {
        document.getElementById("hidden").value = "4096";
      });
      await demo.click("#sweep");
      await demo.waitFor(CARD_DONE, 60_000, "sweep");
      const sweep = await demo.evaluate(() => ({
        state: document.getElementById("status").dataset.state,
        status: document.getElementById("status").textContent,
        sizes: document.getElementById("sweep-progress").max,
        series: [...document.querySelectorAll("#chart polyline")].map((l) => ({
          key: l.dataset.series,
          points: l.getAttribute("points").trim().split(/\s+/).length,
        })),
        desc: document.getElementById("chart-desc").textContent,
      }));
      assert.equal(sweep.state, "done", sweep.status);
      assert.deepEqual(sweep.series, [
        { key: "cpu", points: sweep.sizes },
        { key: "js", points: sweep.sizes },
      ]);
      t.diagnostic(`sweep: ${sweep.desc}`);
    });
  });

  test(`the worker example in ${short}: the package runs on the CPU backend in a module worker, and its result matches the reference`, async (t) => {
    await onDemoPage("worker.html", async (w) => {
      await w.waitFor(SETTLED, 30_000);
      const ready = await w.evaluate(() => ({
        state: document.getElementById("status").dataset.state,
        text: document.getElementById("status").textContent.trim(),
        scope: document.querySelector('#adapter [data-field="scope"]').textContent,
        backend: document.querySelector('#adapter [data-field="backend"]').textContent,
      }));
      assert.equal(ready.state, "ready", ready.text);
      assert.equal(ready.scope, "DedicatedWorkerGlobalScope");
      assert.match(ready.backend, /^CPU/);
      await w.evaluate(() => {
        document.getElementById("rows").value = "6";
        document.getElementById("hidden").value = "1000";
      });
      await w.click("#run");
      await w.waitFor(RUN_DONE, 60_000);
      const done = await w.evaluate(STATUS);
      assert.equal(done.state, "done", done.text);
      assert.match(done.text, /6 × 1000/);
      const maxRel = await w.evaluate(() => Number.parseFloat(document.getElementById("max-rel").textContent));
      assert.ok(Number.isFinite(maxRel) && maxRel <= 1e-5, `#max-rel is ${maxRel}`);
      t.diagnostic(`worker in ${short}, 6 × 1000 on the CPU backend: max relative error ${maxRel}`);
    });
  });

  test("no console error or uncaught page error in the consumer page", () => {
    assert.deepEqual(problems, []);
  });
}
