#!/usr/bin/env bash
# Builds the package and serves the demo page from www/ on http://127.0.0.1:8080.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
exec node scripts/serve.mjs --port "${PORT:-8080}" / www /pkg pkg
