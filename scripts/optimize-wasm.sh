#!/usr/bin/env bash
# Optimizes a built .wasm in place with binaryen's wasm-opt (the `binaryen` devDependency,
# pinned in package.json): `bash scripts/optimize-wasm.sh pkg/webgpu_rmsnorm_bg.wasm`.
# Sizes and the CPU backend's speed before and after: docs/performance.md, "The download".
set -euo pipefail
cd "$(dirname "$0")/.."
wasm="$1"
opt=node_modules/.bin/wasm-opt
if [ ! -x "$opt" ]; then
  echo "$opt is missing: run \`npm ci\` (or \`bash scripts/setup.sh\`) first" >&2
  exit 1
fi
# Exactly the features rustc's output uses (its target_features section lists them; simd128
# is .cargo/config.toml's), so that wasm-opt neither refuses them nor introduces one that an
# engine the package supports (Chromium, Firefox ESR, WebKit, Deno, Node) may lack. -O3, not
# -Oz: as small here, and the CPU backend's kernel keeps its speed. The names section,
# producers and target features go: nothing at run time reads them.
"$opt" "$wasm" -o "$wasm" -O3 --mvp-features \
  --enable-bulk-memory --enable-bulk-memory-opt --enable-call-indirect-overlong \
  --enable-multivalue --enable-mutable-globals --enable-nontrapping-float-to-int \
  --enable-reference-types --enable-sign-ext --enable-simd \
  --strip-debug --strip-producers --strip-target-features
