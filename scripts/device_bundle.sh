#!/usr/bin/env bash
# Packs build/ddpsim and build/bench/ddpbench, built here, for a GPU machine that lacks their
# Debian libraries (SimGrid, spdlog, fmt, jemalloc, Boost): BUNDLE/ddpsim and BUNDLE/ddpbench are
# wrappers that run the binaries with BUNDLE/lib first on the library path.
#   bash scripts/device_bundle.sh [BUNDLE]     (default .devbundle, ignored by git)
# It also writes BUNDLE.tar.xz (about 12 MB against 49 MB unpacked: SimGrid brings ns-3): carry
# that (the device tool carries at most 64 MiB with the working tree); device_profile.sh unpacks it.
# Every library ldd lists is copied except glibc's own (libc, libm, libpthread, libdl, librt, the
# loader), which must match the machine's loader, and the GPU libraries (CUDA runtime and driver,
# cuBLAS, cuDNN, NCCL: hundreds of MB), which the ddpbench wrapper takes from the machine: its
# /usr/local/cuda/lib64 and the nvidia/*/lib folders of its python3's PyTorch wheels.
# scripts/device_profile.sh uses BUNDLE when build/ddpsim is absent and BUNDLE/ddpsim exists.
set -euo pipefail
cd "$(dirname "$0")/.."
bundle=${1:-.devbundle}
[ -x build/ddpsim ] || { echo "device_bundle.sh: build/ddpsim not built (bash scripts/build.sh)" >&2; exit 2; }
rm -rf "$bundle"
mkdir -p "$bundle/lib" "$bundle/bin"
skip='^(libc|libm|libpthread|libdl|librt|libresolv|ld-linux.*|linux-vdso|libcuda|libcudart|libcublas|libcublasLt|libcudnn.*|libnccl|libnvrtc.*)\.so'
copy_libs() {
  ldd "$1" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | while read -r name path; do
    if ! [[ $name =~ $skip ]]; then cp -L -n "$path" "$bundle/lib/$name"; fi
  done
}
cp build/ddpsim "$bundle/bin/ddpsim"
copy_libs build/ddpsim
cat >"$bundle/ddpsim" <<'EOF'
#!/usr/bin/env bash
d=$(cd "$(dirname "$0")" && pwd)
LD_LIBRARY_PATH="$d/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$d/bin/ddpsim" "$@"
EOF
if [ -x build/bench/ddpbench ]; then
  cp build/bench/ddpbench "$bundle/bin/ddpbench"
  copy_libs build/bench/ddpbench
  cat >"$bundle/ddpbench" <<'EOF'
#!/usr/bin/env bash
d=$(cd "$(dirname "$0")" && pwd)
gpu=$(python3 -c 'import glob, os, nvidia; print(":".join(sorted(glob.glob(os.path.join(list(nvidia.__path__)[0], "*", "lib")))))' 2>/dev/null || true)
LD_LIBRARY_PATH="$d/lib:/usr/local/cuda/lib64${gpu:+:$gpu}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$d/bin/ddpbench" "$@"
EOF
else
  echo "device_bundle.sh: build/bench/ddpbench not built; the bundle has ddpsim only" >&2
fi
chmod +x "$bundle"/ddpsim "$bundle"/ddpbench 2>/dev/null || true
tar cJf "$bundle.tar.xz" "$bundle"
du -sh "$bundle" "$bundle.tar.xz"
