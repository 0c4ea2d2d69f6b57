// The package as users get it: `npm pack` of the repository into a fresh temporary folder,
// which the consumer tests install from and remove afterwards, and a plain app (no bundler)
// that installs it and opens it in a page.
import { execFile } from "node:child_process";
import { cp, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

import { ROOT, assertBuilt } from "./repo.mjs";

const run = promisify(execFile);

/** The consumer apps' one page: it maps the bare name to the installed package and loads ./main.js. */
const CONSUMER_PAGE = fileURLToPath(new URL("./apps/consumer/index.html", import.meta.url));

/** Resolves with { tmp, tarball }: the folder (prefixed `prefix`) and the tarball in it. */
export async function packIntoTemp(prefix) {
  assertBuilt();
  const tmp = await mkdtemp(join(tmpdir(), prefix));
  const { stdout } = await run("npm", ["pack", "--json", "--pack-destination", tmp], { cwd: ROOT });
  return { tmp, tarball: join(tmp, JSON.parse(stdout)[0].filename) };
}

/**
 * Packs the package and installs it into a fresh app in the temporary folder: the consumer
 * page, then the files of the `consumer` folder (its main.js at least). Resolves with
 * { tmp, app }; the caller removes `tmp`, which is already gone if this rejects.
 */
export async function installIntoConsumerApp(prefix, consumer) {
  const { tmp, tarball } = await packIntoTemp(prefix);
  try {
    const app = join(tmp, "app");
    await mkdir(app);
    await writeFile(
      join(app, "package.json"),
      JSON.stringify({ name: "consumer-app", version: "1.0.0", private: true, type: "module" }, null, 2),
    );
    // --offline: the package must install with no registry at all (it has no dependencies).
    await run("npm", ["install", "--offline", "--no-audit", "--no-fund", "--loglevel=error", tarball], { cwd: app });
    await cp(CONSUMER_PAGE, join(app, "index.html"));
    await cp(consumer, app, { recursive: true });
    return { tmp, app };
  } catch (e) {
    await rm(tmp, { recursive: true, force: true });
    throw e;
  }
}
