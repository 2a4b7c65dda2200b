#!/usr/bin/python3
"""Measure what torch DistributedDataParallel itself costs on this CPU (torch 1.13); prints JSON.

What sim/ddp/host_costs.hpp takes from it (docs/accuracy.md, "DDP's own costs"):
- per_gradient_hook_s: the Reducer's work per gradient on the backward thread with
  gradient_as_bucket_view=True (autograd_hook -> mark_variable_ready -> mark_variable_ready_dense
  with no copy: the gradient already is the bucket view), per tensor;
- per_gradient_copies_s: what gradient_as_bucket_view=False adds per tensor (the copy into the
  bucket, at::mul_out by 1/world_size, and the copy back out in finalize_backward), per tensor, at
  a size where the bytes are negligible (16x16 float32 weights): the two ops' fixed costs;
- reducer_per_bucket_s: per_bucket_s less allreduce_one_rank_s (dist.all_reduce of 1 KiB on the
  one-rank group, async + future wait, measured alone): the Reducer's own share;
- per_bucket_s: per bucket at world size 1 (mark_bucket_ready -> all_reduce_bucket: the comm
  hook / allreduce on the one-rank group, its Work and future, the then() callback, and
  finalize_bucket_dense), from the regression over bucket counts;
- forward_s: DDP.forward's extra time per step (_pre_forward / prepare_for_forward, the rebuild
  check, logging, prepare_for_backward, _find_tensors over the output), constant part;
- buffer_sync_s, per_buffer_s: DDP.forward's buffer broadcast (broadcast_buffers=True, the
  default), which runs at world size 1 too: DistributedDataParallel._sync_buffers ->
  _assign_modules_buffers (a Python loop over named_buffers) -> dist._broadcast_coalesced
  (torch/csrc/distributed/c10d/comm.cpp: per dtype bucket flatten_dense_tensors, a broadcast on
  the group, then unflatten_dense_tensors and one copy_ back per buffer, on every rank, the root
  included).  Method: DDP over a chain of K nn.BatchNorm1d(16) (3 buffers each: running_mean,
  running_var float32 and num_batches_tracked int64, so two dtype buckets, as in every BatchNorm
  model), K = 10, 20, 40, 80, ddp._sync_buffers() timed directly, one K after the other, medians
  over 10 x --reps calls, least squares time = c + per_buffer * buffers; buffer_sync_s is
  c less the two one-rank dist.broadcast calls it holds (broadcast_one_rank_s, 1 KiB, measured
  alone), which ddpsim charges as the one-rank call at world size 1 and as the broadcast job above.

Method (named here because the numbers come from it): a chain of L nn.Linear(16, 16) (2L
parameter tensors, batch 4) trained without DDP, with DDP (gloo, world size 1,
gradient_as_bucket_view False) and with DDP (gradient_as_bucket_view True), the three interleaved
step by step and the cases round robin, so that machine load hits them alike; forward and backward timed separately
(time.perf_counter), medians over --reps steps after warm-up (the buckets are rebuilt at
iteration 2 in torch 1.13). Bucket counts are set with bucket_cap_mb and
dist._DEFAULT_FIRST_BUCKET_BYTES (the 1 MiB first-bucket limit would otherwise hold the whole
model). Per case d_bwd = the median over steps of (DDP backward - the plain backward run just
before it): pairing adjacent steps cancels changes of machine load; then least squares
d_bwd = c0 + c_t * tensors + c_b * buckets over the cases (numpy.linalg.lstsq), and the same for
the forward. torch.set_num_threads(1).

The machine may be shared with other work while this runs: the load average at start and end is
in the output, and the per-case medians are listed so that scatter can be judged.

Reference op (`reference_op`, `ratio_to_op`): after every round of the round robin, one chain of
500 tiny multiplies on a tensor that requires grad (scripts/measure_dispatch.py's `mul`
chain: the op sim/gpu/kernel_model.cpp prices every kernel's dispatch from), forward and backward
per op, medians over the rounds. Each cost is also given as a ratio to it, forward-side costs
(forward_s, per_buffer_s) to the forward op, backward-thread costs (per_gradient_hook_s,
per_bucket_s, reducer_per_bucket_s) to the backward node: the machine's speed cancels in the
ratio, which is how sim/ddp/host_costs.cpp prices DDP beside the per-kernel model's dispatch.

--device cuda: the same on one GPU with NCCL (world size 1, DDP with device_ids=[0]); the tensors
are tiny, so what is timed is still the host (each step is synchronized after its timings); the
per-bucket slope then holds c10d's ProcessGroupNCCL call (stream sync, events, the Work and its
future) and NCCL's enqueue, which ddpsim prices as the Reducer's share plus NCCL's 5 us launch;
the reference op is the mul chain on CUDA (dispatch + launch).

--comm-hooks: what a Python comm hook costs the backward thread per bucket beyond DDP's builtin
path (ddpsim charges both alike: sim/ddp/host_costs.hpp, docs/accuracy.md). DDP.register_comm_hook
with a Python callable makes the Reducer call it through PythonCommHook::runHook
(torch/csrc/distributed/c10d/python_comm_hook.cpp: the GIL, the GradBucket wrapped for Python, the
call) where the default path calls the process group's allreduce in C++; torch's
default_hooks.allreduce_hook then runs `tensor.div_(n)` and
`dist.all_reduce(tensor, async_op=True).get_future().then(lambda fut: fut.value()[0])` in Python.
Method, on one rank of a one-rank gloo group: (1) `call`: that all_reduce...then line, the c10d
Python wrapper with its C++ call, get_future and then; (2) `cpp_call`: the process group's own
binding, `pg.allreduce([t]).get_future()` (the builtin path's C++ call, plus a pybind call); (3)
`then`: then(lambda f: f.value()) on an already completed future, the lambda run inline (as
NCCL's futures are complete at enqueue, ProcessGroupNCCL::collective markCompleted; gloo's complete
on its worker thread); each on the main thread with nothing in flight (every call waited on,
untimed, before the next), on a 21,660-byte buffer, medians over 10 x --reps calls. The same `call`
timed inside the hook of DDP steps (`call_in_hook`, a chain of 200 nn.Linear(16, 16) in 10 and 200
buckets) is printed beside it: there gloo's worker runs the previous bucket's callback under the
GIL meanwhile. python_hook_s = call - cpp_call (the Python around the collective call; ddpsim
charges the call itself as NCCL's launch or the CPU ring's base latency either way);
python_callback_s = then. The hook's invocation (the GIL, the GradBucket) is in neither; the
backward slope per bucket of a hook returning an already completed future (`completed`, no
collective; the Reducer's per-bucket work included) bounds it from above. What these pieces do
not hold: at world size 1 the per-bucket backward slope of allreduce_hook
(`backward_slope_per_bucket_s`, the 10- and 200-bucket cases' difference) exceeds the builtin's by
far more (gloo's worker thread runs each bucket's then() callback, which needs the GIL, before the
next all-reduce), and in whole ResNet-18 steps the hook costs the backward ~75-300 us per bucket
more than the builtin path (bench/results/comm-hook-host-2026-12-06, hook_in_steps.py; cause not
found).

Usage: /usr/bin/python3 scripts/measure_ddp_host.py [--reps 30] [--device cpu|cuda] [--comm-hooks] [-o out.json]
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time


LAYER_BYTES = (16 * 16 + 16) * 4  # one nn.Linear(16, 16): weight + bias, float32
DEVICE = "cpu"  # --device


def sync():
    if DEVICE == "cuda":
        import torch
        torch.cuda.synchronize()


def reference_chain():
    """(forward, backward) seconds per op of one measure_dispatch.py reference chain on DEVICE."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import measure_dispatch
    return measure_dispatch.reference_chain(DEVICE)


