#!/usr/bin/python3
"""Record the collectives real PyTorch issues in a training step (FSDP1, or DDP with
ZeroRedundancyOptimizer), on CPU ranks over gloo.

Usage:
  /usr/bin/python3 scripts/cpu_collectives_trace.py -o trace.json [--wrapper fsdp|zero] [--world-size 2]
      [--steps 2] [--spec zoo.llama:llama] [--kwargs '{"dim": 64, "n_layers": 4, ...}'] [--input 2x16]
      fsdp: [--strategy FULL_SHARD|SHARD_GRAD_OP|NO_SHARD] [--backward-prefetch BACKWARD_PRE|BACKWARD_POST|none]
            [--forward-prefetch] [--no-limit-all-gathers] [--param-dtype bfloat16] [--reduce-dtype float32]
            [--checkpoint REENTRANT|NO_REENTRANT] [--accumulation N [--sync-each-micro-step]]
      zero: [--bucket-view]

Why: ddpsim's FSDP plan (sim/plan/fsdp_builder.cpp) and ZeRO's broadcasts (sim/plan/ddp_builder.cpp
zero_steps) are written from PyTorch's source; this is PyTorch itself, so what it records is an
independent check of their units, sizes and order (tests/python/collectives_vs_torch_tests.py
compares them with `ddpsim run --trace`).

Method, FSDP. torch 1.13's FullyShardedDataParallel (the version this machine has) wraps the
model's numbered blocks, the modules named up to their first all-digit component ("layers.3",
"layer2.1": ddpsim's `training.fsdp.wrap: "block"`; for a transformer the units
`transformer_auto_wrap_policy` makes), one FSDP unit each (`lambda_auto_wrap_policy`), the rest in
the root unit, runs `--steps` forward/backward/optimizer steps (with `--accumulation N`, N
forward/backward micro-steps before each optimizer step, all but the last inside FSDP's `no_sync()`
unless `--sync-each-micro-step`), and records every collective FSDP
issues, in issue order, with the issuing unit (the handle whose `_unshard` or
`_post_backward_hook` is running: a prefetch runs in another unit's hook), the phase (forward,
backward, optimizer) and the per-rank bytes. With one NCCL stream per process group the issue
order is the order the collectives run on a GPU (FSDP's `BackwardPrefetch` note), which is what
ddpsim's trace shows.

Method, ZeRO. DistributedDataParallel with torch 1.13's ZeroRedundancyOptimizer (SGD, as
`--bucket-view` sets `parameters_as_bucket_view`): the optimizer step's broadcasts (`_sync_params`:
every rank's shard from that rank, parameter by parameter, or its one flat bucket), in issue
order, with the parameter's name (or "rank R bucket") and source rank; `units` lists the
partition (parameter, rank).

What had to be stood in for, because this torch is built without CUDA and gloo lacks two
collectives (none of it changes which collectives FSDP issues, their sizes or their order):
  * torch/distributed/_shard/sharded_tensor/metadata.py does not import on Python 3.11 (a dataclass
    default `field(default=TensorProperties())`, refused since 3.11): the module is compiled from
    its own source with `default_factory` instead (a meta-path loader; nothing on disk changes);
  * FSDP 1.13 asks for a CUDA compute device, CUDA streams and events, and refuses to run when
    `torch.cuda.is_available()` is false: the compute device is the CPU, streams and events are
    no-ops (every op runs in program order on the CPU, as one stream would), and `is_available`
    answers True only inside FSDP's lazy initialisation;
  * gloo has no `_all_gather_base` or `_reduce_scatter_base`: the first runs as `all_gather` into
    the output's chunks, the second as an `all_reduce` of a copy of the input followed by a copy of
    this rank's chunk (the same result; the timing of these stand-ins is not FSDP's and is not
    recorded); gloo moves no bfloat16 / float16, so those all-gathers move the same bytes as uint8
    and those reductions run in float32.
ZeRO runs as it is (gloo broadcasts).

Output ("ddpsim-collectives-trace/1"): config, the units (FSDP: name, parameters, flat numel,
padded numel; ZeRO: the partition), and per step the list of collectives {phase, kind, unit,
in_bytes, out_bytes, dtype, purpose} (ZeRO adds src); purpose "order check": torch 1.13's
first-iteration check of FSDP's forward order, two 4-byte all-gathers per unit; null for a
unit's own collectives. Rank 0's record; every rank's list is checked equal (a mismatch is an
error).
"""

import argparse
import contextlib
import importlib.abc
import importlib.machinery
import json
import os
import sys
import tempfile

