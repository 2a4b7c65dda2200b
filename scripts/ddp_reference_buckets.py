#!/usr/bin/python3
"""Ground truth: the gradient buckets real torch DistributedDataParallel uses.

Usage:
  /usr/bin/python3 scripts/ddp_reference_buckets.py torchvision.models:resnet50 \
      [--input 2x3x224x224] [--input-dtype float32|int64] [--kwargs JSON] \
      [--bucket-cap-mb X] [--world-size 2] [--iterations 3] -o out.json

Builds the model exactly as scripts/export_model.py does (same loader, same seed, same
parameter indexing), wraps it in torch.nn.parallel.DistributedDataParallel on CPU with the gloo
backend in --world-size processes, runs --iterations forward/backward passes, and records every
bucket DDP hands to its communication hook: bucket.index(), the flat buffer's bytes and
bucket.parameters() mapped to indices into the exporter's "params" list.

Output (rank 0 writes it):
  {"iteration1":   [{"bytes": N, "param_indices": [...]}, ...],   # sorted by bucket index
   "steady_state": [...],                                           # the last iteration
   "meta": {...}}
param_indices keep the order DDP holds them in the bucket.
"""

import argparse
import json
import os
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_model as em  # noqa: E402
import spawn_guard  # noqa: E402


def _free_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _worker(rank, cfg, result_path):
    import torch
    import torch.distributed as dist
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.set_num_threads(cfg["threads"])
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(cfg["port"])
    dist.init_process_group("gloo", rank=rank, world_size=cfg["world_size"], timeout=spawn_guard.pg_timeout())
    try:
        model = em.load_model(cfg["spec"], cfg["kwargs"], seed=cfg["seed"])
        plist = em.ddp_param_list(model)
        param_index = em.ddp_param_finder(plist)
        ddp_kwargs = {}
        if cfg["bucket_cap_mb"] is not None:
            ddp_kwargs["bucket_cap_mb"] = cfg["bucket_cap_mb"]
        if cfg["gradient_as_bucket_view"]:
            ddp_kwargs["gradient_as_bucket_view"] = True
        if cfg["static_graph"]:
            ddp_kwargs["static_graph"] = True
        if cfg["find_unused_parameters"]:
            ddp_kwargs["find_unused_parameters"] = True
        # gloo cannot broadcast bool tensors (e.g. GPT-2's causal-mask buffers); they are
        # identical on every rank anyway, and buffers play no part in gradient bucketing.
        skip = [n for n, b in model.named_buffers() if b.dtype == torch.bool]
        if skip:
            DDP._set_params_and_buffers_to_ignore_for_model(model, skip)
        if any(t.dtype == torch.bfloat16 for t in list(model.parameters()) + list(model.buffers())):
            # gloo cannot broadcast bfloat16 either; DDP's construction-time broadcast of the
            # module states is redundant here (every rank builds the model with the same seed).
            import torch.nn.parallel.distributed as ddp_mod
            ddp_mod._sync_module_states = lambda *a, **k: None
        ddp = DDP(model, **ddp_kwargs)

        log = {}
        cur = {"it": 0}

        def hook(state, bucket):
            idx = []
            for t in bucket.parameters():
                i = param_index(t)
                if i is None:
                    raise RuntimeError("bucket %d holds a tensor that is not a model parameter"
                                       % bucket.index())
                idx.append(i)
            buf = bucket.buffer()
            log.setdefault(cur["it"], []).append({
                "index": int(bucket.index()),
                "bytes": int(buf.numel() * buf.element_size()),
                "param_indices": idx,
            })
            if buf.dtype == torch.bfloat16:
                # gloo cannot all-reduce bfloat16: reduce a float32 copy and write it back.  The
                # hook only moves data; the bucket layout being recorded is DDP's own.
                tmp = buf.to(torch.float32).div_(dist.get_world_size())
                fut = dist.all_reduce(tmp, async_op=True).get_future()

                def back(f, buf=buf):
                    buf.copy_(f.value()[0])
                    return buf
                return fut.then(back)
            return default_hooks.allreduce_hook(state, bucket)

        ddp.register_comm_hook(None, hook)
        x = em.make_input(model, cfg["shape"], cfg["input_dtype"], vocab=cfg["vocab"],
                          seed=cfg["seed"] + rank)
        opt = torch.optim.SGD(ddp.parameters(), lr=1e-4)
        for it in range(1, cfg["iterations"] + 1):
            cur["it"] = it
            opt.zero_grad(set_to_none=True)
            out = ddp(x)
            loss = em.output_loss(out)
            loss.backward()
            opt.step()
        if rank == 0:
            res = {}
            for it, buckets in log.items():
                res[str(it)] = sorted(buckets, key=lambda b: b["index"])
            with open(result_path, "w") as f:
                json.dump({"log": res, "n_params": len(plist),
                           "n_grad_params": sum(1 for _, p in plist if p.requires_grad)}, f)
        # Every hook's future has completed (backward waited for them) and rank 0's result is on
        # disk once all ranks pass the barrier; leaving through os._exit skips ~Reducer ->
        # ~ProcessGroupGloo, which deadlocked under load (spawn_guard.py).
        dist.barrier()
    except BaseException:
        import traceback
        traceback.print_exc()
        spawn_guard.leave(1)
    spawn_guard.leave(0)


