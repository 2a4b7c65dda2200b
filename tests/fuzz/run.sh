#!/usr/bin/env bash
# Builds the libFuzzer harnesses (preset fuzz) and runs each on a seed corpus made of the
# repository's own files. Usage:
#   tests/fuzz/run.sh [SECONDS_PER_FUZZER]          # default 20 (what CI runs)
#   FUZZ_RUNS=1000000 tests/fuzz/run.sh             # a fixed number of executions instead
#   FUZZERS="fuzz_model fuzz_units" tests/fuzz/run.sh 600
# Findings (crash-*, timeout-*, oom-*) are written to build-fuzz/findings/<fuzzer>/; exit 1 if any.
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-20}
build=build-fuzz
cmake --preset fuzz >/dev/null
cmake --build "$build" --target ddpsim_fuzzers -j"$(nproc 2>/dev/null || echo 2)" >/dev/null
all="fuzz_json_reader fuzz_units fuzz_nccl_log fuzz_trace fuzz_validate fuzz_model fuzz_gpu fuzz_link fuzz_cluster fuzz_scenario"
fuzzers=${FUZZERS:-$all}
shared=tests/data
seeds() {  # the files each fuzzer starts from
  case $1 in
    fuzz_json_reader) ls models/*.json configs/*/*.json scenarios/*.json tests/data/reliability/*.json ;;
    fuzz_units) ;;  # written below
    fuzz_nccl_log) ls "$shared"/nccl-tests/*.txt tests/data/reliability/*.txt tests/data/nccl-tests/formats/*.json 2>/dev/null; find tests/data -name '*.txt' ;;
    fuzz_trace) ls tests/golden/traces/*.json ;;
    fuzz_validate) ls bench/results/*.json bench/results/other-models-2026-12-03c/*.json bench/results/rank-jitter-2026-12-06/squeezenet1_1-1.json tests/data/reliability/validate-*.json ;;  # the LSTM profile has bwd_param_ready; the last run has every rank's compute-only steps
    fuzz_model) ls models/*.json tests/data/reliability/model-*.json ;;
    fuzz_gpu) ls configs/gpus/*.json ;;
    fuzz_link) ls configs/links/*.json tests/data/reliability/link-*.json ;;
    fuzz_cluster) ls configs/clusters/*.json ;;
    fuzz_scenario) ls scenarios/*.json tests/data/reliability/scenario-*.json ;;
  esac
}
status=0
for f in $fuzzers; do
  corpus=$build/corpus/$f
  findings=$build/findings/$f
  mkdir -p "$corpus" "$findings"
  for s in $(seeds "$f" | sort -u); do
    # libFuzzer's -max_len: large seeds are kept whole, the deep-nesting ones included.
    cp -f "$s" "$corpus/$(echo "$s" | tr '/' '_')"
  done
  if [ "$f" = fuzz_units ]; then
    i=0
    for q in 25MiB 200Gbps 12.5GBps 1.5us 19.5TFLOPS 0B 1e308TBps 64K 8G 1.5M " 3 ms " -1ns; do
      printf '%s' "$q" >"$corpus/seed$i"; i=$((i + 1))
    done
  fi
  if [ -n "${FUZZ_RUNS:-}" ]; then limit=(-runs="$FUZZ_RUNS"); else limit=(-max_total_time="$secs"); fi
  # FUZZ_SEED fixes libFuzzer's mutations: with FUZZ_RUNS the run is the same on every machine (CI).
  if [ -n "${FUZZ_SEED:-}" ]; then limit+=(-seed="$FUZZ_SEED"); fi
  echo "fuzz: $f (${FUZZ_RUNS:-$secs s})"
  log=$build/findings/$f.log
  if ! ASAN_OPTIONS=detect_leaks=1 "$build/tests/fuzz/$f" "${limit[@]}" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -print_final_stats=1 -artifact_prefix="$findings/" "$corpus" >"$log" 2>&1; then
    echo "fuzz: $f FOUND A PROBLEM (see $log and $findings/)"
    tail -40 "$log"
    status=1
  fi
  grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$log" | sed "s/^/  $f /"
done
exit $status
