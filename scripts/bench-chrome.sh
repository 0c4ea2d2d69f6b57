#!/usr/bin/env bash
# `npm run bench:chrome`: the package in a real Chromium, its GPU process between the page and
# the driver: the kernel per shape and option against `a + b`, the normalization family, churn,
# call costs, waits, a token's chain, onnxruntime-web. Hardware: a machine with an NVIDIA GPU
# and its Vulkan driver gives GPU figures (docs/performance.md, "Chrome on a real GPU");
# elsewhere the browser's SwiftShader runs, and every table says NO ROOFLINE CLAIMS and prints
# µs only.
#
#   bash scripts/bench-chrome.sh             # here, with /usr/bin/chromium (npm run bench:chrome)
#
# A GPU machine without network gets the browser (npm @sparticuz/chromium) in two parts of
# under 45 MB each, so that each fits a transfer of at most 64 MiB with the rest:
#   bash scripts/bench-chrome.sh prepare     # where there is network: fills .gl/chrome-1/ and
#                                            # .gl/chrome-2/ (git-ignored), prints the steps
#   bash scripts/bench-chrome.sh run-part1   # on the GPU machine, with .gl/chrome-1 copied
#                                            # there: keeps part one in /tmp
#   bash scripts/bench-chrome.sh run [SECTIONS]  # then on the same machine, with .gl/chrome-2:
#                                            # joins the parts, runs SECTIONS
#   bash scripts/bench-chrome.sh probe       # instead of run: the adapter each launch
#                                            # configuration offers (bench/chrome/probe.html)
#
# SECTIONS: any of kernel family churn calls layers waits ort rotary decoder memory (default: the first seven, in that order). kernel and
# family run one fresh browser per shape; the others one browser each. BENCH_CHROME_ARGS go to
# every page (bench/dawn/bench.mjs's options and bench/chrome's), e.g.
#   BENCH_CHROME_ARGS="--shapes 1x896,16x4096" bash scripts/bench-chrome.sh run
# Prints markdown tables on stdout; JSON and .md per page go to bench-out/chrome/, or where
# $OUT is set to $OUT/tables.md and $OUT/pages.tar (see fold_page). Leave stdout unpiped: a
# pipe through `tail` prints nothing when a time limit ends the run.
# bench/ and www/lib come with the working tree; the two .gl folders hold everything else.
set -euo pipefail
cd "$(dirname "$0")/.."

SPARTICUZ=@sparticuz/chromium@153.0.0
P1=.gl/chrome-1 P2=.gl/chrome-2              # the two parts (one transfer each)
PART1_TMP=/tmp/bench-chrome-part1            # where call 1 leaves part one for call 2
RUN=${CHROME_RUN_DIR:-.gl/chrome-run}        # what is unpacked (never carried)
PORT=${BENCH_CHROME_PORT:-8765}
PAGE_TIMEOUT=${BENCH_CHROME_PAGE_TIMEOUT:-500}
ORT_WASM="jsep asyncify"                     # onnxruntime-web's wasm builds, in part two
say() { printf '\033[1m[bench:chrome]\033[0m %s\n' "$*" >&2; }
# shellcheck source=scripts/bench-lib.sh
. scripts/bench-lib.sh

