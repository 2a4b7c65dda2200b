#!/usr/bin/env bash
# The main job: build (installing what is missing), then simulate scenarios/default.json.
# Extra arguments go to `ddpsim run`, e.g. scripts/run.sh resnet50-2x8-a100-hdr --json -
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh >&2
exec ./build/ddpsim run "$@"
