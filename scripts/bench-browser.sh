#!/usr/bin/env bash
# `npm run bench`: our kernel vs onnxruntime-web's WebGPU SkipSimplifiedLayerNormalization vs
# a plain JS loop, then the CPU backend vs the JS loop (both into an output array they keep),
# onnxruntime-web's wasm EP and the "webgpu" and "auto" backends, in headless Chromium. Tables on stdout, details in
# bench-out/browser.json and bench-out/cpu.json. Arguments go to bench/browser.mjs
# (--webgpu or --cpu for one section, --shapes 1x896,16x4096 --k 21 --cpu-shapes 1x4096
# --batch-ms 10 --budget-ms 4000; --browser firefox or webkit for the CPU section in those engines).
# Hardware: wherever the browsers run; headless Chromium's WebGPU adapter is the GPU's where it
# offers one, else SwiftShader on the CPU. The CPU section's current figures, in three engines:
# docs/performance.md, "The CPU backend in three engines".
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/bench-setup.sh bench
exec node bench/browser.mjs "$@"
