#!/usr/bin/python3
"""Measure the CPU time per element of torch's optimizer step (and companions) on float32 tensors.

Why: FSDP's CPU offload (FSDP1 `CPUOffload(offload_params=True)`, FSDP2 `CPUOffloadPolicy`) keeps
each rank's parameter shards (float32) and their gradients on the host and runs `optimizer.step()`
there, so ddpsim needs the CPU's cost per element of that step. It is measured single-threaded
because that is how a rank runs it: torchrun sets OMP_NUM_THREADS=1 for every worker unless the
user set it. /usr/lib/python3/dist-packages/torch/distributed/run.py (torch 1.13),
`config_from_args(args)`, lines 660-672:

    nproc_per_node = determine_local_world_size(args.nproc_per_node)
    if "OMP_NUM_THREADS" not in os.environ and nproc_per_node > 1:
        omp_num_threads = 1
        log.warning(... "Setting OMP_NUM_THREADS environment variable for each process to be "
                    f"{omp_num_threads} in default, to avoid your system being overloaded, " ...)
        # This env variable will be passed down to the subprocesses
        os.environ["OMP_NUM_THREADS"] = str(omp_num_threads)

(so with one process per node it is left alone). A second block repeats everything with
torch.set_num_threads(os.cpu_count()) for comparison; the interpreter's default
torch.get_num_threads() is recorded as found.

Method: for every size N (elements, float32) ONE parameter tensor of N elements (an FSDP1 flat
parameter is one tensor per unit) with a gradient set once (small values, so clip_grad_norm_
never changes it in effect). Per case: `--warmup` untimed calls (the first optimizer step
allocates the state; glibc's dynamic mmap threshold only adapts at the first free of an mmapped
chunk), then `--steps` calls, each timed alone with time.perf_counter; median, min and max in
ns per element, plus the process's minor page faults per call (getrusage ru_minflt) given as
faulted bytes per element. Cases: torch.optim.AdamW and Adam (default hyperparameters: AdamW
weight_decay=0.01, Adam 0) with foreach=False and True; SGD(lr=0.01, momentum=0.9) foreach
False and True; plain SGD(lr=0.01); FSDP's ShardedGradScaler CPU unscale (per tensor
isinf().any(), isnan().any(), `*=`); torch.nn.utils.clip_grad_norm_(params, 1.0);
optimizer.zero_grad(set_to_none=False) and (set_to_none=True); and, for reference, `y.copy_(x)` (GB/s counted as 8 bytes
per element). Sizes sit on both sides of 32 MiB (= 8M elements, glibc's largest dynamic mmap
threshold, DEFAULT_MMAP_THRESHOLD_MAX = 4*1024*1024*sizeof(long), mallopt(3)): an allocation
above the threshold is a fresh mmap whose pages fault (and are zeroed) on first touch, one
below it is reused from the heap, so ops that allocate temporaries (Adam's
`exp_avg_sq.sqrt() / bias_correction2_sqrt`) should cost much more per element above 32 MiB.
Below 32 MiB the outcome depends on the allocator's history: the threshold only rises when a
larger mmapped chunk is freed, and the heap's top is trimmed (pages returned, to fault again)
whenever it exceeds the trim threshold (twice the mmap threshold), so the sizes run in
ascending order and the faulted bytes per element say which regime each figure is in.

Per-tensor fixed cost: each optimizer over K tensors of `TINY` (256) elements, K = 64, 128, 256,
median step time fitted by least squares as a + b*K; b is given in microseconds per tensor. And
one "many tensors" case: 200 tensors of 100k elements (20M in all), ns per element, to compare
with one 20M tensor.

Allocator check (skipped by --quick): AdamW (foreach False and True), the unscale and copy_ at a few sizes in two
fresh child processes, one with glibc's defaults and one with
GLIBC_TUNABLES=glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=<16 GiB> (no mmap at all, heap
never trimmed: every temporary is reused). If the mmap explanation holds, the second shows no
step in cost at 32 MiB and far fewer page faults.

Run (about 4 minutes on the project's 2-vCPU machine; --quick < 20 s):

    /usr/bin/python3 scripts/measure_cpu_optimizer.py --out result.json
    /usr/bin/python3 scripts/measure_cpu_optimizer.py --quick

Without --out the JSON goes to stdout. Progress goes to stderr. Bad arguments: exit 2.
"""
import argparse
import datetime
import gc
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time

