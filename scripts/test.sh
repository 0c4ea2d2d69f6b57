#!/usr/bin/env bash
# Builds the package, then runs every test layer: native (lavapipe, and checks of the built
# package), browser (wasm-bindgen-test in headless Chromium), and end-to-end (the packed npm
# tarball in a consumer page).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

# The package first: the native tests also check what is built into pkg/ (the glue that
# tests/js_boundary.rs reads, the tarball that tests/packaging.rs lists).
echo "== build: the package into pkg/ =="
bash scripts/build.sh

echo "== native: cargo test (Vulkan on lavapipe) =="
cargo test --release 2>&1 | grep -v XDG_RUNTIME_DIR

echo "== browser: wasm-pack test --headless --chrome =="
# The runner's limit is for the whole suite (20 s by default), which SwiftShader compiling the
# kernels of every variant on a CPU can exceed.
# ChromeDriver now and then never sees the page finish loading its scripts ("Failed to detect
# test as having been run"), with no test started: that alone is tried once more. A test that
# fails or hangs fails the same way twice.
wasm_pack_test() {
  WASM_BINDGEN_TEST_TIMEOUT="${WASM_BINDGEN_TEST_TIMEOUT:-300}" wasm-pack test --headless --chrome --release --mode no-install 2>&1 | tee "$1"
  return "${PIPESTATUS[0]}"
}
log=$(mktemp)
if ! wasm_pack_test "$log"; then
  grep -q "Failed to detect test as having been run" "$log" && ! grep -q "^test .* \.\.\. " "$log" || exit 1
  echo "== browser: the page never loaded its tests; once more =="
  wasm_pack_test "$log"
fi
rm -f "$log"

echo "== end-to-end: packed package in headless Chromium =="
node --test --test-reporter=spec tests/e2e/
