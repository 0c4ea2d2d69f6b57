// A panic prints its Rust message and location through console.error before the module traps.
// The package never panics on any input, so the test builds the module with the `test-hooks`
// feature, whose one export panics on demand, optimizes it as the package's build does
// (scripts/optimize-wasm.sh), and runs it in Node (the hook is the same code in every engine).
// The shipped package has no such export.
//
//   bash scripts/build.sh && node --test --test-reporter=spec tests/e2e/runtimes/panic-hook.test.mjs
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";

import { ROOT, assertBuilt } from "../support/repo.mjs";

const exec = promisify(execFile);
const OUT = join(ROOT, "test-results", "pkg-test-hooks");

test("a panic reaches console.error with its message and location, then the call throws", { timeout: 900_000 }, async () => {
  await exec("wasm-pack", ["--quiet", "build", "--target", "web", "--release", "--out-dir", OUT, "--no-pack", "--mode", "no-install", "--", "--features", "test-hooks"], { cwd: ROOT, maxBuffer: 64 << 20 });
  await exec("bash", ["scripts/optimize-wasm.sh", join(OUT, "webgpu_rmsnorm_bg.wasm")], { cwd: ROOT });
  const m = await import(pathToFileURL(join(OUT, "webgpu_rmsnorm.js")).href);
  await m.default({ module_or_path: await readFile(join(OUT, "webgpu_rmsnorm_bg.wasm")) });
  const printed = [];
  const error = console.error;
  console.error = (...args) => printed.push(args.join(" "));
  let thrown;
  try {
    m.__panicForTests("the message a test asked for");
  } catch (e) {
    thrown = e;
  } finally {
    console.error = error;
  }
  assert.ok(thrown instanceof WebAssembly.RuntimeError, `the call threw ${thrown}`);
  assert.equal(printed.length, 1, printed.join("\n"));
  assert.match(printed[0], /the message a test asked for/);
  assert.match(printed[0], /src[\\/]js[\\/]panic\.rs:\d+:\d+/);
});

test("the package itself has no panicking export", async () => {
  assertBuilt();
  const glue = await readFile(join(ROOT, "pkg", "webgpu_rmsnorm.js"), "utf8");
  assert.ok(!glue.includes("__panicForTests"));
});
