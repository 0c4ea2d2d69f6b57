// A static file server for the demo and the tests: 127.0.0.1 only (a secure context, so
// WebGPU is allowed), the right MIME type for .wasm (streaming compilation needs it).
//
//   node scripts/serve.mjs [--port 8080] [--header "Name: value"]... URL_PREFIX DIR [URL_PREFIX DIR]...
//
// Also importable: `serve({ port, mounts, headers })` resolves to { url, close }.
import { createServer } from "node:http";
import { readFile, stat } from "node:fs/promises";
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

/** mounts: [[urlPrefix, dir], ...]; the longest matching prefix wins. */
export function serve({ port = 0, mounts, headers = {} }) {
  const table = mounts
    .map(([prefix, dir]) => [prefix.endsWith("/") ? prefix : prefix + "/", resolve(dir)])
    .sort((a, b) => b[0].length - a[0].length);
  const server = createServer(async (req, res) => {
    const path = decodeURIComponent(new URL(req.url, "http://x").pathname);
    const mount = table.find(([prefix]) => (path + "/").startsWith(prefix));
    if (!mount) return send(res, 404, "not found");
    let file = normalize(join(mount[1], path.slice(mount[0].length - 1)));
    if (file !== mount[1] && !file.startsWith(mount[1] + sep)) return send(res, 403, "forbidden");
    try {
      if ((await stat(file)).isDirectory()) file = join(file, "index.html");
      const body = await readFile(file);
      res.writeHead(200, {
        "content-type": TYPES[extname(file)] ?? "application/octet-stream",
        "cache-control": "no-store",
        ...headers,
      });
      res.end(body);
    } catch {
      send(res, 404, "not found");
    }
  });
  return new Promise((ok) =>
    server.listen(port, "127.0.0.1", () =>
      ok({ url: `http://127.0.0.1:${server.address().port}/`, close: () => new Promise((c) => server.close(c)) }),
    ),
  );
}

function send(res, code, text) {
  res.writeHead(code, { "content-type": "text/plain" });
  res.end(text);
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
