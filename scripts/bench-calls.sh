#!/usr/bin/env bash
# `npm run bench:calls`: the package's own CPU cost per call (1×4096 f32 in place on resident
# tensors) beside a hand-written WebGPU recording of the same kernel with its bind group made
# once: `encode` (plain and bound) against recording the pass by hand, and `run` not awaited
# (plain and bound) against submitting it by hand, in paired passes, in headless Chromium on
# whatever adapter it offers (SwiftShader on a machine without a GPU). Table on stdout,
# details in bench-out/calls.json. Arguments go to bench/calls.mjs (--hidden 4096 --calls 100
# --rounds 41 --pkg DIR). On a real GPU: `npm run bench:chrome` (its calls section) and
# `npm run bench:dawn`; figures in docs/performance.md.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/bench-setup.sh bench:calls
exec node bench/calls.mjs "$@"
