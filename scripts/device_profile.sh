#!/usr/bin/env bash
# One prepared run on a GPU machine, at most ~10 minutes (docs/modelled.md, compute on a GPU):
#   bash scripts/device_profile.sh [OUT_DIR] [extra scripts/device_profile.py flags]
# Builds build/ddpsim and build/bench/ddpbench when absent (at most 240 s; ddpbench needs nvcc,
# cuBLAS and NCCL; without it the ddpbench steps are skipped and say so), then runs
# scripts/device_profile.py with the time left: zoo per-layer profiles (scripts/profile_model.py),
# `ddpbench layers` and `ddpbench contention`, and the estimate-vs-measured table per layer type
# for the H200 preset, all under OUT_DIR (default bench/results/device-h200) for committing.
# On a machine without a GPU: bash scripts/device_profile.sh /tmp/dp --cpu (the dry run).
# Where the machine cannot build ddpsim (no SimGrid), carry .devbundle (scripts/device_bundle.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench/results/device-h200}
shift || true
start=$(date +%s)
py=python3
if [ -x /usr/bin/python3 ] && ! python3 -c 'import torch' 2>/dev/null; then py=/usr/bin/python3; fi
bins=()
if [ ! -x build/ddpsim ] && [ ! -x .devbundle/ddpsim ] && [ -f .devbundle.tar.xz ]; then
  tar xJf .devbundle.tar.xz
fi
if [ ! -x build/ddpsim ] && [ -x .devbundle/ddpsim ]; then
  # Binaries built elsewhere and carried with their libraries (scripts/device_bundle.sh): the GPU
  # machine's image has no SimGrid to build with.
  bins=(--ddpsim .devbundle/ddpsim)
  [ -x .devbundle/ddpbench ] && bins+=(--ddpbench .devbundle/ddpbench)
elif [ ! -x build/ddpsim ] || { [ ! -x build/bench/ddpbench ] && [[ " $* " != *" --cpu "* ]]; }; then
  cuda=()
  if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
    cuda=(-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc)
  fi
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "${cuda[@]}" >/dev/null
  timeout 240 cmake --build build -j"$(nproc)" --target ddpsim || { echo "device_profile.sh: ddpsim did not build" >&2; exit 1; }
  left=$((300 - ($(date +%s) - start)))
  if [ "$left" -gt 30 ]; then
    timeout "$left" cmake --build build -j"$(nproc)" --target ddpbench ||
      echo "device_profile.sh: ddpbench not built (no CUDA/NCCL, or out of time); its steps are skipped" >&2
  fi
fi
budget=$((560 - ($(date +%s) - start)))
[ "$budget" -lt 60 ] && budget=60
exec "$py" scripts/device_profile.py --out "$out" --budget-s "$budget" "${bins[@]}" "$@"
