#!/usr/bin/env bash
# The whole test suite: build (installing what is missing), then every test through ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
jobs=$(nproc 2>/dev/null || echo 2)
cd build
ctest --output-on-failure -j"$jobs" "$@"
