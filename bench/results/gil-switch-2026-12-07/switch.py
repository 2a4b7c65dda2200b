"""Two-rank DDP (gloo, CPU) with a Python comm hook (torch's allreduce_hook + timestamps): how long
each bucket's all-reduce takes from its start to its then() callback inside the backward, with
CPython's GIL switch interval at its default (5 ms) and at 0.5 ms."""
import json, os, sys, time, statistics
import torch, torch.distributed as dist, torch.multiprocessing as mp
import torchvision

def worker(rank, ws, port, model_name, shape, cap, steps, interval, out):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    sys.setswitchinterval(interval)
    dist.init_process_group("gloo", rank=rank, world_size=ws)
    torch.manual_seed(0)
    m = getattr(torchvision.models, model_name)()
    ddp = torch.nn.parallel.DistributedDataParallel(m, bucket_cap_mb=cap)
    recs = []
    t0 = [0.0]
    def hook(state, bucket):
        buf = bucket.buffer()
        r = {"i": bucket.index(), "b": buf.numel() * 4, "start": time.perf_counter() - t0[0]}
        recs.append(r)
        buf.div_(ws)
        fut = dist.all_reduce(buf, async_op=True).get_future()
        def done(f):
            r["end"] = time.perf_counter() - t0[0]
            return f.value()[0]
        return fut.then(done)
    ddp.register_comm_hook(None, hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=1e-4)
    x = torch.randn(*shape)
    res = []
    for s in range(steps + 2):
        recs.clear()
        dist.barrier()
        t0[0] = time.perf_counter()
        loss = ddp(x).sum()
        tb = time.perf_counter() - t0[0]
        loss.backward()
        te = time.perf_counter() - t0[0]
        opt.step(); opt.zero_grad()
        if s >= 2:
            res.append({"step": time.perf_counter() - t0[0], "backward_start": tb, "backward_end": te,
                        "buckets": [dict(r) for r in recs]})
    # alone: each bucket size after a barrier
    alone = {}
    for b in sorted({r["b"] for r in res[0]["buckets"]}):
        t = torch.zeros(b // 4)
        ts = []
        for _ in range(5):
            dist.barrier(); a = time.perf_counter(); dist.all_reduce(t); ts.append(time.perf_counter() - a)
        alone[b] = statistics.median(ts)
    if rank == 0:
        json.dump({"interval": interval, "steps": res, "alone": alone}, open(out, "w"))
    dist.destroy_process_group()

if __name__ == "__main__":
    model, cap, steps = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
    shape = tuple(int(v) for v in sys.argv[4].split("x"))
    for k, interval in enumerate([float(v) for v in sys.argv[5].split(",")]):
        out = f"/tmp/s35/gil/{model}-{cap:g}-{interval:g}.json"
        mp.spawn(worker, args=(2, 29611 + k, model, shape, cap, steps, interval, out), nprocs=2, join=True)
        d = json.load(open(out))
        durs, ends, steps_t = [], [], []
        for st in d["steps"]:
            steps_t.append(st["step"])
            for r in st["buckets"]:
                if r["start"] < st["backward_end"] - 0.001 and "end" in r:
                    durs.append((r["end"] - r["start"]) * 1e3)
        print(f"interval {interval*1e3:.1f} ms: step median {statistics.median(steps_t)*1e3:.1f} ms; "
              f"in-backward all-reduce start->callback median {statistics.median(durs):.2f} ms "
              f"(n={len(durs)}, p25 {sorted(durs)[len(durs)//4]:.2f}, p75 {sorted(durs)[3*len(durs)//4]:.2f}); "
              f"alone {', '.join(f'{b/2**20:.2f}MiB {t*1e3:.2f}' for b, t in sorted((int(k), v) for k, v in d['alone'].items())[:4])} ms", flush=True)
