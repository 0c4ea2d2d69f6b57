#!/usr/bin/env bash
# `npm run bench:dawn`: the package on Chrome's WebGPU implementation (Dawn, via dawn.node from
# npm webgpu@0.6.2) under Node, without a browser — call cost beside raw WebGPU, kernel time in
# a dependent chain against an `a + b` roofline, the normalization family, and the 128 MiB cliff
# sequence (bench/dawn/README.md says what each number is). Hardware: a machine with a Vulkan
# GPU; without one Dawn has no adapter and nothing is measured (exit status 2). Prints markdown
# tables (docs/performance.md, "Dawn in Node", has the current ones).
#
#   bash scripts/bench-dawn.sh                # both steps, here (npm run bench:dawn)
#   bash scripts/bench-dawn.sh prepare        # where there is network: fills .gl/dawn/ (~30 MB,
#                                             # git-ignored) and prints the command to run
#   bash scripts/bench-dawn.sh run [SECTIONS] # where the GPU is, with .gl/dawn copied there
#                                             # (no network needed): unpacks node, dawn.node and
#                                             # the Vulkan loader from it, runs SECTIONS
#   bash scripts/bench-dawn.sh check          # where the GPU is: the package in Node on Dawn as
#                                             # an app sets it up, against the f64 reference
#                                             # (bench/dawn/node-check.mjs)
#
# SECTIONS: any of cliff calls kernel family rotary decoder memory sweep (default: the first three, each in a fresh process,
# cliff first; sweep needs --wgsl FILE in BENCH_DAWN_ARGS, see bench/dawn/bench.mjs). Options for bench/dawn/bench.mjs go in BENCH_DAWN_ARGS, e.g.
#   BENCH_DAWN_ARGS="--shapes 1x4096,16384x4096 --calls 200" bash scripts/bench-dawn.sh run kernel
# bench/dawn/ and bench/shared/ (bench.mjs and the modules it imports) come with the working
# tree, not in .gl/dawn.
# Results: tables on stdout, JSON in $OUT where it is set, else bench-out/dawn/.
# Exit status 2: no usable GPU adapter (the message says why; nothing was measured).
# Local functional check on a CPU adapter (SwiftShader's Vulkan ICD shipped with Chromium):
#   DAWN_VK_ICD=/usr/lib/chromium/vk_swiftshader_icd.json BENCH_DAWN_ARGS="--shapes 1x896,4x4099 \
#     --calls 50" bash scripts/bench-dawn.sh run calls kernel
set -euo pipefail
cd "$(dirname "$0")/.."

WEBGPU_VERSION=0.6.2
DIR=.gl/dawn                                 # what a GPU machine without network needs
RUN=${DAWN_RUN_DIR:-.gl/dawn-run}            # what is unpacked from it (never carried)
say() { printf '\033[1m[bench:dawn]\033[0m %s\n' "$*" >&2; }

prepare() {
  mkdir -p "$DIR/debs" "$DIR/webgpu/dist/linux-x64" "$DIR/pkg"
  if [ ! -s "$DIR/node.xz" ]; then
    node_bin=$(readlink -f "$(command -v node)")
    say "compressing $node_bin ($(node --version)) into $DIR/node.xz (xz -6, ~1 min)"
    xz -6 -T0 -c "$node_bin" >"$DIR/node.xz.tmp" && mv "$DIR/node.xz.tmp" "$DIR/node.xz"
    node --version >"$DIR/node.version"
  fi
  if [ ! -s "$DIR/webgpu/dist/linux-x64/dawn.node.xz" ]; then
    say "fetching npm webgpu@$WEBGPU_VERSION (npm pack: node_modules and the lockfile are untouched)"
    tmp=$(mktemp -d)
    (cd "$tmp" && npm pack --silent "webgpu@$WEBGPU_VERSION" >/dev/null)
    tar -xzf "$tmp/webgpu-$WEBGPU_VERSION.tgz" -C "$tmp" package/index.js package/package.json package/LICENSE.md package/dist/linux-x64/dawn.node
    cp "$tmp/package/index.js" "$tmp/package/package.json" "$tmp/package/LICENSE.md" "$DIR/webgpu/"
    xz -6 -T0 -c "$tmp/package/dist/linux-x64/dawn.node" >"$DIR/webgpu/dist/linux-x64/dawn.node.xz"
    rm -rf "$tmp"
  fi
  loader_debs "$DIR/debs"
  snapshot_pkg "$DIR/pkg"
  say "ready: $(du -sh "$DIR" | cut -f1) in $DIR ($(tail -1 "$DIR/pkg/SNAPSHOT.txt"))"
  say "on the GPU machine, with $DIR copied there:"
  echo "    bash scripts/bench-dawn.sh run" >&2
}

