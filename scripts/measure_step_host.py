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

  /usr/bin/python3 scripts/measure_step_host.py --spec zoo.bert:bert_base \\
      --kwargs '{"vocab_size": 64, "hidden_size": 12, "intermediate_size": 12, "max_position_embeddings": 16}' \\
      --input 1x4 --input-dtype int64
"""
import argparse
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
    ap.add_argument("--steps", default="50", help="timed steps (1..10000)")
    ap.add_argument("--warmup", default="10", help="untimed steps first (0..10000)")
    ap.add_argument("--json", default=None, help="also write the result to FILE")
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
    if a.input_dtype not in ("float32", "int64"):
        _fail("--input-dtype: %r is not allowed; expected float32 or int64" % (a.input_dtype,))
    if a.vocab is not None and a.vocab < 1:
        _fail("--vocab: %r is not allowed; expected a positive integer" % (a.vocab,))
    return a


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
    fwd, bwd, ost = [], [], []
    for i in range(a.warmup + a.steps):
        t0 = time.perf_counter()
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
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        loss = _loss(model(x))
    top = [e.name for e in prof.events()
           if e.name.startswith("aten::") and (e.cpu_parent is None or not e.cpu_parent.name.startswith("aten::"))]
    views = {"aten::view", "aten::_unsafe_view", "aten::as_strided", "aten::permute", "aten::transpose",
             "aten::t", "aten::expand", "aten::unsqueeze", "aten::squeeze", "aten::slice", "aten::select",
             "aten::reshape", "aten::alias", "aten::detach", "aten::resolve_conj", "aten::resolve_neg"}
    return {
        "torch": torch.__version__, "spec": a.spec, "kwargs": a.kwargs, "input": shape,
        "input_dtype": a.input_dtype, "optimizer": a.optimizer, "threads": 1, "steps": a.steps,
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
    r = measure(a)
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


if __name__ == "__main__":
    main()
