#!/usr/bin/python3
"""CPU end-to-end check for ddpsim: real torch DDP (gloo, CPU) step times -> ddpbench-results/1.

Usage:
  /usr/bin/python3 scripts/ddp_cpu_bench.py --spec torchvision.models:resnet18 [--input 8x3x64x64] \
      [--world-size 2] [--caps default,1,5,25] [--iters 12] [--warmup 2] [--threads 1] -o results.json

Runs `--world-size` processes (torch.multiprocessing spawn, gloo, MASTER_ADDR 127.0.0.1 on a free
port, torch.set_num_threads(--threads) in each; glibc malloc with a fixed mmap threshold and no heap
trimming unless --allocator default: STEADY_MALLOC_ENV) and writes one "ddpbench-results/1" file with
"mode": "step" (bench/README.md, "Results file") that `ddpsim validate` can rebuild and simulate.
In order, inside the rank processes:

1. calibration (every rank at once):
   - all-reduce sweep: dist.all_reduce (sum, float32) of 4 KiB .. --ar-max-bytes (x4) between all
     ranks, each call started after a barrier: two passes over the sizes here and one more after
     each round of timed steps (3.), so the sweep sees the machine as the steps do; per rank the
     mean of the calls without the fastest and slowest 10 % (trimmed_mean); the row's time_s is
     the mean over ranks.  Plus "allreduce_single_rank" rows: the same
     call on a one-rank group (no peer) for 4/16/64 KiB, which identifies the base latency.
   - ring_fit: time = base + 2(N-1)*alpha + 2(N-1)/N * S / B, weighted (relative-error) least
     squares with base, alpha, 1/B >= 0, over both row sets (scripts/ddpsim_profile.ring_fit).
   - copy_bandwidth_Bps (dst.copy_(src), 64 MiB float32: destination bytes per second) and
     op_overhead_s (x.add_(1) on one element), measured on every rank at the same time (as in a
     step, where all ranks compute together), here and again after every round of timed steps
     (3.), like the sweep and the profile's whole passes: the machine's speed moves during a run
     (2026-12-06, AMD EPYC VM: the one figure taken here ranged 9.1-19.6 GB/s over five runs of
     one command, and `ddpsim validate` prices DDP's bucket copies with it); the value reported is
     rank 0's median over all of them, each one listed (copy_bandwidth_samples_Bps,
     op_overhead_samples_s; the first is the one taken here), every rank's median too.
   - allreduce_call_s: what the collective call costs the calling thread when it comes amid
     compute, as a bucket's does in the backward: dist.all_reduce(1 KiB, async_op=True) timed
     alone (its wait untimed), each call after a barrier and 2 ms of matmuls, CALL_REPS of them
     with every copy-rate measurement; rank 0's median (samples listed). The call hands the
     collective to gloo's worker thread, idle meanwhile; on this project's 2-vCPU VM waking it
     costs the caller 2-11x what back-to-back calls, as the sweep's, show. `ddpsim validate`
     charges it per bucket on the backward thread (collective.host_call).
   - hook_callback_s (one rank only; null otherwise): what the steps' comm hook (3.) costs the
     backward per bucket over DDP's builtin all-reduce, on a probe model (HOOK_NOTE): its Python
     call path, and, at world size 1, a wait for the GIL: gloo's worker runs the hook's fut.then
     callback under it right after the call, while the backward's next node frees saved tensors
     that hold Python objects, which needs the GIL (bench/results/hook-gil-2026-12-06). `ddpsim
     validate` charges it per bucket at one rank (collective.host_callback).
2. profile: ddpsim_profile.measure_profile on the unwrapped model (same seed, the rank's own
   input, --threads threads, gradients cleared as in the steps: zero_grad(set_to_none=False)
   unless --zero-grad-set-to-none, so AccumulateGrad adds into existing gradients in both;
   every pass starts after a dist.barrier, like the steps, so the ranks compute in lock step), on every rank at the same time by default (--profile-mode
   concurrent: the memory system is shared exactly as during the DDP steps) or on rank 0 while the
   other ranks wait in a barrier (--profile-mode alone).  Rank 0's profile becomes step.model,
   its layers scaled not to the profile phase's whole passes but to WHOLE_PASSES more un-hooked
   passes of the same model run after every round of timed steps (3.), so that the compute the
   prediction starts from is timed under the steps' machine state (the profile phase's own
   figures stay in step.profile_check, "profile_phase_*").
3. per cap: a fresh model (seed --seed, identical on every rank) in DDP (default bucket_cap_mb,
   or bucket_cap_mb=X), SGD (lr 1e-4, momentum 0.9), loss = sum of the means of the floating
   outputs (as export_model.py), one comm hook registered once.  --schedule interleaved (default)
   builds every cap's DDP model up front and takes the timed steps round robin over the caps, so
   that a change of machine load hits every cap alike; --schedule sequential runs one cap after
   the other and holds one model at a time (less memory).
   - "comm" steps (--warmup, then --iters timed, each right after --lead-in untimed ones: see
     below): the hook timestamps the bucket when DDP hands it
     over (ready_s), divides it by the world size and starts an async dist.all_reduce (start_s);
     a fut.then callback timestamps its completion (end_s).  DDP launches buckets strictly in index
     order, so ready_s is the launch time (a bucket that is complete early but waits for a
     lower-index one shows the later time).
   - "compute-only" steps (1 warm-up, then --iters, interleaved one to one with the timed "comm"
     steps so that both see the same machine load): the same DDP with the hook returning the
     divided bucket in an already-completed future and broadcast_buffers switched off -- nothing
     crosses processes, the Reducer's copies into/out of the buckets remain.  Their
     optimizer.step() + zero_grad() (median: compute_only_optimizer_s) is what `ddpsim validate`
     uses in place of its optimizer estimate; it runs right after the backward (--optimizer-start
     free, the default).  --optimizer-start aligned times it from a dist.barrier() instead, so
     that every rank runs it at once as after a communicating step's last all-reduce (the
     barrier's wait left out of the step): an experiment; measured with
     scripts/measure_optimizer_alignment.py on three models (2026-12-04), lining the ranks up
     changed the optimizer by 0.97-1.03x, so it is not the default (bench/results/README.md).
   - "no-DDP" steps (1 warm-up, then --iters, one after each compute-only step, each right after
     --lead-in untimed ones): the same model
     (seed, input) without DDP; DDP's own cost is step_time_s / no_ddp_step_time_s - 1 at world
     size 1 (`ddpsim validate` compares it with the prediction's ddp_overhead_s); its parts
     (no_ddp_forward_s, no_ddp_backward_end_s, no_ddp_optimizer_s: medians) tell the profile's
     whole passes from the same passes inside a training loop.
   The hook (div_ by the world size, all_reduce, then()) is torch's default_hooks.allreduce_hook
   plus timestamps: config.comm_hook "allreduce_hook", which `ddpsim validate` simulates.
   --gradient-as-bucket-view builds the DDP models with gradient_as_bucket_view=True.
   Every step starts after a dist.barrier(); times are relative to the step start (after the
   barrier), rank 0's wall clock; step = forward + loss + backward (which waits for every bucket's
   all-reduce) + optimizer.step() + optimizer.zero_grad() (set_to_none=False, torch 1.13's
   default, unless --zero-grad-set-to-none).

--lead-in N (default 1): each timed comm step and each timed no-DDP step follows N untimed steps
of the same model and kind, as every step of a training loop follows one of its own model (the
compute-only step follows the comm steps of its own DDP model already). Without it (0, the order
of the files before 6 Dec 2026) a round's comm step is the first step of its model after the
other caps' and the plain models' steps: on the AMD EPYC VM (2026-12-06, seven runs,
bench/results/lead-in-2026-12-06) that step ran a median 4.9 ms slower than the timed comm step
right after it (186 pairs, 62 % slower; per case the medians 2.6 % apart, -18 .. +22 %), a cost
no training step pays; the profile phase's passes and the compute-only steps were timed after
steps of their own model. The profile's whole passes between the rounds (2. and 3.) take the
same N untimed passes first: they come right after the sweep's all-reduces, and in the files
made before (bench/results, 96 distinct files of 2-6 Dec 2026, Intel and AMD, 657 pairs) the
first of a round's two passes ran a median 2.1 % (forward) and 1.1 % (backward) slower than the
second, slower in 70 % and 64 % of the pairs. The first untimed pass of each round is kept
(profile_check lead_in_forward_whole_iters_s, lead_in_backward_whole_iters_s).

--iters N (default 12; 6 before 6 Dec 2026): timed steps per cap, one per round. `ddpsim validate`
compares its prediction with the median of a case's timed steps, and N steps pin that median to
an order-statistic interval (docs/commands.md, validate): 6 steps only to [min, max] (96.9 %),
12 to [3rd, 10th] (96.1 %). On the seven commands run with --iters 18 (bench/results/iters18-
2026-12-03, Intel, 27 cases; their first 6 and first 12 steps) that interval spans a median 7.9 %
of the median at 6 steps, 4.8 % at 12 and 4.0 % at 18: with 6 the measured median itself was
known only to within more than the 3 % the CPU checks aim at. The timed part takes twice as long.

torch 1.13 bucket rule: iteration 1 uses one bucket per dtype (no find_unused_parameters), the
buckets are rebuilt at iteration 2 in gradient-ready order with limits [1 MiB, cap] for the
default and explicit caps alike (dist._DEFAULT_FIRST_BUCKET_BYTES); --warmup >= 1 is therefore
required so that every timed step uses the rebuilt buckets.

Progress: rank 0 prints a line after the warm-up (how many rounds, or caps with --schedule
sequential, are left and about how long they take, from the warm-up's steps) and after each round
(`ddp_cpu_bench: round 3/12 done (40.0 s each); about 6 min left`) and writes the estimate to the
run's folder; the spawn's deadline (scripts/spawn_guard.py, DDPSIM_SPAWN_TIMEOUT_S, 900 s) moves to
twice the work left plus 300 s from each report, so a slow model runs to its end while a run that
stops reporting is still ended.

Exit status: 0 on success, 2 on any error (bad spec/shape/caps/flags, a failing worker).
"""

