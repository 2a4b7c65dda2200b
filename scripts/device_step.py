#!/usr/bin/python3
"""Whole training steps on one GPU, without DDP and in DDP at world size 1 (NCCL), for ddpsim.

    python3 scripts/device_step.py --out OUT [--models resnet50,bert-base,gpt2,vit-b16]
        [--dtypes float32,bfloat16] [--caps 25,1] [--iters 20] [--warmup 5]
    python3 scripts/device_step.py --cpu --out /tmp/ds --models resnet50 --iters 1 --warmup 1   # dry run (gloo, CPU)

For every zoo model (models/<name>.json's `source`, at scripts/device_profile.py's usual per-GPU
batch and sequence length) and dtype, one fresh model (seed 0) per mode: "no_ddp", and
DistributedDataParallel(bucket_cap_mb=C, device_ids=[0]) for each cap over a one-rank NCCL group
(gloo with --cpu). A step is zero_grad(set_to_none=True), the forward (under torch.autocast for
bfloat16/float16, no GradScaler), the loss (export_model.output_loss: the sum of the floating
outputs' means), backward and torch.optim.SGD(lr 1e-4, momentum 0.9, foreach=True).step(), timed
from a torch.cuda.synchronize() to the next. After --warmup untimed steps per mode the timed steps
go round robin over the modes (a change of clocks or load hits every mode alike); each mode's
median is reported. The no-DDP model is also timed by phase (forward, backward, optimizer, each
between synchronizations; medians) to tell the step's parts, and with --kernels profiled over three
more steps (torch.profiler: each GPU kernel's calls and time per step, the 80 largest) and one more
step written launch by launch to OUT/launches-<model>-<dtype>.json (each kernel's duration, grid,
block and the operator that launched it, with its input shapes: `launch_list`).

OUT/step.json: the device, torch/CUDA/cuDNN versions, the precision settings PyTorch used
(cudnn.allow_tf32, cuda.matmul.allow_tf32), and per model and dtype the batch, the input, the
medians and every timed step. `ddpsim` is not run here: the comparison is made where ddpsim is
built (docs/accuracy.md, "Measured on an H200").
"""

import argparse
import contextlib
import json
import os
import platform
import statistics
import sys
import time

SCRIPT_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(SCRIPT_DIR)
if SCRIPT_DIR not in sys.path:
    sys.path.insert(0, SCRIPT_DIR)

from device_profile import USUAL, CPU_BATCH, model_input  # noqa: E402

DTYPES = ("float32", "bfloat16", "float16")


def kernel_table(torch, step, dev, steps=3, top=80):
    """torch.profiler over `steps` no-DDP steps: per kernel (GPU) or operator (CPU) name, the calls
    and the device time per step, the `top` largest, with the total over all of them."""
    from torch.profiler import ProfilerActivity, profile
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if dev == "cuda" else [])
    with profile(activities=acts) as prof:
        for _ in range(steps):
            step()
    rows = []
    for e in prof.key_averages():
        # Profiler annotations ("Optimizer.step#SGD.step") also carry device time, that of the
        # kernels they enclose, which are rows of their own: counting both doubled it.
        if getattr(e, "is_user_annotation", False) or e.key.startswith(("Optimizer.", "ProfilerStep")):
            continue
        if dev == "cuda":
            if getattr(e, "device_type", None) is not None and "CUDA" not in str(e.device_type):
                continue
            t = getattr(e, "self_device_time_total", None)
            if t is None:
                t = getattr(e, "self_cuda_time_total", 0.0)
        else:
            t = e.self_cpu_time_total
        if t > 0:
            rows.append({"name": e.key, "calls_per_step": e.count / steps, "time_s_per_step": t * 1e-6 / steps})
    rows.sort(key=lambda r: -r["time_s_per_step"])
    return {"steps": steps, "what": "GPU kernels" if dev == "cuda" else "CPU operators (self time)",
            "total_s_per_step": sum(r["time_s_per_step"] for r in rows), "rows": rows[:top]}