def reference_record(fwd, bwd):
    import measure_dispatch
    return measure_dispatch.reference_record(statistics.median(fwd), statistics.median(bwd), DEVICE)


def ratios(doc, ref):
    """Each DDP cost over the reference op: forward-side over the forward op, backward-side over
    the backward node."""
    fwd, bwd = ref["forward_s"], ref["backward_s"]
    keys = {"forward_s": fwd, "per_buffer_s": fwd, "per_gradient_hook_s": bwd, "per_gradient_copies_s": bwd,
            "per_bucket_s": bwd, "reducer_per_bucket_s": bwd}
    return {k: doc[k] / d for k, d in keys.items() if k in doc}


def build(layers, seed=0):
    import torch
    torch.manual_seed(seed)
    return torch.nn.Sequential(*[torch.nn.Linear(16, 16) for _ in range(layers)]).to(DEVICE)


def cap_for(layers_per_bucket):
    # A bucket closes once its size reaches the limit (_compute_bucket_assignment_by_size):
    # just under k layers' bytes closes it after exactly k layers.
    return layers_per_bucket * LAYER_BYTES - 100


def make_case(layers, layers_per_bucket):
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    cap = cap_for(layers_per_bucket)
    # The Reducer keeps the first-bucket limit it was built with (its rebuild at iteration 2 uses it).
    dist._DEFAULT_FIRST_BUCKET_BYTES = cap
    ids = [0] if DEVICE == "cuda" else None
    runs = {"plain": build(layers),
            "ddp": DDP(build(layers), device_ids=ids, bucket_cap_mb=cap / float(1 << 20),
                       gradient_as_bucket_view=False),
            "ddp_view": DDP(build(layers), device_ids=ids, bucket_cap_mb=cap / float(1 << 20),
                            gradient_as_bucket_view=True)}
    return {"layers": layers, "per": layers_per_bucket, "cap": cap, "x": torch.randn(4, 16, device=DEVICE),
            "runs": runs,
            "times": {k: {"forward": [], "backward": []} for k in runs}}