SCRIPT_DIR = os.path.dirname(os.path.abspath(__file__))
if SCRIPT_DIR not in sys.path:
    sys.path.insert(0, SCRIPT_DIR)
import export_model as em  # noqa: E402
import spawn_guard  # noqa: E402
from ddp_reference_buckets import _free_port  # noqa: E402

FORMAT = "ddpsim-collectives-trace/1"
METADATA_MODULE = "torch.distributed._shard.sharded_tensor.metadata"
STRATEGIES = ("FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD")
PREFETCH = ("BACKWARD_PRE", "BACKWARD_POST", "none")
DTYPES = ("float32", "bfloat16", "float16")


class TraceError(Exception):
    """A user-facing error: printed to stderr, exit status 2."""


# --------------------------------------------------------------------------------------------
# Stand-ins (see the module docstring)
# --------------------------------------------------------------------------------------------

class _MetadataLoader(importlib.machinery.SourceFileLoader):
    """Compiles metadata.py from its source with the Python 3.11 dataclass fix (never from a cached
    .pyc, which holds the unpatched code)."""

    def get_code(self, fullname):
        src = self.get_data(self.path)
        fixed = src.replace(b"field(default=TensorProperties())", b"field(default_factory=TensorProperties)")
        return compile(fixed, self.path, "exec", dont_inherit=True)


class _MetadataFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        if fullname != METADATA_MODULE:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.origin is None:
            return None
        spec.loader = _MetadataLoader(fullname, spec.origin)
        return spec


