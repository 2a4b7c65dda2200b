#!/usr/bin/python3
"""Compare the collectives of ddpsim's plan with those real torch issues: FSDP1's all-gathers,
reduce-scatters and all-reduces, or ZeroRedundancyOptimizer's broadcasts.

  /usr/bin/python3 tests/python/check_collectives_vs_torch.py --ddpsim build/ddpsim --model-json M.json \
      --world-size 3 [--wrapper fsdp|zero] [cpu_collectives_trace.py options: --strategy ..., --bucket-view ...]

Runs scripts/cpu_collectives_trace.py (real PyTorch 1.13, CPU ranks over gloo) and `ddpsim run
--model M.json --trace` with the same settings on one node of as many GPUs, and compares per step
the ordered lists of (collective, unit, bytes). FSDP: an all-gather's bytes are one rank's input
(the padded shard), a reduce-scatter's and an all-reduce's the whole input (ddpsim's trace
`bytes`, nccl-tests' convention for each); the forward and backward's collectives. ZeRO: the
optimizer step's broadcasts, unit = the parameter's name or "rank R bucket", bytes = the tensor's.
Prints both lists and exits 1 where they differ.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
TRACE = os.path.join(REPO, "scripts", "cpu_collectives_trace.py")
KINDS = {"allgather": "all_gather", "reducescatter": "reduce_scatter", "allreduce": "all_reduce"}


ZERO_PREFIX = "ZeRO broadcast "


def torch_calls(doc, wrapper="fsdp"):
    """Per step [(kind, unit, bytes)] from cpu_collectives_trace.py's document."""
    phases = ("forward", "backward") if wrapper == "fsdp" else ("optimizer",)
    out = []
    for step in doc["steps"]:
        out.append([(c["kind"], c["unit"], c["in_bytes"]) for c in step
                    if c["phase"] in phases and not c.get("purpose")])
    return out


def ddpsim_calls(trace, wrapper="fsdp"):
    """Per simulated step [(kind, unit, bytes)] from a Chrome trace of `ddpsim run`."""
    ev = trace["traceEvents"] if isinstance(trace, dict) else trace
    starts = sorted(e["ts"] for e in ev if e.get("cat") == "step" and e.get("ph") == "X")
    if wrapper == "fsdp":
        calls = [e for e in ev if e.get("cat") in KINDS and e.get("ph") == "X"]
    else:
        calls = [e for e in ev if e.get("cat") == "broadcast" and e.get("ph") == "X"
                 and e.get("name", "").startswith(ZERO_PREFIX)]
    out = [[] for _ in starts]
    for e in sorted(calls, key=lambda e: e["ts"]):
        i = max(k for k, s in enumerate(starts) if s <= e["ts"] + 1e-9)
        if wrapper == "fsdp":
            call = (KINDS[e["cat"]], e["name"].split(" ")[1])
        else:
            call = ("broadcast", e["name"][len(ZERO_PREFIX):])
        out[i].append(call + (int(round(e["args"]["bytes"])),))
    return out


def ddpsim_sets(args):
    if args.wrapper == "zero":
        return ['training.zero_redundancy_optimizer={"enabled": true, "parameters_as_bucket_view": %s}'
                % ("true" if args.bucket_view else "false")]
    s = ["training.wrapper=fsdp", "training.fsdp.version=1", "training.fsdp.wrap=block",
         "training.fsdp.sharding_strategy=" + args.strategy,
         "training.fsdp.backward_prefetch=" + args.backward_prefetch,
         "training.fsdp.forward_prefetch=" + ("true" if args.forward_prefetch else "false"),
         "training.fsdp.limit_all_gathers=" + ("false" if args.no_limit_all_gathers else "true")]
    if args.param_dtype:
        s.append("training.fsdp.param_dtype=" + args.param_dtype)
    if args.reduce_dtype:
        s.append("training.fsdp.reduce_dtype=" + args.reduce_dtype)
    if args.checkpoint:
        s.append("training.activation_checkpointing=full")
    if args.accumulation > 1:
        s.append("training.gradient_accumulation_steps=%d" % args.accumulation)
        s.append("training.fsdp.no_sync=" + ("false" if args.sync_each_micro_step else "true"))
    return s