def launch_list(trace):
    """Each GPU kernel of a torch.profiler Chrome trace (`export_chrome_trace`), in launch order:
    its name (an index into `names`), duration (us), grid and block, and the operator that launched
    it, joined on the trace's "External id" (a kernel carries the id of the CPU op active at its
    launch: the innermost aten op, or the autograd node in backward), with that op's input shapes
    and types (recorded with record_shapes=True). What a kernel table by name cannot tell: which
    call had which size, and how many blocks a closed-source kernel (cuDNN's) launched."""
    events = trace.get("traceEvents", []) if isinstance(trace, dict) else list(trace)
    ops = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "cpu_op":
            a = e.get("args") or {}
            if "External id" in a:
                ops[a["External id"]] = (e.get("name"), a.get("Input Dims"), a.get("Input type"))
    kernels = sorted((e for e in events if e.get("ph") == "X" and e.get("cat") == "kernel"),
                     key=lambda e: e.get("ts", 0))
    names, index, out = [], {}, []
    for e in kernels:
        a = e.get("args") or {}
        n = e.get("name", "")
        if n not in index:
            index[n] = len(names)
            names.append(n)
        op = ops.get(a.get("External id"), (None, None, None))
        out.append({"k": index[n], "dur_us": e.get("dur"), "grid": a.get("grid"), "block": a.get("block"),
                    "op": op[0], "shapes": op[1], "types": op[2]})
    return {"names": names, "launches": out}


def launches(torch, step, path):
    """One no-DDP step under torch.profiler with shapes recorded, its kernels (launch_list) written
    to `path`; returns how many."""
    import tempfile
    from torch.profiler import ProfilerActivity, profile
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])
    with profile(activities=acts, record_shapes=True) as prof:
        step()
    with tempfile.TemporaryDirectory() as d:
        trace_file = os.path.join(d, "trace.json")
        prof.export_chrome_trace(trace_file)
        with open(trace_file) as f:
            trace = json.load(f)
    result = launch_list(trace)
    with open(path, "w") as f:
        json.dump(result, f, separators=(",", ":"))
    return len(result["launches"])