def step(m, x, rec):
    m.zero_grad(set_to_none=False)
    t0 = time.perf_counter()
    out = m(x)
    t1 = time.perf_counter()
    loss = out.sum()
    t2 = time.perf_counter()
    loss.backward()
    t3 = time.perf_counter()
    sync()
    if rec is not None:
        rec["forward"].append(t1 - t0)
        rec["backward"].append(t3 - t2)


def round_robin(cases, reps, warmup, started=None):
    """Every case's runs warmed up, then `reps` rounds over the cases, each case's runs back to
    back (load bursts hit all alike), the reference op once per round (`started` called between
    the two); the reference op's forward and backward samples."""
    for c in cases:
        for _ in range(warmup):
            for m in c["runs"].values():
                step(m, c["x"], None)
    if started is not None:
        started()
    ref_f, ref_b = [], []
    for _ in range(reps):
        for c in cases:
            for k, m in c["runs"].items():
                step(m, c["x"], c["times"][k])
        f, b = reference_chain()
        ref_f.append(f)
        ref_b.append(b)
    return ref_f, ref_b


def paired_over_plain(times, run, phase):
    """Median of the step-by-step differences of `run` over the plain model: the two steps ran back
    to back, so a change of machine load between steps cancels (the machine may be shared)."""
    return statistics.median(a - b for a, b in zip(times[run][phase], times["plain"][phase]))


