// Security in headless Chromium: the package works under a strict CSP (and through the
// consumer's hashed import map), the CSP is really enforced (the control), the shipped JS
// has no eval, and no page asks for anything outside its own origin. The harness page and
// its servers: support/page.mjs.
//
//   bash scripts/build.sh && node --test --test-reporter=spec tests/e2e/browsers/security.test.mjs
import assert from "node:assert/strict";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";

import { ROOT } from "../support/repo.mjs";
import { pageSuite, test } from "../support/page.mjs";

const { servers, requests, foreignRequests, harnessPage } = pageSuite("webgpu-rmsnorm-security-");

// ---------------------------------------------------------------------------------------
// Security
// ---------------------------------------------------------------------------------------

async function cspPage(server, path = "harness.html") {
  const watch = [];
  const p = await harnessPage(server, { watch, path });
  const r = await p.evaluate(async () => {
    const out = {};
    try {
      const h = await window.harness;
      const a = h.makeArgs({ rows: 5, hidden: 768, bias: true, beta: true, seed: 12 });
      const { output, sum } = await h.norm.runWithSum(a);
      out.check = h.check(a, output, sum);
    } catch (e) {
      out.error = `${e?.name}: ${e?.message}`;
    }
    out.violations = window.cspViolations;
    out.state = document.getElementById("state").textContent;
    return out;
  });
  await p.context().close();
  return { ...r, console: watch };
}

test("security: under CSP script-src 'self' 'wasm-unsafe-eval' the page works, correct, with no CSP violation", async () => {
  const r = await cspPage(servers.csp);
  assert.equal(r.error, undefined, r.error);
  assert.ok(r.check.ok, r.check.problems.join("; "));
  assert.deepEqual(r.violations, []);
  assert.deepEqual(r.console, [], "console errors (a CSP violation logs one)");
});

test("security: the consumer's import map, allowed by its sha256 hash under the same CSP, works with no violation", async () => {
  const r = await cspPage(servers.cspImportMap, "importmap.html");
  assert.equal(r.error, undefined, r.error);
  assert.ok(r.check.ok, r.check.problems.join("; "));
  assert.deepEqual(r.violations, []);
  assert.deepEqual(r.console, []);
});

test("security (control): without 'wasm-unsafe-eval' the CSP blocks the module; the violation listener works", async () => {
  // The control shows the CSP header is enforced on these pages (so the test above means
  // something), and that the page's violation listener records what a CSP blocks.
  const r = await cspPage(servers.cspNoWasm);
  assert.match(r.error ?? "", /CompileError.*Content Security Policy/, "the page must fail to instantiate the wasm");
  const watch = [];
  const p = await harnessPage(servers.cspNoWasm, { watch });
  const seen = await p.evaluate(async () => {
    const s = document.createElement("script");
    s.textContent = "window.inlineRan = true";
    document.head.append(s);
    await new Promise((ok) => setTimeout(ok, 100));
    return { blocked: window.inlineRan !== true, violations: window.cspViolations };
  });
  await p.context().close();
  assert.ok(seen.blocked, "an inline script is blocked by script-src 'self'");
  assert.ok(seen.violations.some((v) => /script-src/.test(v)), `the listener saw no violation: ${JSON.stringify(seen)}`);
});

test("security: the shipped JS (glue and wasm-bindgen's snippets) has no eval( or new Function", async () => {
  const snippets = (await readdir(join(ROOT, "pkg", "snippets"), { recursive: true })).filter((f) => f.endsWith(".js"));
  assert.ok(snippets.length > 0, "pkg/snippets holds the inline JavaScript");
  const sources = ["index.js", "webgpu_rmsnorm.js", ...snippets.map((f) => join("snippets", f))];
  const js = (await Promise.all(sources.map((f) => readFile(join(ROOT, "pkg", f), "utf8")))).join("\n");
  const hits = [/\beval\s*\(/, /\bnew\s+Function\b/, /\bsetTimeout\s*\(\s*["'`]/, /\bsetInterval\s*\(\s*["'`]/]
    .flatMap((re) => js.split("\n").map((line, i) => [re, line, i + 1]).filter(([re, line]) => re.test(line)))
    .map(([re, line, n]) => `${n}: ${line.trim()}`);
  assert.deepEqual(hits, []);
});

test("security: the pages make no network request outside their own origin", () => {
  assert.ok(requests.length > 0, "requests were recorded");
  assert.deepEqual(foreignRequests(), []);
});
