#!/usr/bin/env bash
# Builds the npm package's contents into pkg/ (wasm-pack --target web).
set -euo pipefail
cd "$(dirname "$0")/.."
# wasm-bindgen's inline JavaScript lands in pkg/snippets/<crate>-<hash>/: start it afresh so
# that no snippet of an older build ships.
rm -rf pkg/snippets
wasm-pack --quiet build --target web --release --out-dir pkg --no-pack --mode no-install
bash scripts/optimize-wasm.sh pkg/webgpu_rmsnorm_bg.wasm
# wasm-pack writes a pkg/.gitignore of "*", which would silently empty the npm tarball.
rm -f pkg/.gitignore
cat src/js/freed_guard.js >> pkg/webgpu_rmsnorm.js
cat src/js/dispose.d.ts >> pkg/webgpu_rmsnorm.d.ts
# The package's entry: wasm-bindgen's module with an init() that also reads the .wasm from disk
# where fetch cannot (Node).
cp src/js/entry.js pkg/index.js
cp src/js/entry.d.ts pkg/index.d.ts
ls -l pkg/index.js pkg/webgpu_rmsnorm.js pkg/webgpu_rmsnorm.d.ts pkg/webgpu_rmsnorm_bg.wasm
