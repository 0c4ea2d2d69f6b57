#!/usr/bin/env bash
# The headless-browser benchmarks of bench/browser/ (bench/README.md says what each prints):
#
#   bash scripts/bench-browser.sh bench [ARGS]     # npm run bench
#   bash scripts/bench-browser.sh pipeline [ARGS]  # npm run bench:pipeline
#   bash scripts/bench-browser.sh calls [ARGS]     # npm run bench:calls
#
# Runs `node bench/browser/NAME.mjs ARGS` (the header of each says its options) after
# installing what a browser benchmark needs where it is missing: a built pkg/, Chromium, the
# node packages (onnxruntime-web among them). Tables on stdout, details in bench-out/
# (bench: browser.json for its WebGPU section, cpu.json for its CPU one; pipeline.json;
# calls.json).
# Hardware: wherever headless Chromium runs, on the WebGPU adapter it offers: the GPU's where
# there is one, else SwiftShader on the CPU, whose times are CPU work. On a real GPU:
# `npm run bench:chrome` and `npm run bench:dawn`; current figures in docs/performance.md.
set -euo pipefail
cd "$(dirname "$0")/.."

NAME=${1:-}
case "$NAME" in
  bench | pipeline | calls) shift ;;
  *) echo "usage: bash scripts/bench-browser.sh bench|pipeline|calls [ARGS]" >&2; exit 64 ;;
esac
LABEL=bench # the npm script's name, in the messages
[ "$NAME" = bench ] || LABEL=bench:$NAME
say() { printf '\033[1m[%s]\033[0m %s\n' "$LABEL" "$*"; }

if [ ! -f pkg/webgpu_rmsnorm.js ]; then
  say "no pkg/: setting up the toolchain and building the package"
  bash scripts/setup.sh
  bash scripts/build.sh
fi

if ! command -v chromium >/dev/null && [ -z "${CHROMIUM_PATH:-}" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    say "apt-get install chromium"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "Chromium is missing: install it (Debian/Ubuntu: sudo apt-get install chromium) and run again." >&2
    exit 1
  fi
fi
# The same variable the end-to-end tests read (tests/e2e/support/chromium.mjs).
export CHROMIUM_PATH="${CHROMIUM_PATH:-$(command -v chromium)}"

# An older checkout's node_modules may predate the onnxruntime-web devDependency.
if [ ! -d node_modules/playwright-core ] || [ ! -f node_modules/onnxruntime-web/dist/ort.webgpu.min.mjs ]; then
  say "installing node packages"
  npm ci --no-audit --no-fund
fi

exec node "bench/browser/$NAME.mjs" "$@"
