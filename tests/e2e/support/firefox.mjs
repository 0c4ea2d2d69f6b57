// The end-to-end suite's second browser: Firefox ESR, Debian's Firefox, whose release build has
// no WebGPU (no `navigator.gpu`; the `dom.webgpu.enabled` pref cannot turn it on there), so the
// package runs on its CPU backend. Driven by puppeteer-core over WebDriver BiDi: no geckodriver
// (its npm package downloads a binary, which an offline machine cannot).
import { existsSync } from "node:fs";
import puppeteer from "puppeteer-core";

export const FIREFOX = process.env.FIREFOX_PATH ?? "/usr/bin/firefox-esr";

export async function launchFirefox() {
  if (!existsSync(FIREFOX)) {
    throw new Error(
      `no Firefox at ${FIREFOX}: run \`bash scripts/setup.sh\` (as root it installs firefox-esr; ` +
        "otherwise `sudo apt-get install firefox-esr`), or set FIREFOX_PATH",
    );
  }
  return puppeteer.launch({
    browser: "firefox",
    executablePath: FIREFOX,
    headless: true,
    // page.setViewport() is not implemented over BiDi in Firefox; null keeps puppeteer from
    // calling it. The window size gives the screenshot-free tests a desktop layout.
    defaultViewport: null,
    args: ["--width=1280", "--height=900"],
    // An offline machine: nothing may wait on Mozilla's services.
    extraPrefsFirefox: {
      "app.update.enabled": false,
      "browser.safebrowsing.malware.enabled": false,
      "browser.safebrowsing.phishing.enabled": false,
      "datareporting.policy.dataSubmissionEnabled": false,
      "network.captive-portal-service.enabled": false,
      "network.connectivity-service.enabled": false,
      "toolkit.telemetry.enabled": false,
    },
  });
}

/**
 * Firefox as no-webgpu-suite.mjs drives it (webkit.mjs's launchWebKit() gives WebKit the same
 * way): `open(url, problems)` resolves with a page whose console errors and uncaught
 * exceptions go into `problems`; `close()`.
 */
export async function firefoxBrowser() {
  const browser = await launchFirefox();
  return {
    async open(url, problems) {
      const page = await browser.newPage();
      page.on("console", (m) => {
        if (m.type() === "error") problems.push(`console.error: ${m.text()} (${m.location()?.url ?? "?"})`);
      });
      page.on("pageerror", (e) => problems.push(`pageerror: ${e?.stack ?? e}`));
      await page.goto(url);
      return {
        evaluate: (fn, ...args) => page.evaluate(fn, ...args),
        waitFor: (fn, ms, ...args) => page.waitForFunction(fn, { timeout: ms }, ...args),
        click: (selector) => page.click(selector),
        close: () => page.close(),
      };
    },
    close: () => browser.close(),
  };
}
