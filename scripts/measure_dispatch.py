#!/usr/bin/python3
"""Measure eager PyTorch's per-operator host cost on this CPU (dispatcher + autograd recording).

Method: a chain of N tiny element-wise ops (1-element tensors, so the CPU kernel itself costs
~nothing) on a tensor that requires grad, timed for the forward (ops recorded by autograd) and for
the backward (one autograd node executed per op); median of repeated runs, per op.  This is the
CPU side of an op; a CUDA launch adds cudaLaunchKernel's own cost on top (see
sim/gpu/kernel_model.cpp, host_dispatch_*): --device cuda measures both together (the kernels are
tiny, so the GPU keeps up and the host's per-op time is what is timed), --op linear with
--autocast the cost of an autocast GEMM op (its cast of the weight included).  Prints JSON.
"""
import argparse
import contextlib
import json
import os
import statistics
import sys
import time

import torch


def main(n=2000, reps=7, device="cpu", op="mul", autocast=None):
    torch.set_num_threads(1)
    dev = torch.device(device)
    x = torch.ones(1 if op == "mul" else (1, 8), device=dev, requires_grad=True)
    w = torch.full((8, 8), 0.125, device=dev, requires_grad=True) if op == "linear" else None
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    ctx = (lambda: torch.autocast(dev.type, dtype=getattr(torch, autocast))) if autocast else contextlib.nullcontext
    fwd, bwd = [], []
    for _ in range(reps):
        sync()
        t0 = time.perf_counter()
        with ctx():
            y = x
            for _ in range(n):
                y = y * 1.0001 if op == "mul" else torch.nn.functional.linear(y, w)
            loss = y.float().sum()
        sync()
        t1 = time.perf_counter()
        loss.backward()
        sync()
        t2 = time.perf_counter()
        fwd.append((t1 - t0) / n)
        bwd.append((t2 - t1) / n)
        x.grad = None
    out = {"torch": torch.__version__, "ops": n, "op": op, "device": str(dev),
           "device_name": torch.cuda.get_device_name(dev) if dev.type == "cuda" else None,
           "autocast": autocast, "cpu": cpu_model(),
           "fwd_per_op_s": statistics.median(fwd), "bwd_per_op_s": statistics.median(bwd),
           "method": __doc__.split("\n")[2].strip()}
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return os.uname().machine


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cpu", help="cpu, or cuda: the op's kernels are launched on the GPU "
                    "(tiny ones, so the host's per-op cost sets the pace)")
    ap.add_argument("--op", choices=("mul", "linear"), default="mul",
                    help="mul: y * c on one element; linear: F.linear(y, w) on 1x8 @ 8x8 (a GEMM, autocast casts)")
    ap.add_argument("--autocast", choices=("bfloat16", "float16"), default=None)
    ap.add_argument("--ops", type=int, default=2000)
    a = ap.parse_args()
    main(n=a.ops, device=a.device, op=a.op, autocast=a.autocast)