def install_import_fix():
    if not any(isinstance(f, _MetadataFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _MetadataFinder())


class _Event(object):
    def record(self, stream=None):
        pass

    def synchronize(self):
        pass

    def wait(self, stream=None):
        pass

    def query(self):
        return True


class _Stream(object):
    def wait_stream(self, other):
        pass

    def wait_event(self, event):
        pass

    def synchronize(self):
        pass

    def record_event(self, event=None):
        return event or _Event()


class Recorder(object):
    """The collectives of one rank, in issue order."""

    def __init__(self):
        self.phase = "setup"
        self.unit = []  # stack of the FSDP unit names whose hooks are running
        self.purpose = None  # "order check": FSDP's first-iteration check, not a unit's collective
        self.calls = []

    def add(self, kind, inp, out):
        self.calls.append({"phase": self.phase, "kind": kind, "unit": self.unit[-1] if self.unit else None,
                           "in_bytes": inp.numel() * inp.element_size(),
                           "out_bytes": out.numel() * out.element_size(),
                           "dtype": em.dtype_str(inp.dtype), "purpose": self.purpose})


def install_cpu_fsdp(torch, dist, fsdp_mod, rec, names):
    # names: id(FlatParameter) -> unit name, filled once the model is wrapped.
    """Make torch 1.13's FSDP run on CPU ranks over gloo, recording each collective."""
    FSDP = fsdp_mod.FullyShardedDataParallel
    torch.cuda.Stream = _Stream
    torch.cuda.Event = _Event
    current = _Stream()
    torch.cuda.current_stream = lambda *a, **k: current
    torch.cuda.stream = lambda s: contextlib.nullcontext()
    torch.Tensor.record_stream = lambda self, stream: None
    FSDP._get_compute_device = lambda self, *a, **k: torch.device("cpu")

    lazy = FSDP._lazy_init

    def lazy_init(self):
        saved = torch.cuda.is_available
        torch.cuda.is_available = lambda: True
        try:
            return lazy(self)
        finally:
            torch.cuda.is_available = saved
    FSDP._lazy_init = lazy_init

    def in_unit(method, flat_param_of):
        # The unit is the handle's (a prefetch runs in another unit's hook, with that unit's self).
        def wrapped(self, handles, *a, **k):
            rec.unit.append(names.get(flat_param_of(handles), "?"))
            try:
                return method(self, handles, *a, **k)
            finally:
                rec.unit.pop()
        return wrapped
    FSDP._unshard = in_unit(FSDP._unshard, lambda hs: id(hs[0].flat_param) if hs else None)
    # torch 1.13 _ExecOrderData._check_order: in the first iteration two int32 all-gathers per unit
    # check that every rank all-gathers the same parameters (not gated by TORCH_DISTRIBUTED_DEBUG).
    check = fsdp_mod.fully_sharded_data_parallel._ExecOrderData._check_order

    def check_order(self, *a, **k):
        rec.purpose = "order check"
        try:
            return check(self, *a, **k)
        finally:
            rec.purpose = None
    fsdp_mod.fully_sharded_data_parallel._ExecOrderData._check_order = check_order
    FSDP._post_backward_hook = in_unit(FSDP._post_backward_hook, lambda h: id(h.flat_param))
    all_reduce_alone = dist.all_reduce

    def all_gather_base(output, inp, group=None, async_op=False):
        rec.add("all_gather", inp, output)
        if inp.dtype in (torch.bfloat16, torch.float16):  # gloo moves no bfloat16: the same bytes as uint8
            inp, output = inp.view(torch.uint8), output.view(torch.uint8)
        dist.all_gather(list(output.chunk(dist.get_world_size(group))), inp, group=group)
        return None

    def reduce_scatter_base(output, inp, op=dist.ReduceOp.SUM, group=None, async_op=False):
        rec.add("reduce_scatter", inp, output)
        full = inp.float()  # a copy, in a dtype gloo reduces
        all_reduce_alone(full, op=op, group=group)
        n = output.numel()
        r = dist.get_rank(group)
        output.copy_(full.view(-1)[r * n:(r + 1) * n].view_as(output))
        return None

    def all_reduce(tensor, op=dist.ReduceOp.SUM, group=None, async_op=False):
        if rec.phase in ("forward", "backward"):  # NO_SHARD's hook (default_hooks.allreduce_hook)
            rec.add("all_reduce", tensor, tensor)
        if tensor.dtype in (torch.bfloat16, torch.float16):
            full = tensor.float()
            all_reduce_alone(full, op=op, group=group)
            tensor.copy_(full)
            return None
        return all_reduce_alone(tensor, op=op, group=group, async_op=async_op)

    dist._all_gather_base = all_gather_base
    dist._reduce_scatter_base = reduce_scatter_base
    dist.all_reduce = all_reduce


# --------------------------------------------------------------------------------------------
# Rank process
# --------------------------------------------------------------------------------------------

def unit_name(path):
    """An FSDP instance's module path without FSDP's own wrapper components ("" -> "root")."""
    parts = [p for p in path.split(".") if p and p not in ("_fsdp_wrapped_module", "_fpw_module")]
    return ".".join(parts) or "root"


def _blocks(model):
    """The blocks by ddpsim's rule (sim/plan/fsdp_builder.cpp block_key): the modules named up to
    their first all-digit component ("layers.3", "layer2.1"), the children of a ModuleList/Sequential."""
    return {id(m) for n, m in model.named_modules()
            if n and n.split(".")[-1].isdigit() and not any(p.isdigit() for p in n.split(".")[:-1])
            and any(p.requires_grad for p in m.parameters())}


def _fsdp(torch, dist, model, cfg, rec):
    """torch 1.13 FSDP1 over the model's blocks; returns (wrapped, optimizer, units())."""
    import functools
    import torch.distributed.fsdp as fsdp_mod
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    from torch.distributed.fsdp import ShardingStrategy, BackwardPrefetch, MixedPrecision
    from torch.distributed.fsdp.wrap import lambda_auto_wrap_policy
    blocks = _blocks(model)
    if not blocks:
        raise TraceError("%s has no numbered blocks (ModuleList children) to wrap" % cfg["spec"])
    names = {}
    install_cpu_fsdp(torch, dist, fsdp_mod, rec, names)
    mp = None
    if cfg["param_dtype"] or cfg["reduce_dtype"]:
        dt = lambda s: getattr(torch, s) if s else None  # noqa: E731
        mp = MixedPrecision(param_dtype=dt(cfg["param_dtype"]), reduce_dtype=dt(cfg["reduce_dtype"]),
                            buffer_dtype=dt(cfg["param_dtype"]))
    prefetch = None if cfg["backward_prefetch"] == "none" else getattr(BackwardPrefetch, cfg["backward_prefetch"])
    wrapped = FSDP(model, auto_wrap_policy=functools.partial(lambda_auto_wrap_policy,
                                                             lambda_fn=lambda m: id(m) in blocks),
                   sharding_strategy=getattr(ShardingStrategy, cfg["strategy"]), mixed_precision=mp,
                   backward_prefetch=prefetch, forward_prefetch=cfg["forward_prefetch"],
                   limit_all_gathers=cfg["limit_all_gathers"], device_id=None)
    flat_params = []
    for path, m in wrapped.named_modules():
        if isinstance(m, FSDP):
            for fp in m.params:
                names[id(fp)] = unit_name(path)
                flat_params.append((unit_name(path), fp))
    if cfg["checkpoint"]:
        # The recipe of PyTorch's FSDP tutorials: wrap, then checkpoint each block (the wrapper goes
        # inside its FSDP unit, so the recompute runs the block alone, without FSDP's hooks).
        from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (
            CheckpointImpl, apply_activation_checkpointing, checkpoint_wrapper)
        apply_activation_checkpointing(
            wrapped, check_fn=lambda m: id(m) in blocks,
            checkpoint_wrapper_fn=functools.partial(checkpoint_wrapper, checkpoint_impl=getattr(
                CheckpointImpl, cfg["checkpoint"])))

    def units():
        # After a step: the padded size is set in FSDP's lazy initialisation (sharded strategies only).
        return [{"name": n, "params": len(fp._param_infos), "numel": int(fp._unpadded_unsharded_size.numel()),
                 "padded_numel": int(fp._padded_unsharded_size.numel()) if hasattr(fp, "_padded_unsharded_size")
                 else int(fp._unpadded_unsharded_size.numel())} for n, fp in flat_params]
    return wrapped, torch.optim.SGD(wrapped.parameters(), lr=1e-3), units


def _zero(torch, dist, model, cfg, rec):
    """DDP with torch 1.13's ZeroRedundancyOptimizer (SGD); returns (wrapped, optimizer, units()).
    Records the optimizer step's broadcasts (_sync_params): per rank its shard's parameters, or
    its one flat bucket with parameters_as_bucket_view; unit = the parameter's name or "rank R bucket"."""
    from torch.distributed.optim import ZeroRedundancyOptimizer
    from torch.nn.parallel import DistributedDataParallel as DDP
    wrapped = DDP(model)
    opt = ZeroRedundancyOptimizer(wrapped.parameters(), optimizer_class=torch.optim.SGD, lr=1e-3,
                                  parameters_as_bucket_view=cfg["bucket_view"])
    by_storage = {p.data_ptr(): n for n, p in model.named_parameters()}
    broadcast = dist.broadcast

    def recorded(tensor, src, group=None, async_op=False):
        if rec.phase == "optimizer":
            unit = by_storage.get(tensor.data_ptr())
            if cfg["bucket_view"]:
                unit = "rank %d bucket" % src
            rec.add("broadcast", tensor, tensor)
            rec.calls[-1]["unit"] = unit
            rec.calls[-1]["src"] = src
        return broadcast(tensor, src, group=group, async_op=async_op)
    dist.broadcast = recorded

    def units():
        parts = opt._partition_parameters()
        return [{"name": by_storage.get(p.data_ptr(), "?"), "rank": r, "numel": p.numel()}
                for r, groups in enumerate(parts) for g in groups for p in g["params"]]
    return wrapped, opt, units


def _worker(rank, cfg, outdir):
    install_import_fix()
    import torch
    import torch.distributed as dist
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % cfg["port"], rank=rank,
                            world_size=cfg["world_size"], timeout=spawn_guard.pg_timeout())
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = em.load_model(cfg["spec"], cfg["kwargs"], seed=0)
    rec = Recorder()
    wrapped, opt, units = (_fsdp if cfg["wrapper"] == "fsdp" else _zero)(torch, dist, model, cfg, rec)
    x = em.make_input(model, cfg["input"], "int64" if cfg["vocab"] else "float32", vocab=cfg["vocab"], seed=rank)
    steps = []
    accumulation = cfg.get("accumulation", 1)
    for _ in range(cfg["steps"]):
        rec.calls = []
        for micro in range(accumulation):
            # FSDP1's no_sync(): the micro-steps before the last skip the gradient reduction.
            quiet = micro < accumulation - 1 and not cfg.get("sync_each_micro_step")
            with (wrapped.no_sync() if quiet else contextlib.nullcontext()):
                rec.phase = "forward"
                out = wrapped(x)
                loss = em.output_loss(out)
                rec.phase = "backward"
                loss.backward()
        rec.phase = "optimizer"
        opt.step()
        opt.zero_grad(set_to_none=True)
        steps.append(rec.calls)
    units = units()
    with open(os.path.join(outdir, "rank%d.json" % rank), "w") as f:
        json.dump({"units": units, "steps": steps, "torch_version": torch.__version__.split("+")[0]}, f)
    spawn_guard.leave(0)


