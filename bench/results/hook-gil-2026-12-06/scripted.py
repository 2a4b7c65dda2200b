#!/usr/bin/python3
"""ResNet-18 at world size 1, cap 1 MiB, eager and TorchScript (torch.jit.script: the forward's
intermediates never become Python objects): DDP's builtin all-reduce, and a Python hook whose then()
callback holds the GIL 0 or 500 us; backward over the same plain model's, median of 30 paired
rounds. Run with the bench's allocator settings (hooks5.py)."""
import os, statistics, tempfile, time
import torch, torch.distributed as dist, torchvision
from torch.nn.parallel import DistributedDataParallel as DDP
now = time.perf_counter
torch.set_num_threads(1)
dist.init_process_group("gloo", init_method="file://" + tempfile.mktemp(), rank=0, world_size=1)
x = torch.randn(8, 3, 64, 64)
def mk(hold_us):
    def hook(state, bucket):
        def done(f):
            t = now()
            while now() - t < hold_us * 1e-6: pass
            return f.value()[0]
        return dist.all_reduce(bucket.buffer(), async_op=True).get_future().then(done)
    return hook
def net(script):
    torch.manual_seed(0); m = torchvision.models.resnet18()
    return torch.jit.script(m) if script else m
runs = {}
for script in (False, True):
    runs[("plain", script)] = net(script)
    runs[("builtin", script)] = DDP(net(script), bucket_cap_mb=1)
    for hold in (0, 500):
        d = DDP(net(script), bucket_cap_mb=1); d.register_comm_hook(None, mk(hold)); runs[("h%d" % hold, script)] = d
bw = {k: [] for k in runs}
for r in range(33):
    for k, m in runs.items():
        loss = m(x).float().mean(); t = now(); loss.backward()
        if r >= 3: bw[k].append(now() - t)
        m.zero_grad()
for script in (False, True):
    for h in ("builtin", "h0", "h500"):
        print("scripted" if script else "eager   ", h, "backward over plain %.2f ms" % (1e3*statistics.median(a - b for a, b in zip(bw[(h, script)], bw[("plain", script)]))))
os._exit(0)