def run(args, timeout=600):
    tmp = tempfile.mkdtemp(prefix="fsdp-vs-torch-")
    real_path, trace_path = os.path.join(tmp, "torch.json"), os.path.join(tmp, "ddpsim.trace.json")
    try:
        cmd = [sys.executable, TRACE, "-o", real_path, "--world-size", str(args.world_size), "--steps", "2",
               "--wrapper", args.wrapper, "--strategy", args.strategy, "--backward-prefetch", args.backward_prefetch]
        for flag, value in (("--spec", args.spec), ("--kwargs", args.kwargs), ("--input", args.input),
                            ("--param-dtype", args.param_dtype), ("--reduce-dtype", args.reduce_dtype),
                            ("--checkpoint", args.checkpoint)):
            if value:
                cmd += [flag, value]
        if args.accumulation > 1:
            cmd += ["--accumulation", str(args.accumulation)]
        for flag, on in (("--bucket-view", args.bucket_view), ("--forward-prefetch", args.forward_prefetch),
                         ("--no-limit-all-gathers", args.no_limit_all_gathers),
                         ("--sync-each-micro-step", args.sync_each_micro_step)):
            if on:
                cmd.append(flag)
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                           timeout=timeout)
        if p.returncode != 0:
            return None, None, "cpu_collectives_trace.py failed (%d): %s" % (p.returncode, p.stderr[-2000:])
        sim = [args.ddpsim, "run", "--model", args.model_json, "--cluster", "dgx-a100", "--nodes", "1",
               "--gpus-per-node", str(args.world_size), "--trace", trace_path, "-q"]
        for s in ddpsim_sets(args) + list(args.ddpsim_set or []):
            sim += ["--set", s]
        q = subprocess.run(sim, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                           timeout=timeout)
        if q.returncode != 0:
            return None, None, "ddpsim failed (%d): %s %s" % (q.returncode, " ".join(sim), q.stderr[-2000:])
        with open(real_path) as f:
            real = torch_calls(json.load(f), args.wrapper)
        with open(trace_path) as f:
            simulated = ddpsim_calls(json.load(f), args.wrapper)
        return real, simulated, None
    finally:
        for name in ("torch.json", "ddpsim.trace.json"):
            if os.path.exists(os.path.join(tmp, name)):
                os.remove(os.path.join(tmp, name))
        os.rmdir(tmp)


def describe(calls):
    return "\n".join("    %-14s %-32s %9d" % c for c in calls)


def parser():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ddpsim", default=os.path.join(REPO, "build", "ddpsim"))
    ap.add_argument("--model-json", required=True)
    ap.add_argument("--spec", default=None)
    ap.add_argument("--kwargs", default=None)
    ap.add_argument("--input", default=None)
    ap.add_argument("--world-size", type=int, default=2)
    ap.add_argument("--wrapper", choices=("fsdp", "zero"), default="fsdp")
    ap.add_argument("--bucket-view", action="store_true", help="zero: parameters_as_bucket_view")
    ap.add_argument("--strategy", default="FULL_SHARD")
    ap.add_argument("--backward-prefetch", default="BACKWARD_PRE")
    ap.add_argument("--forward-prefetch", action="store_true")
    ap.add_argument("--no-limit-all-gathers", action="store_true")
    ap.add_argument("--param-dtype", default=None)
    ap.add_argument("--reduce-dtype", default=None)
    ap.add_argument("--checkpoint", default=None, help="REENTRANT or NO_REENTRANT: every block checkpointed")
    ap.add_argument("--accumulation", type=int, default=1, help="fsdp: micro-steps per optimizer step")
    ap.add_argument("--sync-each-micro-step", action="store_true", help="with --accumulation: no no_sync()")
    ap.add_argument("--ddpsim-set", action="append", default=None,
                    help="PATH=VALUE for ddpsim alone, after the matching settings (to see the check fail)")
    return ap


def main(argv=None):
    args = parser().parse_args(argv)
    real, simulated, err = run(args)
    if err:
        print(err)
        return 2
    ok = True
    for i, (r, s) in enumerate(zip(real, simulated)):
        same = r == s
        ok = ok and same
        print("step %d: %s (%d collectives in torch, %d in ddpsim)" % (i + 1, "equal" if same else "DIFFERENT",
                                                                       len(r), len(s)))
        if not same:
            print("  torch:\n%s\n  ddpsim:\n%s" % (describe(r), describe(s)))
    if len(real) != len(simulated):
        print("steps: %d in torch, %d in ddpsim" % (len(real), len(simulated)))
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
