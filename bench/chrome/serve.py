# The page server for `npm run bench:chrome`: serves the checkout, the package snapshot and onnxruntime-web, takes results as POSTs.
# Python, so that a GPU machine needs no Node. Mounts: /pkg/ -> --pkg, /ort/ -> --ort, /models/
# -> held in memory (the page makes the ONNX models and POSTs them), anything else -> --root.
# GET /clock?arg=...: nvidia-smi (or $NVIDIA_SMI) run with those arguments, only --query-gpu= and
# --format=csv,noheader (bench/shared/clock.mjs names them): 200 and its output, 404 "not found"
# where there is none, 500 and why where it fails; the page's SM clock beside each pair.
# POST /result/NAME {lines, out, error?}: prints the lines to stdout, writes --out/NAME.json and
# NAME.md, and touches --out/NAME.done (the shell waits on it). POST /log: one line to stderr.
import argparse, http.server, json, os, re, subprocess, sys, threading, urllib.parse

ap = argparse.ArgumentParser()
for k in ("root", "pkg", "ort", "out"):
    ap.add_argument("--" + k, required=True)
ap.add_argument("--port", type=int, default=8765)
a = ap.parse_args()
models, lock = {}, threading.Lock()
SMI_ARG = re.compile(r"--query-gpu=[a-z_.,]+|--format=csv,noheader")
TYPES = {".mjs": "text/javascript", ".js": "text/javascript", ".wasm": "application/wasm", ".html": "text/html", ".json": "application/json"}


class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):  # quiet: the page's own notes are the progress
        pass

    def send(self, code, body=b"", ctype="text/plain"):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        # Cross-origin isolation, as the other benchmark pages are served (SharedArrayBuffer for ORT).
        self.send_header("Cross-Origin-Opener-Policy", "same-origin")
        self.send_header("Cross-Origin-Embedder-Policy", "require-corp")
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def clock(self, query):
        args = urllib.parse.parse_qs(query).get("arg", [])
        if not args or not all(SMI_ARG.fullmatch(x) for x in args):
            return self.send(400, b"only --query-gpu=FIELDS and --format=csv,noheader")
        try:
            r = subprocess.run([os.environ.get("NVIDIA_SMI", "nvidia-smi"), *args], capture_output=True, text=True, timeout=5)
        except FileNotFoundError:
            return self.send(404, b"not found")
        except (OSError, subprocess.TimeoutExpired) as e:
            return self.send(500, str(e).encode())
        self.send(200 if r.returncode == 0 else 500, (r.stdout if r.returncode == 0 else (r.stdout + r.stderr).strip() or f"exit status {r.returncode}").encode())

    def do_GET(self):
        p, _, query = self.path.partition("?")
        if p == "/clock":
            return self.clock(query)
        if p.startswith("/models/"):
            with lock:
                body = models.get(p[8:])
            return self.send(200, body, "application/octet-stream") if body is not None else self.send(404)
        for prefix, base in (("/pkg/", a.pkg), ("/ort/", a.ort), ("/", a.root)):
            if p.startswith(prefix):
                f = os.path.realpath(os.path.join(base, p[len(prefix):]))
                break
        if not os.path.isfile(f):
            return self.send(404, f"not found: {p}".encode())
        with open(f, "rb") as fh:
            self.send(200, fh.read(), TYPES.get(os.path.splitext(f)[1], "application/octet-stream"))

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        p = self.path
        if p.startswith("/models/"):
            with lock:
                models[p[8:]] = body
        elif p == "/log":
            print(body.decode(errors="replace"), file=sys.stderr, flush=True)
        elif p.startswith("/result/"):
            name = os.path.basename(p[8:])
            r = json.loads(body)
            text = "\n".join(r.get("lines", []))
            if r.get("error"):
                text += f"\n[bench:chrome] {name}: FAILED in the page: {r['error']}"
            print(text, flush=True)
            os.makedirs(a.out, exist_ok=True)
            with open(os.path.join(a.out, name + ".json"), "w") as fh:
                json.dump(r.get("out"), fh, indent=1)
            with open(os.path.join(a.out, name + ".md"), "w") as fh:
                fh.write(text + "\n")
            with open(os.path.join(a.out, name + ".done"), "w") as fh:
                fh.write("error\n" if r.get("error") else "ok\n")
        else:
            return self.send(404)
        self.send(200, b"ok")


http.server.ThreadingHTTPServer(("127.0.0.1", a.port), H).serve_forever()
