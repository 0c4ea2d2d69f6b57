#!/usr/bin/env bash
# Runs every test layer: native (lavapipe), browser (wasm-bindgen-test in headless
# Chromium), and end-to-end (the packed npm tarball in a consumer page).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

echo "== native: cargo test (Vulkan on lavapipe) =="
cargo test --release 2>&1 | grep -v XDG_RUNTIME_DIR

echo "== browser: wasm-pack test --headless --chrome =="
# The runner's limit is for the whole suite (20 s by default), which SwiftShader compiling the
# kernels of every variant on a CPU can exceed.
WASM_BINDGEN_TEST_TIMEOUT="${WASM_BINDGEN_TEST_TIMEOUT:-300}" wasm-pack test --headless --chrome --release --mode no-install

echo "== end-to-end: packed package in headless Chromium =="
bash scripts/build.sh
node --test --test-reporter=spec tests/e2e/
