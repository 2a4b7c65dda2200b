#!/usr/bin/env bash
# Regenerates the README's figures from the bundled scenarios: bash docs/plots/make.sh
set -euo pipefail
cd "$(dirname "$0")"
B=../../build/ddpsim
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
$B sweep resnet50-2x8-a100-hdr --param ddp.bucket_cap_mb=0.5,1,2,5,10,25,50,100 -q --json "$t/resnet50-bucket-cap.json" >/dev/null
$B sweep bert-base-1x8-a100-contention --param ddp.bucket_cap_mb=1,5,25,100 -q --json "$t/bert-contention.json" >/dev/null
$B sweep resnet50-2x8-a100-hdr --param ddp.comm_hook=allreduce,fp16_compress,bf16_compress,powersgd \
  --set ddp.powersgd.start_powerSGD_iter=2 -q --json "$t/resnet50-comm-hooks.json" >/dev/null
$B run resnet50-2x8-a100-hdr --json "$t/resnet50-run.json" -q
python3 ../../scripts/ddpsim-plot "$t"/*.json -o .