import torch

FULL_SIZES = [250_000, 1_000_000, 4_000_000, 7_000_000, 7_500_000, 9_000_000, 20_000_000, 50_000_000]
QUICK_SIZES = [1_000_000, 9_000_000]
BIG = 40_000_000  # at or above this many elements: BIG_STEPS timed calls (time budget)
BIG_STEPS = 5
TINY = 256
TINY_COUNTS = [64, 128, 256]
MANY = (200, 100_000)
CHECK_SIZES = [4_000_000, 7_500_000, 9_000_000, 20_000_000]
NO_MMAP_TUNABLES = "glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=17179869184"
CHILD_TIMEOUT_S = 180
PAGE = os.sysconf("SC_PAGE_SIZE")

OPTIMIZERS = {
    "AdamW": lambda ps: torch.optim.AdamW(ps, foreach=False),
    "AdamW_foreach": lambda ps: torch.optim.AdamW(ps, foreach=True),
    "Adam": lambda ps: torch.optim.Adam(ps, foreach=False),
    "Adam_foreach": lambda ps: torch.optim.Adam(ps, foreach=True),
    "SGD_momentum": lambda ps: torch.optim.SGD(ps, lr=0.01, momentum=0.9, foreach=False),
    "SGD_momentum_foreach": lambda ps: torch.optim.SGD(ps, lr=0.01, momentum=0.9, foreach=True),
    "SGD": lambda ps: torch.optim.SGD(ps, lr=0.01, foreach=False),
}


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def minflt():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def load1():
    return os.getloadavg()[0]


def cpu_model():
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for line in out.splitlines():
        if line.startswith("Model name:"):
            return line.split(":", 1)[1].strip()
    return None


def time_calls(fn, warmup, steps, before=None):
    """Seconds of each of `steps` calls of fn (after `warmup` untimed), and faults per call."""
    for _ in range(warmup):
        if before:
            before()
        fn()
    times = []
    faults = 0
    for _ in range(steps):
        if before:
            before()
        f0 = minflt()
        t0 = time.perf_counter()
        fn()
        t1 = time.perf_counter()
        faults += minflt() - f0
        times.append(t1 - t0)
    return times, faults / steps


def summary(times, elements, faults):
    ns = [t / elements * 1e9 for t in times]
    return {
        "median_ns_per_element": statistics.median(ns),
        "min_ns_per_element": min(ns),
        "max_ns_per_element": max(ns),
        "steps": len(ns),
        "minor_faults_per_call": faults,
        "faulted_bytes_per_element": faults * PAGE / elements,
    }


def make_params(count, size):
    params = []
    for _ in range(count):
        p = torch.nn.Parameter(torch.rand(size))
        p.grad = torch.rand(size).mul_(1e-7)
        params.append(p)
    return params


