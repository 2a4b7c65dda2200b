#!/usr/bin/python3
"""Does an optimizer step run slower when every rank runs it at the same moment?

Why: `ddpsim validate` takes a CPU run's optimizer.step() + zero_grad() from its compute-only steps
(scripts/ddp_cpu_bench.py, `compute_only_optimizer_s`), but in a communicating step the last
all-reduce ends on every rank together, so their optimizers start together and share one memory
system, while after a compute-only step the ranks have drifted apart. Method: two ranks (gloo over
127.0.0.1, one torch thread each) train --spec in DDP (SGD, lr 1e-4, momentum 0.9, zero_grad with
set_to_none=False, torch 1.13's default, as ddp_cpu_bench.py), with a comm hook that either
all-reduces the bucket (`comm`) or returns it in a completed future (`noop`: nothing crosses
processes). Each round, after a barrier each, five steps, and the optimizer.step() + zero_grad()
after each backward is timed (time.perf_counter):
  - `noop_free`, `comm_free`: right after the backward;
  - `noop_aligned`, `comm_aligned`: after a barrier that lines the ranks up first;
  - `alone`: rank 0 only, after a barrier, while rank 1 waits in the next barrier.
Per way it prints the median over both ranks' samples (rank 0's for `alone`) and each way's ratio to
`noop_free`. Results: bench/results/README.md ("The optimizer after a communicating step").

  /usr/bin/python3 scripts/measure_optimizer_alignment.py --spec torchvision.models:convnext_tiny \
      --input 8x3x32x32 --reps 30 [--json out.json]
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_model as em  # noqa: E402
import spawn_guard  # noqa: E402
from ddp_reference_buckets import _free_port  # noqa: E402

WAYS = ("noop_free", "comm_free", "noop_aligned", "comm_aligned", "alone")


def _worker(rank, cfg, outdir):
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(cfg["port"])
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=2, timeout=spawn_guard.pg_timeout())
    model = em.load_model(cfg["spec"], None, seed=0)
    x = em.make_input(model, cfg["shape"], "float32", seed=0)
    ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=1e-4, momentum=0.9)
    mode = {"comm": True}

    def hook(_, bucket):
        buf = bucket.buffer()
        buf.div_(2)
        if not mode["comm"]:
            fut = torch.futures.Future()
            fut.set_result(buf)
            return fut
        return dist.all_reduce(buf, async_op=True).get_future().then(lambda f: f.value()[0])

    ddp.register_comm_hook(None, hook)

    def step(comm, aligned, alone=False):
        mode["comm"] = comm
        dist.barrier()
        em.output_loss(ddp(x)).backward()
        if aligned:
            dist.barrier()
        if alone and rank == 1:
            dist.barrier()  # rank 0 runs its optimizer meanwhile
            opt.zero_grad(set_to_none=False)
            return None
        t = time.perf_counter()
        opt.step()
        opt.zero_grad(set_to_none=False)
        d = time.perf_counter() - t
        if alone:
            dist.barrier()
        return d

    for _ in range(cfg["warmup"]):
        step(True, False)
        step(False, False)
    res = {w: [] for w in WAYS}
    for _ in range(cfg["reps"]):  # every way once per round: a change of machine load hits all alike
        res["noop_free"].append(step(False, False))
        res["comm_free"].append(step(True, False))
        res["noop_aligned"].append(step(False, True))
        res["comm_aligned"].append(step(True, True))
        a = step(False, True, alone=True)
        if a is not None:
            res["alone"].append(a)
    with open(os.path.join(outdir, "rank%d.json" % rank), "w") as f:
        json.dump(res, f)
    dist.barrier()
    spawn_guard.leave(0)


def summarize(ranks):
    """Both ranks' samples -> per way {median_s, n, ratio} (ratio to noop_free's median); `alone`
    has rank 0's samples only (rank 1 waits)."""
    out = {}
    for w in WAYS:
        xs = ranks[0][w] + (ranks[1][w] if w != "alone" else [])
        out[w] = {"median_s": statistics.median(xs), "n": len(xs)}
    base = out["noop_free"]["median_s"]
    for w in WAYS:
        out[w]["ratio"] = out[w]["median_s"] / base
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--spec", default="torchvision.models:convnext_tiny", help="module.path:callable")
    ap.add_argument("--input", default="8x3x32x32", help="per-rank input shape, first dim = batch")
    ap.add_argument("--reps", type=int, default=30, help="rounds; each way once per round")
    ap.add_argument("--warmup", type=int, default=2, help="untimed rounds of a comm and a noop step (>= 1)")
    ap.add_argument("--json", default=None, help="also write the summary and samples here")
    a = ap.parse_args()
    try:
        shape = em.parse_shape(a.input)
    except Exception:
        ap.error("--input %r: expected sizes >= 1 joined by x, e.g. 8x3x32x32" % a.input)
    if a.reps < 3:
        ap.error("--reps must be >= 3")
    if a.warmup < 1:
        ap.error("--warmup must be >= 1 (DDP rebuilds its buckets after the first step)")
    try:
        em.load_model(a.spec, None, seed=0, meta=True)
    except Exception as e:
        ap.error("--spec %r: %s" % (a.spec, str(e).strip()[-300:]))
    cfg = {"spec": a.spec, "shape": shape, "reps": a.reps, "warmup": a.warmup, "port": _free_port()}
    with tempfile.TemporaryDirectory() as d:
        spawn_guard.spawn(_worker, (cfg, d), 2, timeout_s=1800, what="measure_optimizer_alignment")
        ranks = [json.load(open(os.path.join(d, "rank%d.json" % r))) for r in range(2)]
    s = summarize(ranks)
    for w in WAYS:
        print("%-13s optimizer.step() + zero_grad() median %.3f ms (n=%d), x%.3f of noop_free"
              % (w, s[w]["median_s"] * 1e3, s[w]["n"], s[w]["ratio"]))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"config": {k: v for k, v in cfg.items() if k != "port"}, "summary": s, "ranks": ranks}, f)


if __name__ == "__main__":
    main()
