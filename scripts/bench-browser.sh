#!/usr/bin/env bash
# `npm run bench`: our kernel vs onnxruntime-web's WebGPU SkipSimplifiedLayerNormalization vs
# a plain JS loop, in headless Chromium. Table on stdout, details in bench-out/browser.json.
# Arguments go to bench/browser.mjs (--shapes 1x896,16x4096 --k 21 --budget-ms 4000).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/bench-setup.sh bench
exec node bench/browser.mjs "$@"
