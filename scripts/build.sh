#!/usr/bin/env bash
# Configures and builds ddpsim (Release, warnings as errors) into build/.
#   scripts/build.sh minimal   only the `ddpsim` binary and what it needs (scripts/run.sh)
#   scripts/build.sh [full]    everything: the binary, the tests, and bench/ when CUDA is found
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-full}
case $mode in minimal | full) ;; *) echo "usage: scripts/build.sh [minimal|full]" >&2; exit 2 ;; esac
bash scripts/setup.sh "$mode"
jobs=$(nproc 2>/dev/null || echo 2)
opts=(-DCMAKE_BUILD_TYPE=Release -DDDPSIM_WERROR=ON)
# Ninja, when installed (scripts/setup.sh installs it), compiles the libraries' sources side by
# side where Make waits for each library to be archived first; a build/ configured before keeps
# its generator (CMake refuses to switch one).
if [ -f build/CMakeCache.txt ]; then
  generator=$(sed -n 's/^CMAKE_GENERATOR:INTERNAL=//p' build/CMakeCache.txt)
elif command -v ninja >/dev/null 2>&1; then
  generator=Ninja
else
  generator="Unix Makefiles"
fi
opts+=(-G "$generator")
# ccache, when installed, caches compiles across checkouts (worktrees); nothing requires it.
if command -v ccache >/dev/null 2>&1; then
  opts+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
if [ "$mode" = minimal ]; then
  # Tests and the CUDA benchmark are neither configured nor built (a later full build adds them).
  opts+=(-DDDPSIM_BUILD_TESTS=OFF -DDDPSIM_BUILD_BENCH=OFF)
  target=(--target ddpsim)
else
  opts+=(-DDDPSIM_BUILD_TESTS=ON -DDDPSIM_BUILD_BENCH=ON)
  target=()
  # The CUDA toolkit lives in /usr/local/cuda on these machines; bench/ is built when nvcc is found.
  if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
    opts+=(-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc)
  fi
fi
cmake -S . -B build "${opts[@]}" >/dev/null
cmake --build build -j"$jobs" "${target[@]}"
