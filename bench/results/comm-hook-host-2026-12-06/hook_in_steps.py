#!/usr/bin/python3
"""ResNet-18 (batch 8x3x64x64) under DDP at world size 1 (gloo, one thread), caps 1 and 25 MiB, with
the builtin path, torch's default_hooks.allreduce_hook, and the same hook without its div_
(`hook_no_div`); each backward against a plain model's backward stepped just before it, median of
the paired differences over 30 rounds. Run with the bench's allocator settings:

    MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=4294967296 MALLOC_TOP_PAD_=268435456 \
        /usr/bin/python3 hook_in_steps.py
"""
import os, time, tempfile, statistics
import torch, torch.distributed as dist, torchvision
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
torch.set_num_threads(1)
dist.init_process_group("gloo", init_method="file://" + tempfile.mktemp(), rank=0, world_size=1)
now = time.perf_counter
x = torch.randn(8, 3, 64, 64)
def nodiv(state, bucket):
    return dist.all_reduce(bucket.buffer(), async_op=True).get_future().then(lambda f: f.value()[0])
def mk():
    torch.manual_seed(0); return torchvision.models.resnet18()
runs = {"plain": mk()}
for cap in (1, 25):
    for name, h in (("builtin", None), ("allreduce_hook", default_hooks.allreduce_hook), ("hook_no_div", nodiv)):
        d = DDP(mk(), bucket_cap_mb=cap)
        if h: d.register_comm_hook(None, h)
        runs["%s-%d" % (name, cap)] = d
opts = {k: torch.optim.SGD(m.parameters(), lr=1e-4, momentum=0.9) for k, m in runs.items()}
BW = {k: [] for k in runs}
def step(k):
    m, o = runs[k], opts[k]
    l = m(x).float().mean(); t = now(); l.backward(); BW[k].append(now() - t); o.step(); o.zero_grad()
for _ in range(3):
    for k in runs: step(k)
for k in BW: BW[k].clear()
for r in range(30):
    for k in runs: step(k)
p = BW["plain"]
for name in ("builtin", "allreduce_hook", "hook_no_div"):
    d = {cap: statistics.median(a - b for a, b in zip(BW["%s-%d" % (name, cap)], p)) for cap in (1, 25)}
    print("%-15s backward over plain: 1 MiB %.2f ms, 25 MiB %.2f ms, difference %.2f ms" % (name, 1e3 * d[1], 1e3 * d[25], 1e3 * (d[1] - d[25])))
os._exit(0)