# --------------------------------------------------------------------------------------------
# Parent
# --------------------------------------------------------------------------------------------

def run(args):
    kwargs = em.parse_kwargs(args.kwargs) if args.kwargs else {}
    shape = em.parse_shape(args.input)
    vocab = kwargs.get("vocab_size") if args.vocab is None else args.vocab
    cfg = {"spec": args.spec, "kwargs": kwargs, "input": shape, "vocab": vocab, "world_size": args.world_size,
           "steps": args.steps, "strategy": args.strategy, "backward_prefetch": args.backward_prefetch,
           "forward_prefetch": args.forward_prefetch, "limit_all_gathers": not args.no_limit_all_gathers,
           "param_dtype": args.param_dtype, "reduce_dtype": args.reduce_dtype, "checkpoint": args.checkpoint,
           "wrapper": args.wrapper, "bucket_view": args.bucket_view, "accumulation": args.accumulation,
           "sync_each_micro_step": args.sync_each_micro_step, "port": _free_port()}
    outdir = tempfile.mkdtemp(prefix="fsdp-cpu-trace-")
    try:
        try:
            spawn_guard.spawn(_worker, (cfg, outdir), args.world_size, timeout_s=args.timeout, what="cpu_collectives_trace")
        except Exception as e:
            raise TraceError("a rank process failed: %s: %s" % (type(e).__name__, str(e).strip()[-3000:]))
        ranks = []
        for r in range(args.world_size):
            with open(os.path.join(outdir, "rank%d.json" % r)) as f:
                ranks.append(json.load(f))
    finally:
        for r in range(args.world_size):
            p = os.path.join(outdir, "rank%d.json" % r)
            if os.path.exists(p):
                os.remove(p)
        os.rmdir(outdir)
    strip = lambda steps: [[{k: v for k, v in c.items()} for c in s] for s in steps]  # noqa: E731
    for r in range(1, args.world_size):
        if strip(ranks[r]["steps"]) != strip(ranks[0]["steps"]):
            raise TraceError("rank %d issued other collectives than rank 0" % r)
    cfg.pop("port")
    return {"format": FORMAT, "config": cfg, "torch_version": ranks[0]["torch_version"],
            "units": ranks[0]["units"], "steps": ranks[0]["steps"]}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--output", required=True, help="output JSON path ('-' for stdout)")
    ap.add_argument("--wrapper", choices=("fsdp", "zero"), default="fsdp",
                    help="fsdp: FullyShardedDataParallel (FSDP1); zero: DDP + ZeroRedundancyOptimizer")
    ap.add_argument("--bucket-view", action="store_true", help="zero: parameters_as_bucket_view=True")
    ap.add_argument("--spec", default="zoo.llama:llama")
    ap.add_argument("--kwargs", default='{"dim": 64, "n_layers": 4, "n_heads": 4, "vocab_size": 512, '
                                        '"multiple_of": 32, "max_seq_len": 64}')
    ap.add_argument("--input", default="2x16", help="input shape (token ids for a model with a vocabulary)")
    ap.add_argument("--vocab", type=int, default=None)
    ap.add_argument("--world-size", type=int, default=2)
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--strategy", choices=STRATEGIES, default="FULL_SHARD")
    ap.add_argument("--backward-prefetch", choices=PREFETCH, default="BACKWARD_PRE")
    ap.add_argument("--forward-prefetch", action="store_true")
    ap.add_argument("--no-limit-all-gathers", action="store_true")
    ap.add_argument("--param-dtype", choices=DTYPES, default=None)
    ap.add_argument("--reduce-dtype", choices=DTYPES, default=None)
    ap.add_argument("--checkpoint", choices=("REENTRANT", "NO_REENTRANT"), default=None,
                    help="activation checkpointing of every block (apply_activation_checkpointing after wrapping)")
    ap.add_argument("--accumulation", type=int, default=1,
                    help="fsdp: forward/backward micro-steps per optimizer step (1 to 8; default 1)")
    ap.add_argument("--sync-each-micro-step", action="store_true",
                    help="fsdp, with --accumulation: reduce in every micro-step (no no_sync())")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds the ranks may take (default 300)")
    args = ap.parse_args(argv)
    try:
        if not 2 <= args.world_size <= 8:
            raise TraceError("--world-size %d: 2 to 8 rank processes" % args.world_size)
        if not 1 <= args.steps <= 20:
            raise TraceError("--steps %d: 1 to 20" % args.steps)
        if not 1 <= args.accumulation <= 8:
            raise TraceError("--accumulation %d: 1 to 8" % args.accumulation)
        if args.accumulation > 1 and args.wrapper != "fsdp":
            raise TraceError("--accumulation %d with --wrapper %s: fsdp only" % (args.accumulation, args.wrapper))
        doc = run(args)
    except (TraceError, em.ExportError) as e:
        sys.stderr.write("cpu_collectives_trace.py: error: %s\n" % e)
        return 2
    text = json.dumps(doc, indent=1, sort_keys=True) + "\n"
    if args.output == "-":
        sys.stdout.write(text)
    else:
        with open(args.output, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
