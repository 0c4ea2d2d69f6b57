// The end-to-end suite's third engine: WebKit, Safari's (JavaScriptCore, its JS and wasm
// engine), as WebKitGTK's MiniBrowser. Debian's build has no WebGPU (no `navigator.gpu`), so
// the package runs on its CPU backend. Driven over classic W3C WebDriver by WebKitWebDriver,
// plain HTTP and JSON: no npm driver package. It needs an X display: an Xvfb of its own on a
// free display number, so no window opens on a desktop and `xvfb-run` is not needed.
//
// WebDriver classic has no console or page-error events and no script that runs before a
// page's own, so every page is opened through a proxy of its server that puts a watcher at the
// top of each HTML document (console.error, uncaught errors, unhandled rejections, resources
// that fail to load); what it records is drained into the caller's `problems` after each call.
// Errors inside a worker reach the watcher only as the worker's uncaught errors do.
import { spawn } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { createServer } from "node:http";
import { once } from "node:events";

export const WEBKIT_DRIVER = process.env.WEBKIT_DRIVER_PATH ?? "/usr/bin/WebKitWebDriver";
export const XVFB = process.env.XVFB_PATH ?? "/usr/bin/Xvfb";

/** MiniBrowser lives under the multiarch library folder: /usr/lib/<triplet>/webkit2gtk-4.1/. */
function findMiniBrowser() {
  if (process.env.WEBKIT_BROWSER_PATH) return process.env.WEBKIT_BROWSER_PATH;
  for (const dir of ["/usr/lib", ...readdirSync("/usr/lib").map((d) => `/usr/lib/${d}`)]) {
    const path = `${dir}/webkit2gtk-4.1/MiniBrowser`;
    if (existsSync(path)) return path;
  }
  return "/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser";
}
export const MINIBROWSER = findMiniBrowser();

const INSTALL =
  "run `bash scripts/setup.sh` (as root it installs webkit2gtk-driver and xvfb; otherwise " +
  "`sudo apt-get install webkit2gtk-driver xvfb`)";

