// The package as users get it: `npm pack` of the repository into a fresh temporary folder,
// which the consumer tests install from and remove afterwards.
import { execFile } from "node:child_process";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

import { ROOT, assertBuilt } from "./browser.mjs";

const run = promisify(execFile);

/** Resolves with { tmp, tarball }: the folder (prefixed `prefix`) and the tarball in it. */
export async function packIntoTemp(prefix) {
  assertBuilt();
  const tmp = await mkdtemp(join(tmpdir(), prefix));
  const { stdout } = await run("npm", ["pack", "--json", "--pack-destination", tmp], { cwd: ROOT });
  return { tmp, tarball: join(tmp, JSON.parse(stdout)[0].filename) };
}
