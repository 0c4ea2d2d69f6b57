#!/usr/bin/env bash
# `npm run bench:pipeline`: a 32-layer residual chain of fused add+RMSNorm at hidden 4096, rows
# 1 and 128, in headless Chromium: ours with GPU-resident tensors (output: "gpu"; inPlace: true),
# ours with a Float32Array round trip per layer, and onnxruntime-web's WebGPU
# SkipSimplifiedLayerNormalization chain. Table on stdout, details in bench-out/pipeline.json.
# Hardware: wherever headless Chromium runs, on the adapter it offers (SwiftShader on a machine
# without a GPU, whose times are CPU work).
# Arguments go to bench/pipeline.mjs (--rows 1,128 --layers 32 --hidden 4096 --pkg DIR ...).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/bench-setup.sh bench:pipeline
exec node bench/pipeline.mjs "$@"
