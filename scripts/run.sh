#!/usr/bin/env bash
# The main job: install what the simulator needs, build only `ddpsim`, then simulate
# scenarios/default.json. Extra arguments go to `ddpsim run`, e.g.
#   scripts/run.sh resnet50-2x8-a100-hdr --json -
#   scripts/run.sh --model gpt2 --cluster dgx-h100 --nodes 4
# (scripts/test.sh installs and builds the rest: tests, PyTorch, the CUDA benchmark.)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh minimal >&2
exec ./build/ddpsim run "$@"
