#!/usr/bin/env bash
# The C++ test suite (ctest -L unit and -L sim) on the sanitizer build (preset asan:
# -fsanitize=address,undefined,float-cast-overflow, every report fatal) in build-asan/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
jobs=$(nproc 2>/dev/null || echo 2)
cmake --preset asan >/dev/null
cmake --build build-asan -j"$jobs"
# The preset's environment (ASAN_OPTIONS, UBSAN_OPTIONS) reaches the ddpsim children of the CLI tests.
ctest --preset asan -j"$jobs" "$@"
