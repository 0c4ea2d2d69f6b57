#!/usr/bin/env bash
# `npm run bench:pipeline`: a 32-layer residual chain of fused add+RMSNorm at hidden 4096, rows
# 1 and 128, in headless Chromium: ours with GPU-resident tensors (output: "gpu"; inPlace: true),
# ours with a Float32Array round trip per layer, and onnxruntime-web's WebGPU
# SkipSimplifiedLayerNormalization chain. Table on stdout, details in bench-out/pipeline.json.
# Arguments go to bench/pipeline.mjs (--rows 1,128 --layers 32 --hidden 4096 --pkg DIR ...).
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '\033[1m[bench:pipeline]\033[0m %s\n' "$*"; }

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

if [ ! -d node_modules/playwright-core ] || [ ! -f node_modules/onnxruntime-web/dist/ort.webgpu.min.mjs ]; then
  say "installing node packages"
  npm ci --no-audit --no-fund
fi

CHROMIUM="${CHROMIUM:-$(command -v chromium)}" exec node bench/pipeline.mjs "$@"
