// End to end, as a user gets it: `npm pack` the repository, install the tarball into a fresh
// app, import it by its bare name from a plain page (import map, no bundler) and run it on
// headless Chromium's WebGPU. Needs `bash scripts/build.sh` first.
//
//   node --test --test-reporter=spec tests/e2e/
import { test as nodeTest, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFile, rm, stat } from "node:fs/promises";
import { join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

import { serve } from "../../../scripts/serve.mjs";
import { launch, watchedPage } from "../support/chromium.mjs";
import { ROOT } from "../support/repo.mjs";
import { CASES } from "../support/cases.mjs";
import { installIntoConsumerApp } from "../support/tarball.mjs";

const run = promisify(execFile);
const CONSUMER = fileURLToPath(new URL("../support/apps/consumer/", import.meta.url));

// page.evaluate has no timeout of its own: a hung GPU call must fail its test, not stall CI.
const test = (name, fn) => nodeTest(name, { timeout: 60_000 }, fn);

let tmp, app, server, browser, page;
const problems = [];

/** Runs `fn` in the page, then fails if anything logged a console error meanwhile. */
async function inPage(fn, arg) {
  const result = await page.evaluate(fn, arg);
  assert.deepEqual(problems, [], "console errors or page errors in the consumer page");
  return result;
}

before(async () => {
  ({ tmp, app } = await installIntoConsumerApp("webgpu-rmsnorm-e2e-", CONSUMER));

  // The page's seeded inputs and f64 reference are the repository's, not the package's.
  server = await serve({ port: 0, mounts: [["/", app], ["/lib", join(ROOT, "www/lib")]] });
  browser = await launch();
  page = await watchedPage(browser, problems);
  await page.goto(server.url);
  await page.evaluate(() => window.harness.then(() => true));
}, { timeout: 60_000 });

after(async () => {
  await browser?.close();
  await server?.close();
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

test("npm tarball holds the wasm, JS, types, licenses, README and changelog, and nothing else of size", async () => {
  const { stdout } = await run("npm", ["pack", "--dry-run", "--json"], { cwd: ROOT });
  const files = new Map(JSON.parse(stdout)[0].files.map((f) => [f.path, f.size]));
  const wanted = [
    "package.json",
    "README.md",
    "CHANGELOG.md",
    "LICENSE-MIT",
    "LICENSE-APACHE",
    "pkg/index.js",
    "pkg/index.d.ts",
    "pkg/webgpu_rmsnorm.js",
    "pkg/webgpu_rmsnorm.d.ts",
    "pkg/webgpu_rmsnorm_bg.wasm",
  ];
  // wasm-bindgen's snippets (inline JavaScript, and the JavaScript modules of src/js/), each
  // of which the glue imports by relative path.
  const snippets = [...files.keys()].filter((p) => /^pkg\/snippets\/[^/]+\/(inline\d+|src\/js\/[\w-]+)\.js$/.test(p));
  assert.ok(snippets.length > 0, `no pkg/snippets/*/inline*.js in the tarball; it holds: ${[...files.keys()].join(", ")}`);
  const glue = await readFile(join(ROOT, "pkg/webgpu_rmsnorm.js"), "utf8");
  const imported = new Set([...glue.matchAll(/from ['"]\.\/(snippets\/[^'"]+\.js)['"]/g)].map((m) => `pkg/${m[1]}`));
  assert.deepEqual([...imported].sort(), [...snippets].sort(), "the snippets in the tarball are those the glue imports");
  wanted.push(...snippets);
  const missing = wanted.filter((f) => !files.has(f));
  assert.deepEqual(missing, [], `missing from the tarball; it holds: ${[...files.keys()].join(", ")}`);
  assert.ok(files.get("pkg/webgpu_rmsnorm_bg.wasm") > 10_000, "the .wasm is suspiciously small");
  // Small extras (wasm-pack's bg.wasm.d.ts) are harmless; sources, build trees or stray
  // tarballs are not.
  const extra = [...files].filter(([p, size]) => !wanted.includes(p) && size > 4096);
  assert.deepEqual(extra, [], "unexpected large files in the tarball");
  const junk = [...files.keys()].filter((p) => /^(src|target|tests|www|node_modules|shaders)\/|\.tgz$/.test(p));
  assert.deepEqual(junk, [], "development files in the tarball");
});

test("installed package resolves by its bare name through its exports map", async () => {
  // The page's import map is written by hand; node's resolver reads the package's real
  // "exports", so agreement here means a bundler or import map generator finds the same file.
  const { stdout } = await run(
    process.execPath,
    ["--input-type=module", "-e", 'console.log(import.meta.resolve("webgpu-rmsnorm"))'],
    { cwd: app },
  );
  const resolved = relative(app, fileURLToPath(stdout.trim())).split("\\").join("/");
  assert.equal(resolved, "node_modules/webgpu-rmsnorm/pkg/index.js");
  const html = await readFile(join(app, "index.html"), "utf8");
  assert.ok(html.includes(`"./${resolved}"`), "the import map points at the file node resolves");

  const manifest = JSON.parse(await readFile(join(app, "node_modules/webgpu-rmsnorm/package.json"), "utf8"));
  const types = manifest.exports?.["."]?.types;
  assert.ok(types, 'exports["."].types is set');
  await stat(resolve(app, "node_modules/webgpu-rmsnorm", types));
  assert.equal(await page.textContent("#state"), "ready", "init() and FusedRmsNorm.create() succeeded in the page");
});

for (const method of ["run", "runWithSum"]) {
  test(`${method}() matches the f64 reference: ${CASES.length} cases of hidden 1..4099, rows 0..3, bias/beta, eps`, async () => {
    const failures = await inPage(
      async ({ method, cases }) => {
        const h = await window.harness;
        const failures = [];
        for (const c of cases) {
          const args = h.makeArgs({ ...c, seed: cases.indexOf(c) + 1 });
          const got = await h.norm[method](args);
          const report = method === "run" ? h.compare(args, got) : h.compare(args, got.output, got.sum);
          if (!report.ok) failures.push(`${h.describeArgs(args)}: ${report.problems.join("; ")}`);
        }
        return failures;
      },
      { method, cases: CASES },
    );
    assert.deepEqual(failures, []);
  });
}

test("a NaN or Inf poisons its own row only, exactly as the formula says", async () => {
  const report = await inPage(async () => {
    const h = await window.harness;
    const hidden = 768;
    const args = h.makeArgs({ rows: 5, hidden, bias: true, beta: true, seed: 9 });
    args.input[1 * hidden + 17] = NaN;
    // An Inf makes the mean square Inf and rsqrt 0: that element becomes Inf · 0 = NaN and the
    // rest of its row 0 · gamma + beta. The reference computes the same, so compare it all.
    args.residual[2 * hidden + 3] = Infinity;
    args.input[3 * hidden] = -Infinity;
    const { output, sum } = await h.norm.runWithSum(args);
    const row = (a, r) => a.subarray(r * hidden, (r + 1) * hidden);
    return {
      all: h.compare(args, output, sum),
      cleanRowsFinite: [0, 4].every((r) => row(output, r).every(Number.isFinite)),
      nanRowAllNaN: row(output, 1).every(Number.isNaN),
      infRowNaNs: [2, 3].map((r) => row(output, r).filter(Number.isNaN).length),
    };
  });
  assert.ok(report.all.ok, report.all.problems.join("; "));
  assert.ok(report.cleanRowsFinite, "rows without NaN/Inf are finite");
  assert.ok(report.nanRowAllNaN, "the row with a NaN is NaN throughout");
  assert.deepEqual(report.infRowNaNs, [1, 1], "a row with one Inf has exactly one NaN (Inf · 0)");
});

/**
 * Each bad call must reject (not throw) with a real Error of the given name whose message
 * starts with the argument's name, and a correct run must follow on the same instance.
 */
async function expectRejections(expectedName, cases) {
  const failures = await inPage(
    async ({ expectedName, cases }) => {
      const h = await window.harness;
      const failures = [];
      // The bad arguments are built here, from a description, since functions do not cross
      // from node into the page.
      const build = (c) => {
        const a = h.makeArgs({ rows: 3, hidden: 5, bias: true, beta: true, seed: 3 });
        switch (c.kind) {
          case "args":
            return c.value === "array" ? [a] : c.value === "undefined" ? undefined : c.value;
          case "plainArray":
            return { ...a, [c.field]: Array.from(a[c.field]) };
          case "typed":
            return { ...a, [c.field]: new globalThis[c.type](a[c.field]) };
          case "missing": {
            const b = { ...a };
            delete b[c.field];
            return b;
          }
          case "value":
            return { ...a, [c.field]: c.value === "NaN" ? NaN : c.value === "Infinity" ? Infinity : c.value };
          case "length":
            return { ...a, [c.field]: new Float32Array(a[c.field].length + c.delta) };
        }
        throw new Error(`unknown case ${c.kind}`);
      };
      for (const c of cases) {
        for (const method of ["run", "runWithSum"]) {
          const label = `${method}(${JSON.stringify(c)})`;
          let promise;
          try {
            promise = h.norm[method](build(c));
          } catch (e) {
            failures.push(`${label} threw synchronously instead of rejecting: ${e}`);
            continue;
          }
          if (!(promise instanceof Promise)) {
            failures.push(`${label} returned ${promise}, not a Promise`);
            continue;
          }
          try {
            await promise;
            failures.push(`${label} resolved`);
          } catch (e) {
            if (!(e instanceof Error)) failures.push(`${label} rejected with a non-Error: ${e}`);
            else if (e.name !== expectedName) failures.push(`${label}: name ${e.name} (${e.message}), want ${expectedName}`);
            else if (typeof e.message !== "string" || !e.message.startsWith(`${c.arg}:`))
              failures.push(`${label}: message ${JSON.stringify(e.message)} does not start with "${c.arg}:"`);
          }
          const good = h.makeArgs({ rows: 2, hidden: 7, bias: true, beta: true, seed: failures.length + 5 });
          const r = h.compare(good, await h.norm.run(good));
          if (!r.ok) failures.push(`after ${label}, a valid run is wrong: ${r.problems.join("; ")}`);
        }
      }
      return failures;
    },
    { expectedName, cases },
  );
  assert.deepEqual(failures, []);
}

test("TypeError for wrong argument types (plain Array, Float64Array, missing field, string hidden); instance keeps working", async () => {
  await expectRejections("TypeError", [
    { kind: "plainArray", field: "input", arg: "input" },
    { kind: "plainArray", field: "bias", arg: "bias" },
    { kind: "typed", field: "input", type: "Float64Array", arg: "input" },
    { kind: "typed", field: "residual", type: "Float64Array", arg: "residual" },
    { kind: "typed", field: "beta", type: "Float64Array", arg: "beta" },
    { kind: "typed", field: "gamma", type: "Int32Array", arg: "gamma" },
    { kind: "missing", field: "input", arg: "input" },
    { kind: "missing", field: "gamma", arg: "gamma" },
    { kind: "missing", field: "hidden", arg: "hidden" },
    { kind: "value", field: "hidden", value: "5", arg: "hidden" },
    { kind: "value", field: "eps", value: "1e-6", arg: "eps" },
    { kind: "args", value: null, arg: "args" },
    { kind: "args", value: "undefined", arg: "args" },
    { kind: "args", value: "array", arg: "args" },
  ]);
  const refusals = await inPage(async () => {
    const h = await window.harness;
    const bad = [{ powerPreference: "fastest" }, { shaderF16: "yes" }, { backend: "auto", acceptFallbackAdapter: 1 }, { backend: "gpu" }];
    const out = [];
    for (const options of bad)
      out.push(await h.FusedRmsNorm.create(options).then(() => "resolved", (e) => (e instanceof Error ? `${e.name}: ${e.message}` : String(e))));
    return out;
  });
  // src/js/options.rs
  assert.deepEqual(refusals, [
    'TypeError: options.powerPreference: expected "low-power" or "high-performance", got the string "fastest"',
    'TypeError: options.shaderF16: expected a boolean or undefined, got the string "yes"',
    "TypeError: options.acceptFallbackAdapter: expected a boolean or undefined, got the number 1",
    'TypeError: options.backend: expected "webgpu", "cpu" or "auto", got the string "gpu"',
  ], "create() with a bad option");
});

test("ShapeError for lengths not fitting hidden, hidden 0/2.5/NaN/-1, negative or non-finite eps; instance keeps working", async () => {
  await expectRejections("ShapeError", [
    { kind: "length", field: "input", delta: -1, arg: "input" },
    { kind: "length", field: "input", delta: 2, arg: "input" },
    { kind: "length", field: "residual", delta: -5, arg: "residual" },
    { kind: "length", field: "gamma", delta: 1, arg: "gamma" },
    { kind: "length", field: "beta", delta: -1, arg: "beta" },
    { kind: "length", field: "bias", delta: 5, arg: "bias" },
    { kind: "value", field: "hidden", value: 0, arg: "hidden" },
    { kind: "value", field: "hidden", value: 2.5, arg: "hidden" },
    { kind: "value", field: "hidden", value: "NaN", arg: "hidden" },
    { kind: "value", field: "hidden", value: -1, arg: "hidden" },
    { kind: "value", field: "hidden", value: "Infinity", arg: "hidden" },
    { kind: "value", field: "eps", value: -1, arg: "eps" },
    { kind: "value", field: "eps", value: -1e-30, arg: "eps" },
    { kind: "value", field: "eps", value: "NaN", arg: "eps" },
    { kind: "value", field: "eps", value: "Infinity", arg: "eps" },
  ]);
});

test("Promise.all of 64 concurrent runs of different shapes: all 64 correct", async () => {
  const failures = await inPage(async () => {
    const h = await window.harness;
    const hiddens = [1, 2, 3, 4, 5, 7, 8, 31, 64, 100, 256, 768, 1000, 1024, 2048, 4099];
    const cases = Array.from({ length: 64 }, (_, i) => ({
      rows: i % 5,
      hidden: hiddens[(i * 7) % hiddens.length],
      bias: i % 2 === 0,
      beta: i % 3 === 0,
      eps: [undefined, 0, 1e-6, 1e-2][i % 4],
      seed: 100 + i,
      withSum: i % 4 >= 2,
    }));
    const argsList = cases.map((c) => h.makeArgs(c));
    const results = await Promise.all(
      argsList.map((a, i) => (cases[i].withSum ? h.norm.runWithSum(a) : h.norm.run(a))),
    );
    return results.flatMap((got, i) => {
      const r = cases[i].withSum ? h.compare(argsList[i], got.output, got.sum) : h.compare(argsList[i], got);
      return r.ok ? [] : [`#${i} ${h.describeArgs(argsList[i])}: ${r.problems.join("; ")}`];
    });
  });
  assert.deepEqual(failures, []);
});

test("inputs are unchanged after run() and runWithSum()", async () => {
  const changed = await inPage(async () => {
    const h = await window.harness;
    const args = h.makeArgs({ rows: 3, hidden: 768, bias: true, beta: true, eps: 1e-2, seed: 77 });
    const fields = ["input", "residual", "gamma", "beta", "bias"];
    const before = Object.fromEntries(fields.map((f) => [f, args[f].slice()]));
    await h.norm.run(args);
    await h.norm.runWithSum(args);
    // Bitwise, so a NaN or -0 written back would count as a change too.
    const bits = (a) => new Uint32Array(a.buffer, a.byteOffset, a.length);
    return fields.filter((f) => !bits(args[f]).every((x, i) => x === bits(before[f])[i]) || args[f].length !== before[f].length);
  });
  assert.deepEqual(changed, []);
});

test("outputs are fresh Float32Arrays owned by JS: not wasm memory, independent, intact after memory.grow", async () => {
  const report = await inPage(async () => {
    const h = await window.harness;
    const args = h.makeArgs({ rows: 3, hidden: 5, bias: true, seed: 11 });
    const a = await h.norm.run(args);
    const b = await h.norm.run(args);
    const { output, sum } = await h.norm.runWithSum(args);
    const all = [a, b, output, sum];
    const memory = h.wasm.memory;
    const problems = [];
    if (!all.every((x) => x instanceof Float32Array)) problems.push("not every result is a Float32Array");
    if (all.some((x) => x.buffer === memory.buffer)) problems.push("a result is a view into wasm memory");
    if (all.some((x) => x.buffer === args.input.buffer || x.buffer === args.residual.buffer)) problems.push("a result aliases an input");
    // Writing into one result must not show through another.
    const keep = all.map((x) => x.slice());
    a.fill(123);
    if (![b, output, sum].every((x, i) => x.every((v, j) => Object.is(v, keep[i + 1][j])))) problems.push("results share storage");
    if (a === b || a.buffer === b.buffer) problems.push("two runs returned the same array");
    // memory.grow detaches every view into the old wasm buffer; owned results must not care.
    const pages = memory.grow(1);
    if (b.length !== 15 || !b.every((v, j) => Object.is(v, keep[1][j]))) problems.push("a result changed after memory.grow");
    const again = h.compare(args, await h.norm.run(args));
    if (!again.ok) problems.push(`a run after memory.grow is wrong: ${again.problems.join("; ")}`);
    return { problems, pages };
  });
  assert.deepEqual(report.problems, []);
});

test("adapterInfo has string vendor/architecture/device/description and a boolean isFallbackAdapter", async (t) => {
  const info = await inPage(async () => {
    const i = (await window.harness).norm.adapterInfo;
    return {
      types: Object.fromEntries(["vendor", "architecture", "device", "description", "isFallbackAdapter"].map((k) => [k, typeof i[k]])),
      info: { ...i },
    };
  });
  assert.deepEqual(info.types, {
    vendor: "string",
    architecture: "string",
    device: "string",
    description: "string",
    isFallbackAdapter: "boolean",
  });
  t.diagnostic(`adapter: ${JSON.stringify(info.info)}`);
});

test("free() and [Symbol.dispose]() release an instance; a run after either rejects with InvalidStateError", async () => {
  const report = await inPage(async () => {
    const h = await window.harness;
    const args = h.makeArgs({ rows: 1, hidden: 4, seed: 2 });
    const out = {};
    for (const how of ["free", "dispose"]) {
      const n = await h.FusedRmsNorm.create();
      const before = h.compare(args, await n.run(args)).ok;
      if (how === "free") n.free();
      else n[Symbol.dispose]();
      const after = await n.run(args).then(
        () => "resolved",
        (e) => `${e instanceof Error ? "Error" : "non-Error"} ${e.name}`,
      );
      out[how] = { before, after };
    }
    out.disposeType = typeof h.norm[Symbol.dispose];
    // Another instance's release leaves the shared one working.
    out.shared = h.compare(args, await h.norm.run(args)).ok;
    return out;
  });
  assert.deepEqual(report, {
    free: { before: true, after: "Error InvalidStateError" },
    dispose: { before: true, after: "Error InvalidStateError" },
    disposeType: "function",
    shared: true,
  });
});

test("no console error or uncaught page error during the whole run", () => {
  assert.deepEqual(problems, []);
});
