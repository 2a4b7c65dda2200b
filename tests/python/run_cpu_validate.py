#!/usr/bin/env python3
"""CI check of the CPU end-to-end loop: run real PyTorch DDP (gloo, 2 processes) with
scripts/ddp_cpu_bench.py, then `ddpsim validate` on its results. Prints the per-case comparison.

The machine is shared and noisy, so the errors are reported, not asserted: the test fails only
when the bench or validate cannot run (validate's exit 3, "beyond tolerance", counts as a pass).
Exit 77 (skip) without torch."""
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main():
    try:
        import torch  # noqa: F401
    except ImportError:
        print("SKIP: python3-torch not installed")
        return 77
    if len(sys.argv) != 3:
        print("usage: run_cpu_validate.py DDPSIM_BINARY OUTPUT_JSON", file=sys.stderr)
        return 2
    ddpsim, out = sys.argv[1], sys.argv[2]
    bench = [sys.executable, os.path.join(REPO, "scripts", "ddp_cpu_bench.py"), "--spec", "torchvision.models:resnet18",
             "--input", "8x3x64x64", "--world-size", "2", "--caps", "default,1,5,25", "--iters", "6", "-o", out]
    print("+ " + " ".join(bench), flush=True)
    try:
        # ddp_cpu_bench's spawn has its own deadline (scripts/spawn_guard.py); this one ends it anyway.
        code = subprocess.call(bench, cwd=REPO, timeout=1500)
    except subprocess.TimeoutExpired:
        print("ddp_cpu_bench.py timed out after 1500 s", file=sys.stderr)
        return 1
    if code != 0:
        print("ddp_cpu_bench.py failed", file=sys.stderr)
        return 1
    val = [ddpsim, "validate", out, "--tolerance", "0.10"]
    print("+ " + " ".join(val), flush=True)
    try:
        p = subprocess.run(val, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                           timeout=600)
    except subprocess.TimeoutExpired:
        print("ddpsim validate timed out after 600 s", file=sys.stderr)
        return 1
    print(p.stdout)
    if p.returncode not in (0, 3) or "median |step time error|" not in p.stdout:
        print("ddpsim validate failed (exit %d)" % p.returncode, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
