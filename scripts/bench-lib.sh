# Helpers shared by bench-dawn.sh and bench-chrome.sh: the loader debs and the pkg/ snapshot (prepare, where there is network), unpacking where xz and dpkg may be missing (the GPU machine).
# shellcheck shell=bash

unxz_to() { # unxz_to SRC DEST: xz where there is one, else Python's lzma
  if command -v xz >/dev/null; then xz -dc "$1" >"$2"; else python3 -c 'import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' "$1" "$2"; fi
}

undeb() { # undeb DEB DEST: dpkg -x where there is dpkg, else Python (ar archive, data.tar.*)
  if command -v dpkg >/dev/null; then dpkg -x "$1" "$2"; return; fi
  python3 - "$1" "$2" <<'PY'
import io, sys, tarfile
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"!<arch>\n", "not a .deb"
off = 8
while off + 60 <= len(data):
    name, size = data[off:off + 16].decode().strip(), int(data[off + 48:off + 58])
    if name.startswith("data.tar"):
        tarfile.open(fileobj=io.BytesIO(data[off + 60:off + 60 + size])).extractall(sys.argv[2])
    off += 60 + size + (size & 1)
PY
}

# loader_debs DIR: the loaders a GPU machine may lack (the Vulkan loader and GLVND's, amd64 .debs).
# snapshot_pkg DIR: pkg/ as it is now, into DIR (another build may rewrite pkg/ meanwhile).
LOADER_DEBS="libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2"

loader_debs() {
  mkdir -p "$1"
  # The loaders a machine with only NVIDIA's driver lacks: the Vulkan loader and GLVND's
  # (NVIDIA's ICD lives in libGLX_nvidia.so.0, which needs libGLdispatch).
  if ! ls "$1"/libvulkan1_*.deb "$1"/libglvnd0_*.deb >/dev/null 2>&1; then
    say "downloading the loaders (libvulkan1 + GLVND, amd64) for the GPU machine"
    lists=$(mktemp -d)
    mkdir -p "$lists/partial"
    o="-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=$lists"
    apt-get $o update -qq
    (cd "$1" && apt-get $o download $LOADER_DEBS >/dev/null)
    rm -rf "$lists"
  fi
}

snapshot_pkg() {
  mkdir -p "$1"
  # A snapshot of the package as it is now (another build may rewrite pkg/ meanwhile).
  if [ ! -f pkg/webgpu_rmsnorm.js ] || [ ! -f pkg/webgpu_rmsnorm_bg.wasm ]; then
    say "no pkg/: building it"
    bash scripts/build.sh
  fi
  # index.js: the entry an app imports, which `bash scripts/bench-dawn.sh check` imports too.
  cp pkg/index.js pkg/webgpu_rmsnorm.js pkg/webgpu_rmsnorm_bg.wasm pkg/webgpu_rmsnorm.d.ts "$1/"
  # wasm-bindgen's inline JavaScript (`snippets/<crate>-<hash>/inline0.js`), which the glue
  # imports by relative path: the snapshot must hold the same tree beside it. Replaced whole,
  # so that snippets of an older build cannot linger.
  rm -rf "$1/snippets"
  if [ -d pkg/snippets ]; then
    cp -R pkg/snippets "$1/snippets"
  fi
  {
    echo "snapshot of pkg/ taken $(date -u +%FT%TZ)"
    echo "checkout $(git describe --always --dirty 2>/dev/null || echo unknown); pkg built $(date -u -r pkg/webgpu_rmsnorm_bg.wasm +%FT%TZ)"
  } >"$1/SNAPSHOT.txt"
}
