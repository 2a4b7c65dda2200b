#!/usr/bin/env bash
# Configures and builds ddpsim (Release, warnings as errors) into build/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DDDPSIM_WERROR=ON >/dev/null
cmake --build build -j"$jobs"
