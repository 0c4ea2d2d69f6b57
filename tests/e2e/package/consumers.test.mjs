// The package as different consumers meet it: a TypeScript app type-checking against the
// installed tarball's .d.ts, a Vite app bundling it (tests/vite-app/), the demo's module Web
// Worker (www/worker.html), and the release metadata a publish relies on.
// Needs `bash scripts/build.sh` first.
//
//   node --test --test-reporter=spec tests/e2e/
import { test as nodeTest, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { cp, readFile, readdir, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { join } from "node:path";
import { promisify } from "node:util";

import { serve } from "../../../scripts/serve.mjs";
import { launch, watchedPage } from "../support/chromium.mjs";
import { ROOT } from "../support/repo.mjs";
import { packIntoTemp } from "../support/tarball.mjs";

const run = promisify(execFile);

// page.evaluate and waits have no overall timeout: a hung GPU call must fail its test, not stall CI.
const test = (name, fn) => nodeTest(name, { timeout: 60_000 }, fn);

const TSC = createRequire(join(ROOT, "package.json")).resolve("typescript/bin/tsc");
const MANIFEST = JSON.parse(await readFile(join(ROOT, "package.json"), "utf8"));

let tmp, app, browser;

before(async () => {
  let tarball;
  ({ tmp, tarball } = await packIntoTemp("webgpu-rmsnorm-consumers-"));

  // One app serves both the type checks and the Vite build: each sees the package exactly as
  // `npm install` lays it out from the published tarball. It sits where it does in the
  // repository, next to a copy of www/lib/, so that its relative import of that holds.
  app = join(tmp, "tests/vite-app");
  // Leaves out what installing or building the template in place would have made.
  const fresh = (src) => !/[\\/](node_modules|dist|package-lock\.json)$/.test(src);
  await cp(join(ROOT, "tests/vite-app"), app, { recursive: true, filter: fresh });
  await cp(join(ROOT, "www/lib"), join(tmp, "www/lib"), { recursive: true });
  const appManifest = JSON.parse(await readFile(join(app, "package.json"), "utf8"));
  appManifest.dependencies["webgpu-rmsnorm"] = `file:${tarball}`;
  await writeFile(join(app, "package.json"), JSON.stringify(appManifest, null, 2));
  // --prefer-offline: the repository's lockfile pins the same vite, so after `npm ci` at the
  // root the npm cache already holds it and no registry is needed; a fresh cache fetches it.
  await run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"], { cwd: app });
  await cp(join(ROOT, "tests/types"), join(app, "types"), { recursive: true });

  browser = await launch();
}, { timeout: 120_000 });

after(async () => {
  await browser?.close();
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

// ------------------------------------------------------------------------ publishing hygiene

const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

test("Cargo.toml, Cargo.lock and package-lock.json carry package.json's version", async () => {
  const cargo = await readFile(join(ROOT, "Cargo.toml"), "utf8");
  const pkgSection = cargo.match(/^\[package\]\s*\n([\s\S]*?)(?=^\[)/m)?.[1] ?? "";
  const cargoVersion = pkgSection.match(/^version\s*=\s*"([^"]+)"/m)?.[1];
  assert.equal(cargoVersion, MANIFEST.version, "Cargo.toml [package] version vs package.json version");

  const crate = pkgSection.match(/^name\s*=\s*"([^"]+)"/m)?.[1];
  const lock = await readFile(join(ROOT, "Cargo.lock"), "utf8");
  const locked = lock.match(new RegExp(`\\[\\[package\\]\\]\\s*\\nname = "${escape(crate)}"\\s*\\nversion = "([^"]+)"`))?.[1];
  assert.equal(locked, MANIFEST.version, `Cargo.lock's entry for ${crate} is stale: run cargo build`);

  const npmLock = JSON.parse(await readFile(join(ROOT, "package-lock.json"), "utf8"));
  assert.equal(npmLock.packages?.[""]?.version, MANIFEST.version, "package-lock.json is stale: run npm install");
});

test("CHANGELOG.md has a heading for package.json's version", async () => {
  const changelog = await readFile(join(ROOT, "CHANGELOG.md"), "utf8");
  const heading = new RegExp(`^#+ .*\\b${escape(MANIFEST.version)}\\b`, "m");
  assert.match(changelog, heading, `no "## ${MANIFEST.version}" section in CHANGELOG.md`);
});

test("the Vite template pins the repository's vite and names the tarball `npm pack` makes", async () => {
  // Same version as the root lockfile: that is what makes the template installable from the cache.
  const template = JSON.parse(await readFile(join(ROOT, "tests/vite-app/package.json"), "utf8"));
  assert.equal(template.devDependencies.vite, MANIFEST.devDependencies.vite);
  assert.equal(template.dependencies["webgpu-rmsnorm"], `file:../../webgpu-rmsnorm-${MANIFEST.version}.tgz`);
});

// ------------------------------------------------------------------------------------ types

/** Runs tsc; resolves with its exit code and output instead of throwing on type errors. */
async function tsc(project) {
  try {
    const { stdout } = await run(process.execPath, [TSC, "-p", project, "--pretty", "false", "--listFiles"], { cwd: app });
    return { code: 0, stdout };
  } catch (e) {
    if (typeof e.code !== "number") throw e;
    return { code: e.code, stdout: e.stdout };
  }
}

test("types: tests/types/use.ts, the whole API, type-checks against the installed tarball", async () => {
  const { code, stdout } = await tsc("types/tsconfig.json");
  const errors = stdout.split("\n").filter((l) => l.includes("error TS"));
  assert.deepEqual(errors, [], "use.ts must type-check");
  assert.equal(code, 0);
  // Resolved by the package name through the installed package.json's "exports", not by a path.
  const declared = join(app, "node_modules/webgpu-rmsnorm/pkg/webgpu_rmsnorm.d.ts");
  assert.ok(stdout.split("\n").includes(declared), `tsc did not read ${declared}`);
});

test("types: every misuse in tests/types/misuse.ts is a type error on its own line, and nothing else is", async () => {
  const { code, stdout } = await tsc("types/tsconfig.misuse.json");
  assert.notEqual(code, 0, "tsc accepted misuse.ts");

  const source = (await readFile(join(app, "types/misuse.ts"), "utf8")).split("\n");
  const marked = new Map();
  source.forEach((line, i) => {
    const what = line.match(/\/\/ misuse: (.*)$/)?.[1];
    if (what) marked.set(i + 1, what);
  });
  assert.ok(marked.size >= 5, "misuse.ts has its marked lines");

  const errorsByLine = new Map();
  for (const m of stdout.matchAll(/misuse\.ts\((\d+),\d+\): error (TS\d+): (.*)/g)) {
    const line = Number(m[1]);
    errorsByLine.set(line, [...(errorsByLine.get(line) ?? []), `${m[2]} ${m[3]}`]);
  }
  const accepted = [...marked].filter(([line]) => !errorsByLine.has(line)).map(([line, what]) => `line ${line}: ${what}`);
  assert.deepEqual(accepted, [], "misuse the types accept");
  const stray = [...errorsByLine].filter(([line]) => !marked.has(line)).map(([line, errs]) => `line ${line}: ${errs.join("; ")}`);
  assert.deepEqual(stray, [], "errors on lines that are not marked as misuse");
  // Anything else tsc complains about (a file it cannot find, the .d.ts itself) is not misuse.ts's.
  const elsewhere = stdout.split("\n").filter((l) => l.includes("error TS") && !/misuse\.ts\(/.test(l));
  assert.deepEqual(elsewhere, []);
});

// ------------------------------------------------------------------------------------- Vite

let dist;

test("vite build bundles the package and emits its .wasm as an asset", async (t) => {
  const { stdout, stderr } = await run(process.execPath, [join(app, "node_modules/vite/bin/vite.js"), "build"], { cwd: app });
  const output = stdout + stderr;
  assert.doesNotMatch(output, /warn|error|\(!\)/i, output);
  dist = join(app, "dist");
  const assets = await readdir(join(dist, "assets"));
  const wasm = assets.filter((f) => f.endsWith(".wasm"));
  assert.equal(wasm.length, 1, `one .wasm asset expected, got ${assets.join(", ")}`);
  t.diagnostic(assets.join(", "));
});

for (const how of ["url", "default"]) {
  const label = how === "url" ? "init({ module_or_path }) with a ?url import" : "a bare init()";
  test(`vite app, ${label}: results match the f64 reference in Chromium, no console errors`, async (t) => {
    assert.ok(dist, "needs the vite build test to pass first");
    const server = await serve({ port: 0, mounts: [["/", dist]] });
    const problems = [];
    const page = await watchedPage(browser, problems);
    try {
      await page.goto(`${server.url}?init=${how}`);
      await page.waitForSelector('#state:not([data-state="loading"])', { timeout: 30_000 });
      const state = await page.getAttribute("#state", "data-state");
      const text = await page.textContent("#report");
      assert.equal(state, "pass", text);
      const report = JSON.parse(text);
      assert.equal(report.how, how);
      assert.deepEqual(report.results.filter((r) => !r.ok), []);
      assert.ok(report.results.every((r) => r.isFloat32Array));
      assert.equal(report.rejected, "ShapeError");
      // The module was fetched from the hashed asset Vite emitted, not a path that happens to resolve.
      const assets = (await readdir(join(dist, "assets"))).filter((f) => f.endsWith(".wasm"));
      assert.deepEqual(report.wasm, [`/assets/${assets[0]}`]);
      assert.deepEqual(problems, []);
      t.diagnostic(`adapter ${report.adapter}; worst relative error ${Math.max(...report.results.map((r) => r.worst)).toExponential(2)}`);
    } finally {
      await page.close();
      await server.close();
    }
  });
}

// ------------------------------------------------------------------------------ Web Worker

test("www/worker.html: the package runs in a module worker and its result matches the reference", async (t) => {
  // As `bash scripts/demo.sh` serves it.
  const server = await serve({ port: 0, mounts: [["/", join(ROOT, "www")], ["/pkg", join(ROOT, "pkg")]] });
  const problems = [];
  const page = await watchedPage(browser, problems);
  const settle = async () => {
    await page.click("#run");
    await page.waitForSelector('#status:not([data-state="running"]):not([data-state="ready"])', { timeout: 30_000 });
    await page.waitForSelector("#run:not([disabled])");
    return { state: await page.getAttribute("#status", "data-state"), text: (await page.textContent("#status")).trim() };
  };
  try {
    await page.goto(`${server.url}worker.html`);
    await page.waitForSelector('#status[data-state="ready"]', { timeout: 30_000 });
    assert.equal(await page.textContent('#adapter [data-field="scope"]'), "DedicatedWorkerGlobalScope");
    // backend "auto": the CPU backend on this software adapter, WebGPU on a real GPU.
    const fallback = (await page.textContent('#adapter [data-field="fallback"]')).includes("Fallback");
    assert.match(await page.textContent('#adapter [data-field="backend"]'), fallback ? /^CPU/ : /^WebGPU$/);

    await page.fill("#rows", "6");
    await page.fill("#hidden", "1000");
    let status = await settle();
    assert.equal(status.state, "done", status.text);
    assert.match(status.text, /6 × 1000/);
    const maxRel = Number.parseFloat(await page.textContent("#max-rel"));
    assert.ok(maxRel <= 1e-5, `#max-rel is ${maxRel}`);
    assert.equal(await page.$$eval("#output tbody tr", (rows) => rows.length), 4);

    // The library's error names cross the worker boundary intact, and the worker recovers.
    await page.fill("#hidden", "0");
    status = await settle();
    assert.equal(status.state, "error", status.text);
    assert.match(status.text, /^ShapeError: hidden/);
    await page.fill("#rows", "3");
    await page.fill("#hidden", "4099");
    await page.uncheck("#bias");
    status = await settle();
    assert.equal(status.state, "done", status.text);

    // The wasm was loaded by the worker, never by the page.
    const wasmIn = (ctx) => ctx.evaluate(() => performance.getEntriesByType("resource").filter((e) => e.name.endsWith(".wasm")).length);
    assert.equal(await wasmIn(page), 0, "the page itself fetched the .wasm");
    const workers = page.workers();
    assert.equal(workers.length, 1);
    assert.match(workers[0].url(), /\/worker\.js$/);
    assert.equal(await wasmIn(workers[0]), 1);

    assert.deepEqual(problems, []);
    t.diagnostic(`6 × 1000 in the worker: max relative error ${maxRel}`);
  } finally {
    await page.close();
    await server.close();
  }
});

test("the demo page links to the worker example", async () => {
  const html = await readFile(join(ROOT, "www/index.html"), "utf8");
  assert.match(html, /href="\.\/worker\.html"/);
});
