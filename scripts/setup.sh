#!/usr/bin/env bash
# Installs what ddpsim needs from Debian's packages, only what is missing (idempotent).
# Run as root (or with sudo available) on Debian bookworm.
#   scripts/setup.sh minimal   what the `ddpsim` binary needs to build (scripts/run.sh)
#   scripts/setup.sh [full]    everything: tests, real-PyTorch checks, SLURM, plots, fuzzing
#                              (scripts/test.sh)
set -euo pipefail
mode=${1:-full}

# What ddpsim links (CMakeLists.txt: SimGrid through pkg-config, nlohmann_json, CLI11, spdlog,
# jemalloc as its allocator), and the tools that build it (ninja: scripts/build.sh).
minimal=(g++ cmake make ninja-build pkg-config libsimgrid-dev nlohmann-json3-dev libcli11-dev libspdlog-dev libjemalloc-dev)
full=(
  googletest libgtest-dev
  python3 python3-torch python3-torchvision
  # [sweep] SLURM job arrays (tests/slurm), plots (scripts/ddpsim-plot), the HTML report's test
  slurmctld slurmd slurm-client munge python3-matplotlib chromium
  # [/sweep]
  # --- sanitizer and fuzzing (docs/development.md): libFuzzer and its sanitizer runtimes come with clang 14 ---
  clang-14 libclang-rt-14-dev
  # --- end of sanitizer and fuzzing packages ---
)
case $mode in
  minimal) packages=("${minimal[@]}") ;;
  full) packages=("${minimal[@]}" "${full[@]}") ;;
  *) echo "usage: scripts/setup.sh [minimal|full]" >&2; exit 2 ;;
esac

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup ($mode): all dependencies present"
  exit 0
fi

echo "setup ($mode): installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
