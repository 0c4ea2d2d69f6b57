// What the benchmark drivers (bench.mjs, pipeline.mjs, calls.mjs) share: the command line, the
// record of what was measured (commit, package, machine load), a page served cross-origin isolated
// in headless Chromium with its `window.bench` opened, and the results file in bench-out/.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdir, readFile, stat, writeFile } from "node:fs/promises";
import { cpus, loadavg } from "node:os";
import { join, resolve } from "node:path";
import { serve } from "../../scripts/serve.mjs";
import { launch } from "../../tests/e2e/support/chromium.mjs";
import { ROOT } from "../../tests/e2e/support/repo.mjs";
import { firefoxBrowser } from "../../tests/e2e/support/firefox.mjs";
import { launchWebKit } from "../../tests/e2e/support/webkit.mjs";

export const OUT_DIR = join(ROOT, "bench-out");

/** `--name value` pairs of the command line. */
export const options = Object.fromEntries(
  process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith("--") ? [...acc, [a.slice(2), all[i + 1]]] : acc), []),
);

/** --pkg measures another build of the package (say, a clean checkout's) instead of ./pkg. */
export const PKG = resolve(options.pkg ?? join(ROOT, "pkg"));

// pkg/ is a build output that can lag behind the sources: record what was measured.
async function provenance() {
  let commit = null;
  try {
    commit = execFileSync("git", ["-C", ROOT, "describe", "--always", "--dirty"], { encoding: "utf8" }).trim();
  } catch {}
  const wasm = join(PKG, "webgpu_rmsnorm_bg.wasm");
  return {
    // The checkout the benchmark ran from; with --pkg, the package may come from elsewhere.
    benchCommit: commit,
    pkg: PKG,
    wasmSha256: createHash("sha256").update(await readFile(wasm)).digest("hex").slice(0, 16),
    wasmBuilt: (await stat(wasm)).mtime.toISOString(),
  };
}

function watch(page) {
  page.setDefaultTimeout(0);
  page.on("pageerror", (e) => console.error("page error:", e));
  page.on("response", (r) => {
    if (r.status() >= 400 && !r.url().endsWith("/favicon.ico")) console.error(`HTTP ${r.status()} ${r.url()}`);
  });
  page.on("console", (m) => {
    // The page's own 404 for favicon.ico is noise; real failures surface through "response".
    if ((m.type() === "error" || m.type() === "warning") && !m.text().startsWith("Failed to load resource")) console.error(`[page ${m.type()}] ${m.text()}`);
  });
}

/**
 * `url` opened in `browser` as { env, call(fn, cfg), close() }: Chromium through Playwright
 * (what the WebGPU sections need), Firefox ESR and WebKit through the end-to-end suite's
 * drivers (tests/e2e/support/firefox.mjs, webkit.mjs), whose pages report console errors
 * into a list printed after each call. `call` runs window.bench[fn](cfg).
 */
async function openIn(browser, url) {
  if (browser === "chromium") {
    const b = await launch();
    try {
      const page = await b.newPage();
      watch(page);
      await page.goto(url);
      await page.waitForFunction(() => window.benchReady === true);
      return { call: (fn, cfg) => page.evaluate(([fn, cfg]) => window.bench[fn](cfg), [fn, cfg]), close: () => b.close() };
    } catch (e) {
      await b.close();
      throw e;
    }
  }
  const open = { firefox: firefoxBrowser, webkit: launchWebKit }[browser];
  if (!open) throw new Error(`--browser: expected chromium, firefox or webkit, got ${browser}`);
  const b = await open();
  const problems = [];
  const report = () => problems.splice(0).forEach((p) => console.error(`[page] ${p}`));
  try {
    const page = await b.open(url, problems);
    await page.waitFor(() => window.benchReady === true, 60_000);
    const call = async (fn, cfg) => {
      try {
        return await page.evaluate((fn, cfg) => window.bench[fn](cfg), fn, cfg);
      } finally {
        report();
      }
    };
    return { call, close: () => b.close() };
  } catch (e) {
    report();
    await b.close();
    throw e;
  }
}

/**
 * Serves bench/, the package, onnxruntime-web and the shared www/lib/ (plus `mounts`), opens
 * bench/browser/`html` in `browser` (chromium, the default; firefox; webkit) and its
 * `window.bench.setup()`, and prints what runs where. Resolves with
 * { env, measure, finish, close }: `measure(fn, cfg, label)` runs window.bench[fn](cfg) (a
 * failure is logged, marks the run failed and comes back as { error });
 * `finish(file, fields, results)` writes bench-out/`file`; `close()` stops browser and server.
 */
export async function openBench({ html, mounts = [], browser = "chromium" }) {
  const loadavgBefore = loadavg();
  const build = await provenance();
  const server = await serve({
    port: 0,
    mounts: [
      ["/bench/", join(ROOT, "bench")],
      ["/pkg/", PKG],
      ["/ort/", join(ROOT, "node_modules/onnxruntime-web/dist")],
      ["/www/lib/", join(ROOT, "www/lib")],
      ...mounts,
    ],
    // Cross-origin isolation narrows performance.now() from 100 µs steps to 5 µs.
    headers: { "Cross-Origin-Opener-Policy": "same-origin", "Cross-Origin-Embedder-Policy": "require-corp" },
  });
  let page;
  const close = async () => {
    await page?.close();
    await server.close();
  };
  try {
    page = await openIn(browser, `${server.url}bench/browser/${html}`);
    const env = await page.call("setup");
    console.log(`${browser}: ${env.userAgent}; adapter: ${JSON.stringify(env.ours)}`);
    console.log(`cross-origin isolated: ${env.crossOriginIsolated}; onnxruntime-web ${env.ort?.web ?? "?"}`);
    console.log(`bench from ${build.benchCommit}; package ${build.pkg}: wasm ${build.wasmSha256} built ${build.wasmBuilt}`);
    console.log(`load average before: ${loadavgBefore.map((x) => x.toFixed(2)).join(" ")} on ${cpus().length} cores`);

    const measure = async (fn, cfg, label) => {
      let r;
      try {
        r = await page.call(fn, cfg);
      } catch (e) {
        // One failing case should not cost the others' numbers; the run still exits non-zero.
        const error = String(e.message ?? e).split("\n").slice(0, 3).join(" ");
        console.error(`${label}: FAILED: ${error}`);
        process.exitCode = 1;
        return { error };
      }
      // A WebGPU comparison must have run both on one adapter (the CPU section has no ORT adapter).
      if ("ortAdapter" in r && JSON.stringify(r.ortAdapter) !== JSON.stringify(env.ours)) {
        throw new Error(`ORT ran on another adapter: ${JSON.stringify(r.ortAdapter)} vs ours ${JSON.stringify(env.ours)}`);
      }
      return r;
    };

    const finish = async (file, fields, results) => {
      await mkdir(OUT_DIR, { recursive: true });
      const json = {
        date: new Date().toISOString(),
        ...fields,
        build,
        // A CPU adapter shares the cores with everything else: the load says how quiet it was.
        host: { cores: cpus().length, loadavgBefore, loadavgAfter: loadavg() },
        env,
        results,
      };
      await writeFile(join(OUT_DIR, file), JSON.stringify(json, null, 2) + "\n");
      console.log(`wrote ${join("bench-out", file)}`);
    };
    return { env, measure, finish, close };
  } catch (e) {
    await close();
    throw e;
  }
}
