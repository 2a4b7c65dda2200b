#!/usr/bin/env bash
# Everything the first H200 session measured (bench/results/device-h200-2026-12-04), as one command
# for the device tool, so that a session lent a GPU spends one machine start on it:
#   here:   bash scripts/build.sh minimal && cmake --build build --target ddpbench && bash scripts/device_bundle.sh
#   device: run(command="bash scripts/device_run.sh", carry=[".devbundle.tar.xz"], timeout_s=590)
#   then, if device time is left, single operators with their kernels (convolutions NCHW and
#   channels_last, odd-sized and short-K GEMMs, layer norm; sim/gpu/NOTES.md's open leads), about
#   2-4 minutes:
#   device: run(command="python3 scripts/measure_kernels.py --out $OUT/kernels.json --budget-s 200",
#               timeout_s=260)
#   here:   python3 scripts/measure_kernels.py --compare kernels.json --preset h200 --md kernels-compare.md
# Steps, each under its own timeout, all writing into a scratch folder that is packed at the end:
#   1. scripts/device_profile.sh (per-layer profiles of the zoo, ddpbench layers/contention, the
#      loss and optimizer steps, the estimate table), at most 230 s;
#   2. scripts/device_step.py --kernels (whole one-GPU steps, no DDP and DDP at world size 1, caps
#      25 and 1 MB, float32 and bfloat16, kernel tables, and one step launch by launch: each
#      kernel's grid, block, time and the op and input shapes that launched it), at most 200 s;
#   3. scripts/measure_dispatch.py on the CPU and on CUDA (mul, linear, and --ratios: a view and a
#      module call against a mul, plain and under bf16 autocast: the shares sim/gpu/kernel_model.cpp
#      takes from torch 1.13 here), scripts/measure_ddp_host.py (on the CPU with gloo and on the GPU
#      with NCCL, and --comm-hooks with NCCL) and scripts/measure_optimizer_host.py (on the CPU and
#      on the GPU: foreach's CUDA fast path) (host costs of the machine's torch, each with its
#      shares of the reference op), about 140 s (each call at most 20 s, 40 s);
#   4. scripts/measure_step_host.py on that CPU (BERT-base and GPT-2 at tiny dimensions, float32 and
#      bf16 autocast) against ddpsim's host accounting, about 60 s;
#   5. nvidia-smi's clocks and the CPU model.
# The result is OUT/device.tgz (OUT: the device tool's $OUT, else the first argument, else
# /tmp/device-run) plus its run.json and logs beside it (the tool brings back at most 8 files).
# Unpack it into bench/results/device-<preset>-<date>/ and recompute the tables here with
# `python3 scripts/device_profile.py --retable DIR` and `python3 scripts/device_step_compare.py`.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-${1:-/tmp/device-run}}
mkdir -p "$out"
work=$(mktemp -d /tmp/device-run.XXXXXX)
export PYTHONUNBUFFERED=1
py=python3
if [ -x /usr/bin/python3 ] && ! python3 -c 'import torch' 2>/dev/null; then py=/usr/bin/python3; fi
{
  date -u
  grep -m1 "model name" /proc/cpuinfo
  nproc
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,memory.total,power.limit --format=csv
} >"$work/machine.txt" 2>&1
timeout 230 bash scripts/device_profile.sh "$work" --budget-s 150 >"$out/device_profile.log" 2>&1
echo "rc=$?" >>"$out/device_profile.log"
timeout 200 "$py" scripts/device_step.py --out "$work" --kernels --budget-s 150 >"$out/device_step.log" 2>&1
echo "rc=$?" >>"$out/device_step.log"
{
  for d in cpu cuda; do
    for a in "" "--op linear" "--op linear --autocast bfloat16" "--ratios" "--ratios --autocast bfloat16"; do
      # shellcheck disable=SC2086
      timeout 20 "$py" scripts/measure_dispatch.py --device $d $a
    done
  done
} >"$work/dispatch.txt" 2>&1
timeout 40 "$py" scripts/measure_optimizer_host.py >"$work/optimizer_host.json" 2>"$work/optimizer_host.err"
# foreach's CUDA fast path (multi_tensor_apply's per-tensor work), which the CPU cannot show.
timeout 40 "$py" scripts/measure_optimizer_host.py --device cuda --reps 21 >"$work/optimizer_host_cuda.json" \
  2>"$work/optimizer_host_cuda.err"
timeout 40 "$py" scripts/measure_ddp_host.py --reps 15 -o "$work/ddp_host.json" >"$work/ddp_host.out" 2>&1
# The same on the GPU with NCCL: DDP's per-bucket host cost with c10d's ProcessGroupNCCL call, as
# shares of the CUDA mul chain (sim/ddp/host_costs.cpp prices the Reducer's share and NCCL's launch).
timeout 40 "$py" scripts/measure_ddp_host.py --device cuda --reps 15 -o "$work/ddp_host_cuda.json" \
  >"$work/ddp_host_cuda.out" 2>&1
# A Python comm hook's call and then() callback with NCCL (complete at enqueue: the callback runs
# inline on the backward thread), against the builtin path (bench/results/comm-hook-host-2026-12-06).
timeout 40 "$py" scripts/measure_ddp_host.py --device cuda --comm-hooks --reps 15 -o "$work/ddp_host_hooks_cuda.json" \
  >"$work/ddp_host_hooks_cuda.out" 2>&1
# Whole eager steps' host work on that CPU (tiny dimensions: every op of the model, kernels that
# cost nothing), float32 and under bf16 autocast, against ddpsim's accounting priced at that CPU's
# per-op chains (sim/gpu/NOTES.md "Eager host dispatch"): what the H200's host-bound bfloat16
# transformer steps (3-5x the modelled host work) spend their host time on. CPU only, ~60 s.
sim=build/ddpsim
[ -x "$sim" ] || sim=.devbundle/ddpsim
bert='{"vocab_size": 64, "hidden_size": 12, "intermediate_size": 12, "max_position_embeddings": 16, "num_attention_heads": 4}'
gpt2='{"vocab_size": 64, "n_embd": 12, "n_head": 4, "n_positions": 16}'
for ac in float32 bfloat16; do
  flag=()
  [ "$ac" = bfloat16 ] && flag=(--autocast bfloat16)
  timeout 60 "$py" scripts/measure_step_host.py --spec zoo.bert:bert_base --kwargs "$bert" --input 1x4 \
    --input-dtype int64 --steps 20 --warmup 5 "${flag[@]}" --ddpsim "$sim" --model models/bert-base.json \
    --json "$work/step_host-bert-base-$ac.json" >/dev/null 2>>"$work/step_host.err"
  timeout 60 "$py" scripts/measure_step_host.py --spec zoo.gpt2:gpt2 --kwargs "$gpt2" --input 1x4 \
    --input-dtype int64 --steps 20 --warmup 5 "${flag[@]}" --ddpsim "$sim" --model models/gpt2.json \
    --json "$work/step_host-gpt2-$ac.json" >/dev/null 2>>"$work/step_host.err"
done
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >>"$work/machine.txt" 2>&1
cp "$work/run.json" "$out/" 2>/dev/null
tar czf "$out/device.tgz" -C "$work" .
ls -la "$work" >"$out/files.txt"
echo "device_run.sh: wrote $out/device.tgz"
