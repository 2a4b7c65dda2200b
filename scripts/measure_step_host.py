#!/usr/bin/env python3
"""Eager PyTorch's host work for one training step of a model's op structure, measured on this CPU.

Method: the model is built with tiny dimensions (--kwargs, e.g. hidden_size 12 for BERT) so that
every operator of its forward, backward and optimizer step still runs, in the same order and
number, but its CPU kernel costs about nothing; one thread; each step times the forward (+ loss),
the backward and optimizer.step() + zero_grad() with time.perf_counter; medians over --steps after
--warmup. What is left is the dispatcher, autograd's recording and execution, the Python of the
modules and the optimizer, and a tiny CPU kernel per op in place of a CUDA launch. The forward's
top-level aten ops (views among them: they cost host time and launch nothing) are counted with
torch.profiler, and the backward's autograd nodes by walking the loss's grad_fn graph.

Compare with what ddpsim charges for the same model (`ddpsim run --model M ... --json -`, field
`compute_host`: per kernel 6.9 us forward / 8.5 us backward plus 2 us of launch, from
scripts/measure_dispatch.py). Results and the comparison: sim/gpu/NOTES.md ("Eager host dispatch").

--ddpsim BIN --model FILE (FILE: the full-size export of the same model) does that comparison on
this CPU: the per-op costs of scripts/measure_dispatch.py's chains (mul, view, module call) are
measured before and after the steps, and the counts ddpsim charges for FILE (`compute_host`
kernels_forward / kernels_backward, and the file's per-layer `host_ops`: views, view nodes, module
calls) priced at them: what ddpsim's accounting predicts for this model on this CPU, with and
without the host work that launches no kernel, against the measured forward and backward.

  /usr/bin/python3 scripts/measure_step_host.py --spec zoo.bert:bert_base \\
      --kwargs '{"vocab_size": 64, "hidden_size": 12, "intermediate_size": 12, "max_position_embeddings": 16}' \\
      --input 1x4 --input-dtype int64
"""
import argparse
import contextlib
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def _fail(msg):
    sys.stderr.write("measure_step_host: %s\n" % msg)
    sys.exit(2)


def _args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--spec", required=True, help="module:callable (as export_model.py), e.g. zoo.bert:bert_base")
    ap.add_argument("--kwargs", default="{}", help="JSON object of the callable's keyword arguments")
    ap.add_argument("--input", required=True, help="input shape, e.g. 1x4 or 1x3x8x8")
    ap.add_argument("--input-dtype", default="float32", help="float32 or int64 (token ids)")
    ap.add_argument("--vocab", type=int, default=None, help="token id range for int64 inputs (default: the model's)")
    ap.add_argument("--optimizer", default="sgd", help="sgd (momentum 0.9) or adamw (torch's default implementation)")
    ap.add_argument("--autocast", default=None, help="bfloat16: the forward and loss under torch.autocast('cpu', "
                    "bfloat16), as a bf16 training step dispatches them (its casts, its float32 ops)")
    ap.add_argument("--steps", default="50", help="timed steps (1..10000)")
    ap.add_argument("--warmup", default="10", help="untimed steps first (0..10000)")
    ap.add_argument("--json", default=None, help="also write the result to FILE")
    ap.add_argument("--ddpsim", default=None, help="ddpsim binary: compare with its accounting of --model")
    ap.add_argument("--model", default=None, help="with --ddpsim: the full-size export of the same model")
    a = ap.parse_args(argv)
    try:
        a.kwargs = json.loads(a.kwargs)
    except ValueError as e:
        _fail("--kwargs: %r is not JSON (%s); expected an object such as '{\"hidden_size\": 12}'" % (a.kwargs, e))
    if not isinstance(a.kwargs, dict):
        _fail("--kwargs: %r is not allowed; expected a JSON object" % (a.kwargs,))
    for name, lo in (("steps", 1), ("warmup", 0)):
        v = getattr(a, name)
        if not v.isdigit() or not lo <= int(v) <= 10000:
            _fail("--%s: %r is not allowed; expected an integer from %d to 10000" % (name, v, lo))
        setattr(a, name, int(v))
    if a.optimizer not in ("sgd", "adamw"):
        _fail("--optimizer: %r is not allowed; expected sgd or adamw" % (a.optimizer,))
    if a.autocast not in (None, "bfloat16"):
        _fail("--autocast: %r is not allowed; expected bfloat16" % (a.autocast,))
    if a.input_dtype not in ("float32", "int64"):
        _fail("--input-dtype: %r is not allowed; expected float32 or int64" % (a.input_dtype,))
    if a.vocab is not None and a.vocab < 1:
        _fail("--vocab: %r is not allowed; expected a positive integer" % (a.vocab,))
    if (a.ddpsim is None) != (a.model is None):
        _fail("--ddpsim and --model go together")
    for name in ("ddpsim", "model"):
        v = getattr(a, name)
        if v is not None and not os.path.isfile(v):
            _fail("--%s: %r is not a file" % (name, v))
    return a


