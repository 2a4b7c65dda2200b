#!/usr/bin/python3
"""ResNet-18 (8x3x64x64) under DDP at world size 1 (gloo, one thread), caps 1 and 25 MiB, with three
Python hooks: `async` (all_reduce + then, as the bench), `noop` (a completed future, no collective),
`sync` (the all-reduce waited on inside the hook). Per backward: its time over a plain model's
(paired, median of 30), the time spent inside the hooks (entry to return, on the backward thread),
the tail from the last hook's return to the backward's end, and the lag from a hook's return to its
callback on gloo's worker. Run with the bench's allocator settings (hooks5.py's docstring)."""
import os, statistics, tempfile, time
import torch, torch.distributed as dist, torchvision
from torch.nn.parallel import DistributedDataParallel as DDP
now = time.perf_counter
torch.set_num_threads(1)
dist.init_process_group("gloo", init_method="file://" + tempfile.mktemp(), rank=0, world_size=1)
x = torch.randn(8, 3, 64, 64)
log = []
def mk(kind):
    def hook(state, bucket):
        t_in = now()
        buf = bucket.buffer()
        if kind == "noop":
            fut = torch.futures.Future(); fut.set_result(buf); log.append((t_in, now(), None)); return fut
        if kind == "sync":
            dist.all_reduce(buf); fut = torch.futures.Future(); fut.set_result(buf); log.append((t_in, now(), None)); return fut
        w = dist.all_reduce(buf, async_op=True)
        rec = [t_in, 0.0, None]
        def done(f):
            rec[2] = now(); return f.value()[0]
        r = w.get_future().then(done)
        rec[1] = now(); log.append(rec)
        return r
    return hook
def net():
    torch.manual_seed(0); return torchvision.models.resnet18()
runs = {"plain": net()}
for cap in (1, 25):
    for kind in ("async", "noop", "sync"):
        d = DDP(net(), bucket_cap_mb=cap); d.register_comm_hook(None, mk(kind)); runs["%s-%d" % (kind, cap)] = d
opts = {k: torch.optim.SGD(m.parameters(), lr=1e-4, momentum=0.9) for k, m in runs.items()}
res = {k: [] for k in runs}
for r in range(33):
    for k in runs:
        loss = runs[k](x).float().mean()
        log.clear(); t = now(); loss.backward(); t_end = now()
        if r >= 3:
            hooks = sorted(log, key=lambda e: e[0])
            inhook = sum(e[1] - e[0] for e in hooks)
            tail = t_end - hooks[-1][1] if hooks else 0.0
            donelag = [e[2] - e[1] for e in hooks if e[2]]
            res[k].append((t_end - t, inhook, tail, statistics.median(donelag) if donelag else 0.0))
        opts[k].step(); opts[k].zero_grad()
pl = [v[0] for v in res["plain"]]
for k in runs:
    if k == "plain": continue
    over = statistics.median(a[0] - b for a, b in zip(res[k], pl))
    print("%-9s over plain %.2f ms  in hooks %.3f ms  tail %.3f ms  done lag %.1f us" % (k, 1e3*over,
          1e3*statistics.median(a[1] for a in res[k]), 1e3*statistics.median(a[2] for a in res[k]), 1e6*statistics.median(a[3] for a in res[k])))
os._exit(0)