def bench_params(params, warmup, steps, names):
    """Every case of `names` (optimizers, 'clip_grad_norm', 'zero_grad_none') over `params`."""
    elements = sum(p.numel() for p in params)
    grads = [p.grad for p in params]
    out = {}
    for name in names:
        if name in OPTIMIZERS:
            opt = OPTIMIZERS[name](params)
            times, faults = time_calls(opt.step, warmup, steps)
            del opt
        elif name == "unscale":
            # FSDP's ShardedGradScaler._foreach_non_finite_check_and_unscale_cpu_ (torch 1.13,
            # torch/distributed/fsdp/sharded_grad_scaler.py), the CPU path an offloaded gradient
            # takes: per tensor isinf().any(), isnan().any() (two bool temporaries) and `*=`.
            inv = torch.tensor(1.0)

            def unscale():
                for t in grads:
                    if torch.isinf(t).any().item() is True or torch.isnan(t).any().item() is True:
                        break
                    t.data *= inv.item()

            times, faults = time_calls(unscale, warmup, steps)
        elif name == "clip_grad_norm":
            times, faults = time_calls(lambda: torch.nn.utils.clip_grad_norm_(params, 1.0), warmup, steps)
        elif name == "zero_grad_zero":
            # zero_grad(set_to_none=False): zero_() on every gradient in place.
            opt = torch.optim.SGD(params, lr=0.01)
            times, faults = time_calls(lambda: opt.zero_grad(set_to_none=False), warmup, steps)
            del opt
        elif name == "zero_grad_none":
            opt = torch.optim.SGD(params, lr=0.01)

            def restore():
                for p, g in zip(params, grads):
                    p.grad = g

            times, faults = time_calls(lambda: opt.zero_grad(set_to_none=True), warmup, steps, restore)
            restore()
            del opt
        else:
            raise ValueError(name)
        gc.collect()
        out[name] = summary(times, elements, faults)
    return out


def bench_copy(size, warmup, steps):
    x = torch.rand(size)
    y = torch.empty_like(x)
    times, faults = time_calls(lambda: y.copy_(x), warmup, steps)
    r = summary(times, size, faults)
    r["median_GB_per_s"] = 8 * size / statistics.median(times) / 1e9
    r["max_GB_per_s"] = 8 * size / min(times) / 1e9
    return r


def fit_line(xs, ys):
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return my - b * mx, b


def fixed_cost(warmup, steps):
    """Per optimizer: least-squares a + b*K over K tensors of TINY elements, in microseconds."""
    names = list(OPTIMIZERS) + ["unscale", "clip_grad_norm", "zero_grad_zero", "zero_grad_none"]
    medians = {name: [] for name in names}
    for k in TINY_COUNTS:
        params = make_params(k, TINY)
        r = bench_params(params, warmup, steps, names)
        for name in names:
            medians[name].append(r[name]["median_ns_per_element"] * k * TINY / 1e3)  # us per call
    out = {}
    for name in names:
        a, b = fit_line(TINY_COUNTS, medians[name])
        out[name] = {"us_per_tensor": b, "us_per_call": a,
                     "median_us": dict(zip(map(str, TINY_COUNTS), medians[name]))}
    return out


def block(threads, sizes, warmup, steps, quick):
    torch.set_num_threads(threads)
    log(f"-- {threads} thread(s): torch.get_num_threads() = {torch.get_num_threads()}")
    names = list(OPTIMIZERS) + ["unscale", "clip_grad_norm", "zero_grad_zero", "zero_grad_none"]
    res = {"threads": torch.get_num_threads(), "sizes": {}}
    for size in sizes:
        s = BIG_STEPS if size >= BIG else steps
        t0 = time.perf_counter()
        params = make_params(1, size)
        row = bench_params(params, warmup, s, names)
        del params
        gc.collect()
        row["copy"] = bench_copy(size, warmup, s)
        res["sizes"][str(size)] = row
        log(f"   {size:>11,} elements ({size * 4 / 2**20:.1f} MiB): AdamW "
            f"{row['AdamW']['median_ns_per_element']:.2f} ns/el, copy {row['copy']['median_GB_per_s']:.1f} GB/s"
            f"  [{time.perf_counter() - t0:.1f} s]")
    count, size = MANY if not quick else (50, 100_000)
    params = make_params(count, size)
    res["many_tensors"] = {"tensors": count, "elements_each": size,
                           "cases": bench_params(params, warmup, steps, names)}
    del params
    gc.collect()
    res["fixed_cost"] = fixed_cost(warmup, steps)
    log(f"   fixed cost AdamW {res['fixed_cost']['AdamW']['us_per_tensor']:.2f} us/tensor")
    return res


