#!/usr/bin/python3
"""ResNet-18 at world size 1, cap 1 MiB, eager and TorchScript: DDP's builtin all-reduce, a hook
that calls no collective (`noop`: a completed future) and the async all_reduce + then() hook;
backward over the same plain model's and the time spent inside the hooks, medians of 30 rounds.
Per bucket (12): base = noop - its in-hook time; the builtin call = (builtin - base) / 12; the
hook's wait outside the hooks = (hook - base - its in-hook time) / 12."""
import os, statistics, tempfile, time
import torch, torch.distributed as dist, torchvision
from torch.nn.parallel import DistributedDataParallel as DDP
now = time.perf_counter
torch.set_num_threads(1)
dist.init_process_group("gloo", init_method="file://" + tempfile.mktemp(), rank=0, world_size=1)
x = torch.randn(8, 3, 64, 64)
log = []
def hook(state, bucket):
    t_in = now()
    r = dist.all_reduce(bucket.buffer(), async_op=True).get_future().then(lambda f: f.value()[0])
    log.append(now() - t_in)
    return r
def noop(state, bucket):
    t_in = now()
    fut = torch.futures.Future(); fut.set_result(bucket.buffer())
    log.append(now() - t_in)
    return fut
def net(script):
    torch.manual_seed(0); m = torchvision.models.resnet18()
    return torch.jit.script(m) if script else m
runs = {}
for script in (False, True):
    runs[("plain", script)] = net(script)
    runs[("builtin", script)] = DDP(net(script), bucket_cap_mb=1)
    for name, h in (("hook", hook), ("noop", noop)):
        d = DDP(net(script), bucket_cap_mb=1); d.register_comm_hook(None, h); runs[(name, script)] = d
bw = {k: [] for k in runs}; inh = {k: [] for k in runs}
for r in range(33):
    for k, m in runs.items():
        loss = m(x).float().mean(); log.clear(); t = now(); loss.backward()
        if r >= 3: bw[k].append(now() - t); inh[k].append(sum(log))
        m.zero_grad()
for script in (False, True):
    for h in ("builtin", "noop", "hook"):
        k = (h, script)
        print("scripted" if script else "eager   ", "%-7s" % h, "backward over plain %.2f ms, in hooks %.3f ms" % (1e3*statistics.median(a - b for a, b in zip(bw[k], bw[("plain", script)])), 1e3*statistics.median(inh[k])))
os._exit(0)
