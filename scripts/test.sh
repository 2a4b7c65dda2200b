#!/usr/bin/env bash
# The whole test suite: install everything (scripts/setup.sh full), build every target, then run
# every test through ctest. Extra arguments go to ctest, e.g. scripts/test.sh -R Cli
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh full
jobs=$(nproc 2>/dev/null || echo 2)
cd build
ctest --output-on-failure -j"$jobs" --no-tests=error "$@"
