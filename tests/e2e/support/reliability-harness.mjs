// What the reliability suites share (bad-input, numerics, concurrency-and-device-loss,
// long-runs-and-big-inputs and security .test.mjs): a small harness page, written into a
// temporary folder and served next to pkg/ as built (no npm pack: package.test.mjs covers
// the tarball) by one server per set of headers, in one Chromium per suite driven with
// playwright-core.
//
// RELIABILITY_SEED=<n> replays the randomized numerics sweep and concurrency mix.
import { test as nodeTest, before, after } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { serve } from "../../../scripts/serve.mjs";
import { ROOT, assertBuilt, launch, watchedPage } from "./chromium.mjs";

// page.evaluate has no timeout of its own: a hung GPU call must fail its test, not stall CI.
export const test = (name, opts, fn) =>
  typeof opts === "function" ? nodeTest(name, { timeout: 60_000 }, opts) : nodeTest(name, { timeout: 60_000, ...opts }, fn);

export const SEED = Number(process.env.RELIABILITY_SEED ?? Math.floor(Math.random() * 2 ** 31));

// ---------------------------------------------------------------------------------------
// The harness page. Checks run in the page, next to the data; only reports cross to node.
// ---------------------------------------------------------------------------------------

const HARNESS = String.raw`
import init, { FusedRmsNorm } from "__PKG__";
import { compare } from "./lib/reference.js";
import { caseArgs, describeArgs, rng } from "./lib/seeded.js";

/** One call's arguments. scale multiplies input and residual (bias too), row by row if an array. */
function makeArgs({ scale = 1, ...c }) {
  const args = caseArgs(c);
  const rowScale = (r) => (Array.isArray(scale) ? scale[r % scale.length] : scale);
  if (scale !== 1) {
    for (let r = 0; r < c.rows; r++) {
      const k = rowScale(r);
      for (let i = r * c.hidden; i < (r + 1) * c.hidden; i++) {
        args.input[i] *= k;
        args.residual[i] *= k;
      }
    }
    // A bias of magnitude ~1 would swamp a row of ~1e-30: scale it by the smallest row scale.
    if (args.bias) {
      const k = Array.isArray(scale) ? Math.min(...scale.map(Math.abs)) : scale;
      for (let i = 0; i < c.hidden; i++) args.bias[i] *= k;
    }
  }
  return args;
}

/** A result against the f64 reference (www/lib/reference.js), in rowList only if given. */
const check = (args, output, sum, rowList) => compare(args, output, { sum, rows: rowList });

/** Settles p: { ok: value } or { err: { name, message, isError } }. */
async function settle(p) {
  try {
    return { ok: await p };
  } catch (e) {
    return { err: { name: e?.name, message: String(e?.message ?? e), isError: e instanceof Error } };
  }
}

window.harness = (async () => {
  const wasm = await init();
  const norm = await FusedRmsNorm.create();
  document.getElementById("state").textContent = "ready";
  return { wasm, norm, FusedRmsNorm, rng, makeArgs, check, describeArgs, settle };
})();
window.harness.catch((e) => {
  document.getElementById("state").textContent = "failed: " + e;
});
`;

const html = (head) => `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>webgpu-rmsnorm reliability</title>
  <link rel="icon" href="data:,">
${head}
</head>
<body><p id="state">loading</p></body>
</html>
`;

// The import map of package.test.mjs's consumer page, allowed by its hash under the CSP.
const IMPORT_MAP = `{ "imports": { "webgpu-rmsnorm": "./pkg/webgpu_rmsnorm.js" } }`;
const IMPORT_MAP_HASH = `sha256-${createHash("sha256").update(IMPORT_MAP).digest("base64")}`;