/** Calls `check` every 50 ms until it gives something other than undefined, or throws after `ms`. */
async function poll(check, ms, what) {
  const end = Date.now() + ms;
  for (;;) {
    const got = await check();
    if (got !== undefined) return got;
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Starts `cmd` with its output kept (the last 4 KiB) for the error that says why it stopped. */
function start(cmd, args, options) {
  const child = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe", ...(options.extra ?? [])], env: options.env });
  child.log = "";
  const keep = (b) => (child.log = (child.log + b).slice(-4096));
  child.stdout.on("data", keep);
  child.stderr.on("data", keep);
  child.exited = once(child, "exit");
  return child;
}

async function stop(child) {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
  await child.exited;
  clearTimeout(timer);
}

/** An Xvfb on a display number it picks itself (-displayfd): resolves with it and ":N". */
async function startXvfb() {
  const xvfb = start(XVFB, ["-displayfd", "3", "-screen", "0", "1280x900x24", "-nolisten", "tcp"], { extra: ["pipe"] });
  let number = "";
  xvfb.stdio[3].on("data", (b) => (number += b));
  const display = await Promise.race([
    poll(() => (number.includes("\n") ? `:${number.trim()}` : undefined), 20_000, "Xvfb to report its display"),
    xvfb.exited.then(() => {
      throw new Error(`Xvfb exited: ${xvfb.log}`);
    }),
  ]);
  return { xvfb, display };
}

/** A free TCP port on 127.0.0.1 for WebKitWebDriver, which takes a number, not 0. */
async function freePort() {
  const server = createServer().listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address();
  server.close();
  return port;
}

/** The page-side watcher: the first script of every HTML document the proxy serves. */
function watcher() {
  const problems = (window.__problems = []);
  const text = (x) => (x instanceof Error ? `${x.name}: ${x.message}${x.stack ? `\n${x.stack}` : ""}` : String(x));
  const consoleError = console.error.bind(console);
  console.error = (...args) => {
    problems.push(`console.error: ${args.map(text).join(" ")}`);
    consoleError(...args);
  };
  addEventListener(
    "error",
    (e) => {
      if (e.target === window) problems.push(`pageerror: ${text(e.error ?? e.message)} (${e.filename}:${e.lineno})`);
      else problems.push(`failed to load: <${e.target.localName}> ${e.target.src ?? e.target.href ?? ""}`);
    },
    true,
  );
  addEventListener("unhandledrejection", (e) => problems.push(`unhandled rejection: ${text(e.reason)}`));
}
const WATCHER = `<script>(${watcher})();</script>`;

/** Headers of the upstream response the proxy does not pass on: its body is re-sent whole. */
const HOP_HEADERS = new Set(["content-length", "content-encoding", "transfer-encoding", "connection", "keep-alive"]);

/** A server of `origin`'s files, each HTML document with the watcher at its top. */
async function watchingProxy(origin) {
  const server = createServer(async (req, res) => {
    try {
      const upstream = await fetch(new URL(req.url, origin), { method: req.method });
      const type = upstream.headers.get("content-type") ?? "application/octet-stream";
      let body = Buffer.from(await upstream.arrayBuffer());
      if (type.startsWith("text/html")) {
        const html = body.toString("utf8");
        const at = html.match(/<meta charset[^>]*>/i);
        const i = at ? at.index + at[0].length : 0;
        body = Buffer.from(html.slice(0, i) + WATCHER + html.slice(i));
      }
      // The server's own headers (content type, caching, isolation), the length recounted.
      const headers = Object.fromEntries([...upstream.headers].filter(([k]) => !HOP_HEADERS.has(k)));
      res.writeHead(upstream.status, { ...headers, "content-length": body.length });
      res.end(body);
    } catch (e) {
      res.writeHead(502, { "content-type": "text/plain" });
      res.end(`proxy: ${e.message}`);
    }
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return { url: `http://127.0.0.1:${server.address().port}/`, close: () => new Promise((c) => server.close(c)) };
}

/**
 * A WebKitWebDriver on a free port of its own (it holds one session at a time), on `display`.
 * Resolves with { driver, command }: `command(method, path, body)` sends one WebDriver command
 * and resolves with its value; a WebDriver error is thrown as an Error with its message.
 */
async function startDriver(display) {
  let driver, base;
  // The free port can be taken by another process before the driver binds it: try again.
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    driver = start(WEBKIT_DRIVER, [`--port=${port}`], { env: { ...process.env, DISPLAY: display } });
    base = `http://127.0.0.1:${port}`;
    try {
      await poll(
        async () => {
          if (driver.exitCode !== null) throw new Error(`WebKitWebDriver exited: ${driver.log}`);
          const status = await fetch(`${base}/status`).then((r) => r.json(), () => null);
          return status?.value?.ready ? true : undefined;
        },
        20_000,
        "WebKitWebDriver to answer /status",
      );
      break;
    } catch (e) {
      await stop(driver);
      if (attempt === 3) throw e;
    }
  }
  const command = async (method, path, body) => {
    const r = await fetch(`${base}${path}`, {
      method,
      headers: { "content-type": "application/json; charset=utf-8" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const { value } = await r.json();
    if (value?.error) throw new Error(`WebDriver ${method} ${path.replace(/^\/session\/[^/]+/, "")}: ${value.error}: ${value.message}`);
    return value;
  };
  return { driver, command };
}

/** One page: a driver, its session (one MiniBrowser window) at `url`. */
async function openPage(display, url, problems) {
  const { driver, command } = await startDriver(display);
  let s;
  const drain = async () => {
    const got = await command("POST", `${s}/execute/sync`, { script: "return (window.__problems ?? []).splice(0);", args: [] });
    problems.push(...got);
  };
  // The W3C execute command awaits a returned promise; undefined comes back as null.
  const evaluate = async (fn, ...args) => {
    try {
      return await command("POST", `${s}/execute/sync`, { script: `return (${fn}).apply(null, arguments);`, args });
    } finally {
      await drain();
    }
  };
  try {
    const { sessionId } = await command("POST", "/session", {
      capabilities: {
        alwaysMatch: {
          // The other engines' evaluate has no timeout: the tests' own (90 s) decide.
          timeouts: { script: 300_000, pageLoad: 60_000 },
          "webkitgtk:browserOptions": { binary: MINIBROWSER, args: ["--automation"] },
        },
      },
    });
    s = `/session/${sessionId}`;
    await command("POST", `${s}/window/rect`, { width: 1280, height: 900 });
    await command("POST", `${s}/url`, { url });
    // The command can come back before the page's load (a race with the window's first, blank
    // page): wait for this document to be complete, its module scripts run.
    await poll(
      async () => {
        const at = await evaluate(() => document.readyState === "complete" && location.href).catch(() => null);
        return at === url ? true : undefined;
      },
      60_000,
      `${url} to load`,
    );
  } catch (e) {
    if (s) await command("DELETE", s).catch(() => {});
    await stop(driver);
    throw e;
  }
  return {
    driver,
    evaluate,
    async waitFor(fn, ms, ...args) {
      await poll(async () => ((await evaluate(fn, ...args)) ? true : undefined), ms, `${fn}`);
    },
    /** A click as WebDriver makes it: scrolled into view, at the element's centre. */
    async click(selector) {
      const found = await command("POST", `${s}/element`, { using: "css selector", value: selector });
      await command("POST", `${s}/element/${Object.values(found)[0]}/click`, {});
      await drain();
    },
    async close() {
      try {
        await drain();
        await command("DELETE", s);
      } finally {
        await stop(driver);
      }
    },
  };
}

/**
 * Starts Xvfb. Resolves with the browser: `open(url, problems)` resolves with a page (a
 * WebKitWebDriver and its session: one MiniBrowser window); `close()` ends them all. Throws,
 * saying how to install them, where WebKit or Xvfb is missing.
 */
export async function launchWebKit() {
  for (const [what, path, env] of [
    ["WebKitWebDriver", WEBKIT_DRIVER, "WEBKIT_DRIVER_PATH"],
    ["WebKitGTK's MiniBrowser", MINIBROWSER, "WEBKIT_BROWSER_PATH"],
    ["Xvfb", XVFB, "XVFB_PATH"],
  ]) {
    if (!existsSync(path)) throw new Error(`no ${what} at ${path}: ${INSTALL}, or set ${env}`);
  }
  const { xvfb, display } = await startXvfb();
  const proxies = new Map();
  const drivers = new Set();

  /** `url` through the watching proxy of its origin. */
  const proxied = async (url) => {
    const { origin } = new URL(url);
    if (!proxies.has(origin)) proxies.set(origin, await watchingProxy(origin));
    const to = new URL(url);
    to.host = new URL(proxies.get(origin).url).host;
    return to.href;
  };

  return {
    async open(url, problems) {
      const page = await openPage(display, await proxied(url), problems);
      drivers.add(page.driver);
      page.driver.exited.then(() => drivers.delete(page.driver));
      return page;
    },
    async close() {
      for (const d of drivers) await stop(d);
      await stop(xvfb);
      for (const p of proxies.values()) await p.close();
    },
  };
}