import argparse
import datetime
import json
import os
import resource
import shlex
import statistics
import sys
import tempfile
import time

SCRIPT_DIR = os.path.dirname(os.path.abspath(__file__))
if SCRIPT_DIR not in sys.path:
    sys.path.insert(0, SCRIPT_DIR)
import export_model as em  # noqa: E402
import ddpsim_profile as dp  # noqa: E402
from ddp_reference_buckets import _free_port  # noqa: E402  (one helper for both DDP launchers)
import ddp_bucket_rule as rule  # noqa: E402  (the one Python copy of the first-bucket rule)
import spawn_guard  # noqa: E402

FIRST_BUCKET_BYTES_1_13 = rule.first_bucket_bytes(pytorch_version="1.13")
DEFAULT_CAP_MB = rule.DEFAULT_CAP_MB
BUCKET_RULE_1_13 = ("torch 1.13: iteration 1 = one bucket per dtype; rebuilt at iteration 2 in "
                    "gradient-ready order with limits [1 MiB, bucket_cap_mb] (first bucket 1 MiB for "
                    "the default and explicit caps alike)")
NO_DDP_METHOD = ("the same model (same seed and input) without DDP, same SGD and zero_grad, one step "
                 "after each compute-only step; its median")
OPTIMIZER_START_METHOD = {
    "aligned": ("optimizer.step() + zero_grad() timed from a dist.barrier() after the backward, so "
                "that every rank runs it at once as after a communicating step's last all-reduce; "
                "the barrier's wait is not in the compute-only step time"),
    "free": "optimizer.step() + zero_grad() right after the backward, the ranks as they come",
}
COMM_HOOK = "allreduce_hook"  # what the timestamping hook does: div_ by world size, all_reduce, then()
COMPUTE_ONLY_METHOD = ("same DDP instance, comm hook returns the bucket (divided by world size) in "
                       "a completed future, broadcast_buffers off: no inter-process traffic, the "
                       "Reducer's bucket copies remain")


class BenchError(Exception):
    pass


# --allocator steady: glibc malloc settings for the rank processes (read by glibc when a process
# starts: mallopt(3) "Environment variables"). With glibc's defaults a buffer above the dynamic
# mmap threshold is mmap'ed on allocation and unmapped on free, and the heap's top is trimmed, so
# the activations and gradients of every step fault their pages in again (2026-12-05, AMD EPYC
# VM, ResNet-18 at one rank: 1.75 M minor faults and 13.6 s of system time in a 40 s run, steps
# 289-327 ms; with these settings 0.42 M, 5.0 s and 141-148 ms; bench/results/allocator-2026-12-05). The
# faults' cost belongs to the VM and the allocator, not to DDP, and varies with the allocation
# history, so the steps and the profile would see different amounts of it. A 32 MiB threshold is
# the largest glibc accepts (HEAP_MAX_SIZE / 2 on 64-bit); setting it also fixes it (no dynamic
# adjustment). A variable the caller already set is left as it is.
STEADY_MALLOC_ENV = {"MALLOC_MMAP_THRESHOLD_": "33554432", "MALLOC_TRIM_THRESHOLD_": "4294967296",
                     "MALLOC_TOP_PAD_": "268435456"}


def malloc_env(allocator, environ):
    """The glibc variables to set for the rank processes: {} for 'default'; for 'steady' those of
    STEADY_MALLOC_ENV the environment does not already set."""
    if allocator == "default":
        return {}
    return {k: v for k, v in STEADY_MALLOC_ENV.items() if k not in environ}


def malloc_env_in(environ):
    """The glibc variables of STEADY_MALLOC_ENV that `environ` sets (what a process started with it
    runs under, whichever --allocator)."""
    return {k: environ[k] for k in STEADY_MALLOC_ENV if k in environ}


# Progress of the timed phase: rank 0 writes PROGRESS_FILE in the run's folder after the warm-up and
# after every unit of timed work (a round over the caps, or one cap with --schedule sequential) and
# prints a line; the parent lets the run go on past spawn_guard's deadline while the work said to
# be left fits (spawn_guard.extended_deadline), so a slow model is not killed at 15 minutes.
PROGRESS_FILE = "progress.json"


def remaining_estimate(done, total, unit_s, elapsed_s):
    """Seconds of timed work left: after `done` of `total` units, from their mean (elapsed_s / done);
    before the first, from `unit_s`, an estimate of one unit made from the warm-up steps."""
    if total <= done:
        return 0.0
    per = elapsed_s / done if done > 0 else unit_s
    return per * (total - done)


def report_progress(outdir, done, total, unit, unit_s, elapsed_s, stream=None):
    """Rank 0's report: the file the parent reads and one line for the user."""
    left = remaining_estimate(done, total, unit_s, elapsed_s)
    tmp = os.path.join(outdir, PROGRESS_FILE + ".tmp")
    with open(tmp, "w") as f:
        json.dump({"done": done, "total": total, "unit": unit, "remaining_s": left}, f)
    os.replace(tmp, os.path.join(outdir, PROGRESS_FILE))
    stream = stream or sys.stderr
    about = "%.0f s" % left if left < 120 else "%.0f min" % (left / 60)
    if done == 0:
        stream.write("ddp_cpu_bench: warm-up done; %d %s(s) of timed steps to go, about %s "
                     "(from the warm-up's steps)\n" % (total, unit, about))
    else:
        stream.write("ddp_cpu_bench: %s %d/%d done (%.1f s each); about %s left\n"
                     % (unit, done, total, elapsed_s / done, about))
    stream.flush()