def run_reference(spec, shape, input_dtype="float32", kwargs=None, vocab=None, bucket_cap_mb=None,
                  world_size=2, iterations=3, seed=0, threads=1, gradient_as_bucket_view=False,
                  static_graph=False, find_unused_parameters=False):
    """Returns {"iteration1": [...], "steady_state": [...], "meta": {...}}."""
    import tempfile
    import torch
    if iterations < 1:
        raise em.ExportError("--iterations must be >= 1")
    if world_size < 1:
        raise em.ExportError("--world-size must be >= 1")
    # fail early, in this process, on a bad spec / shape / forward
    model = em.load_model(spec, kwargs, seed=seed)
    x = em.make_input(model, shape, input_dtype, vocab=vocab, seed=seed)
    if vocab is None and input_dtype in ("int64", "long"):
        vocab = em.find_vocab(model)
    del model, x
    fd, result_path = tempfile.mkstemp(suffix=".json", prefix="ddpref-")
    os.close(fd)
    cfg = {"spec": spec, "kwargs": kwargs or {}, "shape": list(shape), "input_dtype": input_dtype,
           "vocab": vocab, "bucket_cap_mb": bucket_cap_mb, "world_size": world_size,
           "iterations": iterations, "seed": seed, "threads": threads, "port": _free_port(),
           "gradient_as_bucket_view": gradient_as_bucket_view, "static_graph": static_graph,
           "find_unused_parameters": find_unused_parameters}
    try:
        try:
            spawn_guard.spawn(_worker, (cfg, result_path), world_size, what="ddp_reference_buckets")
        except Exception as e:
            raise em.ExportError("a DDP worker failed: %s: %s" % (type(e).__name__, str(e).strip()[-2000:]))
        with open(result_path) as f:
            raw = json.load(f)
    finally:
        try:
            os.unlink(result_path)
        except OSError:
            pass
    log = raw["log"]

    def strip(buckets):
        return [{"bytes": b["bytes"], "param_indices": b["param_indices"]} for b in buckets]
    its = sorted(int(k) for k in log)
    return {
        "iteration1": strip(log.get("1", [])),
        "steady_state": strip(log[str(its[-1])]) if its else [],
        "meta": {"spec": spec, "input_shape": list(shape), "input_dtype": input_dtype,
                 "bucket_cap_mb": bucket_cap_mb if bucket_cap_mb is not None else "default",
                 "world_size": world_size, "iterations": iterations,
                 "steady_state_iteration": its[-1] if its else None,
                 "torch": torch.__version__, "backend": "gloo",
                 "n_params": raw["n_params"], "n_grad_params": raw["n_grad_params"],
                 "static_graph": static_graph, "find_unused_parameters": find_unused_parameters,
                 "gradient_as_bucket_view": gradient_as_bucket_view},
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description="Record the buckets real DDP (gloo, CPU) uses.")
    ap.add_argument("spec")
    ap.add_argument("-o", "--output", required=True, help="output JSON ('-' for stdout)")
    ap.add_argument("--input", default="2x3x224x224", help="per-rank input shape, first dim = batch")
    ap.add_argument("--input-dtype", default="float32")
    ap.add_argument("--vocab", type=int, default=None)
    ap.add_argument("--kwargs", default=None)
    ap.add_argument("--bucket-cap-mb", type=float, default=None,
                    help="DDP bucket_cap_mb (default: leave DDP's default, 25)")
    ap.add_argument("--world-size", type=int, default=2)
    ap.add_argument("--iterations", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1, help="torch threads per rank")
    ap.add_argument("--static-graph", action="store_true")
    ap.add_argument("--find-unused-parameters", action="store_true")
    ap.add_argument("--gradient-as-bucket-view", action="store_true")
    args = ap.parse_args(argv)
    try:
        shape = em.parse_shape(args.input)
        kwargs = em.parse_kwargs(args.kwargs)
        res = run_reference(args.spec, shape, args.input_dtype, kwargs, args.vocab,
                            args.bucket_cap_mb, args.world_size, args.iterations, args.seed,
                            args.threads, args.gradient_as_bucket_view, args.static_graph,
                            args.find_unused_parameters)
    except em.ExportError as e:
        sys.stderr.write("ddp_reference_buckets.py: error: %s\n" % e)
        return 2
    text = json.dumps(res, indent=1) + "\n"
    if args.output == "-":
        sys.stdout.write(text)
    else:
        with open(args.output, "w") as f:
            f.write(text)
    ss = res["steady_state"]
    sys.stderr.write("ddp reference %s cap=%s: iteration1 %d bucket(s), steady_state %d bucket(s): %s\n"
                     % (args.spec, res["meta"]["bucket_cap_mb"], len(res["iteration1"]), len(ss),
                        ", ".join(str(b["bytes"]) for b in ss[:6]) + (" ..." if len(ss) > 6 else "")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
