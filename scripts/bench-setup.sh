# Sourced by the bench scripts from the repository root, with the script's name for its
# messages (`source scripts/bench-setup.sh bench`): installs what a browser benchmark needs
# where it is missing — a built pkg/, Chromium, the node packages (onnxruntime-web among them).

BENCH_NAME="$1"
say() { printf '\033[1m[%s]\033[0m %s\n' "$BENCH_NAME" "$*"; }

if [ ! -f pkg/webgpu_rmsnorm.js ]; then
  say "no pkg/: setting up the toolchain and building the package"
  bash scripts/setup.sh
  bash scripts/build.sh
fi

if ! command -v chromium >/dev/null && [ -z "${CHROMIUM_PATH:-}" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    say "apt-get install chromium"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "Chromium is missing: install it (Debian/Ubuntu: sudo apt-get install chromium) and run again." >&2
    exit 1
  fi
fi
# The same variable the end-to-end tests read (tests/e2e/support/chromium.mjs).
export CHROMIUM_PATH="${CHROMIUM_PATH:-$(command -v chromium)}"

# An older checkout's node_modules may predate the onnxruntime-web devDependency.
if [ ! -d node_modules/playwright-core ] || [ ! -f node_modules/onnxruntime-web/dist/ort.webgpu.min.mjs ]; then
  say "installing node packages"
  npm ci --no-audit --no-fund
fi
