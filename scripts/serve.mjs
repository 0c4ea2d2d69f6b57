// A static file server for the demo and the tests: 127.0.0.1 only (a secure context, so
// WebGPU is allowed), the right MIME type for .wasm (streaming compilation needs it).
//
//   node scripts/serve.mjs [--port 8080] [--header "Name: value"]... URL_PREFIX DIR [URL_PREFIX DIR]...
//
// Also importable: `serve({ port, mounts, headers })` resolves to { url, close }.
//
// It answers anything it cannot parse with 400 and never serves a file whose real path (links
// followed) lies outside its mount's real root; no request can stop it.
import { createServer } from "node:http";
import { readFile, realpath, stat } from "node:fs/promises";
import { extname, join, normalize, resolve, sep } from "node:path";
import { pathToFileURL } from "node:url";

const TYPES = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json",
  ".wasm": "application/wasm",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ts": "text/plain; charset=utf-8",
  ".onnx": "application/octet-stream",
};

class HttpError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

/** mounts: [[urlPrefix, dir], ...]; the longest matching prefix wins. */
export function serve({ port = 0, mounts, headers = {} }) {
  const table = mounts
    .map(([prefix, dir]) => [prefix.endsWith("/") ? prefix : prefix + "/", resolve(dir)])
    .sort((a, b) => b[0].length - a[0].length);

  const server = createServer((req, res) => {
    respond(table, headers, req, res).catch((e) => {
      const status = e instanceof HttpError ? e.status : 500;
      if (!res.headersSent) send(res, status, e instanceof HttpError ? e.message : "internal error");
      else res.destroy();
    });
  });
  // A request node's parser rejects (a malformed request line, bad headers) never reaches the
  // handler; without this its socket would just be dropped.
  server.on("clientError", (_e, socket) => {
    if (socket.writable) socket.end("HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n");
    else socket.destroy();
  });

  return new Promise((ok, fail) => {
    server.once("error", fail);
    server.listen(port, "127.0.0.1", () => {
      server.off("error", fail);
      ok({ url: `http://127.0.0.1:${server.address().port}/`, close: () => new Promise((c) => server.close(c)) });
    });
  });
}

async function respond(table, headers, req, res) {
  const path = requestPath(req.url);
  const mount = table.find(([prefix]) => (path + "/").startsWith(prefix));
  if (!mount) throw new HttpError(404, "not found");
  const [prefix, root] = mount;
  // The lexical check catches `..` before the disk is touched; the real-path check catches
  // links that lead out of the root.
  const lexical = normalize(join(root, path.slice(prefix.length - 1)));
  if (!isInside(root, lexical)) throw new HttpError(403, "forbidden");
  let file = await realFileInside(root, lexical);
  if ((await stat(file)).isDirectory()) file = await realFileInside(root, join(file, "index.html"));
  const body = await readFile(file);
  res.writeHead(200, {
    "content-type": TYPES[extname(file)] ?? "application/octet-stream",
    "content-length": body.length,
    "cache-control": "no-store",
    ...headers,
  });
  res.end(body);
}

/** The decoded path of a request target; 400 where it does not decode. */
function requestPath(target) {
  let path;
  try {
    path = decodeURIComponent(new URL(target, "http://x").pathname);
  } catch {
    throw new HttpError(400, "bad request: the path is not a valid URL path");
  }
  if (path.includes("\0")) throw new HttpError(400, "bad request: NUL in the path");
  return path;
}

const isInside = (root, path) => path === root || path.startsWith(root.endsWith(sep) ? root : root + sep);

/** `path` with every link resolved, if that is inside the real `root`; else 403 (404 if absent). */
async function realFileInside(root, path) {
  let real;
  try {
    real = await realpath(path);
  } catch {
    throw new HttpError(404, "not found");
  }
  if (!isInside(await realpath(root), real)) throw new HttpError(403, "forbidden");
  return real;
}

function send(res, code, text) {
  const body = Buffer.from(text);
  res.writeHead(code, { "content-type": "text/plain; charset=utf-8", "content-length": body.length });
  res.end(body);
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const args = process.argv.slice(2);
  let port = 8080;
  const headers = {};
  const mounts = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === "--port") port = Number(args[++i]);
    else if (args[i] === "--header") {
      const [k, ...v] = args[++i].split(":");
      headers[k.trim()] = v.join(":").trim();
    } else mounts.push([args[i], args[++i]]);
  }
  const { url } = await serve({ port, mounts, headers });
  console.log(`Serving the demo at ${url}  (Ctrl-C to stop)`);
}
