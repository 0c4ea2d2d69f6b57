// Runs tests/e2e/runtimes/suite.mjs in another JavaScript runtime, on the packed package
// installed into a fresh app: the app's main.mjs imports the package by its name, as a user's
// code does, and prints the suite's report as its last line.
import { execFile } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";

import { packIntoTemp } from "../tarball.mjs";

const exec = promisify(execFile);

/** Resolves with { tmp, app }: a fresh app with the packed package installed (the caller removes tmp). */
export async function appWithPackage(prefix) {
  const { tmp, tarball } = await packIntoTemp(prefix);
  const app = join(tmp, "app");
  await mkdir(app);
  await writeFile(join(app, "package.json"), JSON.stringify({ name: "runtime-app", private: true, type: "module" }));
  await exec("npm", ["install", "--offline", "--no-audit", "--no-fund", "--loglevel=error", tarball], { cwd: app });
  const suite = pathToFileURL(join(import.meta.dirname, "suite.mjs")).href;
  return { tmp, app, suite };
}

/** Runs `command args… main.mjs` in `app` with the suite for `backend`; resolves with its report. */
export async function runSuite({ app, suite }, backend, command, args, env = {}) {
  await writeFile(
    join(app, "main.mjs"),
    `import init, * as pkg from "webgpu-rmsnorm";\nimport { check } from ${JSON.stringify(suite)};\n` +
      `console.log(JSON.stringify(await check({ init, pkg, backend: ${JSON.stringify(backend)} })));\n`,
  );
  const { stdout } = await exec(command, [...args, "main.mjs"], {
    cwd: app,
    env: { ...process.env, ...env },
    timeout: 600_000,
    maxBuffer: 64 << 20,
  });
  return JSON.parse(stdout.trim().split("\n").at(-1));
}
