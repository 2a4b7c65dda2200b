#!/usr/bin/python3
"""Where the backward thread waits: ResNet-18 at world size 1, cap 1 MiB, a hook whose then()
callback holds the GIL for 2 ms; one backward under torch.autograd.profiler, every event of 1.5 ms
or more (start and duration in us, self time, thread). t1 is the backward thread, t2/t3 gloo's
workers."""
import os, tempfile, time
import torch, torch.distributed as dist, torchvision
from torch.nn.parallel import DistributedDataParallel as DDP
now = time.perf_counter
torch.set_num_threads(1)
dist.init_process_group("gloo", init_method="file://" + tempfile.mktemp(), rank=0, world_size=1)
x = torch.randn(8, 3, 64, 64)
marks = []
def hook(state, bucket):
    def done(f):
        t = now()
        while now() - t < 2e-3: pass   # hold the GIL 2 ms
        return f.value()[0]
    r = dist.all_reduce(bucket.buffer(), async_op=True).get_future().then(done)
    return r
torch.manual_seed(0)
m = DDP(torchvision.models.resnet18(), bucket_cap_mb=1); m.register_comm_hook(None, hook)
for _ in range(3):
    m(x).float().mean().backward(); m.zero_grad()
loss = m(x).float().mean()
with torch.autograd.profiler.profile() as prof:
    loss.backward()
evs = sorted([e for e in prof.function_events if e.thread == prof.function_events[0].thread or True], key=lambda e: e.time_range.start)
# print top-level-ish events with long self time or gaps
prev_end = None
rows = []
for e in evs:
    d = e.time_range.end - e.time_range.start
    if d > 1500 or e.self_cpu_time_total > 1500:
        rows.append((e.time_range.start, d, e.self_cpu_time_total, e.name, e.thread))
for r in rows[:60]: print("%10.0f dur %8.0f self %8.0f %s t%d" % r)
os._exit(0)
