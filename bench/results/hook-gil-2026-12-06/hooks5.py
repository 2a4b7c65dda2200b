#!/usr/bin/python3
"""ResNet-18 (batch 8x3x64x64) under DDP at world size 1 (gloo, one thread), caps 1 and 25 MiB, with
the builtin path, torch's default_hooks.allreduce_hook, and the same hook without its div_
(`hook_no_div`), a hook returning a completed future without any collective (`hook_noop`), and
one that waits for its all-reduce inside the hook (`hook_sync`: no callback on gloo's worker); each
backward against a plain model's backward stepped just before it, median of the paired differences
over 30 rounds (../comm-hook-host-2026-12-06/hook_in_steps.py with the last two added). Run with
the bench's allocator settings:

    MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=4294967296 MALLOC_TOP_PAD_=268435456 \
        /usr/bin/python3 hooks5.py
"""
import os
import statistics
import tempfile
import time

import torch
import torch.distributed as dist
import torchvision
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel as DDP


def hook_no_div(state, bucket):
    """default_hooks.allreduce_hook without its div_ (one rank: the sum is the gradient)."""
    return dist.all_reduce(bucket.buffer(), async_op=True).get_future().then(lambda f: f.value()[0])


def hook_noop(state, bucket):
    """No collective: a completed future (the hook's Python alone)."""
    fut = torch.futures.Future()
    fut.set_result(bucket.buffer())
    return fut


def hook_sync(state, bucket):
    """The all-reduce waited on inside the hook: no callback on gloo's worker."""
    buf = bucket.buffer()
    dist.all_reduce(buf)
    fut = torch.futures.Future()
    fut.set_result(buf)
    return fut


def resnet18():
    torch.manual_seed(0)
    return torchvision.models.resnet18()


def main():
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="file://" + tempfile.mktemp(), rank=0, world_size=1)
    now = time.perf_counter
    x = torch.randn(8, 3, 64, 64)
    runs = {"plain": resnet18()}
    for cap in (1, 25):
        for name, hook in (("builtin", None), ("allreduce_hook", default_hooks.allreduce_hook),
                           ("hook_no_div", hook_no_div), ("hook_noop", hook_noop), ("hook_sync", hook_sync)):
            d = DDP(resnet18(), bucket_cap_mb=cap)
            if hook:
                d.register_comm_hook(None, hook)
            runs["%s-%d" % (name, cap)] = d
    opts = {k: torch.optim.SGD(m.parameters(), lr=1e-4, momentum=0.9) for k, m in runs.items()}
    backward = {k: [] for k in runs}

    def step(k, record):
        loss = runs[k](x).float().mean()
        t = now()
        loss.backward()
        if record:
            backward[k].append(now() - t)
        opts[k].step()
        opts[k].zero_grad()

    for r in range(33):   # 3 warm-up rounds, then 30 timed, the plain model first in each
        for k in runs:
            step(k, r >= 3)
    plain = backward["plain"]
    for name in ("builtin", "allreduce_hook", "hook_no_div", "hook_noop", "hook_sync"):
        d = {cap: statistics.median(a - b for a, b in zip(backward["%s-%d" % (name, cap)], plain)) for cap in (1, 25)}
        print("%-15s backward over plain: 1 MiB %.2f ms, 25 MiB %.2f ms, difference %.2f ms"
              % (name, 1e3 * d[1], 1e3 * d[25], 1e3 * (d[1] - d[25])))
    os._exit(0)   # ~ProcessGroupGloo can hang at interpreter exit


if __name__ == "__main__":
    main()
