#!/usr/bin/env python3
"""How a gloo all-reduce and a compute loop slow each other on this machine's cores.

What `ddpsim validate` prices for a CPU run as a fixed share (sim/validate/bench_results.cpp:
threads / cores, 2 for two ranks of one compute thread each on 2 cores, for both the compute beside
a collective and the collective beside compute), measured directly. Method: two ranks (gloo over
127.0.0.1, one torch thread each) run, per size, after a barrier each:
  - `alone`: a blocking all_reduce, nothing else running;
  - `beside`: an async all_reduce, the main thread running compute chunks (a conv2d forward and
    backward of --chunk NxCxHxW with a CxCx3x3 kernel) until the work's future callback has
    stamped its end (time.perf_counter: one monotonic clock for both processes).
A call's time is from the call to the callback (as scripts/ddp_cpu_bench.py times a bucket's
all-reduce in a step). The compute slowdown of a call is its window divided by the chunks that
finished inside it times the median chunk alone (timed first, both ranks computing, no
communication). Per size it prints the trimmed means (without the fastest and slowest 10 %) of
both ranks' calls, their ratio, and the median compute slowdown, then the least-squares line
beside = a x alone + b over the sizes.

Results: bench/results/README.md ("Contention measured directly", 2026-12-04).

  /usr/bin/python3 scripts/measure_cpu_contention.py --reps 30 [--json out.json]
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import spawn_guard  # noqa: E402
from ddp_reference_buckets import _free_port  # noqa: E402


def trimmed_mean(xs):
    """Mean without the fastest and slowest 10 % (as scripts/ddp_cpu_bench.py's sweep rows)."""
    xs = sorted(xs)
    k = len(xs) // 10
    xs = xs[k:len(xs) - k]
    return sum(xs) / len(xs)


def _worker(rank, cfg, outdir):
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F

    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(cfg["port"])
    torch.set_num_threads(1)
    torch.manual_seed(rank)
    dist.init_process_group("gloo", rank=rank, world_size=2, timeout=spawn_guard.pg_timeout())
    n, c, h, w = cfg["chunk"]
    x = torch.randn(n, c, h, w, requires_grad=True)
    k = torch.randn(c, c, 3, 3, requires_grad=True)

    def chunk():
        F.conv2d(x, k, padding=1).sum().backward()

    for _ in range(10):
        chunk()
    res = {"chunk_alone_s": [], "sizes": []}
    dist.barrier()
    for _ in range(cfg["chunks_alone"]):
        t = time.perf_counter()
        chunk()
        res["chunk_alone_s"].append(time.perf_counter() - t)
    for size in cfg["sizes"]:
        buf = torch.randn(size // 4)
        dist.all_reduce(buf)  # untimed: connections and buffers warm
        alone, beside, chunks_in = [], [], []
        for _ in range(cfg["reps"]):
            dist.barrier()
            t = time.perf_counter()
            dist.all_reduce(buf)
            alone.append(time.perf_counter() - t)
        for _ in range(cfg["reps"]):
            stamp = {}

            def done(fut, stamp=stamp):
                stamp["end"] = time.perf_counter()
                return None

            dist.barrier()
            t0 = time.perf_counter()
            fut = dist.all_reduce(buf, async_op=True).get_future()
            fut.then(done)
            ends = []
            while "end" not in stamp:
                chunk()
                ends.append(time.perf_counter())
            fut.wait()
            beside.append(stamp["end"] - t0)
            chunks_in.append(sum(1 for e in ends if e <= stamp["end"]))
        res["sizes"].append({"size_bytes": size, "alone_s": alone, "beside_s": beside, "chunks_inside": chunks_in})
    with open(os.path.join(outdir, "rank%d.json" % rank), "w") as f:
        json.dump(res, f)
    dist.barrier()
    spawn_guard.leave(0)


def summarize(ranks):
    """Both ranks' samples -> per size {size_bytes, alone_s, beside_s, ratio, compute_slowdown} and
    the line beside = a x alone + b (least squares over the sizes)."""
    chunk = statistics.median(ranks[0]["chunk_alone_s"] + ranks[1]["chunk_alone_s"])
    rows = []
    for i, s in enumerate(ranks[0]["sizes"]):
        both = [r["sizes"][i] for r in ranks]
        alone = trimmed_mean(both[0]["alone_s"] + both[1]["alone_s"])
        beside = trimmed_mean(both[0]["beside_s"] + both[1]["beside_s"])
        slow = [w / (n * chunk) for b in both for w, n in zip(b["beside_s"], b["chunks_inside"]) if n > 0]
        rows.append({"size_bytes": s["size_bytes"], "alone_s": alone, "beside_s": beside, "ratio": beside / alone,
                     "compute_slowdown": statistics.median(slow) if slow else None})
    xs = [r["alone_s"] for r in rows]
    ys = [r["beside_s"] for r in rows]
    mx, my = statistics.mean(xs), statistics.mean(ys)
    sxx = sum((v - mx) ** 2 for v in xs)
    a = sum((u - mx) * (v - my) for u, v in zip(xs, ys)) / sxx if sxx > 0 else None
    b = my - a * mx if a is not None else None
    return {"chunk_alone_s": chunk, "rows": rows, "line": {"a": a, "b_s": b}}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="256K,1M,4M,16M", help="all-reduce sizes (K, M: KiB, MiB)")
    ap.add_argument("--reps", type=int, default=30, help="timed calls per size, each way, per rank")
    ap.add_argument("--chunk", default="1x32x8x8", help="compute chunk input NxCxHxW (default ~0.6 ms here)")
    ap.add_argument("--chunks-alone", type=int, default=200)
    ap.add_argument("--json", default=None, help="also write the summary and samples here")
    a = ap.parse_args()
    try:
        sizes = [int(float(v[:-1]) * {"K": 1 << 10, "M": 1 << 20}[v[-1].upper()]) if v[-1].upper() in "KM"
                 else int(v) for v in a.sizes.split(",")]
        if any(s < 4 for s in sizes):
            raise ValueError
    except (ValueError, KeyError, IndexError):
        ap.error("--sizes %r: expected sizes >= 4 bytes joined by commas, e.g. 256K,1M,4M" % a.sizes)
    try:
        chunk = [int(v) for v in a.chunk.split("x")]
        if len(chunk) != 4 or min(chunk) < 1:
            raise ValueError
    except ValueError:
        ap.error("--chunk %r: expected four sizes >= 1 joined by x, e.g. 1x32x8x8" % a.chunk)
    if a.reps < 3 or a.chunks_alone < 3:
        ap.error("--reps and --chunks-alone must be >= 3")
    cfg = {"sizes": sizes, "reps": a.reps, "chunk": chunk, "chunks_alone": a.chunks_alone, "port": _free_port()}
    with tempfile.TemporaryDirectory() as d:
        spawn_guard.spawn(_worker, (cfg, d), 2, timeout_s=600, what="measure_cpu_contention")
        ranks = [json.load(open(os.path.join(d, "rank%d.json" % r))) for r in range(2)]
    s = summarize(ranks)
    print("compute chunk alone: %.3f ms (median, both ranks computing)" % (s["chunk_alone_s"] * 1e3))
    for r in s["rows"]:
        cs = r["compute_slowdown"]
        print("%9d B: all-reduce alone %.3f ms, beside compute %.3f ms (x%.2f); compute beside it x%s"
              % (r["size_bytes"], r["alone_s"] * 1e3, r["beside_s"] * 1e3, r["ratio"],
                 "%.2f" % cs if cs is not None else " n/a (no chunk ended inside)"))
    if s["line"]["a"] is not None:
        print("beside = %.2f x alone + %.3f ms (least squares over the sizes)" % (s["line"]["a"], s["line"]["b_s"] * 1e3))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"config": {k: v for k, v in cfg.items() if k != "port"}, "summary": s, "ranks": ranks}, f)


if __name__ == "__main__":
    main()
