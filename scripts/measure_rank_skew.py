#!/usr/bin/env python3
"""How far apart the ranks of a real DDP step (gloo, CPU) reach each bucket.

Method: `--world-size` processes run torch DDP on a torchvision model, each step after a barrier
(as scripts/ddp_cpu_bench.py times its steps). A comm hook (the allreduce_hook's div_ and
all_reduce) records, on every rank, when DDP handed it each bucket and when the all-reduce's
future completed, on time.perf_counter (CLOCK_MONOTONIC: one clock for every process of the
machine). Per steady step it prints each rank's step start, backward end and step end, and per
bucket each rank's launch and completion, all from the earliest rank's step start (ms); then, per
bucket, the launch skew between the first and last rank and the all-reduce timed from the last
launch. Results: bench/results/other-models-2026-12-02/README.md.

  /usr/bin/python3 scripts/measure_rank_skew.py --spec squeezenet1_1 --cap default
"""
import argparse
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import spawn_guard  # noqa: E402
from ddp_reference_buckets import _free_port  # noqa: E402


def _worker(rank, cfg, outdir):
    import torch
    import torch.distributed as dist
    import torchvision
    from torch.nn.parallel import DistributedDataParallel as DDP

    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(cfg["port"])
    torch.set_num_threads(1)
    torch.manual_seed(0)
    ws = cfg["world_size"]
    dist.init_process_group("gloo", rank=rank, world_size=ws, timeout=spawn_guard.pg_timeout())
    model = getattr(torchvision.models, cfg["spec"])()
    x = torch.randn(*cfg["input"])
    kw = {} if cfg["cap"] == "default" else {"bucket_cap_mb": float(cfg["cap"])}
    ddp = DDP(model, **kw)
    opt = torch.optim.SGD(ddp.parameters(), lr=1e-4, momentum=0.9)
    rec = []

    def hook(_, bucket):
        t = bucket.buffer()
        i = bucket.index()
        launched = time.perf_counter()
        t.div_(ws)
        fut = dist.all_reduce(t, async_op=True).get_future()

        def done(f):
            rec.append((i, launched, time.perf_counter()))
            return f.value()[0]
        return fut.then(done)

    ddp.register_comm_hook(None, hook)
    steps = []
    for _ in range(cfg["warmup"] + cfg["steps"]):
        dist.barrier()
        rec.clear()
        t0 = time.perf_counter()
        loss = ddp(x).mean()
        loss.backward()
        tb = time.perf_counter()
        opt.step()
        opt.zero_grad()
        te = time.perf_counter()
        steps.append({"t0": t0, "tb": tb, "te": te, "buckets": sorted(rec)})
    with open(os.path.join(outdir, "rank%d.json" % rank), "w") as f:
        json.dump(steps[cfg["warmup"]:], f)
    dist.barrier()
    spawn_guard.leave(0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--spec", default="squeezenet1_1", help="torchvision.models name")
    ap.add_argument("--cap", default="default", help="bucket_cap_mb, or default")
    ap.add_argument("--input", default="8x3x64x64", help="input shape per rank")
    ap.add_argument("--world-size", type=int, default=2)
    ap.add_argument("--steps", type=int, default=7)
    ap.add_argument("--warmup", type=int, default=3)
    a = ap.parse_args()
    try:
        shape = [int(v) for v in a.input.split("x")]
    except ValueError:
        ap.error("--input %r: expected sizes joined by x, e.g. 8x3x64x64" % a.input)
    if a.world_size < 2 or a.steps < 1 or a.warmup < 0:
        ap.error("--world-size must be >= 2, --steps >= 1, --warmup >= 0")
    if a.cap != "default":
        try:
            if not float(a.cap) > 0:
                raise ValueError
        except ValueError:
            ap.error("--cap %r: expected a size in MiB > 0, or default" % a.cap)
    import torchvision
    if not callable(getattr(torchvision.models, a.spec, None)):
        ap.error("--spec %r: not a torchvision.models builder (e.g. resnet18, squeezenet1_1)" % a.spec)
    cfg = {"spec": a.spec, "cap": a.cap, "input": shape, "world_size": a.world_size, "steps": a.steps,
           "warmup": a.warmup, "port": _free_port()}
    with tempfile.TemporaryDirectory() as d:
        spawn_guard.spawn(_worker, (cfg, d), a.world_size, timeout_s=600, what="measure_rank_skew")
        ranks = [json.load(open(os.path.join(d, "rank%d.json" % r))) for r in range(a.world_size)]
    ms = lambda v: "%.1f" % (v * 1e3)  # noqa: E731
    for k in range(a.steps):
        t0 = min(r[k]["t0"] for r in ranks)
        print("step %d: " % k + " | ".join("r%d start %s bwd end %s end %s" % (i, ms(r[k]["t0"] - t0),
                                                                            ms(r[k]["tb"] - t0), ms(r[k]["te"] - t0))
                                           for i, r in enumerate(ranks)))
        for j, _ in enumerate(ranks[0][k]["buckets"]):
            launch = [r[k]["buckets"][j][1] - t0 for r in ranks]
            end = [r[k]["buckets"][j][2] - t0 for r in ranks]
            print("  bucket %d: launch %s, done %s; skew %s ms, all-reduce from the last launch %s ms"
                  % (j, "/".join(ms(v) for v in launch), "/".join(ms(v) for v in end),
                     ms(max(launch) - min(launch)), ms(max(end) - max(launch))))


if __name__ == "__main__":
    main()
