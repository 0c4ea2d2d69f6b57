// Runs tests/e2e/support/runtime-suite.mjs in another JavaScript runtime, on the packed package
// installed into a fresh app: the app's main.mjs imports the package by its name, as a user's
// code does, and prints the suite's report as its last line.
import { execFile, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";

import { packIntoTemp } from "./tarball.mjs";

const exec = promisify(execFile);

/** Resolves with { tmp, app }: a fresh app with the packed package installed (the caller removes tmp). */
export async function appWithPackage(prefix) {
  const { tmp, tarball } = await packIntoTemp(prefix);
  const app = join(tmp, "app");
  await mkdir(app);
  await writeFile(join(app, "package.json"), JSON.stringify({ name: "runtime-app", private: true, type: "module" }));
  await exec("npm", ["install", "--offline", "--no-audit", "--no-fund", "--loglevel=error", tarball], { cwd: app });
  const suite = pathToFileURL(join(import.meta.dirname, "runtime-suite.mjs")).href;
  return { tmp, app, suite };
}

/**
 * Runs `command args… main.mjs` in `app` with the suite for `backend`; resolves with its report.
 * Rejects if the runtime does not exit by itself soon after printing it: a package that keeps
 * a script from ending (an open port, a timer) is a bug users of Node and Deno would see.
 */
export async function runSuite({ app, suite }, backend, command, args, env = {}) {
  await writeFile(
    join(app, "main.mjs"),
    `import init, * as pkg from "webgpu-rmsnorm";\nimport { check } from ${JSON.stringify(suite)};\n` +
      `console.log(JSON.stringify(await check({ init, pkg, backend: ${JSON.stringify(backend)} })));\n`,
  );
  const child = spawn(command, [...args, "main.mjs"], { cwd: app, env: { ...process.env, ...env } });
  let stdout = "", stderr = "", report, timer;
  const kill = (why) => () => { child.kill("SIGKILL"); stderr += `\n[${why}]`; };
  timer = setTimeout(kill("no report after 15 minutes"), 900_000);
  child.stderr.on("data", (d) => (stderr += d));
  child.stdout.on("data", (d) => {
    stdout += d;
    const line = stdout.trim().split("\n").at(-1);
    if (report === undefined && line.startsWith("{") && stdout.endsWith("\n")) {
      report = JSON.parse(line);
      clearTimeout(timer);
      timer = setTimeout(kill("still running 30 s after its report"), 30_000);
    }
  });
  const [code, signal] = await once(child, "exit");
  clearTimeout(timer);
  if (code !== 0 || report === undefined) throw new Error(`${command} exited with ${code ?? signal}: ${stderr}\n${stdout}`);
  return report;
}
