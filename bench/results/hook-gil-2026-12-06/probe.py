#!/usr/bin/python3
"""The probe that became scripts/ddp_cpu_bench.py's calibration.hook_callback_s: 12 blocks of
Conv2d(C, C, 3) + BatchNorm2d + ReLU at world size 1, cap 0.5 MiB, the bench's hook against DDP's
builtin all-reduce, paired backwards alternating which runs first; the median difference over the
hook's bucket count. Run with C = 64 (cap 0.1: 5 buckets) and C = 128 (cap 0.5: 11 buckets)."""
import os, statistics, tempfile, time
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
now = time.perf_counter
torch.set_num_threads(1)
dist.init_process_group("gloo", init_method="file://" + tempfile.mktemp(), rank=0, world_size=1)
C, K, S = 128, 12, 8
def net():
    torch.manual_seed(0)
    layers = []
    for _ in range(K):
        layers += [torch.nn.Conv2d(C, C, 3, padding=1, bias=False), torch.nn.BatchNorm2d(C), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers)
x = torch.randn(8, C, S, S)
st = {"t0": 0.0}
def hook(state, bucket):
    buf = bucket.buffer(); buf.div_(1)
    fut = dist.all_reduce(buf, async_op=True).get_future()
    def done(f):
        st["end"] = now() - st["t0"]; return f.value()[0]
    return fut.then(done)
cnt = [0]
def counting(state, bucket):
    cnt[0] += 1
    return hook(state, bucket)
cap = 0.5
b = DDP(net(), bucket_cap_mb=cap)
h = DDP(net(), bucket_cap_mb=cap); h.register_comm_hook(None, counting)
diffs = []; tb = []; th = []
for r in range(14):
    for name, m in (("b", b), ("h", h)) if r % 2 else (("h", h), ("b", b)):
        loss = m(x).float().mean(); cnt[0] = 0; t = now(); loss.backward(); dt = now() - t
        (th if name == "h" else tb).append(dt)
        if name == "h": nb = cnt[0]
        m.zero_grad()
tb, th = tb[2:], th[2:]
d = statistics.median(a - b_ for a, b_ in zip(th, tb))
print("buckets %d, backward builtin %.2f ms hook %.2f ms, hook-builtin paired median %.3f ms = %.1f us per bucket" % (nb, 1e3*statistics.median(tb), 1e3*statistics.median(th), 1e3*d, 1e6*d/nb))
os._exit(0)