def measure(name, dtype, args, dev, log):
    import torch
    import export_model as em
    batch, seq = USUAL[name]
    if args.cpu:
        batch, seq = CPU_BATCH.get(name, 2), (min(seq, 64) if seq else None)
    doc, spec, shape, idt = model_input(name, batch, seq)
    tdt = {"float32": None, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]
    x = em.make_input(em.load_model(spec, seed=0), shape, idt, seed=0).to(dev)
    modes = ["no_ddp"] + ["ddp_cap_%g" % c for c in args.caps]
    models, opts = {}, {}
    for mode in modes:
        m = em.load_model(spec, seed=0).to(dev)
        if mode != "no_ddp":
            cap = float(mode[len("ddp_cap_"):])
            m = torch.nn.parallel.DistributedDataParallel(
                m, bucket_cap_mb=cap, device_ids=[0] if dev == "cuda" else None)
        models[mode] = m
        opts[mode] = torch.optim.SGD(m.parameters(), lr=1e-4, momentum=0.9, foreach=True)

    def sync():
        if dev == "cuda":
            torch.cuda.synchronize()

    def ctx():
        return torch.autocast(dev, dtype=tdt) if tdt is not None else contextlib.nullcontext()

    def step(mode, phases=None):
        m, opt = models[mode], opts[mode]
        sync()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with ctx():
            loss = em.output_loss(m(x))
        if phases is not None:
            sync()
            t1 = time.perf_counter()
        loss.backward()
        if phases is not None:
            sync()
            t2 = time.perf_counter()
        opt.step()
        sync()
        t3 = time.perf_counter()
        if phases is not None:
            phases.append((t1 - t0, t2 - t1, t3 - t2))
        return t3 - t0

    for mode in modes:
        for _ in range(args.warmup):
            step(mode)
    times = {mode: [] for mode in modes}
    for _ in range(args.iters):
        for mode in modes:
            times[mode].append(step(mode))
    phases = []
    for _ in range(args.iters):
        step("no_ddp", phases)
    kernels = kernel_table(torch, lambda: step("no_ddp"), dev) if args.kernels else None
    if args.kernels:
        n = launches(torch, lambda: step("no_ddp"), os.path.join(args.out, "launches-%s-%s.json" % (name, dtype)))
        log("%s %s: %d kernel launches in one step -> launches-%s-%s.json" % (name, dtype, n, name, dtype))
    row = {"model": name, "dtype": dtype, "batch": batch, "input": shape, "input_dtype": idt,
           "optimizer": "sgd momentum 0.9, foreach", "zero_grad_set_to_none": True,
           "median_step_s": {mode: statistics.median(times[mode]) for mode in modes},
           "steps_s": times,
           "no_ddp_phases_s": {k: statistics.median([p[i] for p in phases])
                               for i, k in enumerate(("forward", "backward", "optimizer"))}}
    if seq is not None:
        row["seq_len"] = seq
    if kernels is not None:
        row["kernels"] = kernels
    nd = row["median_step_s"]["no_ddp"]
    row["ddp_over_no_ddp"] = {mode: row["median_step_s"][mode] / nd - 1.0 for mode in modes if mode != "no_ddp"}
    del models, opts
    if dev == "cuda":
        torch.cuda.empty_cache()
    log("%s %s: %s" % (name, dtype, ", ".join("%s %.3f ms" % (k, v * 1e3) for k, v in row["median_step_s"].items())))
    return row


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--models", default="resnet50,bert-base,gpt2,vit-b16")
    ap.add_argument("--dtypes", default="float32,bfloat16")
    ap.add_argument("--caps", default="25,1")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--budget-s", type=float, default=300.0, help="start no new model after this")
    ap.add_argument("--cpu", action="store_true", help="dry run on this CPU with gloo")
    ap.add_argument("--kernels", action="store_true",
                    help="also a torch.profiler table of the no-DDP step's kernels (row 'kernels')")
    args = ap.parse_args(argv)
    log = lambda msg: (sys.stderr.write("device_step.py: %s\n" % msg), sys.stderr.flush())  # noqa: E731
    args.models = [m for m in args.models.split(",") if m]
    args.dtypes = [d for d in args.dtypes.split(",") if d]
    try:
        args.caps = [float(c) for c in args.caps.split(",") if c]
    except ValueError:
        sys.stderr.write("device_step.py: error: --caps %r: comma-separated numbers (MB)\n" % args.caps)
        return 2
    bad = [m for m in args.models if m not in USUAL] + [d for d in args.dtypes if d not in DTYPES]
    if bad or args.iters < 1 or args.warmup < 1 or any(c <= 0 for c in args.caps):
        sys.stderr.write("device_step.py: error: unknown model/dtype %s (models: %s; dtypes: %s), or --iters/"
                         "--warmup < 1, or a cap <= 0\n" % (bad, ", ".join(sorted(USUAL)), ", ".join(DTYPES)))
        return 2
    import torch
    import torch.distributed as dist
    dev = "cpu" if args.cpu else "cuda"
    if dev == "cuda" and not torch.cuda.is_available():
        sys.stderr.write("device_step.py: error: CUDA is not available; use --cpu for the dry run\n")
        return 2
    if args.cpu:
        args.dtypes = [d for d in args.dtypes if d == "float32"] or ["float32"]
    dist.init_process_group("gloo" if args.cpu else "nccl", store=dist.HashStore(), rank=0, world_size=1)
    os.makedirs(args.out, exist_ok=True)
    out = {"format": "ddpsim-device-step/1", "date_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
           "command": " ".join(["scripts/device_step.py"] + (argv if argv is not None else sys.argv[1:])),
           "device": "cpu" if args.cpu else torch.cuda.get_device_name(0), "torch": torch.__version__,
           "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version() if not args.cpu else None,
           "python": platform.python_version(),
           "cudnn_allow_tf32": bool(torch.backends.cudnn.allow_tf32),
           "matmul_allow_tf32": bool(torch.backends.cuda.matmul.allow_tf32),
           "backend": "gloo" if args.cpu else "nccl", "world_size": 1, "iters": args.iters,
           "warmup": args.warmup, "rows": [], "skipped": []}
    start = time.time()
    failed = 0
    for name in args.models:
        for dtype in args.dtypes:
            if time.time() - start > args.budget_s:
                out["skipped"].append({"model": name, "dtype": dtype, "reason": "time budget spent"})
                continue
            try:
                out["rows"].append(measure(name, dtype, args, dev, log))
            except Exception as e:  # noqa: BLE001 -- recorded, the run goes on
                failed += 1
                out["skipped"].append({"model": name, "dtype": dtype, "reason": "%s: %s" % (type(e).__name__, e)})
                log("%s %s failed: %s" % (name, dtype, e))
            with open(os.path.join(args.out, "step.json"), "w") as f:
                json.dump(out, f, indent=1, sort_keys=True)
    out["wall_s"] = time.time() - start
    with open(os.path.join(args.out, "step.json"), "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
    dist.destroy_process_group()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
