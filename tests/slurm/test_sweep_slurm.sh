#!/usr/bin/env bash
# scripts/sweep-slurm against a real single-host SLURM: starts munged, slurmctld and slurmd (as
# root, no systemd) with a minimal slurm.conf in a temporary folder, runs a 3-task array and
# checks that the merged rows equal a local sweep's byte for byte.
# Usage: tests/slurm/test_sweep_slurm.sh BUILD/ddpsim
# Exit 0 pass, 1 fail, 77 skipped (SLURM or munge not installed, or not root: slurmd must be
# root to launch jobs as the submitting user).
set -uo pipefail
ddpsim="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
repo="$(cd "$(dirname "$0")/../.." && pwd)"
t0=$(date +%s.%N)
since() { awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

skip() { echo "SKIP: $*"; exit 77; }
for b in munged slurmctld slurmd sbatch sinfo; do
  command -v "$b" >/dev/null 2>&1 || PATH="$PATH:/usr/sbin" command -v "$b" >/dev/null 2>&1 ||
    skip "$b not installed (Debian: apt-get install slurmctld slurmd slurm-client munge; scripts/setup.sh does)"
done
export PATH="$PATH:/usr/sbin"
[ "$(id -u)" -eq 0 ] || skip "not root: slurmd has to run as root to start jobs"

d=$(mktemp -d /tmp/ddpsim-slurm.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  rm -rf "$d"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  for f in "$d"/munged.log "$d"/slurmctld.log "$d"/slurmd.log "$d"/out/*.log; do
    [ -f "$f" ] && { echo "--- $f"; tail -20 "$f"; }
  done
  exit 1
}

# munge: its own key, socket and files under $d.
mkdir -p "$d/munge" "$d/state" "$d/spool" "$d/out"
chmod 711 "$d/munge"
head -c 1024 /dev/urandom >"$d/munge/munge.key"
chmod 400 "$d/munge/munge.key"
munged -F -f --key-file="$d/munge/munge.key" --socket="$d/munge/munge.socket" --pid-file="$d/munge/munged.pid" \
  --log-file="$d/munged.log" --seed-file="$d/munge/munged.seed" >"$d/munged.out" 2>&1 &
pids+=($!)
for _ in $(seq 1 50); do [ -S "$d/munge/munge.socket" ] && break; sleep 0.1; done
[ -S "$d/munge/munge.socket" ] || fail "munged did not create its socket"

# Ports from the PID so two runs on one machine do not collide.
port=$((20000 + ($$ % 20000)))
cpus=$(nproc)
cat >"$d/slurm.conf" <<CONF
ClusterName=ddpsimtest
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$d/munge/munge.socket
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool
SlurmctldPidFile=$d/slurmctld.pid
SlurmdPidFile=$d/slurmd.pid
SlurmctldLogFile=$d/slurmctld.log
SlurmdLogFile=$d/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=test Nodes=localhost Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$d/slurm.conf"
slurmctld -D -i -f "$SLURM_CONF" >"$d/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -N localhost -f "$SLURM_CONF" >"$d/slurmd.out" 2>&1 &
pids+=($!)
up=""
for _ in $(seq 1 150); do
  state=$(sinfo -h -n localhost -o %T 2>/dev/null | head -1)
  case "$state" in idle*|mixed*|allocated*) up=1; break ;; esac
  sleep 0.2
done
if [ -z "$up" ]; then
  cat "$d/slurmctld.out" "$d/slurmd.out"
  fail "the SLURM node did not come up (state: ${state:-none})"
fi
echo "slurm up after $(since) s"

# The ranking flags travel to merge (its JSON names the metric: a dropped flag fails the cmp below).
sweep=(resnet50-2x8-a100-hdr --set simulation.backend=analytic --param ddp.bucket_cap_mb=1,2,5,10,25,50,100
  --metric samples_per_s --tolerance=0)
# Not -q: sweep -q prints no table, and the table is compared with the merged one below.
"$ddpsim" sweep "${sweep[@]}" --out "$d/local.jsonl" --csv "$d/local.csv" --json "$d/local.json" >"$d/local.txt" 2>"$d/local.err" ||
  fail "local sweep failed"
cd "$d"
timeout 300 "$repo/scripts/sweep-slurm" --shards 3 --dir "$d/out" --ddpsim "$ddpsim" -- "${sweep[@]}" >"$d/slurm.txt" ||
  fail "scripts/sweep-slurm failed: $(cat "$d/slurm.txt")"
for k in 1 2 3; do [ -s "$d/out/shard-$k.jsonl" ] || fail "shard $k wrote no rows"; done
for ext in jsonl csv json; do
  cmp "$d/local.$ext" "$d/out/rows.$ext" || fail "merged rows.$ext differs from the local sweep's"
done
cmp "$d/local.txt" "$d/slurm.txt" || fail "the merged table differs from the local sweep's"
echo "PASS: 3-task SLURM array merged equals the local sweep (rows.jsonl, csv, json, table) in $(since) s"