def ddpsim_counts(ddpsim, model, dtype="float32"):
    """What ddpsim charges per micro-step for `model` (one A100, no loss, `dtype` as
    training.compute_dtype): kernels launched in forward and backward (`compute_host`) and the
    model file's host_ops totals."""
    import subprocess
    from device_profile import ddpsim_report
    scen = {"name": "host-counts", "model": os.path.abspath(model),
            "cluster": {"name": "one-gpu", "gpu": "a100-sxm4-80gb", "nodes": 1, "gpus_per_node": 1},
            "training": {"loss": "none", "compute_dtype": dtype}}
    try:
        host = ddpsim_report(ddpsim, scen).get("compute_host") or {}
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
        _fail("ddpsim on %s: %s" % (model, str(e)[-500:]))
    if "kernels_forward" not in host:
        _fail("%s: the report has no compute_host kernel counts (an older ddpsim, or a measured profile)" % model)
    with open(model) as f:
        doc = json.load(f)
    tot = {"views": 0, "view_nodes": 0, "module_calls": 0}
    for layer in doc.get("layers", []):
        for k in tot:
            tot[k] += int((layer.get("host_ops") or {}).get(k, 0))
    tot["kernels_forward"] = host["kernels_forward"]
    tot["kernels_backward"] = host["kernels_backward"]
    return tot


def compare(r, counts, chains):
    """ddpsim's counts priced at this CPU's measured per-op costs, against the measured passes."""
    c = counts
    mul_f, mul_b = chains["mul"]
    fwd_k = c["kernels_forward"] * mul_f
    bwd_k = c["kernels_backward"] * mul_b
    fwd_all = fwd_k + c["views"] * chains["view"][0] + c["module_calls"] * chains["module"][0]
    bwd_all = bwd_k + c["view_nodes"] * chains["view"][1]
    err = lambda pred, meas: pred / meas - 1.0  # noqa: E731
    return {
        "counts": c,
        "per_op_s": {k: {"fwd": v[0], "bwd": v[1]} for k, v in chains.items()},
        "forward_kernels_only_s": fwd_k, "forward_with_host_ops_s": fwd_all,
        "backward_kernels_only_s": bwd_k, "backward_with_host_ops_s": bwd_all,
        "forward_error_kernels_only": err(fwd_k, r["forward_s"]),
        "forward_error_with_host_ops": err(fwd_all, r["forward_s"]),
        "backward_error_kernels_only": err(bwd_k, r["backward_s"]),
        "backward_error_with_host_ops": err(bwd_all, r["backward_s"]),
    }


def _loss(out):
    """The sum of the means of the floating outputs (scripts/ddp_cpu_bench.py's loss)."""
    import torch
    outs = out if isinstance(out, (tuple, list)) else (out,)
    parts = [o.float().mean() for o in outs if torch.is_tensor(o) and o.is_floating_point()]
    if not parts:
        _fail("the model returned no floating tensor to take a loss of")
    return sum(parts)


def _graph_nodes(loss):
    """Autograd nodes the backward of `loss` executes (AccumulateGrad included), each once."""
    seen, stack = set(), [loss.grad_fn]
    while stack:
        fn = stack.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        stack.extend(nxt for nxt, _ in fn.next_functions)
    return len(seen)


