#!/usr/bin/python3
"""Measure the host cost of torch.optim's step() and zero_grad() on this CPU, per tensor and per op.

Method: an optimizer over N parameters of one element each (so every op's CPU kernel costs ~nothing
and what is timed is Python, the dispatcher and the op's bookkeeping), gradients set, state
created by two warm-up steps; `step()` (and `zero_grad()`) timed R times per N, median per N, then
a least-squares line time = a + b * N over N = 32 .. 512. For `for_loop` the slope b is the host
cost of one tensor's iteration (its ops and its Python); per op it is b / (the tensor's GPU ops,
sim/gpu/optimizer_model.cpp). For `foreach` the CPU runs each foreach op's slow path (a loop over
the tensors in C++), which a CUDA tensor list does not take (multi_tensor_apply), so the step is
timed again with every `torch._foreach_*` function replaced by a no-op: its slope is the Python
per tensor that a GPU run also pays (list building, Adam's per-tensor bias corrections); one
foreach call on a one-tensor list is the per-call dispatch. One thread (`torch.set_num_threads(1)`),
no autograd (step() runs under no_grad). Prints JSON.

Reference op (`reference_op`, `ratio_to_op`): before each optimizer's timings and at the end, five
chains of 500 tiny multiplies on a tensor that requires grad (scripts/measure_dispatch.py's `mul`
chain: the op sim/gpu/kernel_model.cpp prices every kernel's dispatch from), forward per op, median;
every per-tensor, per-op and per-call cost is also given as a share of it, the form in which
sim/gpu/optimizer_model.cpp takes them (the machine's speed cancels).

--device cuda: the parameters and gradients on one GPU, so foreach ops take their CUDA fast path
(multi_tensor_apply: per-tensor checks and metadata, a launch per chunk group), which the CPU's
slow path cannot show; each call is timed on the host after the GPU has drained (tiny kernels,
so the host's work is what is timed); the reference op is the mul chain on CUDA.
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import measure_dispatch  # noqa: E402

DEVICE = "cpu"  # --device


def sync():
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def reference(into, n=5):
    """Append the forward seconds per op of `n` measure_dispatch.py `mul` chains."""
    for _ in range(n):
        into.append(measure_dispatch.reference_chain(DEVICE)[0])


def shares(out, ref):
    """Each host cost over the reference op."""
    r = {}
    for key, row in out["step"].items():
        for k in ("per_tensor_s", "per_tensor_op_s"):
            if k in row:
                r[f"{key}/{k}"] = row[k] / ref
    calls = list(out["foreach_call_one_tensor_s"].values())
    r["foreach_call_one_tensor_s"] = statistics.median(calls) / ref
    for k, row in out["zero_grad"].items():
        r[f"zero_grad/{k}/per_tensor_s"] = row["per_tensor_s"] / ref
    return r

# GPU ops per tensor of one step, as sim/gpu/optimizer_model.cpp counts them for torch 1.13
# (SGD momentum: mul_, add_, add_; Adam: mul_, add_, mul_, addcmul_, sqrt, div, add_, addcdiv_;
# AdamW: Adam's plus mul_(param)). The CPU-only `step_t += 1` is in the timed Python, not a GPU op.
OPS_PER_TENSOR = {"sgd": 3, "adam": 8, "adamw": 9}
# foreach ops per step, same source.
FOREACH_OPS = {"sgd": 3, "adam": 8, "adamw": 9}


def make(opt, impl, n):
    params = [torch.nn.Parameter(torch.ones(1, device=DEVICE)) for _ in range(n)]
    for p in params:
        p.grad = torch.full((1,), 1e-3, device=DEVICE)
    foreach = impl == "foreach"
    if opt == "sgd":
        o = torch.optim.SGD(params, lr=1e-3, momentum=0.9, foreach=foreach)
    elif opt == "adam":
        o = torch.optim.Adam(params, lr=1e-3, foreach=foreach)
    else:
        o = torch.optim.AdamW(params, lr=1e-3, foreach=foreach)
    o.step()
    o.step()
    return params, o


def timed(fn, reps):
    out = []
    for _ in range(reps):
        sync()
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    sync()
    return statistics.median(out)


def fit(ns, ts):
    mn, mt = statistics.fmean(ns), statistics.fmean(ts)
    b = sum((n - mn) * (t - mt) for n, t in zip(ns, ts)) / sum((n - mn) ** 2 for n in ns)
    return mt - b * mn, b


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=41)
    ap.add_argument("--sizes", default="32,64,128,256,512")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                    help="cuda: parameters on one GPU (foreach's CUDA fast path)")
    args = ap.parse_args()
    global DEVICE
    DEVICE = args.device
    if DEVICE == "cuda" and not torch.cuda.is_available():
        ap.error("--device cuda: no CUDA device here; expected a machine with one")
    try:
        ns = [int(s) for s in args.sizes.split(",")]
    except ValueError:
        ns = []
    if len(set(ns)) < 2 or min(ns) < 1:
        ap.error(f"--sizes {args.sizes!r}: expected two or more distinct positive tensor counts, e.g. 32,64,128")
    if args.reps < 1:
        ap.error(f"--reps {args.reps}: expected at least 1")
    torch.set_num_threads(1)
    out = {"torch": torch.__version__, "device": DEVICE, "method": " ".join(__doc__.split("\n")[2:6]), "sizes": ns,
           "step": {}}
    ref = []
    for opt in ("sgd", "adam", "adamw"):
        reference(ref)
        for impl in ("for_loop", "foreach"):
            ts = []
            for n in ns:
                _, o = make(opt, impl, n)
                ts.append(timed(o.step, args.reps))
            a, b = fit(ns, ts)
            row = {"median_s": ts, "intercept_s": a, "per_tensor_s": b}
            if impl == "for_loop":
                row["per_tensor_op_s"] = b / OPS_PER_TENSOR[opt]
            else:
                row["per_foreach_op_s"] = a / FOREACH_OPS[opt]
            out["step"][f"{opt}/{impl}"] = row
        # foreach with its ops as no-ops: the Python around them.
        saved = {k: getattr(torch, k) for k in dir(torch) if k.startswith("_foreach_")}
        ts = []
        for n in ns:
            _, o = make(opt, "foreach", n)
            for k in saved:
                setattr(torch, k, lambda *a, **kw: a[0])
            try:
                ts.append(timed(o.step, args.reps))
            finally:
                for k, v in saved.items():
                    setattr(torch, k, v)
        a, b = fit(ns, ts)
        out["step"][f"{opt}/foreach_python_only"] = {"median_s": ts, "intercept_s": a, "per_tensor_s": b}
    one, two = [torch.ones(1, device=DEVICE)], [torch.ones(1, device=DEVICE)]
    calls = {
        "_foreach_mul_(list, scalar)": lambda: torch._foreach_mul_(one, 0.9),
        "_foreach_add_(list, list)": lambda: torch._foreach_add_(one, two, alpha=0.1),
        "_foreach_addcdiv_(list, list, list)": lambda: torch._foreach_addcdiv_(one, two, two, 0.1),
    }
    out["foreach_call_one_tensor_s"] = {k: timed(f, 201) for k, f in calls.items()}
    zg = {}
    for set_to_none in (False, True):
        ts = []
        for n in ns:
            params, o = make("sgd", "for_loop", n)

            def run():
                for p in params:  # a gradient to zero each time
                    if p.grad is None:
                        p.grad = torch.zeros(1, device=DEVICE)
                sync()
                t0 = time.perf_counter()
                o.zero_grad(set_to_none=set_to_none)
                return time.perf_counter() - t0

            ts.append(statistics.median(run() for _ in range(args.reps)))
        a, b = fit(ns, ts)
        zg["set_to_none" if set_to_none else "zero_"] = {"median_s": ts, "intercept_s": a, "per_tensor_s": b}
    out["zero_grad"] = zg
    reference(ref)
    out["reference_op"] = measure_dispatch.reference_record(statistics.median(ref), None, DEVICE)
    out["ratio_to_op"] = shares(out, out["reference_op"]["forward_s"])
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
