#!/usr/bin/python3
"""ResNet-18 at world size 1, cap 1 MiB (12 buckets), a Python hook whose then() callback first
sleeps `delay` us (the GIL released) and then holds the GIL for `hold` us (a busy Python loop): the
backward over a plain model's, median of 20 paired rounds. If the backward thread needed the GIL at
random times a hold would cost the same whatever its delay."""
import os, statistics, tempfile, time
import torch, torch.distributed as dist, torchvision
from torch.nn.parallel import DistributedDataParallel as DDP
now = time.perf_counter
torch.set_num_threads(1)
dist.init_process_group("gloo", init_method="file://" + tempfile.mktemp(), rank=0, world_size=1)
x = torch.randn(8, 3, 64, 64)
def mk(delay_us, hold_us):
    def hook(state, bucket):
        def done(f):
            if delay_us: time.sleep(delay_us * 1e-6)
            t = now()
            while now() - t < hold_us * 1e-6: pass
            return f.value()[0]
        return dist.all_reduce(bucket.buffer(), async_op=True).get_future().then(done)
    return hook
def net():
    torch.manual_seed(0); return torchvision.models.resnet18()
runs = {"plain": net()}
for delay in (0, 300, 1000, 3000):
    for hold in (0, 500):
        d = DDP(net(), bucket_cap_mb=1); d.register_comm_hook(None, mk(delay, hold)); runs["d%d-h%d" % (delay, hold)] = d
opts = {k: torch.optim.SGD(m.parameters(), lr=1e-4) for k, m in runs.items()}
bw = {k: [] for k in runs}
for r in range(23):
    for k in runs:
        loss = runs[k](x).float().mean(); t = now(); loss.backward()
        if r >= 3: bw[k].append(now() - t)
        opts[k].step(); opts[k].zero_grad()
for k in runs:
    if k != "plain":
        print("%-10s backward over plain %.2f ms" % (k, 1e3*statistics.median(a - b for a, b in zip(bw[k], bw["plain"]))))
os._exit(0)