def read_progress(outdir):
    """The seconds of work rank 0 last said were left, or None (no report yet, or unreadable)."""
    try:
        with open(os.path.join(outdir, PROGRESS_FILE)) as f:
            return float(json.load(f)["remaining_s"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _median(xs):
    return float(statistics.median(xs)) if xs else None


# The all-reduce sweep: AR_CAL_ROUNDS passes over the sizes in the calibration phase, then one pass
# after every round of timed steps (interleaved schedule) or after every cap (sequential), so the
# sweep sees the machine as the steps do; per size and pass one untimed call, then AR_REPS timed.
AR_CAL_ROUNDS = 2
# The profile's whole passes: WHOLE_PASSES after every round of timed steps (interleaved) or every
# cap (sequential); the per-layer profile is scaled to their medians (ddpsim_profile.rescale_to_whole).
WHOLE_PASSES = 2
WHOLE_NOTE = ("per-layer times scaled to the median of the un-hooked whole passes run between the step "
              "rounds (%d after each round of timed steps; after each cap with --schedule sequential; each "
              "round's after --lead-in untimed ones), not to the profile phase's own" % WHOLE_PASSES)
AR_REPS = 2
# The collective call on the backward thread (calibration.allreduce_call_s): per rates() pass this
# many async all-reduce calls, each after a barrier and CALL_BUSY_S of compute on the rank's thread.
CALL_REPS = 8
CALL_BUSY_S = 0.002
CALL_NOTE = ("dist.all_reduce(1 KiB, async_op=True) between all ranks, the call alone (its wait untimed), "
             "each after a barrier and %.0f ms of 256x256 matmuls on the rank's thread, as a bucket's call "
             "comes amid the backward; %d calls with every copy-rate measurement (allreduce_call_samples_s); "
             "rank 0's median. gloo's worker thread has been idle meanwhile, and the call wakes it "
             "(bench/results/call-after-compute-2026-12-06)" % (CALL_BUSY_S * 1e3, CALL_REPS))
AR_TRIM = 0.1
# The hook's cost at one rank (calibration.hook_callback_s): a probe model of HOOK_BLOCKS
# conv-BN-ReLU blocks, one bucket per conv weight, in DDP with the steps' hook and without one;
# their backwards alternate over HOOK_ROUNDS rounds after HOOK_WARMUP.
HOOK_BLOCKS = 12
HOOK_CHANNELS = 128
HOOK_INPUT = (8, HOOK_CHANNELS, 8, 8)
HOOK_CAP_MB = 0.5
HOOK_WARMUP = 3
HOOK_ROUNDS = 12
HOOK_NOTE = ("per bucket, the backward of a probe model (%d blocks of Conv2d(%d, %d, 3, padding=1, bias=False), "
             "BatchNorm2d, ReLU; input %s; bucket_cap_mb %.1f: one bucket per conv weight after the first) in DDP "
             "with the steps' comm hook less the same model's with DDP's builtin all-reduce, paired, alternating "
             "which runs first, %d rounds after %d (hook_callback_samples_s: per round, the difference over the "
             "hook's bucket count); the median: the hook's Python call path, and the wait for the GIL while "
             "its then() callback runs on gloo's worker (bench/results/hook-gil-2026-12-06). One rank only"
             % (HOOK_BLOCKS, HOOK_CHANNELS, HOOK_CHANNELS, "x".join(map(str, HOOK_INPUT)), HOOK_CAP_MB,
                HOOK_ROUNDS, HOOK_WARMUP))


def trimmed_mean(xs, trim=AR_TRIM):
    """Mean of the samples without the fastest and slowest `trim` fraction (at least one each side
    from 5 samples on).  A step adds several all-reduces, so its expected time takes their means; on
    a 2-vCPU machine gloo's times spread several-fold (scheduling) and a median of a few calls jumps
    between the modes, while the trim keeps a rare preemption from dominating."""
    v = sorted(xs)
    k = max(1 if len(v) >= 5 else 0, int(round(trim * len(v))))
    mid = v[k:len(v) - k] or v
    return float(sum(mid) / len(mid))


def parse_caps(text):
    """'default,1,5,25' -> ['default', 1.0, 5.0, 25.0]."""
    if not isinstance(text, str) or not text.strip():
        raise BenchError("bad --caps %r: expected a comma-separated list such as default,1,5,25" % (text,))
    caps = []
    for part in text.split(","):
        p = part.strip()
        if p.lower() == "default":
            caps.append("default")
            continue
        try:
            v = float(p)
        except ValueError:
            raise BenchError("bad --caps entry %r in %r: use 'default' or a positive number of MiB" % (p, text))
        if not (v > 0) or v != v or v == float("inf"):
            raise BenchError("bad --caps entry %r in %r: bucket_cap_mb must be a positive finite number" % (p, text))
        caps.append(v)
    return caps


def ar_sizes(min_bytes, max_bytes):
    sizes = []
    s = min_bytes
    while s <= max_bytes:
        sizes.append(s)
        s *= 4
    return sizes


def interp_time(rows, size, fit, n):
    """All-reduce time for `size` bytes: log-log interpolation in the measured rows, the ring fit
    outside their range."""
    pts = sorted((r["size_bytes"], r["time_s"]) for r in rows if r["time_s"] > 0)
    if size <= 0:
        return 0.0
    if not pts or size < pts[0][0] or size > pts[-1][0]:
        return dp.ring_predict(fit, size, n)
    import math
    for (s0, t0), (s1, t1) in zip(pts, pts[1:]):
        if s0 <= size <= s1:
            if s1 == s0:
                return t0
            f = (math.log(size) - math.log(s0)) / (math.log(s1) - math.log(s0))
            return math.exp(math.log(t0) + f * (math.log(t1) - math.log(t0)))
    return pts[-1][1]


def timestamp_hook(st, ws, param_index):
    """The steps' comm hook: torch's default_hooks.allreduce_hook (div_ by the world size, an async
    all_reduce, then()) plus timestamps in st["buckets"] relative to st["t0"]; with st["mode"]
    "noop" the divided bucket in an already completed future, nothing communicated."""
    import torch
    import torch.distributed as dist
    now = time.perf_counter

    def hook(state, bucket):
        t_ready = now() - st["t0"]
        buf = bucket.buffer()
        # The parameter list of a bucket is looked up once per bucket plan (a Python loop over its
        # tensors that real DDP does not run every step).
        key = (int(bucket.index()), int(buf.numel()))
        params = st["params"].get(key)
        if params is None:
            params = []
            for p in bucket.parameters():
                i = param_index(p)
                params.append(-1 if i is None else i)
            st["params"][key] = params
        rec = {"index": int(bucket.index()), "bytes": int(buf.numel() * buf.element_size()),
               "num_tensors": len(params), "dtype": em.dtype_str(buf.dtype), "params": params,
               "ready_s": t_ready}
        st["buckets"].append(rec)
        buf.div_(ws)
        if st["mode"] == "noop":
            rec["start_s"] = rec["end_s"] = now() - st["t0"]
            fut = torch.futures.Future()
            fut.set_result(buf)
            return fut
        rec["start_s"] = now() - st["t0"]
        fut = dist.all_reduce(buf, async_op=True).get_future()

        def done(f):
            rec["end_s"] = now() - st["t0"]
            return f.value()[0]
        return fut.then(done)
    return hook


def hook_callback_probe(seed, set_to_none):
    """calibration.hook_callback_s at world size 1 (HOOK_NOTE): per round, the probe model's backward
    with the steps' hook less its backward with DDP's builtin all-reduce, over the hook's bucket
    count.  Returns (samples, buckets)."""
    import torch
    from torch.nn.parallel import DistributedDataParallel as DDP
    now = time.perf_counter

    def blocks():
        torch.manual_seed(seed)
        layers = []
        for _ in range(HOOK_BLOCKS):
            layers += [torch.nn.Conv2d(HOOK_CHANNELS, HOOK_CHANNELS, 3, padding=1, bias=False),
                       torch.nn.BatchNorm2d(HOOK_CHANNELS), torch.nn.ReLU()]
        return torch.nn.Sequential(*layers)

    x = torch.randn(*HOOK_INPUT)
    builtin = DDP(blocks(), bucket_cap_mb=HOOK_CAP_MB)
    hooked = DDP(blocks(), bucket_cap_mb=HOOK_CAP_MB)
    st = {"mode": "comm", "t0": 0.0, "buckets": [], "params": {}}
    hooked.register_comm_hook(None, timestamp_hook(st, 1, em.ddp_param_finder(em.ddp_param_list(hooked.module))))
    samples, buckets = [], 0
    for r in range(HOOK_WARMUP + HOOK_ROUNDS):
        took = {}
        for name, m in (("hooked", hooked), ("builtin", builtin))[::1 if r % 2 == 0 else -1]:
            loss = m(x).float().mean()
            st["buckets"] = []
            st["t0"] = a = now()
            loss.backward()
            took[name] = now() - a
            if name == "hooked":
                buckets = len(st["buckets"])
            m.zero_grad(set_to_none=set_to_none)
            del loss
        if r >= HOOK_WARMUP and buckets:
            samples.append((took["hooked"] - took["builtin"]) / buckets)
    return samples, buckets


# --------------------------------------------------------------------------------------------
# Rank process
# --------------------------------------------------------------------------------------------

def _worker(rank, cfg, outdir):
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.set_num_threads(cfg["threads"])
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(cfg["port"])
    ws = cfg["world_size"]
    dist.init_process_group("gloo", rank=rank, world_size=ws, timeout=spawn_guard.pg_timeout())
    now = time.perf_counter
    res = {"rank": rank}
    # ProcessGroupGloo's worker threads: collectives queued at once run on that many of them
    # (torch/csrc/distributed/c10d/ProcessGroupGloo.cpp, runLoop); ddpsim validate models them.
    pg_options = getattr(dist.distributed_c10d._get_default_group(), "options", None)
    res["gloo_threads"] = getattr(pg_options, "_threads", None)
    try:
        # ---------------- 1. calibration ----------------
        w = torch.ones(1024)
        for _ in range(10):   # the first collectives set up gloo's connections
            dist.all_reduce(w)
        sweep = ar_sizes(cfg["ar_min_bytes"], cfg["ar_max_bytes"])
        sweep_t = {s: torch.ones(max(1, s // 4), dtype=torch.float32) for s in sweep}
        sweep_samples = {s: [] for s in sweep}

        def sweep_round():
            """One pass over the sweep's sizes: per size one untimed call (a warm buffer, as a bucket
            just filled, and as all_reduce_perf's warm-up iterations), then AR_REPS timed calls,
            every call after a barrier."""
            for s in sweep:
                dist.all_reduce(sweep_t[s])
                for _ in range(AR_REPS):
                    dist.barrier()
                    a = now()
                    dist.all_reduce(sweep_t[s])
                    sweep_samples[s].append(now() - a)

        for s in sweep:   # warm-up
            for _ in range(3 if s <= (1 << 20) else 1):
                dist.all_reduce(sweep_t[s])
        for _ in range(AR_CAL_ROUNDS):
            sweep_round()
        singles = [dist.new_group([r]) for r in range(ws)]   # new_group is collective
        mine = singles[rank]
        sr = []
        for size in (4096, 16384, 65536):
            t = torch.ones(size // 4, dtype=torch.float32)
            dist.all_reduce(t, group=mine)
            ts = []
            for _ in range(15):
                a = now()
                dist.all_reduce(t, group=mine)
                ts.append(now() - a)
            sr.append({"size_bytes": size, "time_s": _median(ts)})
        res["allreduce_single_rank"] = sr
        dist.barrier()
        copy_samples, op_samples, call_samples = [], [], []
        call_t = torch.ones(256, dtype=torch.float32)
        busy_a = torch.randn(256, 256)

        def call_after_compute():
            """CALL_REPS async all-reduce calls, each timed alone after a barrier and CALL_BUSY_S of
            compute (CALL_NOTE)."""
            for _ in range(CALL_REPS):
                dist.barrier()
                end = now() + CALL_BUSY_S
                while now() < end:
                    torch.mm(busy_a, busy_a)
                a = now()
                work = dist.all_reduce(call_t, async_op=True)
                call_samples.append(now() - a)
                work.wait()

        def rates():
            """The copy rate, the per-op cost and the collective call, every rank at once (as in a step)."""
            dist.barrier()
            copy_samples.append(dp.measure_copy_bandwidth("cpu"))
            op_samples.append(dp.measure_op_overhead("cpu"))
            call_after_compute()
            dist.barrier()

        rates()
        if ws == 1:
            res["hook_callback_samples_s"], res["hook_callback_buckets"] = hook_callback_probe(
                cfg["seed"], cfg["set_to_none"])

        # ---------------- 2. profile ----------------
        prof_model = prof_x = None
        if cfg["profile_mode"] == "concurrent" or rank == 0:
            model = em.load_model(cfg["spec"], cfg["kwargs"], seed=cfg["seed"])
            x = em.make_input(model, cfg["shape"], cfg["input_dtype"], vocab=cfg["vocab"], seed=cfg["seed"])
            t0 = now()
            prof, check = dp.measure_profile_with_check(
                model, x, cfg["model_json"], "cpu", warmup=cfg["profile_warmup"],
                iters=cfg["profile_iters"], set_to_none=cfg["set_to_none"],
                before_pass=dist.barrier if cfg["profile_mode"] == "concurrent" else None)
            check["wall_s"] = now() - t0
            res["profile_check"] = check
            if rank == 0:
                res["profile"] = prof
            prof_model, prof_x = model, x   # kept for the whole passes between the step rounds
            del model, x
        dist.barrier()
        whole_f, whole_b = [], []
        lead_f, lead_b = [], []

        def whole_passes():
            """WHOLE_PASSES un-hooked passes of the profiled model (as the profile's pass (a)) between
            step rounds: the profile is scaled to these, timed under the steps' machine state.  Like
            the timed steps they follow --lead-in untimed passes of the same model (they come right
            after the sweep's all-reduces); the first of those is kept (lead_f, lead_b)."""
            if cfg["profile_mode"] == "concurrent" or rank == 0:
                before = dist.barrier if cfg["profile_mode"] == "concurrent" else None
                for i in range(cfg["lead_in"]):
                    f_s, b_s = dp.whole_pass(prof_model, prof_x, "cpu", cfg["set_to_none"], before)
                    if i == 0:
                        lead_f.append(f_s)
                        lead_b.append(b_s)
                for _ in range(WHOLE_PASSES):
                    f_s, b_s = dp.whole_pass(prof_model, prof_x, "cpu", cfg["set_to_none"], before)
                    whole_f.append(f_s)
                    whole_b.append(b_s)
            dist.barrier()

        # ---------------- 3. DDP steps per cap ----------------
        def make_case(cap):
            torch.manual_seed(cfg["seed"])
            model = em.load_model(cfg["spec"], cfg["kwargs"], seed=cfg["seed"])
            plist = em.ddp_param_list(model)
            param_index = em.ddp_param_finder(plist)
            skip = [n for n, b in model.named_buffers() if b.dtype == torch.bool]
            if skip:  # gloo cannot broadcast bool buffers
                DDP._set_params_and_buffers_to_ignore_for_model(model, skip)
            kw = {} if cap == "default" else {"bucket_cap_mb": float(cap)}
            ddp = DDP(model, gradient_as_bucket_view=cfg["gradient_as_bucket_view"], **kw)
            opt = torch.optim.SGD(ddp.parameters(), lr=cfg["lr"], momentum=cfg["momentum"])
            x = em.make_input(model, cfg["shape"], cfg["input_dtype"], vocab=cfg["vocab"],
                              seed=cfg["seed"] + rank)
            st = {"mode": "comm", "t0": 0.0, "buckets": [], "params": {}}
            ddp.register_comm_hook(None, timestamp_hook(st, ws, param_index))
            # The same model without DDP (same seed and input): DDP's own cost is the difference.
            plain = em.load_model(cfg["spec"], cfg["kwargs"], seed=cfg["seed"])
            plain_opt = torch.optim.SGD(plain.parameters(), lr=cfg["lr"], momentum=cfg["momentum"])
            return {"cap": cap, "ddp": ddp, "opt": opt, "x": x, "st": st, "comm": [], "noop": [], "comm_lead": [],
                    "plain": plain, "plain_opt": plain_opt, "no_ddp": [],
                    "bucket_bytes_cap": int(ddp.bucket_bytes_cap)}

        def run_plain(case):
            m, opt = case["plain"], case["plain_opt"]
            dist.barrier()
            t0 = now()
            out = m(case["x"])
            t_f = now()
            loss = em.output_loss(out)
            loss.backward()
            t_b = now()
            opt.step()
            opt.zero_grad(set_to_none=cfg["set_to_none"])
            t_e = now()
            del out, loss
            return {"step_time_s": t_e - t0, "forward_s": t_f - t0, "backward_end_s": t_b - t0}

        def run_step(case, mode):
            st, ddp, opt = case["st"], case["ddp"], case["opt"]
            st["mode"] = mode
            ddp.broadcast_buffers = (mode == "comm")
            st["buckets"] = []
            dist.barrier()
            t0 = now()
            st["t0"] = t0
            out = ddp(case["x"])
            t_f = now()
            loss = em.output_loss(out)
            loss.backward()
            t_b = now()
            if mode == "noop" and cfg["optimizer_start"] == "aligned":
                # A communicating step's last all-reduce ends on every rank at once, so their
                # optimizers start together and share the memory system; without communication
                # the ranks drift apart. The barrier lines them up the same way; its wait is
                # left out of the step (OPTIMIZER_START_METHOD).
                dist.barrier()
            t_o = now()
            opt.step()
            opt.zero_grad(set_to_none=cfg["set_to_none"])
            t_e = now()
            del out, loss
            return {"step_time_s": (t_b - t0) + (t_e - t_o), "forward_s": t_f - t0, "backward_end_s": t_b - t0,
                    "optimizer_s": t_e - t_o, "buckets": sorted(st["buckets"], key=lambda b: b["index"])}

        def warm(case):
            for _ in range(cfg["warmup"]):
                run_step(case, "comm")
            run_step(case, "noop")
            run_plain(case)

        def timed(case):   # a comm step, a compute-only step, a no-DDP step: all see the same load
            # As in a training loop: after a step of its own model. The first of them is the first
            # step of this model in the round; its time is kept (lead_in_step_times_s).
            leads = [run_step(case, "comm") for _ in range(cfg["lead_in"])]
            if leads:
                case["comm_lead"].append(leads[0])
            case["comm"].append(run_step(case, "comm"))
            case["noop"].append(run_step(case, "noop"))
            for _ in range(cfg["lead_in"]):
                run_plain(case)
            case["no_ddp"].append(run_plain(case))

        def finish(case):
            out = {k: case[k] for k in ("cap", "comm", "noop", "no_ddp", "bucket_bytes_cap", "comm_lead")}
            for k in ("ddp", "opt", "x", "plain", "plain_opt"):
                del case[k]
            return out

        # Steps a cap runs in its warm-up and in one round of timed steps (run_step and run_plain).
        warm_steps = cfg["warmup"] + 2
        round_steps = 2 * cfg["lead_in"] + 3

        def progress(done, total, unit, unit_s, t_start):
            if rank == 0:
                report_progress(outdir, done, total, unit, unit_s, now() - t_start)

        cases = []
        if cfg["schedule"] == "interleaved":
            live = [make_case(cap) for cap in cfg["caps"]]
            t_warm = now()
            for case in live:
                warm(case)
            step_s = (now() - t_warm) / (warm_steps * len(live))
            t_rounds = now()
            progress(0, cfg["iters"], "round", round_steps * len(live) * step_s, t_rounds)
            for i in range(cfg["iters"]):   # round robin over the caps
                for case in live:
                    timed(case)
                sweep_round()
                whole_passes()
                rates()
                progress(i + 1, cfg["iters"], "round", 0.0, t_rounds)
            cases = [finish(c) for c in live]
        else:
            t_caps = now()
            for k, cap in enumerate(cfg["caps"]):
                case = make_case(cap)
                t_warm = now()
                warm(case)
                if k == 0:
                    step_s = (now() - t_warm) / warm_steps
                    progress(0, len(cfg["caps"]), "cap", (warm_steps + cfg["iters"] * round_steps) * step_s, t_caps)
                for _ in range(cfg["iters"]):
                    timed(case)
                cases.append(finish(case))
                sweep_round()
                whole_passes()
                rates()
                progress(k + 1, len(cfg["caps"]), "cap", 0.0, t_caps)
        res["cases"] = cases
        res["copy_bandwidth_samples_Bps"] = copy_samples
        res["op_overhead_samples_s"] = op_samples
        res["copy_bandwidth_Bps"] = _median(copy_samples)
        res["op_overhead_s"] = _median(op_samples)
        res["allreduce_call_samples_s"] = call_samples
        res["allreduce_call_s"] = _median(call_samples)
        if "profile_check" in res:
            prof, res["profile_check"] = dp.rescale_to_whole(prof, res["profile_check"], whole_f, whole_b,
                                                             WHOLE_NOTE)
            # The untimed pass right before each round's timed ones (--lead-in >= 1): the first pass
            # of the profiled model after the sweep (empty with --lead-in 0).
            res["profile_check"]["lead_in_forward_whole_iters_s"] = list(lead_f)
            res["profile_check"]["lead_in_backward_whole_iters_s"] = list(lead_b)
            if rank == 0:
                res["profile"] = prof
        del prof_model, prof_x
        res["allreduce"] = [{"size_bytes": int(sweep_t[s].numel() * 4), "time_s": trimmed_mean(sweep_samples[s]),
                             "samples_s": sweep_samples[s]} for s in sweep]
        del sweep_t
        dist.barrier()
    finally:
        ru = resource.getrusage(resource.RUSAGE_SELF)   # the rank's whole life, all its threads
        res["rusage"] = {"minor_faults": ru.ru_minflt, "major_faults": ru.ru_majflt,
                         "user_cpu_s": ru.ru_utime, "system_cpu_s": ru.ru_stime,
                         "malloc_env": malloc_env_in(os.environ)}
        with open(os.path.join(outdir, "rank%d.json" % rank), "w") as f:
            json.dump(res, f)
    # The result is on disk: leave without ~Reducer -> ~ProcessGroupGloo (it deadlocked under
    # load; spawn_guard.py). An exception propagates to spawn, which reports it (the spawn's
    # deadline ends a teardown that hangs after one).
    spawn_guard.leave(0)


# --------------------------------------------------------------------------------------------
# Parent: build the results document
# --------------------------------------------------------------------------------------------

def _bucket_medians(steps):
    """Per-bucket medians of ready/start/end over the steps (a median of values that are ordered
    in every step keeps the order).  Uses the steps whose bucket plan equals the first one."""
    ref = [(b["index"], b["bytes"]) for b in steps[0]["buckets"]]
    same = [s for s in steps if [(b["index"], b["bytes"]) for b in s["buckets"]] == ref]
    out = []
    for j, b0 in enumerate(steps[0]["buckets"]):
        row = {k: b0[k] for k in ("index", "bytes", "num_tensors", "dtype", "params")}
        for k in ("ready_s", "start_s", "end_s"):
            vals = [s["buckets"][j][k] for s in same if k in s["buckets"][j]]
            row[k] = _median(vals)
        out.append(row)
    return out, len(same)


def build_document(cfg, ranks, argv, wall_s):
    import torch
    ws = cfg["world_size"]
    r0 = ranks[0]
    ar_rows = []
    for i, row in enumerate(r0["allreduce"]):
        per = [r["allreduce"][i]["time_s"] for r in ranks]
        ar_rows.append({"size_bytes": row["size_bytes"], "time_s": sum(per) / len(per),
                        "rank_time_s": per, "ranks": ws,
                        "rank_samples_s": [r["allreduce"][i]["samples_s"] for r in ranks]})
    sr_rows = []
    for i, row in enumerate(r0["allreduce_single_rank"]):
        per = [r["allreduce_single_rank"][i]["time_s"] for r in ranks]
        sr_rows.append({"size_bytes": row["size_bytes"], "time_s": sum(per) / len(per),
                        "rank_time_s": per, "ranks": 1})
    fit = dp.ring_fit(ar_rows + (sr_rows if ws > 1 else []), world_size=ws)
    if not fit.get("bandwidth_Bps"):
        big = ar_rows[-1]
        fit["bandwidth_Bps"] = (2.0 * (ws - 1) / ws * big["size_bytes"] / big["time_s"]) if ws > 1 else None
        fit["note"] = "slope not positive: bandwidth from the largest row"
    calibration = {
        "copy_bandwidth_Bps": r0["copy_bandwidth_Bps"],
        "copy_bandwidth_samples_Bps": r0["copy_bandwidth_samples_Bps"],
        "op_overhead_samples_s": r0["op_overhead_samples_s"],
        "copy_bandwidth_note": "dst.copy_(src) of 64 MiB float32, destination bytes per second "
                               "(memory traffic is twice that); all ranks measured at once, before the steps and after "
                               "every round of them (copy_bandwidth_samples_Bps, the first before); rank 0's median",
        "rank_copy_bandwidth_Bps": [r["copy_bandwidth_Bps"] for r in ranks],
        "op_overhead_s": r0["op_overhead_s"],
        "op_overhead_note": "x.add_(1) on a 1-element tensor, seconds per call, measured with the copy rate "
                            "(op_overhead_samples_s); rank 0's median",
        "rank_op_overhead_s": [r["op_overhead_s"] for r in ranks],
        "allreduce_call_s": r0["allreduce_call_s"],
        "allreduce_call_samples_s": r0["allreduce_call_samples_s"],
        "allreduce_call_note": CALL_NOTE,
        "rank_allreduce_call_s": [r["allreduce_call_s"] for r in ranks],
        "hook_callback_s": _median(r0.get("hook_callback_samples_s", [])),
        "hook_callback_samples_s": r0.get("hook_callback_samples_s"),
        "hook_callback_buckets": r0.get("hook_callback_buckets"),
        "hook_callback_note": HOOK_NOTE if ws == 1 else "not measured at world size > 1: there the callback "
                                                        "runs when the all-reduce ends (not charged)",
        "allreduce": ar_rows,
        "allreduce_note": ("dist.all_reduce (sum, float32, gloo) between all ranks, each call after a barrier; "
                           "%d passes over the sizes before the steps and one after each round of timed steps, "
                           "per size and pass one untimed call then %d timed (rank_samples_s); per rank the "
                           "mean without the fastest and slowest %d %%; time_s = mean over ranks"
                           % (AR_CAL_ROUNDS, AR_REPS, int(AR_TRIM * 100))),
        "allreduce_single_rank": sr_rows,
        "ring_fit": fit,
        "ring_fit_note": "weighted least squares on relative error over allreduce + "
                         "allreduce_single_rank rows (N=1 rows pin base_latency_s); base, alpha, "
                         "1/B constrained >= 0",
    }
    profile = r0["profile"]
    cases = []
    for ci, cap in enumerate(cfg["caps"]):
        c0 = r0["cases"][ci]
        comm, noop = c0["comm"], c0["noop"]
        step_times = [s["step_time_s"] for s in comm]
        co_times = [s["step_time_s"] for s in noop]
        max_times = [max(r["cases"][ci]["comm"][k]["step_time_s"] for r in ranks)
                     for k in range(len(comm))]
        buckets, n_same = _bucket_medians(comm)
        for b in buckets:
            b["alone_s"] = interp_time(ar_rows, b["bytes"], fit, ws) if ws > 1 else 0.0
        is_default = cap == "default"
        cap_mb = DEFAULT_CAP_MB if is_default else float(cap)
        explicit_mb = None if is_default else cap_mb
        limits = [rule.first_bucket_bytes(explicit_mb, "1.13"), rule.cap_bytes(explicit_mb)]
        for b in buckets:
            b["size_limit"] = limits[0] if b["index"] == 0 else limits[1]
        step = _median(step_times)
        co = _median(co_times)
        no_ddp_steps = c0.get("no_ddp", [])
        no_ddp_times = [s["step_time_s"] for s in no_ddp_steps]
        no_ddp = _median(no_ddp_times)
        comm_alone = sum(b["alone_s"] for b in buckets)
        exposed = step - co
        cases.append({
            "bucket_cap_mb": cap_mb,
            "bucket_cap_is_default": is_default,
            "bucket_rule": BUCKET_RULE_1_13,
            "limits_bytes": limits,
            "step_time_s": step,
            "step_time_max_over_ranks_s": _median(max_times),
            "rank_step_time_s": [_median([s["step_time_s"] for s in r["cases"][ci]["comm"]]) for r in ranks],
            "compute_only_s": co,
            "compute_only_method": COMPUTE_ONLY_METHOD,
            "no_ddp_step_time_s": no_ddp,
            "no_ddp_step_times_s": no_ddp_times,
            "no_ddp_method": NO_DDP_METHOD,
            "comm_alone_s": comm_alone,
            "comm_alone_method": "sum over buckets of the calibration all-reduce time at the bucket's "
                                 "size (log-log interpolation; ring fit outside the measured range)",
            "exposed_comm_s": exposed,
            "overlap_ratio": (1.0 - exposed / comm_alone) if comm_alone > 0 else None,
            "forward_s": _median([s["forward_s"] for s in comm]),
            "backward_end_s": _median([s["backward_end_s"] for s in comm]),
            "compute_only_forward_s": _median([s["forward_s"] for s in noop]),
            "compute_only_backward_end_s": _median([s["backward_end_s"] for s in noop]),
            # optimizer.step() + zero_grad() of the compute-only steps (OPTIMIZER_START_METHOD)
            "compute_only_optimizer_s": _median([s["optimizer_s"] for s in noop]),
            "compute_only_optimizer_times_s": [s["optimizer_s"] for s in noop],
            "compute_only_optimizer_method": OPTIMIZER_START_METHOD[cfg["optimizer_start"]],
            "no_ddp_forward_s": _median([s["forward_s"] for s in no_ddp_steps]),
            "no_ddp_backward_end_s": _median([s["backward_end_s"] for s in no_ddp_steps]),
            "no_ddp_optimizer_s": _median([s["step_time_s"] - s["backward_end_s"] for s in no_ddp_steps]),
            "step_times_s": step_times,
            "compute_only_times_s": co_times,
            # The untimed comm step right before each timed one (--lead-in >= 1), rank 0: the first
            # step of its model in the round (empty with --lead-in 0).
            "lead_in_step_times_s": [s["step_time_s"] for s in c0["comm_lead"]],
            # Every rank's compute-only steps in step order: how much each rank's compute varies
            # on its own (ddpsim validate's rank jitter; DDP's step waits for the slowest rank).
            "rank_compute_only_times_s": [[s["step_time_s"] for s in r["cases"][ci]["noop"]] for r in ranks],
            "num_buckets": len(buckets),
            "bucket_stats_steps": n_same,
            "buckets": buckets,
        })
    config = {
        "command": " ".join(shlex.quote(a) for a in argv),
        "spec": cfg["spec"], "input": "x".join(str(d) for d in cfg["shape"]),
        "input_shape": cfg["shape"], "input_dtype": cfg["input_dtype"], "vocab": cfg["vocab"],
        "kwargs": cfg["kwargs"], "batch_per_rank": cfg["shape"][0],
        "world_size": ws, "caps": cfg["caps"], "iters": cfg["iters"], "warmup": cfg["warmup"],
        "lead_in": cfg["lead_in"],
        "threads": cfg["threads"], "seed": cfg["seed"], "profile_mode": cfg["profile_mode"],
        "schedule": cfg["schedule"], "optimizer_start": cfg["optimizer_start"],
        "profile_iters": cfg["profile_iters"], "profile_warmup": cfg["profile_warmup"],
        "ar_min_bytes": cfg["ar_min_bytes"], "ar_max_bytes": cfg["ar_max_bytes"],
        "output": cfg["output"], "backend": "gloo", "master_addr": "127.0.0.1",
        "optimizer": "sgd", "lr": cfg["lr"], "momentum": cfg["momentum"],
        "zero_grad_set_to_none": cfg["set_to_none"], "loss": "sum of the means of the floating outputs",
        "broadcast_buffers": True, "gradient_as_bucket_view": cfg["gradient_as_bucket_view"],
        "static_graph": False, "comm_hook": COMM_HOOK,
        "find_unused_parameters": False, "dtype": "float32",
        "first_bucket_bytes": FIRST_BUCKET_BYTES_1_13, "default_bucket_cap_mb": DEFAULT_CAP_MB,
        "allocator": cfg.get("allocator", "default"), "malloc_env": cfg.get("malloc_env", {}),
    }
    doc = {
        "format": "ddpbench-results/1",
        "mode": "step",
        "created_utc": datetime.datetime.utcnow().replace(microsecond=0).isoformat() + "Z",
        "generator": "scripts/ddp_cpu_bench.py",
        "hardware": {
            "device": "cpu", "gpu_name": "cpu", "cpu_name": dp.cpu_name(),
            "threads_per_rank": cfg["threads"], "logical_cpus": os.cpu_count(),
            "ngpus": ws, "nnodes": 1, "gpus_per_node": ws, "torch_version": torch.__version__,
            "gloo_threads": r0.get("gloo_threads"),
            "rank_rusage": [r.get("rusage") for r in ranks],
        },
        "config": config,
        "calibration": calibration,
        "step": {
            "model": profile,
            "profile_mode": cfg["profile_mode"],
            "profile_check": r0["profile_check"],
            "rank_profile_check": [r.get("profile_check") for r in ranks],
            "caps": cfg["caps"],
            "cases": cases,
        },
        "wall_time_s": wall_s,
    }
    return doc


def run(args, argv):
    import torch
    t_start = time.time()
    load0 = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    shape = em.parse_shape(args.input)
    kwargs = em.parse_kwargs(args.kwargs)
    caps = parse_caps(args.caps)
    if args.world_size < 1:
        raise BenchError("--world-size must be >= 1")
    if args.iters < 1:
        raise BenchError("--iters must be >= 1")
    if args.warmup < 1:
        raise BenchError("--warmup must be >= 1: torch 1.13 DDP rebuilds its buckets at iteration 2, "
                         "so iteration 1 is never representative")
    if args.threads < 1:
        raise BenchError("--threads must be >= 1")
    if not 0 <= args.lead_in <= 10:
        raise BenchError("--lead-in must be from 0 to 10 (untimed steps before each timed comm and no-DDP step)")
    if args.profile_iters < 1 or args.profile_warmup < 0:
        raise BenchError("--profile-iters must be >= 1 and --profile-warmup >= 0")
    if args.ar_max_bytes < 4096:
        raise BenchError("--ar-max-bytes must be >= 4096")
    rounds = args.iters if args.schedule == "interleaved" else len(caps)
    if rounds < 3:
        # The first round's whole passes ran 1.6-2.1x the others' median in the shipped ResNet-18
        # files (and AlexNet's 1.4-1.6x, bench/results/README.md): with fewer than three rounds they
        # decide the median the profile is scaled to.
        sys.stderr.write("ddp_cpu_bench.py: warning: %d round(s) of whole passes (%s): the profile is scaled "
                         "to their median, and the first round's ran up to 2.1x slow in this repository's "
                         "runs; use 3 or more (--iters 12 is the default)\n"
                         % (rounds, "--iters %d" % args.iters if args.schedule == "interleaved"
                            else "%d cap(s) with --schedule sequential" % len(caps)))
    # export in this process: fails early (status 2) on a bad spec, shape or forward
    torch.set_num_threads(args.threads)
    model_json = em.export(args.spec, shape, args.input_dtype, args.name, kwargs, args.vocab, args.seed)
    vocab = args.vocab
    if vocab is None and args.input_dtype in ("int64", "long"):
        vocab = em.find_vocab(em.load_model(args.spec, kwargs, seed=args.seed))
    cfg = {"spec": args.spec, "shape": shape, "input_dtype": args.input_dtype, "vocab": vocab,
           "kwargs": kwargs, "world_size": args.world_size, "caps": caps, "iters": args.iters,
           "warmup": args.warmup, "lead_in": args.lead_in, "threads": args.threads, "seed": args.seed,
           "profile_mode": args.profile_mode, "profile_iters": args.profile_iters,
           "profile_warmup": args.profile_warmup, "ar_min_bytes": 4096, "schedule": args.schedule,
           "optimizer_start": args.optimizer_start,
           "set_to_none": args.zero_grad_set_to_none,
           "gradient_as_bucket_view": args.gradient_as_bucket_view,
           "ar_max_bytes": args.ar_max_bytes, "lr": 1e-4, "momentum": 0.9,
           "model_json": model_json, "output": args.output, "port": _free_port()}
    # The rank processes inherit the environment at spawn (a new interpreter: glibc reads it then).
    added = malloc_env(args.allocator, os.environ)
    cfg["allocator"] = args.allocator
    cfg["malloc_env"] = malloc_env_in(dict(os.environ, **added))
    outdir = tempfile.mkdtemp(prefix="ddp-cpu-bench-")
    saved = {k: os.environ.get(k) for k in added}
    os.environ.update(added)
    try:
        try:
            spawn_guard.spawn(_worker, (cfg, outdir), args.world_size, what="ddp_cpu_bench",
                              progress=lambda: read_progress(outdir))
        except Exception as e:
            raise BenchError("a DDP rank process failed: %s: %s" % (type(e).__name__, str(e).strip()[-3000:]))
        ranks = []
        for r in range(args.world_size):
            with open(os.path.join(outdir, "rank%d.json" % r)) as f:
                ranks.append(json.load(f))
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        for name in ["rank%d.json" % r for r in range(args.world_size)] + [PROGRESS_FILE, PROGRESS_FILE + ".tmp"]:
            try:
                os.unlink(os.path.join(outdir, name))
            except OSError:
                pass
        try:
            os.rmdir(outdir)
        except OSError:
            pass
    doc = build_document(cfg, ranks, argv, time.time() - t_start)
    doc["wall_time_s"] = time.time() - t_start
    # the machine may be shared: other processes' load inflates and scatters every time here
    doc["hardware"]["load_average_1m"] = {"start": load0,
                                          "end": os.getloadavg()[0] if hasattr(os, "getloadavg") else None}
    return doc


def write_doc(doc, path):
    text = json.dumps(doc, indent=1) + "\n"
    if path == "-":
        sys.stdout.write(text)
        return
    d = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(d):
        os.makedirs(d)
    with open(path, "w") as f:
        f.write(text)


def summary(doc):
    cal = doc["calibration"]
    fit = cal["ring_fit"]
    pc = doc["step"]["profile_check"]
    lines = []
    hw = doc["hardware"]
    lines.append("ddp_cpu_bench: %s, %d rank(s) x %d thread(s) on %s, torch %s, %.0f s"
                 % (doc["config"]["spec"], hw["ngpus"], hw["threads_per_rank"], hw["cpu_name"],
                    hw["torch_version"], doc["wall_time_s"]))
    bw = fit.get("bandwidth_Bps")
    la = hw.get("load_average_1m") or {}
    if la.get("start") is not None:
        lines.append("  load average (1 min) %.2f at start, %.2f at end on %s logical CPUs"
                     % (la["start"], la["end"], hw.get("logical_cpus")))
    ru = [r for r in hw.get("rank_rusage") or [] if r]
    if ru:
        lines.append("  allocator %s; rank processes: %s minor page faults, %s s system CPU"
                     % (doc["config"].get("allocator"), "/".join("%d" % r["minor_faults"] for r in ru),
                        "/".join("%.1f" % r["system_cpu_s"] for r in ru)))
    lines.append("  all-reduce fit: base %.1f us, alpha %.1f us, B %s; copy %.2f GB/s; op %.2f us"
                 % (fit["base_latency_s"] * 1e6, fit["step_latency_s"] * 1e6,
                    ("%.2f GB/s" % (bw / 1e9)) if bw else "n/a", cal["copy_bandwidth_Bps"] / 1e9,
                    cal["op_overhead_s"] * 1e6))
    lines.append("  profile (rank 0): forward %.1f ms (layers sum %.1f), backward %.1f ms (layers sum %.1f)"
                 % (pc["forward_whole_s"] * 1e3, pc["forward_sum_layers_s"] * 1e3,
                    pc["backward_whole_s"] * 1e3, pc["backward_sum_layers_s"] * 1e3))
    lines.append("  cap MiB  buckets   step ms  compute-only ms  exposed ms  comm-alone ms  overlap")
    for c in doc["step"]["cases"]:
        ov = c["overlap_ratio"]
        lines.append("  %-8s %7d %9.1f %16.1f %11.1f %14.1f  %s"
                     % ("default" if c["bucket_cap_is_default"] else "%g" % c["bucket_cap_mb"],
                        c["num_buckets"], c["step_time_s"] * 1e3, c["compute_only_s"] * 1e3,
                        c["exposed_comm_s"] * 1e3, c["comm_alone_s"] * 1e3,
                        ("%.0f%%" % (ov * 100)) if ov is not None else "n/a"))
    return "\n".join(lines) + "\n"


def main(argv=None):
    argv_list = [sys.executable] + list(sys.argv if argv is None else ["scripts/ddp_cpu_bench.py"] + list(argv))
    ap = argparse.ArgumentParser(description="Real torch DDP (gloo, CPU) step benchmark -> ddpbench-results/1.")
    ap.add_argument("--spec", required=True, help="module.path:callable, e.g. torchvision.models:resnet18")
    ap.add_argument("--input", default="8x3x64x64", help="per-rank input shape, first dim = batch (8x3x64x64)")
    ap.add_argument("--input-dtype", default="float32")
    ap.add_argument("--vocab", type=int, default=None)
    ap.add_argument("--kwargs", default=None, help="JSON keyword arguments for the callable")
    ap.add_argument("--name", default=None, help="model name in step.model (default: the callable's name)")
    ap.add_argument("--world-size", type=int, default=2)
    ap.add_argument("--caps", default="default,1,5,25", help="bucket_cap_mb values; 'default' = DDP's default")
    ap.add_argument("--iters", type=int, default=12,
                    help="timed steps per cap (and compute-only and no-DDP steps); default 12 (6 before 6 Dec 2026)")
    ap.add_argument("--warmup", type=int, default=2, help="untimed steps per cap (>= 1)")
    ap.add_argument("--lead-in", type=int, default=1,
                    help="untimed steps of the same model right before each timed comm step and each "
                         "timed no-DDP step (default 1: timed as in a training loop; 0: the order "
                         "before 6 Dec 2026)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads per rank")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--profile-mode", choices=("concurrent", "alone"), default="concurrent",
                    help="profile on every rank at once (default) or on rank 0 alone")
    ap.add_argument("--schedule", choices=("interleaved", "sequential"), default="interleaved",
                    help="interleaved (default): one DDP model per cap alive at once, timed steps "
                         "round-robin over the caps; sequential: one cap after the other (less memory)")
    ap.add_argument("--optimizer-start", choices=("free", "aligned"), default="free",
                    help="compute-only steps: free (default) runs the optimizer right after each "
                         "rank's backward; aligned starts it on every rank at once after a barrier, "
                         "as a communicating step's last all-reduce does (an experiment)")
    ap.add_argument("--zero-grad-set-to-none", action="store_true",
                    help="optimizer.zero_grad(set_to_none=True) in the steps and the profile "
                         "(default: False, torch 1.13's default: gradients are accumulated into)")
    ap.add_argument("--gradient-as-bucket-view", action="store_true",
                    help="DDP(gradient_as_bucket_view=True): gradients are views into the buckets "
                         "(no copy in or out)")
    ap.add_argument("--allocator", choices=("steady", "default"), default="steady",
                    help="steady (default): the rank processes run glibc malloc with a fixed 32 MiB "
                         "mmap threshold and no heap trimming (STEADY_MALLOC_ENV), so that steps do "
                         "not fault their buffers in again; default: glibc's own settings")
    ap.add_argument("--profile-iters", type=int, default=5)
    ap.add_argument("--profile-warmup", type=int, default=2)
    ap.add_argument("--ar-max-bytes", type=int, default=64 << 20,
                    help="largest all-reduce calibration size (64 MiB); sizes 4 KiB x4 up to it")
    ap.add_argument("-o", "--output", required=True, help="results JSON ('-' for stdout)")
    args = ap.parse_args(argv)
    try:
        doc = run(args, argv_list)
    except (BenchError, em.ExportError, dp.ProfileError) as e:
        sys.stderr.write("ddp_cpu_bench.py: error: %s\n" % e)
        return 2
    write_doc(doc, args.output)
    sys.stderr.write(summary(doc))
    if args.output != "-":
        sys.stderr.write("  -> %s\n" % args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
