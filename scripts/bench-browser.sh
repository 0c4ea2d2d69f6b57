#!/usr/bin/env bash
# `npm run bench`: our kernel vs onnxruntime-web's WebGPU SkipSimplifiedLayerNormalization vs
# a plain JS loop, in headless Chromium. Table on stdout, details in bench-out/browser.json.
# Arguments go to bench/browser.mjs (--shapes 1x896,16x4096 --k 21 --budget-ms 4000).
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '\033[1m[bench]\033[0m %s\n' "$*"; }

if [ ! -f pkg/webgpu_rmsnorm.js ]; then
  say "no pkg/: setting up the toolchain and building the package"
  bash scripts/setup.sh
  bash scripts/build.sh
fi

if ! command -v chromium >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    say "apt-get install chromium"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "Chromium is missing: install it (Debian/Ubuntu: sudo apt-get install chromium) and run again." >&2
    exit 1
  fi
fi

# An older checkout's node_modules may predate the onnxruntime-web devDependency.
if [ ! -d node_modules/playwright-core ] || [ ! -f node_modules/onnxruntime-web/dist/ort.webgpu.min.mjs ]; then
  say "installing node packages"
  npm ci --no-audit --no-fund
fi

CHROMIUM="${CHROMIUM:-$(command -v chromium)}" exec node bench/browser.mjs "$@"
