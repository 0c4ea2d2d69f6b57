// Every ```js and ```ts snippet of the README compiles under strict TypeScript against the
// package's .d.ts, with WebGPU's types (@webgpu/types), each as a module of its own: the
// names a fragment takes from its surroundings are declared in tests/types/readme-context.d.ts;
// the Web Worker snippet compiles under the WebWorker lib instead of the DOM.
// Needs `bash scripts/build.sh` first.
//
//   node --test --test-reporter=spec tests/e2e/package/readme.test.mjs
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { join } from "node:path";

import { ROOT, assertBuilt } from "../support/repo.mjs";

/** The README's code blocks in `languages`, each with the line it starts on. */
export function snippets(markdown, languages = ["js", "ts"]) {
  const out = [];
  const lines = markdown.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const open = lines[i].match(/^(\s*)```(\w+)\s*$/);
    if (!open || !languages.includes(open[2])) continue;
    const indent = open[1].length;
    const body = [];
    let j = i + 1;
    for (; j < lines.length && !/^\s*```\s*$/.test(lines[j]); j++) body.push(lines[j].slice(indent));
    out.push({ line: i + 1, code: body.join("\n") });
    i = j;
  }
  return out;
}

/** tsc on `project`; resolves with its exit code and output instead of throwing on type errors. */
function tsc(project) {
  const bin = createRequire(join(ROOT, "package.json")).resolve("typescript/bin/tsc");
  return new Promise((done) =>
    execFile(process.execPath, [bin, "-p", project, "--pretty", "false"], { cwd: ROOT }, (e, stdout, stderr) =>
      done({ code: e ? e.code : 0, out: stdout + stderr })),
  );
}

test("README: every js/ts snippet type-checks under strict TypeScript with @webgpu/types", async (t) => {
  assertBuilt();
  const readme = await readFile(join(ROOT, "README.md"), "utf8");
  const found = snippets(readme);
  assert.ok(found.length >= 5, `${found.length} snippets found`);
  // Inside the repository, so that "webgpu-rmsnorm" resolves to it by the package's exports.
  const dir = join(ROOT, "test-results", "readme-snippets");
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  const projects = { page: [], worker: [] };
  for (const s of found) {
    const file = `readme-line-${s.line}.ts`;
    // A module each (top-level await, no names shared between snippets).
    await writeFile(join(dir, file), `${s.code}\nexport {};\n`);
    projects[/^\/\/ worker\.js/.test(s.code) ? "worker" : "page"].push(file);
  }
  const context = join(ROOT, "tests/types/readme-context.d.ts");
  const config = (files, lib, types) => ({ extends: join(ROOT, "tests/types/tsconfig.json"), compilerOptions: { lib, types }, files });
  // @webgpu/types needs the DOM's types; the worker snippet touches no WebGPU type.
  await writeFile(join(dir, "tsconfig.page.json"), JSON.stringify(config([...projects.page, context], ["ES2022", "DOM", "ESNext.Disposable"], ["@webgpu/types"])));
  await writeFile(join(dir, "tsconfig.worker.json"), JSON.stringify(config(projects.worker, ["ES2022", "WebWorker", "ESNext.Disposable"], [])));
  assert.ok(projects.worker.length === 1, "the Web Worker snippet");
  for (const name of ["page", "worker"]) {
    const { code, out } = await tsc(join(dir, `tsconfig.${name}.json`));
    // Errors by the README's own line numbers.
    const readable = out.replace(/test-results\/readme-snippets\/readme-line-(\d+)\.ts\((\d+),(\d+)\)/g, (_, start, l, c) => `README.md:${Number(start) + Number(l)}:${c}`);
    assert.equal(code, 0, readable);
  }
  t.diagnostic(`${found.length} snippets: README lines ${found.map((s) => s.line).join(", ")}`);
});
