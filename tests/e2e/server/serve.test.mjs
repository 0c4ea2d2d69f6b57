// scripts/serve.mjs, the server of the demo and of every browser test: hostile request paths
// get 400, 403 or 404 and never a file outside the mounts (links included), and the server
// keeps answering after each of them. Raw sockets, since fetch and http.request would
// normalise or refuse some of these paths before they left.
//
//   node --test --test-reporter=spec tests/e2e/server/serve.test.mjs
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { serve } from "../../../scripts/serve.mjs";

const SECRET = "outside the mounts";

let tmp, server, port;
const unhandled = [];
const onUnhandled = (e) => unhandled.push(e);

before(async () => {
  process.on("unhandledRejection", onUnhandled);
  tmp = await mkdtemp(join(tmpdir(), "webgpu-rmsnorm-serve-"));
  const www = join(tmp, "www");
  const data = join(tmp, "data");
  await mkdir(join(www, "sub"), { recursive: true });
  await mkdir(data);
  await writeFile(join(tmp, "secret.txt"), SECRET);
  await writeFile(join(www, "hello.txt"), "hello");
  await writeFile(join(www, "sub", "index.html"), "<!doctype html><title>sub</title>");
  await writeFile(join(data, "d.json"), "{}");
  await symlink(join(tmp, "secret.txt"), join(www, "escape.txt"));
  await symlink(tmp, join(www, "escape-dir"));
  await symlink(join(tmp, "secret.txt"), join(www, "sub", "index.html.lnk"));
  await symlink("hello.txt", join(www, "alias.txt"));
  server = await serve({ port: 0, mounts: [["/", www], ["/data", data]] });
  port = new URL(server.url).port;
});

after(async () => {
  process.off("unhandledRejection", onUnhandled);
  await server?.close();
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

/** Sends `requestLine` as is; resolves with the status code and body. */
function raw(requestLine) {
  return new Promise((ok, fail) => {
    const socket = connect(port, "127.0.0.1");
    const chunks = [];
    socket.on("data", (c) => chunks.push(c));
    socket.on("error", fail);
    socket.on("end", () => {
      const text = Buffer.concat(chunks).toString("latin1");
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]);
      ok({ status, body: text.slice(text.indexOf("\r\n\r\n") + 4) });
    });
    // write, not end: node drops a connection whose client half-closes before the reply.
    socket.write(`${requestLine}\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`);
  });
}

const get = (path) => raw(`GET ${path} HTTP/1.1`);

async function assertRefused(path) {
  const r = await get(path);
  assert.ok([403, 404].includes(r.status), `${path}: status ${r.status}, want 403 or 404`);
  assert.ok(!r.body.includes(SECRET), `${path}: served the file outside the root`);
}

test("serves a file, a folder's index.html and a link that stays inside the root", async () => {
  assert.deepEqual(await get("/hello.txt"), { status: 200, body: "hello" });
  assert.equal((await get("/sub/")).status, 200);
  assert.deepEqual(await get("/alias.txt"), { status: 200, body: "hello" });
  assert.equal((await get("/data/d.json")).status, 200);
});

test("a path that does not decode is 400, and the server keeps serving", async () => {
  for (const path of ["/%E0%A4%A", "/%", "/%zz", "/hello.txt%00", "/data/%C0"]) {
    assert.equal((await get(path)).status, 400, path);
  }
  assert.equal((await get("/hello.txt")).status, 200);
});

test("a request line node's parser rejects is 400", async () => {
  assert.equal((await raw("GET /hello.txt HTTP/9.x")).status, 400);
  assert.equal((await raw("NOT A REQUEST")).status, 400);
  assert.equal((await get("/hello.txt")).status, 200);
});

test("`..` in any spelling never leaves a mount", async () => {
  for (const path of [
    "/..%2f..%2fetc%2fpasswd",
    "/%2e%2e/%2e%2e/etc/passwd",
    "/%2e%2e%2f%2e%2e%2fetc%2fpasswd",
    "/../secret.txt",
    "/..%2fsecret.txt",
    "/%2e%2e%2fsecret.txt",
    "/data/..%2fsecret.txt",
    "/data/..%2fwww%2fhello.txt",
    "/sub/..%2f..%2fsecret.txt",
    "/..%5csecret.txt",
  ]) {
    await assertRefused(path);
  }
  assert.equal((await get("/hello.txt")).status, 200);
});

test("a link inside the root that points outside it is refused", async () => {
  await assertRefused("/escape.txt");
  await assertRefused("/escape-dir/secret.txt");
  await assertRefused("/escape-dir/");
  await assertRefused("/sub/index.html.lnk");
  assert.equal((await get("/hello.txt")).status, 200);
});

test("after all of the above: still serving, and no unhandled rejection", async () => {
  assert.deepEqual(await get("/hello.txt"), { status: 200, body: "hello" });
  assert.deepEqual(unhandled, []);
});
