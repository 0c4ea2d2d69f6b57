// The page harness of the Chromium suites: pkg/ as built (no npm pack: the package/ suites
// cover the tarball), written into a temporary folder's pages and served next to the
// repository's www/lib/ modules (seeded inputs, the f64 reference, f16 conversions) and the
// suites' in-page helpers (support/page/, at /test-lib), by one server per set of headers
// (SERVERS), in one headless Chromium per suite driven with playwright-core. Two pages:
//
// - index.html imports the package and those modules as `window.lib`; `window.ready`
//   resolves once the module is initialized, unless the URL says ?noinit (for the tests of
//   use before init()); ?backend=cpu tells the tests that run on both backends which one to
//   make their instances with (`window.backend`, "webgpu" by default).
// - harness.html (and importmap.html: the same through the consumer's import map, by the
//   package's bare name) resolves `window.harness` with an initialized module, an instance
//   and the reliability suites' checks (makeArgs, check, settle…).
//
// RELIABILITY_SEED=<n> replays the randomized numerics sweep and concurrency mix.
import { test as nodeTest, before, after } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { serve } from "../../../scripts/serve.mjs";
import { launch, watchedPage } from "./chromium.mjs";
import { ROOT, assertBuilt } from "./repo.mjs";

/**
 * A test with a generous hang limit: page.evaluate has no timeout of its own, and a hung call
 * must fail its test, not stall CI. `opts` (optional) may raise the limit.
 */
export const test = (name, opts, fn) =>
  typeof opts === "function" ? nodeTest(name, { timeout: 90_000 }, opts) : nodeTest(name, { timeout: 90_000, ...opts }, fn);

export const SEED = Number(process.env.RELIABILITY_SEED ?? Math.floor(Math.random() * 2 ** 31));

const LIB_PAGE = `<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,"><script type="module">
import init, * as pkg from "/pkg/webgpu_rmsnorm.js";
import * as ref from "/lib/reference.js";
import * as seeded from "/lib/seeded.js";
import * as f16 from "/lib/f16.js";
import * as appGpu from "/lib/app-gpu.js";
import * as readings from "/test-lib/readings.js";
import { familyHelpers } from "/test-lib/family.js";
window.lib = { init, pkg, ref, seeded, f16, readings, family: familyHelpers({ ref, seeded, f16, appGpu }) };
window.backend = new URLSearchParams(location.search).get("backend") ?? "webgpu";
window.ready = location.search.includes("noinit") ? Promise.resolve() : init();
</script>`;

// The harness page's module: checks run in the page, next to the data; only reports cross to node.
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

