#!/usr/bin/python3
"""Measure eager PyTorch's per-operator host cost on this CPU (dispatcher + autograd recording).

Method: a chain of N tiny element-wise ops (1-element tensors, so the CPU kernel itself costs
~nothing) on a tensor that requires grad, timed for the forward (ops recorded by autograd) and for
the backward (one autograd node executed per op); median of repeated runs, per op.  This is the
CPU side of an op; a CUDA launch adds cudaLaunchKernel's own cost on top (see
sim/gpu/kernel_model.cpp, host_dispatch_*).  Prints JSON.
"""
import json
import statistics
import sys
import time

import torch


def main(n=2000, reps=7):
    torch.set_num_threads(1)
    x = torch.ones(1, requires_grad=True)
    fwd, bwd = [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        y = x
        for _ in range(n):
            y = y * 1.0001
        t1 = time.perf_counter()
        y.backward()
        t2 = time.perf_counter()
        fwd.append((t1 - t0) / n)
        bwd.append((t2 - t1) / n)
        x.grad = None
    out = {"torch": torch.__version__, "ops": n, "fwd_per_op_s": statistics.median(fwd),
           "bwd_per_op_s": statistics.median(bwd), "method": __doc__.split("\n")[2].strip()}
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