def measure(a):
    import torch
    from torch.profiler import ProfilerActivity, profile
    import export_model as em

    torch.set_num_threads(1)
    try:
        shape = em.parse_shape(a.input)
        model = em.load_model(a.spec, a.kwargs, seed=0)
        x = em.make_input(model, shape, a.input_dtype, vocab=a.vocab, seed=0)
    except em.ExportError as e:
        _fail(str(e))
    model.train()
    if a.optimizer == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=1e-4, momentum=0.9)
    else:
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    def ctx():
        return torch.autocast("cpu", dtype=torch.bfloat16) if a.autocast else contextlib.nullcontext()

    fwd, bwd, ost = [], [], []
    for i in range(a.warmup + a.steps):
        t0 = time.perf_counter()
        with ctx():
            loss = _loss(model(x))
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        opt.step()
        opt.zero_grad()
        t3 = time.perf_counter()
        if i >= a.warmup:
            fwd.append(t1 - t0)
            bwd.append(t2 - t1)
            ost.append(t3 - t2)
    with profile(activities=[ProfilerActivity.CPU]) as prof, ctx():
        loss = _loss(model(x))
    top = [e.name for e in prof.events()
           if e.name.startswith("aten::") and (e.cpu_parent is None or not e.cpu_parent.name.startswith("aten::"))]
    views = {"aten::view", "aten::_unsafe_view", "aten::as_strided", "aten::permute", "aten::transpose",
             "aten::t", "aten::expand", "aten::unsqueeze", "aten::squeeze", "aten::slice", "aten::select",
             "aten::reshape", "aten::alias", "aten::detach", "aten::resolve_conj", "aten::resolve_neg"}
    return {
        "torch": torch.__version__, "spec": a.spec, "kwargs": a.kwargs, "input": shape,
        "input_dtype": a.input_dtype, "optimizer": a.optimizer, "autocast": a.autocast, "threads": 1,
        "steps": a.steps,
        "warmup": a.warmup,
        "forward_s": statistics.median(fwd), "backward_s": statistics.median(bwd),
        "optimizer_s": statistics.median(ost),
        "forward_top_level_ops": len(top),
        "forward_view_ops": sum(1 for n in top if n in views),
        "backward_nodes": _graph_nodes(loss),
        "parameters": sum(1 for p in model.parameters() if p.requires_grad),
        "method": "tiny dimensions, one thread, medians of per-step perf_counter spans (see the script's docstring)",
    }


def main(argv=None):
    a = _args(sys.argv[1:] if argv is None else argv)
    counts = ddpsim_counts(a.ddpsim, a.model, a.autocast or "float32") if a.ddpsim else None
    if counts:
        import measure_dispatch as md
        before = md.measure(("mul", "view", "module"), reps=7)
    r = measure(a)
    if counts:
        after = md.measure(("mul", "view", "module"), reps=7)
        chains = {k: ((before[k][0] + after[k][0]) / 2, (before[k][1] + after[k][1]) / 2) for k in before}
        r["ddpsim"] = compare(r, counts, chains)
        r["ddpsim"]["model"] = a.model
        r["ddpsim"]["chain_mul_fwd_before_after_s"] = [before["mul"][0], after["mul"][0]]
    text = json.dumps(r, indent=1, sort_keys=True)
    if a.json:
        tmp = a.json + ".tmp"
        with open(tmp, "w") as f:
            f.write(text + "\n")
        os.replace(tmp, a.json)
    print(text)
    print("forward %.3f ms (%d top-level ops, %d of them views), backward %.3f ms (%d autograd nodes), "
          "optimizer %.3f ms (%d parameters)" % (r["forward_s"] * 1e3, r["forward_top_level_ops"],
                                                 r["forward_view_ops"], r["backward_s"] * 1e3,
                                                 r["backward_nodes"], r["optimizer_s"] * 1e3, r["parameters"]),
          file=sys.stderr)
    if "ddpsim" in r:
        d = r["ddpsim"]
        print("ddpsim's counts for %s at this CPU's per-op costs: forward %.3f ms (%+.1f %%) kernels only, "
              "%.3f ms (%+.1f %%) with views and module calls; backward %.3f ms (%+.1f %%), %.3f ms (%+.1f %%) "
              "with view nodes" % (d["model"], d["forward_kernels_only_s"] * 1e3, d["forward_error_kernels_only"] * 100,
                                   d["forward_with_host_ops_s"] * 1e3, d["forward_error_with_host_ops"] * 100,
                                   d["backward_kernels_only_s"] * 1e3, d["backward_error_kernels_only"] * 100,
                                   d["backward_with_host_ops_s"] * 1e3, d["backward_error_with_host_ops"] * 100),
              file=sys.stderr)


if __name__ == "__main__":
    main()
