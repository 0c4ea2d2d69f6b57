// The repository the end-to-end tests run in, and the check that its package is built.
import { existsSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");

/** Throws, saying how to build it, where pkg/ lacks a file the package needs. */
export function assertBuilt() {
  for (const f of ["index.js", "index.d.ts", "webgpu_rmsnorm.js", "webgpu_rmsnorm.d.ts", "webgpu_rmsnorm_bg.wasm"]) {
    if (!existsSync(resolve(ROOT, "pkg", f))) {
      throw new Error(`pkg/${f} is missing: run \`bash scripts/build.sh\` before the end-to-end tests`);
    }
  }
}
