#!/usr/bin/python3
"""Measure eager PyTorch's per-operator host cost on this CPU (dispatcher + autograd recording).

Method: a chain of N tiny element-wise ops (1-element tensors, so the CPU kernel itself costs
~nothing) on a tensor that requires grad, timed for the forward (ops recorded by autograd) and for
the backward (one autograd node executed per op); median of repeated runs, per op.  This is the
CPU side of an op; a CUDA launch adds cudaLaunchKernel's own cost on top (see
sim/gpu/kernel_model.cpp, host_dispatch_*): --device cuda measures both together (the kernels are
tiny, so the GPU keeps up and the host's per-op time is what is timed), --op linear with
--autocast the cost of an autocast GEMM op (its cast of the weight included).  Prints JSON.

--op view: the same chain of views (view, t, permute, expand, reshape in turn on a 1 x 1 tensor:
no kernel, an autograd view node each).  --op module: a chain of nn.Modules whose forward is the
`mul` op, less the `mul` chain of the same repetition: one module call's own cost.  --ratios: the
three chains in turn within each repetition (so a slow phase of the machine hits all three) and
their per-op costs as ratios to `mul`'s, the form in which sim/gpu/kernel_model.cpp takes them.
"""
import argparse
import contextlib
import json
import os
import statistics
import sys
import time

import torch


class _Scale(torch.nn.Module):
    """A module whose forward is the `mul` chain's op (--op module)."""

    def forward(self, y):
        return y * 1.0001


_VIEWS = (lambda y: y.view(1, 1), lambda y: y.t(), lambda y: y.permute(1, 0), lambda y: y.expand(1, 1),
          lambda y: y.reshape(1, 1))


def _chain(op, n, dev, ctx, sync, w=None, mods=None):
    """One repetition of the chain: (forward seconds, backward seconds) per op."""
    x = torch.ones({"mul": 1, "linear": (1, 8)}.get(op, (1, 1)), device=dev, requires_grad=True)
    sync()
    t0 = time.perf_counter()
    with ctx():
        y = x
        if op == "mul":
            for _ in range(n):
                y = y * 1.0001
        elif op == "linear":
            for _ in range(n):
                y = torch.nn.functional.linear(y, w)
        elif op == "view":
            for i in range(n):
                y = _VIEWS[i % len(_VIEWS)](y)
        else:  # module
            for m in mods:
                y = m(y)
        loss = y.float().sum()
    sync()
    t1 = time.perf_counter()
    loss.backward()
    sync()
    t2 = time.perf_counter()
    return (t1 - t0) / n, (t2 - t1) / n


REFERENCE_OPS = 500  # multiplies per reference chain (reference_chain)


def reference_chain(device="cpu"):
    """(forward, backward) seconds per op of one `mul` chain of REFERENCE_OPS on `device`: the reference
    op the other measuring scripts (measure_ddp_host.py, measure_optimizer_host.py) give their costs
    as shares of, the op sim/gpu/kernel_model.cpp prices every kernel's dispatch from."""
    dev = torch.device(device)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    return _chain("mul", REFERENCE_OPS, dev, contextlib.nullcontext, sync)


def reference_record(forward_s, backward_s, device="cpu"):
    """The `reference_op` entry of those scripts' JSON (backward_s None: not timed)."""
    rec = {"op": "y * c on one element that requires grad, %d in a chain (scripts/measure_dispatch.py --op mul "
                 "--device %s)" % (REFERENCE_OPS, device), "forward_s": forward_s}
    if backward_s is not None:
        rec["backward_s"] = backward_s
    return rec


def measure(ops, n=2000, reps=7, device="cpu", autocast=None):
    """Medians per op of each chain in `ops` (run in turn within every repetition); "module" is
    reported less the "mul" chain of the same repetition (which is then measured too)."""
    torch.set_num_threads(1)
    dev = torch.device(device)
    w = torch.full((8, 8), 0.125, device=dev, requires_grad=True) if "linear" in ops else None
    mods = [_Scale().to(dev) for _ in range(n)] if "module" in ops else None
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    ctx = (lambda: torch.autocast(dev.type, dtype=getattr(torch, autocast))) if autocast else contextlib.nullcontext
    run = list(ops) + (["mul"] if "module" in ops and "mul" not in ops else [])
    times = {op: ([], []) for op in run}
    for _ in range(reps):
        got = {op: _chain(op, n, dev, ctx, sync, w, mods) for op in run}
        for op in run:
            f, b = got[op]
            if op == "module":
                f, b = f - got["mul"][0], b - got["mul"][1]
            times[op][0].append(f)
            times[op][1].append(b)
    return {op: (statistics.median(times[op][0]), statistics.median(times[op][1])) for op in ops}


def main(n=2000, reps=7, device="cpu", op="mul", autocast=None, ratios=False):
    dev = torch.device(device)
    ops = ("mul", "view", "module") if ratios else (op,)
    got = measure(ops, n, reps, device, autocast)
    out = {"torch": torch.__version__, "ops": n, "op": "ratios" if ratios else op, "device": str(dev),
           "device_name": torch.cuda.get_device_name(dev) if dev.type == "cuda" else None,
           "autocast": autocast, "cpu": cpu_model(),
           "fwd_per_op_s": got[ops[0]][0], "bwd_per_op_s": got[ops[0]][1],
           "method": __doc__.split("\n")[2].strip()}
    if ratios:
        mf, mb = got["mul"]
        out["per_op_s"] = {k: {"fwd": v[0], "bwd": v[1]} for k, v in got.items()}
        out["ratio_to_mul"] = {k: {"fwd": v[0] / mf, "bwd": v[1] / mb} for k, v in got.items() if k != "mul"}
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
    ap.add_argument("--op", choices=("mul", "linear", "view", "module"), default="mul",
                    help="mul: y * c on one element; linear: F.linear(y, w) on 1x8 @ 8x8 (a GEMM, autocast casts); "
                    "view: view/t/permute/expand/reshape in turn (no kernel); module: an nn.Module call around "
                    "the mul, less the mul")
    ap.add_argument("--ratios", action="store_true",
                    help="mul, view and module in turn within each repetition; prints their ratios to mul")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--autocast", choices=("bfloat16", "float16"), default=None)
    ap.add_argument("--ops", type=int, default=2000)
    a = ap.parse_args()
    if a.ops < 1 or a.reps < 1:
        ap.error("--ops and --reps must be >= 1")
    main(n=a.ops, reps=a.reps, device=a.device, op=a.op, autocast=a.autocast, ratios=a.ratios)
