#!/usr/bin/python3
"""ResNet-18 at world size 1, cap 1 MiB: a Python hook whose then() callback holds the GIL for 0 or
500 us (a busy Python loop) or sleeps 500 us (the GIL released); backward over a plain model's,
median of 25 paired rounds (gildelay.py generalises it)."""
import os, statistics, tempfile, time
import torch, torch.distributed as dist, torchvision
from torch.nn.parallel import DistributedDataParallel as DDP
now = time.perf_counter
torch.set_num_threads(1)
dist.init_process_group("gloo", init_method="file://" + tempfile.mktemp(), rank=0, world_size=1)
x = torch.randn(8, 3, 64, 64)
def mk(hold_us, release):
    def hook(state, bucket):
        buf = bucket.buffer()
        def done(f):
            t = now()
            if release:
                time.sleep(hold_us * 1e-6)   # releases the GIL while it waits
            else:
                while now() - t < hold_us * 1e-6:
                    pass                      # holds the GIL (Python bytecode, switch interval 5 ms)
            return f.value()[0]
        return dist.all_reduce(buf, async_op=True).get_future().then(done)
    return hook
def net():
    torch.manual_seed(0); return torchvision.models.resnet18()
runs = {"plain": net()}
for name, hold, rel in (("hold0", 0, False), ("hold500", 500, False), ("sleep500", 500, True)):
    d = DDP(net(), bucket_cap_mb=1); d.register_comm_hook(None, mk(hold, rel)); runs[name] = d
opts = {k: torch.optim.SGD(m.parameters(), lr=1e-4) for k, m in runs.items()}
bw = {k: [] for k in runs}
for r in range(28):
    for k in runs:
        loss = runs[k](x).float().mean(); t = now(); loss.backward()
        if r >= 3: bw[k].append(now() - t)
        opts[k].step(); opts[k].zero_grad()
for k in runs:
    if k != "plain":
        print("%-9s backward over plain %.2f ms" % (k, 1e3*statistics.median(a - b for a, b in zip(bw[k], bw["plain"]))))
os._exit(0)