const CSP = "script-src 'self' 'wasm-unsafe-eval'";
const SERVERS = {
  plain: {},
  // Cross-origin isolated: SharedArrayBuffer exists.
  isolated: { "Cross-Origin-Opener-Policy": "same-origin", "Cross-Origin-Embedder-Policy": "require-corp" },
  csp: { "Content-Security-Policy": CSP },
  cspImportMap: { "Content-Security-Policy": `${CSP} '${IMPORT_MAP_HASH}'` },
  // The control: without 'wasm-unsafe-eval' the module cannot compile.
  cspNoWasm: { "Content-Security-Policy": "script-src 'self'" },
};

/**
 * Registers a suite's before and after hooks: the harness page in a temporary folder named
 * `prefix`…, a server for each of SERVERS, one Chromium, and the main page (a harness page of
 * the plain server) once its harness is ready. Returns the suite's handle: `servers` (by the
 * names of SERVERS, once started), `harnessPage`, `inPage`, `problems` (console errors and
 * uncaught exceptions of the main page and of harness pages watched by default) and
 * `requests` (every request of every harness page).
 *
 * The after hook fails the suite if a console error came after the last inPage, or if any
 * page asked for anything outside its own origin (the checks of security.test.mjs's request
 * test and of the main-page test at the end of concurrency-and-device-loss.test.mjs, made at
 * the end of every suite too, so that each suite's pages stay covered).
 */
export function reliabilitySuite(prefix) {
  let tmp, browser, page;
  const servers = {};
  const problems = [];
  const requests = [];

  /**
   * A harness page of `server` in a context of its own: console errors go to `watch`, every
   * request to `requests`, and CSP violations (from before any page script runs) to
   * window.cspViolations.
   */
  async function harnessPage(server, { path = "", watch = problems } = {}) {
    const context = await browser.newContext();
    const p = await watchedPage(context, watch);
    await p.addInitScript(() => {
      window.cspViolations = [];
      document.addEventListener("securitypolicyviolation", (e) =>
        window.cspViolations.push(`${e.violatedDirective} ${e.blockedURI}`));
    });
    p.on("request", (r) => requests.push({ page: server.url, url: r.url() }));
    await p.goto(server.url + path);
    return p;
  }

  /** Runs fn in the main page; fails if anything logged a console error meanwhile. */
  async function inPage(fn, arg) {
    const result = await page.evaluate(fn, arg);
    const seen = problems.splice(0);
    assert.deepEqual(seen, [], "console errors or page errors in the page");
    return result;
  }

  /** The requests of the pages that went outside their own origin. */
  const foreignRequests = () =>
    requests.filter(({ page: origin, url }) => !url.startsWith(origin) && !url.startsWith("data:"));

  before(async () => {
    assertBuilt();
    tmp = await mkdtemp(join(tmpdir(), prefix));
    const files = {
      "index.html": html(`  <script type="module" src="./main.js"></script>`),
      "main.js": HARNESS.replace("__PKG__", "./pkg/webgpu_rmsnorm.js"),
      "importmap.html": html(`  <script type="importmap">${IMPORT_MAP}</script>\n  <script type="module" src="./bare.js"></script>`),
      "bare.js": HARNESS.replace("__PKG__", "webgpu-rmsnorm"),
    };
    for (const [name, text] of Object.entries(files)) await writeFile(join(tmp, name), text);
    for (const [name, headers] of Object.entries(SERVERS)) {
      servers[name] = await serve({ port: 0, mounts: [["/", tmp], ["/pkg", join(ROOT, "pkg")], ["/lib", join(ROOT, "www/lib")]], headers });
    }
    browser = await launch();
    page = await harnessPage(servers.plain);
    await page.evaluate(() => window.harness.then(() => true));
  }, { timeout: 60_000 });

  after(async () => {
    const late = problems.splice(0);
    const foreign = foreignRequests();
    await browser?.close();
    for (const s of Object.values(servers)) await s.close();
    if (tmp) await rm(tmp, { recursive: true, force: true });
    assert.deepEqual(late, [], "console errors or page errors in the main page after its last check");
    assert.deepEqual(foreign, [], "requests outside the pages' own origin");
  });

  return { servers, problems, requests, harnessPage, inPage };
}
