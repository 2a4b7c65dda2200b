#!/usr/bin/env bash
# Writes tests/golden/reports/<case>.json: `ddpsim run ARGS --json -` for every line of cases.txt.
# Arguments are read as shell words (quotes allowed), as the golden test passes them.
# Usage: tests/golden/make_golden.sh DDPSIM [--data-dir DIR]. Regenerate only for a deliberate model
# change, named in the commit and in tests/golden/README.md.
set -euo pipefail
bin=$1; shift
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$here/reports"
grep -v '^#' "$here/cases.txt" | while read -r name args; do
  [ -n "$name" ] || continue
  eval "\"\$bin\" \"\$@\" run $args --json -" >"$here/reports/$name.json.tmp"
  mv "$here/reports/$name.json.tmp" "$here/reports/$name.json"
done
