#!/usr/bin/python3
"""What `dist.all_reduce(t, async_op=True)` costs the calling thread after it computed for a while.

    /usr/bin/python3 wake_after_compute.py [--ranks 1|2]

Per gap G (0, 0.1, 0.3, 1, 3, 10 ms at one rank; 0, 0.3, 2, 10 ms at two): 60 times, after a
barrier (two ranks) G ms of 256x256 matmuls on the rank's one thread, then the async all-reduce of
1 KiB timed alone (`call`) and its wait timed apart (`wait`); medians and the 10th / 90th
percentiles of the calls. gloo's worker thread sleeps while the rank computes; the call hands it
the collective and wakes it. Two ranks run as two processes on 127.0.0.1 (each with a deadline).
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time


def worker(rank, ranks, port, store):
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    if ranks == 1:
        dist.init_process_group("gloo", init_method="file://" + store, rank=0, world_size=1)
    else:
        os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
        dist.init_process_group("gloo", rank=rank, world_size=ranks)
    now = time.perf_counter
    t = torch.ones(256)
    a = torch.randn(256, 256)
    for _ in range(20):
        dist.all_reduce(t)
    gaps = (0, 0.1, 0.3, 1, 3, 10) if ranks == 1 else (0, 0.3, 2, 10)
    for gap in gaps:
        calls, waits = [], []
        for _ in range(60):
            if ranks > 1:
                dist.barrier()
            end = now() + gap / 1e3
            while now() < end:
                torch.mm(a, a)
            s = now()
            w = dist.all_reduce(t, async_op=True)
            c = now()
            w.wait()
            waits.append(now() - c)
            calls.append(c - s)
        if rank == 0:
            q = sorted(calls)
            print("%d rank(s), %5.1f ms of compute before: call %6.1f us (p10 %.1f, p90 %.1f), then wait %6.1f us"
                  % (ranks, gap, 1e6 * statistics.median(calls), 1e6 * q[6], 1e6 * q[54],
                     1e6 * statistics.median(waits)), flush=True)
    os._exit(0)   # ~ProcessGroupGloo can hang at interpreter exit


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ranks", type=int, choices=(1, 2), default=1)
    ap.add_argument("--rank", type=int, default=-1, help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, default=29533, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.rank >= 0 or args.ranks == 1:
        worker(max(args.rank, 0), args.ranks, args.port, tempfile.mktemp(prefix="wake-store-"))
    procs = [subprocess.Popen([sys.executable, __file__, "--ranks", "2", "--rank", str(r), "--port", str(args.port)],
                              stdout=None if r == 0 else subprocess.DEVNULL) for r in range(2)]
    code = 0
    for p in procs:
        try:
            code |= p.wait(timeout=300)
        except subprocess.TimeoutExpired:
            p.kill()
            code = 1
    return code


if __name__ == "__main__":
    sys.exit(main())
