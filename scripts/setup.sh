#!/usr/bin/env bash
# Installs what building and testing need and is missing; safe to run again.
# Rust pieces through rustup/cargo, system pieces through apt-get (as root on Debian),
# node packages through npm. Without root, says exactly what to install instead.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '\033[1m[setup]\033[0m %s\n' "$*"; }

if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  say "adding the wasm32-unknown-unknown target"
  rustup target add wasm32-unknown-unknown
fi

# wasm-bindgen-cli must match the wasm-bindgen in Cargo.lock exactly.
want=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/"/, "", $3); print $3 }' Cargo.lock)
have=$(wasm-bindgen --version 2>/dev/null | awk '{print $2}' || true)
if [ "$have" != "$want" ]; then
  say "installing wasm-bindgen-cli $want (found: ${have:-none}; ~2 min)"
  # Not --locked: its lockfile pins a crate this registry mirror lacks.
  cargo install wasm-bindgen-cli --version "$want"
fi

if ! command -v wasm-pack >/dev/null; then
  say "installing wasm-pack (~2 min)"
  cargo install wasm-pack --locked
fi

missing=()
command -v chromium >/dev/null || missing+=(chromium)
command -v chromedriver >/dev/null || missing+=(chromium-driver)
# Firefox ESR: the end-to-end suite's second browser, where WebGPU is missing (the CPU backend).
command -v firefox-esr >/dev/null || missing+=(firefox-esr)
# WebKitGTK (Safari's engine, JavaScriptCore): the third browser, no WebGPU there either; its
# WebDriver brings MiniBrowser, which needs an X display (Xvfb).
command -v WebKitWebDriver >/dev/null || missing+=(webkit2gtk-driver)
command -v Xvfb >/dev/null || missing+=(xvfb)
# lavapipe: a Vulkan driver on the CPU, for the native GPU tests.
ls /usr/share/vulkan/icd.d/lvp_icd*.json >/dev/null 2>&1 || missing+=(mesa-vulkan-drivers)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    say "apt-get install ${missing[*]}"
    # Another apt-get (an unattended upgrade) may hold the dpkg lock: wait for it, not fail.
    apt-get -o DPkg::Lock::Timeout=600 update -qq
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq "${missing[@]}" >/dev/null
  else
    echo "Missing system packages: ${missing[*]}" >&2
    echo "Install them (Debian/Ubuntu: sudo apt-get install ${missing[*]}) and run again." >&2
    exit 1
  fi
fi

# binaryen: wasm-opt for scripts/build.sh (scripts/optimize-wasm.sh).
if [ ! -d node_modules/playwright-core ] || [ ! -d node_modules/puppeteer-core ] || [ ! -e node_modules/.bin/deno ] \
  || [ ! -e node_modules/.bin/wasm-opt ]; then
  say "installing node packages"
  npm ci --no-audit --no-fund
fi
