#!/usr/bin/env bash
# Configures and builds ddpsim (Release, warnings as errors) into build/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
jobs=$(nproc 2>/dev/null || echo 2)
cuda=()
# The CUDA toolkit lives in /usr/local/cuda on these machines; bench/ is built when nvcc is found.
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  cuda=(-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc)
fi
# ccache, when installed, caches compiles across checkouts (worktrees); nothing requires it.
launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DDDPSIM_WERROR=ON "${cuda[@]}" "${launcher[@]}" >/dev/null
cmake --build build -j"$jobs"