def case_result(c):
    layers, times, ddp = c["layers"], c["times"], c["runs"]["ddp"]
    buckets = -(-layers // c["per"])
    info = ddp._get_ddp_logging_data() if hasattr(ddp, "_get_ddp_logging_data") else {}
    sizes = info.get("rebuilt_bucket_sizes") or info.get("bucket_sizes")
    if isinstance(sizes, str):
        counted = len([s for s in sizes.split(",") if s.strip()])
        if counted != buckets:
            raise RuntimeError("layers %d, %d per bucket: DDP made %d buckets, expected %d (%s)"
                               % (layers, c["per"], counted, buckets, sizes))
    med = {k: {p: statistics.median(v) for p, v in t.items()} for k, t in times.items()}
    return {"layers": layers, "tensors": 2 * layers, "buckets": buckets, "cap_bytes": c["cap"],
            "ddp_bucket_sizes": sizes, "median_s": med,
            "d_backward_s": paired_over_plain(times, "ddp", "backward"),
            "d_backward_view_s": paired_over_plain(times, "ddp_view", "backward"),
            "d_forward_s": paired_over_plain(times, "ddp", "forward")}


def allreduce_one_rank(reps):
    """dist.all_reduce of 1 KiB on the one-rank group: the collective's own share of a bucket."""
    import torch
    import torch.distributed as dist
    t = torch.ones(256, device=DEVICE)
    for _ in range(5):
        dist.all_reduce(t)
    sync()
    ts = []
    for _ in range(reps):
        a = time.perf_counter()
        dist.all_reduce(t, async_op=True).get_future().wait()
        ts.append(time.perf_counter() - a)
    return statistics.median(ts)


HOOK_BUCKETS = (10, 200)  # --comm-hooks: bucket counts of the 200-layer chain
HOOK_VARIANTS = ("builtin", "completed", "allreduce_hook")


def comm_hooks(reps, warmup):
    """Per-call times of a Python comm hook's pieces on the backward thread (module docstring)."""
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    ids = [0] if DEVICE == "cuda" else None
    now = time.perf_counter
    pg = dist.distributed_c10d._get_default_group()
    on = {"record": False}
    samples = {"call_in_hook": [], "div": []}

    def completed(state, bucket):
        fut = torch.futures.Future()
        fut.set_result(bucket.buffer())
        return fut

    def allreduce_hook(state, bucket):
        # torch/distributed/algorithms/ddp_comm_hooks/default_hooks.py allreduce_hook / _allreduce_fut
        # (1.13 and 2.x), with timestamps; process_group None: the default group.
        tensor = bucket.buffer()
        group_to_use = dist.group.WORLD
        t0 = now()
        tensor.div_(group_to_use.size())
        t1 = now()
        fut = dist.all_reduce(tensor, group=group_to_use, async_op=True).get_future().then(lambda f: f.value()[0])
        t2 = now()
        if on["record"]:
            samples["div"].append(t1 - t0)
            samples["call_in_hook"].append(t2 - t1)
        return fut

    layers = 200
    cases = []
    for nb in HOOK_BUCKETS:
        cap = cap_for(layers // nb)
        dist._DEFAULT_FIRST_BUCKET_BYTES = cap
        runs = {"plain": build(layers)}
        for v in HOOK_VARIANTS:
            d = DDP(build(layers), device_ids=ids, bucket_cap_mb=cap / float(1 << 20),
                    gradient_as_bucket_view=False)
            if v != "builtin":
                d.register_comm_hook(None, completed if v == "completed" else allreduce_hook)
            runs[v] = d
        cases.append({"buckets": nb, "cap": cap, "x": torch.randn(4, 16, device=DEVICE), "runs": runs,
                      "times": {k: {"forward": [], "backward": []} for k in runs}})
    ref_f, ref_b = round_robin(cases, reps, warmup, lambda: on.update(record=True))
    on["record"] = False
    # The pieces one at a time on the main thread with nothing in flight (each call waited on,
    # untimed, before the next): in the hook, gloo's worker runs the previous bucket's callback
    # under the GIL meanwhile, and a call made there waits for it.
    buf = torch.ones(cap_for(layers // HOOK_BUCKETS[0]) // 4, device=DEVICE)
    clean = {"call": [], "cpp_call": [], "then": []}
    for _ in range(10 * reps):
        a = now()
        fut = dist.all_reduce(buf, async_op=True).get_future().then(lambda f: f.value()[0])
        b = now()
        fut.wait()
        c = now()
        f2 = pg.allreduce([buf]).get_future()
        d = now()
        f2.wait()
        done = torch.futures.Future()
        done.set_result(buf)
        e = now()
        done.then(lambda f: f.value())
        g = now()
        clean["call"].append(b - a)
        clean["cpp_call"].append(d - c)
        clean["then"].append(g - e)
    samples.update(clean)
    rows = [dict({"buckets": c["buckets"], "cap_bytes": c["cap"]},
                 **{"d_backward_%s_s" % v: paired_over_plain(c["times"], v, "backward") for v in HOOK_VARIANTS})
            for c in cases]
    n0, n1 = rows[0]["buckets"], rows[-1]["buckets"]
    slopes = {v: (rows[-1]["d_backward_%s_s" % v] - rows[0]["d_backward_%s_s" % v]) / (n1 - n0)
              for v in HOOK_VARIANTS}
    med = {k: statistics.median(v) for k, v in samples.items()}
    ref = reference_record(ref_f, ref_b)
    hook = med["call"] - med["cpp_call"]
    return {"cases": rows, "backward_slope_per_bucket_s": slopes, "per_call_s": med,
            "calls_timed": len(samples["call"]), "python_hook_s": hook, "python_callback_s": med["then"],
            "reference_op": ref,
            "ratio_to_op": {"python_hook_s": hook / ref["backward_s"],
                            "python_callback_s": med["then"] / ref["backward_s"]}}


def buffer_sync(reps):
    """DDP._sync_buffers() over K BatchNorm1d(16) layers (3 buffers each), K interleaved."""
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    ks = (10, 20, 40, 80)
    ddps = {}
    for k in ks:
        torch.manual_seed(0)
        ddps[k] = DDP(torch.nn.Sequential(*[torch.nn.BatchNorm1d(16) for _ in range(k)]).to(DEVICE),
                      device_ids=[0] if DEVICE == "cuda" else None)
    times = {k: [] for k in ks}
    # One K after the other: interleaving the three DDP instances call by call made the smallest
    # one's calls 20x slower here (1.46 ms for K = 10 against 81 us alone; cause not found).
    for k in ks:
        for _ in range(5):
            ddps[k]._sync_buffers()
        for _ in range(reps):
            sync()
            a = time.perf_counter()
            ddps[k]._sync_buffers()
            times[k].append(time.perf_counter() - a)
    t = torch.ones(256, device=DEVICE)
    for _ in range(5):
        dist.broadcast(t, 0)
    bc = []
    for _ in range(reps):
        a = time.perf_counter()
        dist.broadcast(t, 0)
        bc.append(time.perf_counter() - a)
    import numpy as np
    rows = [{"bn_layers": k, "buffers": 3 * k, "median_s": statistics.median(times[k])} for k in ks]
    a = np.array([[1.0, r["buffers"]] for r in rows])
    y = np.array([r["median_s"] for r in rows])
    coef, *_ = np.linalg.lstsq(a, y, rcond=None)
    one = statistics.median(bc)
    return {"cases": rows, "constant_s": float(coef[0]), "per_buffer_s": float(coef[1]),
            "max_abs_residual_s": float(max(abs(y - a @ coef))), "broadcast_one_rank_s": one,
            "buffer_sync_s": float(coef[0]) - 2 * one}


def fit(rows, key):
    import numpy as np
    a = np.array([[1.0, r["tensors"], r["buckets"]] for r in rows])
    y = np.array([r[key] for r in rows])
    coef, *_ = np.linalg.lstsq(a, y, rcond=None)
    resid = y - a @ coef
    return {"constant_s": float(coef[0]), "per_tensor_s": float(coef[1]), "per_bucket_s": float(coef[2]),
            "max_abs_residual_s": float(max(abs(resid)))}


def finish(doc, output, store):
    """Write the JSON to OUTPUT ('-': stdout), remove the rendezvous file and leave."""
    text = json.dumps(doc, indent=1) + "\n"
    if output == "-":
        sys.stdout.write(text)
    else:
        with open(output, "w") as f:
            f.write(text)
    sys.stdout.flush()
    os.unlink(store)
    # ~Reducer -> ~ProcessGroupGloo can hang at interpreter exit (scripts/spawn_guard.py): leave now.
    os._exit(0)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=4)
    ap.add_argument("-o", "--output", default="-")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                    help="cuda: one GPU with NCCL (the host's costs around CUDA tensors)")
    ap.add_argument("--comm-hooks", action="store_true",
                    help="measure only what a Python comm hook adds per bucket (python_hook_s, python_callback_s)")
    ap.add_argument("--buffers-only", action="store_true",
                    help="measure only the buffer broadcast (buffer_sync_s, per_buffer_s)")
    args = ap.parse_args(argv)
    if args.reps < 3 or args.warmup < 3:
        sys.stderr.write("measure_ddp_host.py: --reps and --warmup must be >= 3 (buckets rebuild at step 2)\n")
        return 2
    import torch
    import torch.distributed as dist
    global DEVICE
    DEVICE = args.device
    if DEVICE == "cuda" and not torch.cuda.is_available():
        sys.stderr.write("measure_ddp_host.py: --device cuda: no CUDA device here; expected a machine with one\n")
        return 2
    torch.set_num_threads(1)
    load0 = os.getloadavg()[0]
    store = tempfile.NamedTemporaryFile(prefix="ddp-host-store-", delete=False).name
    dist.init_process_group("nccl" if DEVICE == "cuda" else "gloo", init_method="file://" + store, rank=0,
                            world_size=1)
    if args.comm_hooks:
        t0 = time.time()
        hooks = comm_hooks(args.reps, args.warmup)
        for r in hooks["cases"]:
            sys.stderr.write("  buckets=%d: backward over plain %s\n" % (r["buckets"], ", ".join(
                "%s %.1f us" % (v, 1e6 * r["d_backward_%s_s" % v]) for v in HOOK_VARIANTS)))
        sys.stderr.write("  per call: %s; python_hook_s %.2f us, python_callback_s %.2f us\n" % (", ".join(
            "%s %.2f us" % (k, 1e6 * v) for k, v in hooks["per_call_s"].items()), 1e6 * hooks["python_hook_s"],
            1e6 * hooks["python_callback_s"]))
        finish({"format": "ddpsim-ddp-host/1", "torch_version": torch.__version__, "device": DEVICE,
                "method": "--comm-hooks (module docstring), medians over %d steps" % args.reps,
                "load_average_1m": {"start": load0, "end": os.getloadavg()[0]}, "wall_s": time.time() - t0,
                "comm_hooks": hooks}, args.output, store)
    if args.buffers_only:
        bufs = buffer_sync(10 * args.reps)
        ref = [reference_chain() for _ in range(5)]
        doc = {"format": "ddpsim-ddp-host/1", "torch_version": torch.__version__, "device": DEVICE,
               "load_average_1m": {"start": load0, "end": os.getloadavg()[0]}, "fit_buffer_sync": bufs,
               "buffer_sync_s": bufs["buffer_sync_s"], "per_buffer_s": bufs["per_buffer_s"],
               "reference_op": reference_record([r[0] for r in ref], [r[1] for r in ref])}
        doc["ratio_to_op"] = ratios(doc, doc["reference_op"])
        finish(doc, args.output, store)  # -o is honoured here too (it wrote to stdout before)
    # (layers, layers per bucket): tensors vary at one bucket, buckets vary at 200 layers.
    plan = [(25, 25), (50, 50), (100, 100), (200, 200), (200, 20), (200, 4), (200, 1), (100, 1)]
    t0 = time.time()
    cases = [make_case(layers, per) for layers, per in plan]
    ref_f, ref_b = round_robin(cases, args.reps, args.warmup)
    rows = [case_result(c) for c in cases]
    for r in rows:
        sys.stderr.write("  L=%d buckets=%d: d_bwd %.1f us (view %.1f us), d_fwd %.1f us\n"
                         % (r["layers"], r["buckets"], r["d_backward_s"] * 1e6,
                            r["d_backward_view_s"] * 1e6, r["d_forward_s"] * 1e6))
    bwd, view, fwd = fit(rows, "d_backward_s"), fit(rows, "d_backward_view_s"), fit(rows, "d_forward_s")
    ar1 = allreduce_one_rank(4 * args.reps)
    bufs = buffer_sync(10 * args.reps)
    for _ in range(5):  # the buffer sync ran after the rounds: the reference op after it too
        f, b = reference_chain()
        ref_f.append(f)
        ref_b.append(b)
    doc = {
        "format": "ddpsim-ddp-host/1",
        "torch_version": torch.__version__,
        "device": DEVICE,
        "method": "DDP(gloo, world size 1) vs plain nn.Sequential of nn.Linear(16,16), interleaved, "
                  "medians over %d steps; least squares over tensors and buckets" % args.reps,
        "load_average_1m": {"start": load0, "end": os.getloadavg()[0]},
        "wall_s": time.time() - t0,
        "cases": rows,
        "fit_backward": bwd,
        "fit_backward_view": view,
        "fit_forward": fwd,
        "per_gradient_hook_s": view["per_tensor_s"],
        "per_gradient_copies_s": bwd["per_tensor_s"] - view["per_tensor_s"],
        "per_bucket_s": bwd["per_bucket_s"],
        "allreduce_one_rank_s": ar1,
        "reducer_per_bucket_s": bwd["per_bucket_s"] - ar1,
        "forward_s": fwd["constant_s"],
        "forward_per_tensor_s": fwd["per_tensor_s"],
        "forward_per_bucket_s": fwd["per_bucket_s"],
        "fit_buffer_sync": bufs,
        "buffer_sync_s": bufs["buffer_sync_s"],
        "per_buffer_s": bufs["per_buffer_s"],
        "reference_op": reference_record(ref_f, ref_b),
    }
    doc["ratio_to_op"] = ratios(doc, doc["reference_op"])
    finish(doc, args.output, store)


if __name__ == "__main__":
    sys.exit(main())