# loader_debs, snapshot_pkg, unxz_to, undeb
# shellcheck source=scripts/bench-lib.sh
. scripts/bench-lib.sh

unpack() {
  LOADER=
  [ -s "$DIR/webgpu/dist/linux-x64/dawn.node.xz" ] || { say "$DIR is not prepared: run 'bash scripts/bench-dawn.sh prepare' where there is network"; exit 1; }
  mkdir -p "$RUN/webgpu/dist/linux-x64" "$RUN/bin"
  RUN=$(cd "$RUN" && pwd)
  if [ -s "$DIR/node.xz" ] && { [ ! -x "$RUN/bin/node" ] || [ "$DIR/node.xz" -nt "$RUN/bin/node" ]; }; then
    unxz_to "$DIR/node.xz" "$RUN/bin/node.tmp" && chmod +x "$RUN/bin/node.tmp" && mv "$RUN/bin/node.tmp" "$RUN/bin/node"
  fi
  if [ ! -s "$RUN/webgpu/dist/linux-x64/dawn.node" ] || [ "$DIR/webgpu/dist/linux-x64/dawn.node.xz" -nt "$RUN/webgpu/dist/linux-x64/dawn.node" ]; then
    unxz_to "$DIR/webgpu/dist/linux-x64/dawn.node.xz" "$RUN/webgpu/dist/linux-x64/dawn.node"
  fi
  cp "$DIR"/webgpu/index.js "$DIR"/webgpu/package.json "$RUN/webgpu/"
  NODE=$RUN/bin/node
  [ -x "$NODE" ] || NODE=$(command -v node || true)
  [ -n "$NODE" ] || { say "no node binary: neither $DIR/node.xz nor node on PATH"; exit 1; }
  # The loaders, where the system has no libvulkan.so.1 (a machine may have the NVIDIA
  # driver but none). As root on a machine with the NVIDIA driver: unpacked into / and
  # `ldconfig`. Otherwise (or DAWN_LOADER_MODE=ldpath): unpacked beside
  # the rest and found through LD_LIBRARY_PATH. DAWN_BUNDLED_LOADER=1 uses the carried
  # loaders even where the system has one. (No `grep -q` here: under pipefail its early exit
  # fails the pipeline through ldconfig's SIGPIPE.)
  if [ -n "${DAWN_BUNDLED_LOADER:-}" ] || ! ldconfig -p 2>/dev/null | grep 'libvulkan\.so\.1 ' >/dev/null; then
    if [ "$(id -u)" = 0 ] && [ "${DAWN_LOADER_MODE:-root}" = root ] && [ -d /usr/local/nvidia ] && command -v dpkg >/dev/null; then
      for f in "$DIR"/debs/*.deb; do dpkg -x "$f" /; done
      ldconfig
      LOADER="unpacked into / (ldconfig)"
    else
      for f in "$DIR"/debs/*.deb; do undeb "$f" "$RUN/root"; done
      export LD_LIBRARY_PATH="$RUN/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
      LOADER="LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
    fi
  fi
  if [ -n "${DAWN_VK_ICD:-}" ]; then
    export VK_DRIVER_FILES=$DAWN_VK_ICD
  elif [ -z "${VK_DRIVER_FILES:-}" ] && [ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]; then
    export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  fi
  if [ -z "${__EGL_VENDOR_LIBRARY_FILENAMES:-}" ] && [ -f /usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json ]; then
    export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
  fi
  export DAWN_WEBGPU_DIR=$RUN/webgpu DAWN_PKG_DIR=${DAWN_PKG_DIR:-$PWD/$DIR/pkg} # another build: a pkg/ copy under .gl/dawn
  # dawn.node prints this on machines with no display session; it is noise.
  export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-$(mktemp -d)}
}

# Where there is an NVIDIA GPU but Dawn found no adapter: what the Vulkan loader saw.
diagnose() {
  set +e +o pipefail # every probe below may fail; report and go on
  say "diagnostics (no adapter on a machine with an NVIDIA GPU):"
  {
    echo "--- id: $(id -u); LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}; VK_DRIVER_FILES=${VK_DRIVER_FILES:-}"
    echo "--- ICD:"; cat "${VK_DRIVER_FILES:-/dev/null}" 2>&1
    echo "--- ldconfig -p (vulkan, GLX, GLdispatch, nvidia-gl*):"
    ldconfig -p 2>&1 | grep -i -E 'vulkan|libGLX|GLdispatch|nvidia-(gl|tls|gpucomp|spirv)' | head -20
    echo "--- /usr/local/nvidia/lib64 (graphics parts):"
    ls /usr/local/nvidia/lib64 2>&1 | grep -i -E 'GLX|glcore|glsi|tls|vk|spirv|gpucomp|EGL|GLdispatch' | head -30
    echo "--- /dev/nvidia*:"; ls /dev/nvidia* 2>&1 | head
    echo "--- Vulkan loader log (VK_LOADER_DEBUG=error,warn,driver):"
    VK_LOADER_DEBUG=error,warn,driver "$NODE" -e '
      import(process.env.DAWN_WEBGPU_DIR + "/index.js").then(async ({ create }) => {
        const a = await create([]).requestAdapter();
        console.log("requestAdapter:", a ? `${a.info.vendor} ${a.info.device} ${a.info.description}` : null);
        process.exit(0);
      });' 2>&1 | grep -i -E 'error|warn|could not|fail|requestAdapter|nvidia|icd' | awk '!seen[$0]++' | head -40
  } >&2
}

run() {
  unpack
  local sections=("$@")
  [ ${#sections[@]} -gt 0 ] || sections=(cliff calls kernel)
  local out=${OUT:-bench-out/dawn}
  mkdir -p "$out"
  say "node $("$NODE" --version) ($NODE) · $(tail -1 "$DIR/pkg/SNAPSHOT.txt") · VK_DRIVER_FILES=${VK_DRIVER_FILES:-(default)} · loader: ${LOADER:-system}"
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader >&2 || true
  local status=0
  for s in "${sections[@]}"; do
    # shellcheck disable=SC2086
    "$NODE" bench/dawn/bench.mjs "$s" --json "$out/dawn-$s.json" ${BENCH_DAWN_ARGS:-} || {
      rc=$?
      # 2: no usable adapter — said once is enough; the other sections would say the same.
      if [ $rc -eq 2 ]; then
        command -v nvidia-smi >/dev/null && diagnose
        exit 2
      fi
      status=$rc
    }
  done
  return $status
}

case "${1:-}" in
  prepare) prepare ;;
  run) shift; run "$@" ;;
  check) unpack; "$NODE" bench/dawn/node-check.mjs ;;
  "") prepare; run ;;
  *) echo "usage: bash scripts/bench-dawn.sh [prepare | run [cliff] [calls] [kernel] [family] [rotary] [decoder] [memory] [sweep] | check]" >&2; exit 64 ;;
esac
