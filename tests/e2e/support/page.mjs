// The page the in-browser suites run the built package in (pkg/, not the packed tarball), and
// the one way they run code there. The page imports the package and the repository's shared
// www/lib/ modules (seeded inputs, the f64 reference, f16 conversions), with the suites' own
// in-page helpers (tests/e2e/support/page/), as `window.lib`;
// `window.ready` resolves once the module is initialized, unless the URL says ?noinit (for
// the tests of use before init()); ?backend=cpu tells the tests that run on both backends
// which one to make their instances with (`window.backend`, "webgpu" by default).
import { test, before, after } from "node:test";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { serve } from "../../../scripts/serve.mjs";
import { ROOT, assertBuilt, launch, watchedPage } from "./chromium.mjs";

const PAGE = `<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,"><script type="module">
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

/** A test with a timeout: page.evaluate has none of its own, and a hung call must fail its test, not stall CI. */
export const timedTest = (name, fn) => test(name, { timeout: 90_000 }, fn);

/**
 * Registers the suite's before and after hooks: the page in a temporary folder named
 * `prefix`…, served with /pkg, /lib and `mounts` ([url path, folder] pairs), and one Chromium. Returns the suite's handle:
 * `inPage`, `problems` (every console error and uncaught exception of its pages), and, once
 * started, `server` and `browser`.
 */
export function packagePage(prefix, { mounts = [] } = {}) {
  let dir;
  const suite = { problems: [], server: undefined, browser: undefined, inPage };

  before(async () => {
    assertBuilt();
    dir = await mkdtemp(join(tmpdir(), prefix));
    await writeFile(join(dir, "index.html"), PAGE);
    suite.server = await serve({
      port: 0,
      mounts: [
        ["/", dir], ["/pkg", join(ROOT, "pkg")], ["/lib", join(ROOT, "www/lib")],
        ["/test-lib", join(ROOT, "tests/e2e/support/page")], ...mounts,
      ],
    });
    suite.browser = await launch();
  });

  after(async () => {
    await suite.browser?.close();
    await suite.server?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /**
   * Runs `fn(arg)` in a fresh page once the module is ready: in the suite's browser (or `on`),
   * at the page's URL with `query` appended (or at `url`), with `init` run before the page's
   * own scripts.
   */
  async function inPage(fn, arg, { on = suite.browser, query = "", url = `${suite.server.url}${query}`, init } = {}) {
    const page = await watchedPage(on, suite.problems);
    try {
      if (init) await page.addInitScript(init);
      await page.goto(url);
      await page.evaluate(() => window.ready);
      return await page.evaluate(fn, arg);
    } finally {
      await page.close();
    }
  }

  return suite;
}
