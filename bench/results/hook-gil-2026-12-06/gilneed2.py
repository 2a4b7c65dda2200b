#!/usr/bin/python3
"""How often a backward needs the GIL: ResNet-18's backward (plain; DDP builtin, cap 1 MiB; DDP with
a Python all_reduce hook; DDP with a hook returning a completed future) while a Python thread holds
the GIL for 500 us every ~3.5 ms at times unrelated to the backward ('holder') or not ('quiet');
median backward over 12 per mode."""
import statistics, threading, time, tempfile, os
import torch, torchvision, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
now = time.perf_counter
torch.set_num_threads(1)
dist.init_process_group("gloo", init_method="file://" + tempfile.mktemp(), rank=0, world_size=1)
x = torch.randn(8, 3, 64, 64)
def net():
    torch.manual_seed(0); return torchvision.models.resnet18()
def hook(state, bucket):
    return dist.all_reduce(bucket.buffer(), async_op=True).get_future().then(lambda f: f.value()[0])
def noop(state, bucket):
    fut = torch.futures.Future(); fut.set_result(bucket.buffer()); return fut
models = {"plain": net(), "ddp-builtin": DDP(net(), bucket_cap_mb=1)}
m = DDP(net(), bucket_cap_mb=1); m.register_comm_hook(None, hook); models["ddp-hook"] = m
m = DDP(net(), bucket_cap_mb=1); m.register_comm_hook(None, noop); models["ddp-noop"] = m
stop = [False]; active = [False]; holds = [0]
def holder():
    while not stop[0]:
        time.sleep(0.003)
        if active[0]:
            t = now(); holds[0] += 1
            while now() - t < 5e-4: pass
th = threading.Thread(target=holder); th.start()
res = {}
for rnd in range(3):
    for name, m in models.items():
        for mode in ("quiet", "holder"):
            for r in range(5):
                loss = m(x).float().mean(); active[0] = mode == "holder"; holds[0] = 0
                t = now(); loss.backward(); dt = now() - t; active[0] = False
                if r >= 1: res.setdefault((name, mode), []).append((dt, holds[0]))
                m.zero_grad()
stop[0] = True; th.join()
for k, v in res.items():
    print(k, "backward median %.2f ms, holds per backward %.1f" % (1e3*statistics.median(a for a, _ in v), statistics.median(b for _, b in v)))
os._exit(0)