def child_main(args):
    """--child: AdamW (foreach=False) and copy_ at CHECK_SIZES, one thread, JSON to stdout."""
    torch.set_num_threads(1)
    out = {}
    for size in CHECK_SIZES:
        params = make_params(1, size)
        row = bench_params(params, args.warmup, args.steps, ["AdamW", "AdamW_foreach", "unscale"])
        del params
        gc.collect()
        row["copy"] = bench_copy(size, args.warmup, args.steps)
        out[str(size)] = row
    json.dump(out, sys.stdout)


def allocator_check(args):
    out = {}
    for label, tunables in (("glibc_default", None), ("no_mmap", NO_MMAP_TUNABLES)):
        env = dict(os.environ)
        env.pop("GLIBC_TUNABLES", None)
        if tunables:
            env["GLIBC_TUNABLES"] = tunables
        cmd = [sys.executable, os.path.abspath(__file__), "--child",
               "--warmup", str(args.warmup), "--steps", str(args.steps)]
        log(f"-- allocator check, {label}" + (f" (GLIBC_TUNABLES={tunables})" if tunables else ""))
        try:
            p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            out[label] = {"error": f"timed out after {CHILD_TIMEOUT_S} s"}
            continue
        if p.returncode != 0:
            out[label] = {"error": f"exit {p.returncode}: {p.stderr[-2000:]}"}
            continue
        out[label] = {"GLIBC_TUNABLES": tunables, "sizes": json.loads(p.stdout)}
        for size, row in out[label]["sizes"].items():
            log(f"   {int(size):>11,}: AdamW {row['AdamW']['median_ns_per_element']:.2f} ns/el, "
                f"{row['AdamW']['faulted_bytes_per_element']:.2f} B/el faulted")
    return out


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--quick", action="store_true", help="two sizes, fewer steps, no allocator check (< 20 s)")
    ap.add_argument("--out", metavar="FILE", help="write the JSON here (default: stdout)")
    ap.add_argument("--warmup", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--steps", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.warmup is None:
        args.warmup = 3
    if args.steps is None:
        args.steps = 2 if args.quick else 7
    if args.warmup < 3 or args.steps < 1:
        ap.error("--warmup must be >= 3 and --steps >= 1")
    if args.out:
        d = os.path.dirname(os.path.abspath(args.out))
        if not os.path.isdir(d):
            ap.error(f"--out: directory {d} does not exist")
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.child:
        child_main(args)
        return 0
    default_threads = torch.get_num_threads()
    meta = {
        "script": "scripts/measure_cpu_optimizer.py",
        "argv": sys.argv[1:],
        "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "glibc": os.confstr("CS_GNU_LIBC_VERSION"),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "default_torch_threads": default_threads,
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
        "page_size": PAGE,
        "dtype": "float32",
        "warmup": args.warmup,
        "steps": args.steps,
        "steps_at_or_above_%d_elements" % BIG: BIG_STEPS,
        "load1_start": load1(),
    }
    t_start = time.perf_counter()
    sizes = QUICK_SIZES if args.quick else FULL_SIZES
    result = {"meta": meta, "blocks": {}}
    for threads in (1, os.cpu_count() or 1):
        if str(threads) in result["blocks"]:
            continue
        result["blocks"][str(threads)] = block(threads, sizes, args.warmup, args.steps, args.quick)
    if not args.quick:
        result["allocator_check"] = allocator_check(args)
    meta["load1_end"] = load1()
    meta["wall_s"] = time.perf_counter() - t_start
    text = json.dumps(result, indent=1) + "\n"
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
        log(f"wrote {args.out} ({meta['wall_s']:.0f} s)")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