prepare() {
  mkdir -p "$P1" "$P2/ort"
  if [ ! -s "$P1/chromium.xz.aa" ] || [ ! -s "$P2/chromium.xz.ab" ]; then
    say "fetching npm $SPARTICUZ (npm pack: package.json, node_modules and the lockfile are untouched)"
    tmp=$(mktemp -d)
    (cd "$tmp" && npm pack --silent "$SPARTICUZ" >/dev/null && tar -xzf ./*.tgz)
    node -e 'const z = require("zlib"), fs = require("fs"); for (const f of process.argv.slice(1)) fs.writeFileSync(f.replace(/\.br$/, ""), z.brotliDecompressSync(fs.readFileSync(f)));' \
      "$tmp"/package/bin/chromium.br "$tmp"/package/bin/al2023.tar.br "$tmp"/package/bin/swiftshader.tar.br
    say "xz -9e of the browser ($(du -h "$tmp/package/bin/chromium" | cut -f1); a few minutes)"
    xz -9e -T0 -c "$tmp/package/bin/chromium" >"$tmp/chromium.xz"
    # Two parts, each fitting a 64 MiB transfer with everything beside it.
    (cd "$tmp" && split -b 45000000 -a 2 chromium.xz chromium.xz.)
    [ ! -e "$tmp/chromium.xz.ac" ] || { say "the browser is more than two parts: raise split -b"; exit 1; }
    mv "$tmp/chromium.xz.aa" "$P1/" && mv "$tmp/chromium.xz.ab" "$P2/"
    for t in al2023 swiftshader; do xz -9 -T0 -c "$tmp/package/bin/$t.tar" >"$P2/$t.tar.xz"; done
    echo "$SPARTICUZ $(sha256sum "$tmp/package/bin/chromium" | cut -c1-16)" | tee "$P1/VERSION" >"$P2/VERSION"
    rm -rf "$tmp"
  fi
  # onnxruntime-web's WebGPU build (section ort): the module and the JSEP runtime it loads.
  # Both wasm builds: onnxruntime-web 1.30's WebGPU execution provider loads the asyncify one
  # (its native WebGPU EP), the JSEP one serves the JavaScript kernels.
  cp node_modules/onnxruntime-web/dist/ort.webgpu.min.mjs "$P2/ort/"
  for w in $ORT_WASM; do
    cp "node_modules/onnxruntime-web/dist/ort-wasm-simd-threaded.$w.mjs" "$P2/ort/"
    [ -s "$P2/ort/ort-wasm-simd-threaded.$w.wasm.xz" ] || xz -9 -T0 -c "node_modules/onnxruntime-web/dist/ort-wasm-simd-threaded.$w.wasm" >"$P2/ort/ort-wasm-simd-threaded.$w.wasm.xz"
  done
  loader_debs "$P2/debs"
  snapshot_pkg "$P2/pkg"
  say "ready: $P1 $(du -sh "$P1" | cut -f1), $P2 $(du -sh "$P2" | cut -f1) ($(tail -1 "$P2/pkg/SNAPSHOT.txt"))"
  say "on the GPU machine, the second step on the same machine as the first (part one waits in /tmp):"
  echo '    1. with .gl/chrome-1 there:  bash scripts/bench-chrome.sh run-part1' >&2
  echo '    2. with .gl/chrome-2 there:  bash scripts/bench-chrome.sh run' >&2
}

run_part1() {
  [ -s "$P1/chromium.xz.aa" ] || { say "$P1 is not prepared: run 'bash scripts/bench-chrome.sh prepare' where there is network"; exit 1; }
  mkdir -p "$PART1_TMP" && cp "$P1"/chromium.xz.aa "$P1"/VERSION "$PART1_TMP/"
  say "part one in $PART1_TMP ($(cat "$P1/VERSION")); next, on this machine with .gl/chrome-2: bash scripts/bench-chrome.sh run"
}

# Part two joined with part one, the libraries and loaders unpacked; sets BIN and the environment.
unpack_sparticuz() {
  [ -s "$P2/chromium.xz.ab" ] || { say "$P2 is not prepared: run 'bash scripts/bench-chrome.sh prepare' where there is network"; exit 1; }
  local aa=$PART1_TMP/chromium.xz.aa
  [ -s "$aa" ] || aa=$P1/chromium.xz.aa # here, where both folders are
  [ -s "$aa" ] || { say "no part one in $PART1_TMP: first run 'bash scripts/bench-chrome.sh run-part1' on this machine, with .gl/chrome-1"; exit 1; }
  mkdir -p "$RUN/lib" "$RUN/ort"
  RUN=$(cd "$RUN" && pwd)
  if [ ! -x "$RUN/chromium" ] || [ "$P2/chromium.xz.ab" -nt "$RUN/chromium" ]; then
    say "joining and unpacking the browser"
    if command -v xz >/dev/null; then cat "$aa" "$P2/chromium.xz.ab" | xz -d >"$RUN/chromium.tmp"
    else cat "$aa" "$P2/chromium.xz.ab" | python3 -c 'import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.stdin.buffer), sys.stdout.buffer)' >"$RUN/chromium.tmp"; fi
    chmod +x "$RUN/chromium.tmp" && mv "$RUN/chromium.tmp" "$RUN/chromium"
    # SwiftShader beside the binary: ANGLE looks for vk_swiftshader_icd.json in the binary's own
    # folder (as @sparticuz/chromium unpacks it), and with it elsewhere no Vulkan instance is
    # made, GL fails, and the GPU process exits: no WebGPU adapter at all, GPU or CPU.
    unxz_to "$P2/al2023.tar.xz" "$RUN/al2023.tar" && tar -xf "$RUN/al2023.tar" -C "$RUN/lib" && rm "$RUN/al2023.tar"
    unxz_to "$P2/swiftshader.tar.xz" "$RUN/swiftshader.tar" && tar -xf "$RUN/swiftshader.tar" -C "$RUN" && rm "$RUN/swiftshader.tar"
    for f in "$P2"/debs/*.deb; do undeb "$f" "$RUN/root"; done
  fi
  BIN=$RUN/chromium
  local sw=$RUN
  local libs; libs=$(find "$RUN/lib" -name '*.so*' -printf '%h\n' | sort -u | paste -sd:)
  # Prepended: the machine's own LD_LIBRARY_PATH (NVIDIA's /usr/local/nvidia/lib64) stays.
  export LD_LIBRARY_PATH="$libs:$sw:$RUN/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  # GL (ANGLE on Vulkan) needs VK_EXT_headless_surface, which NVIDIA's driver lacks: GL on
  # SwiftShader, WebGPU on NVIDIA. Without an NVIDIA ICD: SwiftShader alone (a CPU adapter).
  local nv=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  export VK_DRIVER_FILES="$( [ -f $nv ] && printf '%s:' $nv )$sw/vk_swiftshader_icd.json"
  export ANGLE_PREFERRED_DEVICE="SwiftShader Device (Subzero)"
  FLAGS=(--headless --no-sandbox --enable-unsafe-webgpu --enable-webgpu-developer-features --ignore-gpu-blocklist --use-angle=vulkan --enable-features=Vulkan --use-webgpu-adapter=default)
  # No NVIDIA driver (a local check of this path): ANGLE on Vulkan fails to initialize on
  # SwiftShader alone (Internal Vulkan error -3), and the GPU process exits; the defaults work.
  if [ ! -f $nv ]; then
    FLAGS=(--headless --no-sandbox --enable-unsafe-webgpu --enable-webgpu-developer-features)
    export LD_LIBRARY_PATH="$libs:$sw" # the browser's own loader, no ICD list
    unset VK_DRIVER_FILES ANGLE_PREFERRED_DEVICE
  fi
  cp "$P2/ort/ort.webgpu.min.mjs" "$RUN/ort/"
  for w in $ORT_WASM; do
    cp "$P2/ort/ort-wasm-simd-threaded.$w.mjs" "$RUN/ort/"
    [ -s "$RUN/ort/ort-wasm-simd-threaded.$w.wasm" ] || unxz_to "$P2/ort/ort-wasm-simd-threaded.$w.wasm.xz" "$RUN/ort/ort-wasm-simd-threaded.$w.wasm"
  done
  # Another build beside it: a pkg/ snapshot of its own under .gl/chrome-2 (e.g. .gl/chrome-2/pkg-b).
  ORT_DIR=$RUN/ort PKG_DIR=${BENCH_CHROME_PKG:-$P2/pkg}
}

choose_browser() {
  local want=${BENCH_CHROME_BROWSER:-}
  [ -n "$want" ] || { if [ -s "$PART1_TMP/chromium.xz.aa" ] || [ -d /usr/local/nvidia ]; then want=sparticuz; else want=system; fi; }
  if [ "$want" = sparticuz ]; then unpack_sparticuz; return; fi
  BIN=${CHROMIUM_PATH:-/usr/bin/chromium}
  [ -x "$BIN" ] || { say "no $BIN: set CHROMIUM_PATH, or BENCH_CHROME_BROWSER=sparticuz after prepare"; exit 1; }
  # As tests/e2e/support/chromium.mjs launches it: the SwiftShader adapter needs
  # --enable-unsafe-webgpu.
  FLAGS=(--headless=new --no-sandbox --enable-unsafe-webgpu --enable-webgpu-developer-features --disable-background-networking --disable-component-update --no-first-run)
  ORT_DIR=node_modules/onnxruntime-web/dist PKG_DIR=${BENCH_CHROME_PKG:-pkg}
  [ -f "$PKG_DIR/webgpu_rmsnorm_bg.wasm" ] || bash scripts/build.sh
}

# page NAME SECTION ARGS...: one fresh browser on the page; waits for its result, then ends that browser.
page() {
  local name=$1 section=$2; shift 2
  local q; q=$(python3 -c 'import sys, urllib.parse as u; print(u.urlencode({"section": sys.argv[1], "name": sys.argv[2], "args": " ".join(sys.argv[3:])}))' "$section" "$name" "$@")
  local profile; profile=$(mktemp -d)
  rm -f "$OUTDIR/$name.done"
  say "$name: a fresh browser ($section $*)"
  setsid "$BIN" "${FLAGS[@]}" --user-data-dir="$profile" "http://127.0.0.1:$PORT/bench/chrome/index.html?$q" >"$OUTDIR/$name.browser.log" 2>&1 &
  local pid=$! t=0
  while [ ! -e "$OUTDIR/$name.done" ] && [ $t -lt $((PAGE_TIMEOUT * 2)) ] && kill -0 $pid 2>/dev/null; do sleep 0.5; t=$((t + 1)); done
  kill -- -"$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  rm -rf "$profile"
  if [ "$(cat "$OUTDIR/$name.done" 2>/dev/null)" != ok ]; then
    say "$name: no result (see $OUTDIR/$name.browser.log)"; tail -5 "$OUTDIR/$name.browser.log" >&2; STATUS=1
  fi
  fold_page "$name"
}

# Where $OUT is set (a machine from which only a few files come back; kernel and family alone
# write 4 a shape), each page's files go into pages.tar and its table onto tables.md as soon as
# the page ends, so that a run cut off by a time limit still leaves every page it finished.
fold_page() {
  [ -n "${OUT:-}" ] || return 0
  local name=$1
  [ ! -f "$OUTDIR/$name.md" ] || cat "$OUTDIR/$name.md" >>"$OUTDIR/tables.md"
  (cd "$OUTDIR" && tar -rf pages.tar "$name".* && rm -f "$name".*)
}

run() {
  choose_browser
  local sections=("$@")
  [ ${#sections[@]} -gt 0 ] || sections=(kernel family churn calls layers waits ort)
  OUTDIR=${OUT:-bench-out/chrome}
  mkdir -p "$OUTDIR"
  # shellcheck disable=SC2206
  local args=(${BENCH_CHROME_ARGS:-}) shapes=() rest=() i
  for ((i = 0; i < ${#args[@]}; i++)); do
    if [ "${args[$i]}" = --shapes ]; then IFS=, read -r -a shapes <<<"${args[$((i + 1))]}"; i=$((i + 1)); else rest+=("${args[$i]}"); fi
  done
  python3 bench/chrome/serve.py --root . --pkg "$PKG_DIR" --ort "$ORT_DIR" --out "$OUTDIR" --port "$PORT" &
  SERVER=$! # global: the EXIT trap runs after this function's locals are gone
  trap 'kill $SERVER 2>/dev/null || true' EXIT
  sleep 1
  say "browser $BIN ($("$BIN" --version 2>/dev/null || echo '?')) · $(tail -1 "$PKG_DIR/SNAPSHOT.txt" 2>/dev/null || echo "pkg/ of the checkout") · VK_DRIVER_FILES=${VK_DRIVER_FILES:-(default)}"
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader >&2 || true
  STATUS=0
  # The family's shapes are its section's own (FAMILY_SHAPES in bench/shared/section-family.mjs).
  local big=(2048x4096 8192x4096 12288x4096 16384x2048 16384x4096 8192x8192) fam
  IFS=, read -r -a fam <<<"$(sed -n 's/^const FAMILY_SHAPES = "\([^"]*\)".*/\1/p' bench/shared/section-family.mjs)"
  [ ${#fam[@]} -gt 0 ] || { say "no FAMILY_SHAPES in bench/shared/section-family.mjs"; exit 1; }
  [ ${#shapes[@]} -eq 0 ] || { big=("${shapes[@]}"); fam=("${shapes[@]}"); }
  local joined; joined=$(IFS=,; echo "${shapes[*]:-}")
  for s in "${sections[@]}"; do
    case $s in
      # One fresh browser per shape. kernel: 20 dispatches a pass after 1 s of warm-up (the GPU's
      # clock up); family: its section's own pairs (the busy ones after 1 s of warm-up).
      kernel) for sh in "${big[@]}"; do page "$s-$sh" "$s" --shapes "$sh" --max-n 20 --pass-us 1e12 "${rest[@]}"; done ;;
      family) for sh in "${fam[@]}"; do page "$s-$sh" "$s" --shapes "$sh" "${rest[@]}"; done ;;
      churn | ort) page "$s" "$s" ${joined:+--shapes "$joined"} "${rest[@]}" ;;
      calls) page calls calls --calls 300 "${rest[@]}" ;;
      layers) page layers layers "${rest[@]}" ;;
      waits) page waits waits "${rest[@]}" ;;
      memory) page memory memory "${rest[@]}" ;;
      rotary | decoder) page "$s" "$s" ${joined:+--shapes "$joined"} "${rest[@]}" ;;
      *) say "unknown section $s"; STATUS=64 ;;
    esac
  done
  return $STATUS
}

