// What the end-to-end tests and the browser benchmarks share: the one way to start Chromium
// with a WebGPU adapter here, and a page whose console errors and uncaught exceptions fail
// the test.
import { existsSync } from "node:fs";
import { chromium } from "playwright-core";

export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

// --enable-unsafe-webgpu: without it the CPU (SwiftShader) adapter is blocklisted and
// requestAdapter() is null. Never --disable-gpu / --disable-software-rasterizer: they remove
// that adapter. The rest keeps an offline machine from waiting on network services.
export const CHROMIUM_ARGS = [
  "--headless=new",
  "--no-sandbox",
  "--enable-unsafe-webgpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
  "--disable-quic",
];

export async function launch() {
  return launchWith([]);
}

/**
 * launch() with `extra` switches after CHROMIUM_ARGS (a test that turns a browser policy off),
 * and without those of `drop` (a test of a browser that offers no adapter).
 */
export async function launchWith(extra, drop = []) {
  if (!existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM} (set CHROMIUM_PATH)`);
  return chromium.launch({ executablePath: CHROMIUM, args: [...CHROMIUM_ARGS.filter((a) => !drop.includes(a)), ...extra] });
}

/** A page that records every console error and uncaught exception into `problems`. */
export async function watchedPage(browserOrContext, problems) {
  const page = await browserOrContext.newPage();
  page.on("console", (m) => {
    if (m.type() === "error") problems.push(`console.error: ${m.text()} (${m.location().url}:${m.location().lineNumber})`);
  });
  page.on("pageerror", (e) => problems.push(`pageerror: ${e.stack ?? e}`));
  page.on("crash", () => problems.push("the page crashed"));
  return page;
}