const FILES = {
  "index.html": LIB_PAGE,
  "harness.html": html(`  <script type="module" src="./harness.js"></script>`),
  "harness.js": HARNESS.replace("__PKG__", "./pkg/webgpu_rmsnorm.js"),
  "importmap.html": html(`  <script type="importmap">${IMPORT_MAP}</script>\n  <script type="module" src="./bare.js"></script>`),
  "bare.js": HARNESS.replace("__PKG__", "webgpu-rmsnorm"),
};

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
 * Registers a suite's before and after hooks: the pages in a temporary folder named
 * `prefix`…, a server for each of SERVERS (with /pkg, /lib, /test-lib and `mounts`, [url
 * path, folder] pairs), and one Chromium (none with `browser: false`: a suite that launches its
 * own, with switches of its own, and passes it to openPage). Returns the suite's handle:
 *
 * - `inPage(fn, arg, options)`: fn run in a fresh index.html once the module is ready;
 * - `openPage(on, options)`: such a page, left open for the caller to drive and close;
 * - `inHarness(fn, arg)`: fn run in the suite's one harness.html, opened at its first call;
 * - `harnessPage(server, options)`: a harness page in a browser context of its own;
 * - `problems`: the console errors and uncaught exceptions of the pages watched by default;
 * - `requests`: every request of every page, with the origin of the page that made it, and
 *   `foreignRequests()`, those outside that origin;
 * - once started, `servers` (by the names of SERVERS), `server` (the plain one), `browser`.
 *
 * The after hook fails the suite if a console error came after the last check of `problems`
 * (inHarness makes one; a suite of inPage calls ends with a test of its own, whose list
 * `allowedProblems` may filter), or if any page asked for anything outside its own origin
 * (security.test.mjs's request test, made at the end of every suite).
 */
export function pageSuite(prefix, { mounts = [], allowedProblems, browser = true } = {}) {
  let dir, main;
  const problems = [];
  const requests = [];
  const suite = { servers: {}, server: undefined, browser: undefined, problems, requests };

  /** The requests of the pages that went outside their own origin. */
  suite.foreignRequests = () =>
    requests.filter(({ origin, url }) => !url.startsWith("data:") && new URL(url).origin !== origin);

  /** A watched page of `on` at `url`, with `init` run before the page's own scripts. */
  async function watched(on, url, { watch = problems, init } = {}) {
    const page = await watchedPage(on, watch);
    const origin = new URL(url).origin;
    page.on("request", (r) => requests.push({ origin, url: r.url() }));
    if (init) await page.addInitScript(init);
    await page.goto(url);
    return page;
  }

  /**
   * index.html in the suite's browser (or `on`), at the plain server's URL with `query`
   * appended (or at `url`), once its module is ready; console errors go to `watch`.
   */
  suite.openPage = async (on = suite.browser, { query = "", url = `${suite.server.url}${query}`, init, watch } = {}) => {
    const page = await watched(on, url, { init, watch });
    await page.evaluate(() => window.ready);
    return page;
  };

  /** Runs `fn(arg)` in a fresh index.html (openPage's options), then closes it. */
  suite.inPage = async (fn, arg, options) => {
    const page = await suite.openPage(options?.on, options);
    try {
      return await page.evaluate(fn, arg);
    } finally {
      await page.close();
    }
  };

  /**
   * A harness page of `server` (`path`: harness.html or importmap.html) in a context of its
   * own: console errors go to `watch`, and CSP violations (from before any page script runs)
   * to window.cspViolations.
   */
  suite.harnessPage = async (server, { path = "harness.html", watch = problems } = {}) => {
    const context = await suite.browser.newContext();
    const init = () => {
      window.cspViolations = [];
      document.addEventListener("securitypolicyviolation", (e) =>
        window.cspViolations.push(`${e.violatedDirective} ${e.blockedURI}`));
    };
    return watched(context, server.url + path, { watch, init });
  };

  /** Runs fn in the suite's harness page; fails if anything logged a console error meanwhile. */
  suite.inHarness = async (fn, arg) => {
    if (!main) {
      main = await suite.harnessPage(suite.server);
      await main.evaluate(() => window.harness.then(() => true));
    }
    const result = await main.evaluate(fn, arg);
    assert.deepEqual(problems.splice(0), [], "console errors or page errors in the page");
    return result;
  };

  before(async () => {
    assertBuilt();
    dir = await mkdtemp(join(tmpdir(), prefix));
    for (const [name, text] of Object.entries(FILES)) await writeFile(join(dir, name), text);
    const served = [
      ["/", dir], ["/pkg", join(ROOT, "pkg")], ["/lib", join(ROOT, "www/lib")],
      ["/test-lib", join(ROOT, "tests/e2e/support/page")], ...mounts,
    ];
    for (const [name, headers] of Object.entries(SERVERS)) suite.servers[name] = await serve({ port: 0, mounts: served, headers });
    suite.server = suite.servers.plain;
    if (browser) suite.browser = await launch();
  }, { timeout: 60_000 });

  after(async () => {
    const late = problems.splice(0).filter((p) => !allowedProblems?.test(p));
    const foreign = suite.foreignRequests();
    await suite.browser?.close();
    for (const s of Object.values(suite.servers)) await s.close();
    if (dir) await rm(dir, { recursive: true, force: true });
    assert.deepEqual(late, [], "console errors or page errors after the suite's last check");
    assert.deepEqual(foreign, [], "requests outside the pages' own origin");
  });

  return suite;
}