# probe: which adapter each launch configuration offers (the one `run` uses on a GPU machine,
# and variations of it), one fresh browser each, on bench/chrome/probe.html. After run-part1, as run.
probe() {
  unpack_sparticuz
  OUTDIR=${OUT:-bench-out/chrome}
  mkdir -p "$OUTDIR"
  python3 bench/chrome/serve.py --root . --pkg "$PKG_DIR" --ort "$ORT_DIR" --out "$OUTDIR" --port "$PORT" &
  SERVER=$!
  trap 'kill $SERVER 2>/dev/null || true' EXIT
  sleep 1
  local base_ld=$LD_LIBRARY_PATH base_vk=${VK_DRIVER_FILES:-} base_flags=("${FLAGS[@]}") debs=$RUN/root/usr/lib/x86_64-linux-gnu
  local sw=$RUN
  try() { # NAME, then env assignments and flags (after --)
    local name=$1; shift
    local envs=() flags=("${base_flags[@]}")
    while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
    [ "${1:-}" = -- ] && { shift; flags=("$@"); }
    local profile; profile=$(mktemp -d)
    rm -f "$OUTDIR/$name.done"
    local vk=()
    [ -z "$base_vk" ] || vk=(VK_DRIVER_FILES="$base_vk")
    env -u VK_DRIVER_FILES LD_LIBRARY_PATH="$base_ld" "${vk[@]}" "${envs[@]}" setsid "$BIN" "${flags[@]}" --user-data-dir="$profile" \
      "http://127.0.0.1:$PORT/bench/chrome/probe.html?name=$name" >"$OUTDIR/$name.browser.log" 2>&1 &
    local pid=$! t=0
    while [ ! -e "$OUTDIR/$name.done" ] && [ $t -lt 40 ] && kill -0 $pid 2>/dev/null; do sleep 0.5; t=$((t + 1)); done
    kill -- -"$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    rm -rf "$profile"
    [ -e "$OUTDIR/$name.done" ] || { echo "$name: no answer; $(grep -c ERROR "$OUTDIR/$name.browser.log") ERROR lines, last: $(grep ERROR "$OUTDIR/$name.browser.log" | tail -1 | cut -c1-200)"; }
  }
  local webgpu=(--headless --no-sandbox --enable-unsafe-webgpu --enable-webgpu-developer-features --ignore-gpu-blocklist --use-webgpu-adapter=default)
  try recipe
  try debs-loader-first LD_LIBRARY_PATH="$debs:$base_ld"
  try icd-filenames-too VK_ICD_FILENAMES="$base_vk"
  try debs-first-icd-too LD_LIBRARY_PATH="$debs:$base_ld" VK_ICD_FILENAMES="$base_vk"
  try angle-swiftshader -- "${webgpu[@]}" --use-angle=swiftshader --enable-features=Vulkan
  try angle-swiftshader-debs LD_LIBRARY_PATH="$debs:$base_ld" -- "${webgpu[@]}" --use-angle=swiftshader --enable-features=Vulkan
  try angle-swiftshader-nv-only VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json -- "${webgpu[@]}" --use-angle=swiftshader --enable-features=Vulkan
  try gl-disabled -- "${webgpu[@]}" --use-gl=disabled --enable-features=Vulkan
  try defaults -- "${webgpu[@]}"
  try swiftshader-only VK_DRIVER_FILES="$sw/vk_swiftshader_icd.json"
}

case "${1:-}" in
  prepare) prepare ;;
  probe) probe ;;
  run-part1) run_part1 ;;
  run) shift; run "$@" ;;
  "") run ;;
  *) echo "usage: bash scripts/bench-chrome.sh [prepare | run-part1 | probe | run [kernel] [family] [churn] [calls] [layers] [waits] [ort] [memory]]" >&2; exit 64 ;;
esac
