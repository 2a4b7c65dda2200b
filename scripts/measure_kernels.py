#!/usr/bin/python3
"""Single operators timed alone on a GPU, kernel by kernel, against ddpsim's per-kernel estimate.

    python3 scripts/measure_kernels.py --out OUT.json [--only REGEX] [--iters 5] [--warmup 3]
    python3 scripts/measure_kernels.py --cpu --quick --out /tmp/k.json          # dry run (CPU)
    python3 scripts/measure_kernels.py --compare OUT.json --preset h200 [--md OUT.md] [-o CMP.json]

Why: the open compute leads of sim/gpu/NOTES.md need one operator at a time with its shape, which
whole steps do not give: whether cuDNN runs a 1 x 1 convolution in NCHW with or without its
NCHW <-> NHWC transposes (and how many per call), how fast its convolution kernels run against the
model's GEMM tiles (TF32, bfloat16, float16; NCHW and channels_last), what a half-precision GEMM
with an odd dimension (GPT-2's 50,257-word head) runs at on this GPU, a short-K batched matmul
(attention's QK^T), and layer norm by size.

Each case is one module (`case_module`, also what the comparison exports) on one input, run the
way ddpsim prices a layer of a training step: the input requires its gradient (so a convolution
has its dgrad, except the network's first, `stem`), float32 parameters, bfloat16 / float16 under
torch.autocast, float32 with PyTorch's defaults (cudnn.allow_tf32 on, cuda.matmul.allow_tf32 off)
and `tf32` with cuda.matmul.allow_tf32 on; channels_last moves module and input to
torch.channels_last. Per case, after --warmup untimed iterations, torch.profiler over --iters
forward-only iterations and over --iters forward + backward iterations (y.backward(g) with a
ready-made g, gradients set to None between iterations, so the backward holds the operator's own
kernels): each kernel's name, calls and device time per iteration (device_step.kernel_table), the
forward's total and the backward's (the difference). With --cpu the operators run on the CPU at
small shapes (`--quick`) and the table holds CPU operators: a dry run of the method, nothing more.

--compare: for every measured case, the same module exported with scripts/export_model.py at a
small first dimension (its records scale to the case's), then `ddpsim run` of it on one GPU of
--preset at the case's batch, dtype and memory format (per-kernel estimate, no contention, no
loss, input already on the GPU); the operator's layer (`op`) forward and backward from the run's
trace against the measured ones, and for convolutions the transposes: the measured kernels whose
names say NCHW <-> NHWC (`nchwToNhwc`, `nhwcToNchw`, `Transpose`), calls and time, against the
report's conv_transposes_s. Errors are estimated / measured - 1. Exit 0, or 2 on bad input.
"""

import argparse
import contextlib
import json
import os
import platform
import re
import sys
import tempfile
import time

SCRIPT_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(SCRIPT_DIR)
if SCRIPT_DIR not in sys.path:
    sys.path.insert(0, SCRIPT_DIR)

FORMAT = "ddpsim-kernel-cases/1"
TRANSPOSE_RE = re.compile(r"nchwToNhwc|nhwcToNchw|[Tt]ranspose")

# (name, op, module kwargs, input shape, dtypes, layouts). ResNet-50's convolution shapes at batch
# 64 (one of each kind: 1 x 1 stride 1 at 56^2 and 14^2, 3 x 3 at 56^2 and 14^2, the 1 x 1
# stride-2 downsample, the 7 x 7 stem), GPT-2's head with its odd vocabulary and the same padded
# to a multiple of 8, BERT-base's attention and feed-forward GEMMs, attention's batched matmuls
# (8 x 12 heads, 1024 x 1024 x 64), layer norm at BERT-base, GPT-2 and BERT-large sizes.
CONV_DTYPES = ("float32", "bfloat16", "float16")
LAYOUTS = ("contiguous", "channels_last")
CASES = [
    ("conv1x1_56", "conv", {"c": 256, "k": 64, "r": 1, "stride": 1, "pad": 0}, (64, 256, 56, 56), CONV_DTYPES, LAYOUTS),
    ("conv1x1_14", "conv", {"c": 1024, "k": 256, "r": 1, "stride": 1, "pad": 0}, (64, 1024, 14, 14), CONV_DTYPES,
     LAYOUTS),
    ("conv3x3_56", "conv", {"c": 64, "k": 64, "r": 3, "stride": 1, "pad": 1}, (64, 64, 56, 56), CONV_DTYPES, LAYOUTS),
    ("conv3x3_14", "conv", {"c": 256, "k": 256, "r": 3, "stride": 1, "pad": 1}, (64, 256, 14, 14), CONV_DTYPES,
     LAYOUTS),
    ("conv1x1s2_56", "conv", {"c": 256, "k": 512, "r": 1, "stride": 2, "pad": 0}, (64, 256, 56, 56), CONV_DTYPES,
     LAYOUTS),
    ("stem", "conv", {"c": 3, "k": 64, "r": 7, "stride": 2, "pad": 3, "first": True}, (64, 3, 224, 224),
     CONV_DTYPES, LAYOUTS),
    ("head_odd", "linear", {"k": 768, "n": 50257}, (8192, 768), ("float32", "tf32", "bfloat16", "float16"),
     ("contiguous",)),
    ("head_even", "linear", {"k": 768, "n": 50264}, (8192, 768), ("float32", "tf32", "bfloat16", "float16"),
     ("contiguous",)),
    ("attn_proj", "linear", {"k": 768, "n": 768}, (4096, 768), ("float32", "tf32", "bfloat16"), ("contiguous",)),
    ("ffn_up", "linear", {"k": 768, "n": 3072}, (4096, 768), ("float32", "tf32", "bfloat16"), ("contiguous",)),
    ("attn_bmm", "bmm", {}, (96, 1024, 64), ("float32", "bfloat16"), ("contiguous",)),
    ("ln_4096x768", "layernorm", {"h": 768}, (4096, 768), ("float32", "bfloat16"), ("contiguous",)),
    ("ln_8192x768", "layernorm", {"h": 768}, (8192, 768), ("float32", "bfloat16"), ("contiguous",)),
    ("ln_2048x1024", "layernorm", {"h": 1024}, (2048, 1024), ("float32", "bfloat16"), ("contiguous",)),
]
# --quick (the CPU dry run): a few cases at small shapes.
QUICK = {"conv1x1_56": (2, 256, 8, 8), "conv3x3_56": (2, 64, 8, 8), "stem": (2, 3, 32, 32), "attn_proj": (16, 768),
         "attn_bmm": (2, 64, 64), "ln_4096x768": (16, 768)}


def case_module(op, **kw):
    """The module of a case: `pre` (a learnable scale, so that the operator's input requires its
    gradient in the exported graph as in a network; left out when measuring, where the input itself
    requires it) and `op`, the operator. Also the export's callable ("measure_kernels:case_module")."""
    import torch
    nn = torch.nn

    class Bmm(nn.Module):
        def forward(self, x):  # attention's two batched matmuls: (x x^T) x
            return torch.matmul(torch.matmul(x, x.transpose(1, 2)), x)

    if op == "conv":
        mod = nn.Conv2d(kw["c"], kw["k"], kw["r"], stride=kw["stride"], padding=kw["pad"], bias=False)
    elif op == "linear":
        mod = nn.Linear(kw["k"], kw["n"], bias=False)
    elif op == "bmm":
        mod = Bmm()
    elif op == "layernorm":
        mod = nn.LayerNorm(kw["h"])
    else:
        raise ValueError("unknown op %r" % op)

    class Case(nn.Module):
        def __init__(self, first):
            super().__init__()
            self.first = first
            self.pre = None if first else nn.Parameter(torch.ones(()))
            self.op = mod

        def forward(self, x):
            return self.op(x if self.first else x * self.pre)

    return Case(bool(kw.get("first")))


def selected(args):
    out = []
    for name, op, kw, shape, dtypes, layouts in CASES:
        if args.quick and name not in QUICK:
            continue
        if args.only and not re.search(args.only, name):
            continue
        shape = QUICK.get(name, shape) if args.quick else shape
        for dt in dtypes:
            if args.cpu and dt in ("float16", "tf32"):
                continue  # the CPU has no float16 autocast in torch 1.13 and no TF32
            for lay in layouts:
                out.append({"case": name, "op": op, "kwargs": kw, "shape": list(shape), "dtype": dt, "layout": lay})
    return out


def measure_case(torch, c, dev, iters, warmup):
    import device_step as ds
    kw = dict(c["kwargs"])
    model = case_module(c["op"], **kw).op.to(dev)  # the operator alone: the input requires grad
    x = torch.randn(*c["shape"], device=dev)
    if c["layout"] == "channels_last":
        model = model.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    x.requires_grad_(not kw.get("first"))
    half = {"bfloat16": torch.bfloat16, "float16": torch.float16}.get(c["dtype"])
    prev_tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = c["dtype"] == "tf32"
    try:
        def ctx():
            return torch.autocast(dev, dtype=half) if half is not None else contextlib.nullcontext()

        with ctx():
            g = torch.ones_like(model(x))

        def fwd():
            with ctx():
                model(x)

        def full():
            x.grad = None
            model.zero_grad(set_to_none=True)
            with ctx():
                y = model(x)
            y.backward(g)

        for _ in range(warmup):
            full()
        f = ds.kernel_table(torch, fwd, dev, steps=iters, top=1000)
        a = ds.kernel_table(torch, full, dev, steps=iters, top=1000)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = prev_tf32
    fwd_names = {r["name"]: r for r in f["rows"]}
    kernels = []
    for r in a["rows"]:
        fr = fwd_names.get(r["name"])
        kernels.append({"name": r["name"], "calls": r["calls_per_step"], "time_s": r["time_s_per_step"],
                        "forward_calls": fr["calls_per_step"] if fr else 0.0,
                        "forward_time_s": fr["time_s_per_step"] if fr else 0.0})
    return dict(c, forward_s=f["total_s_per_step"], backward_s=a["total_s_per_step"] - f["total_s_per_step"],
                what=a["what"], kernels=kernels)


def measure(args):
    import torch
    dev = "cpu" if args.cpu else "cuda"
    if dev == "cuda" and not torch.cuda.is_available():
        sys.stderr.write("measure_kernels.py: error: no CUDA device (use --cpu for a dry run)\n")
        return 2
    cases = selected(args)
    if not cases:
        sys.stderr.write("measure_kernels.py: error: --only %r selects no case\n" % args.only)
        return 2
    deadline = time.time() + args.budget_s
    doc = {"format": FORMAT, "date_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
           "torch": torch.__version__, "cuda": getattr(torch.version, "cuda", None),
           "cudnn": torch.backends.cudnn.version() if dev == "cuda" else None,
           "device": torch.cuda.get_device_name(0) if dev == "cuda" else platform.processor() or "cpu",
           "iters": args.iters, "warmup": args.warmup, "cases": [], "skipped": []}
    for c in cases:
        label = "%s %s %s" % (c["case"], c["dtype"], c["layout"])
        if time.time() > deadline:
            doc["skipped"].append(dict(c, reason="time budget spent"))
            continue
        t0 = time.time()
        try:
            r = measure_case(torch, c, dev, args.iters, args.warmup)
        except RuntimeError as e:  # e.g. out of memory, an unsupported dtype on this device
            doc["skipped"].append(dict(c, reason=str(e)[:300]))
            sys.stderr.write("measure_kernels.py: %s skipped: %s\n" % (label, str(e)[:200]))
            continue
        doc["cases"].append(r)
        sys.stderr.write("measure_kernels.py: %-36s fwd %9.1f us  bwd %9.1f us  (%.1f s)\n"
                         % (label, 1e6 * r["forward_s"], 1e6 * r["backward_s"], time.time() - t0))
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(tmp, args.out)
    return 0


# ---- comparison (where ddpsim is built) -----------------------------------------------------------

def export_case(c, small):
    """The case's module exported (scripts/export_model.py) with its first dimension `small`."""
    import export_model as em
    shape = [small] + list(c["shape"][1:])
    kw = dict(c["kwargs"], op=c["op"])
    return em.export("measure_kernels:case_module", shape, kwargs=kw, name=c["case"])


def estimate(ddpsim, preset, c, model_path):
    import check_cpu_profile as cp
    scen = {"name": "kernel-case", "model": model_path,
            "cluster": {"name": "one-gpu", "gpu": preset, "nodes": 1, "gpus_per_node": 1},
            "training": {"batch_size": int(c["shape"][0]), "compute_dtype": c["dtype"], "optimizer": "sgd",
                         "loss": "none", "input_bytes_per_sample": "0B",
                         "memory_format": "channels_last" if c["layout"] == "channels_last" else "contiguous_format"},
            "contention": {"enabled": False}, "compute": {"use_measured": False}}
    with tempfile.TemporaryDirectory() as td:
        sp = os.path.join(td, "s.json")
        with open(sp, "w") as f:
            json.dump(scen, f)
        rep, per = cp.run_ddpsim(ddpsim, sp, os.path.join(td, "trace.json"))
    fwd = sum(t for (cat, n), t in per.items() if cat == "forward" and n == "op")
    bwd = sum(t for (cat, n), t in per.items() if cat == "backward" and n == "op")
    return fwd, bwd, rep.get("conv_transposes_s")


OPS = {"conv", "linear", "bmm", "layernorm"}
DTYPES = {"float32", "tf32", "bfloat16", "float16"}


def bad_case(i, c):
    """Why measured case `i` cannot be compared (its JSON path, value and what is allowed), or None."""
    where = "/cases/%d" % i
    if not isinstance(c, dict):
        return "%s: %r is not an object" % (where, c)
    checks = (("op", lambda v: v in OPS, "one of " + ", ".join(sorted(OPS))),
              ("dtype", lambda v: v in DTYPES, "one of " + ", ".join(sorted(DTYPES))),
              ("layout", lambda v: v in LAYOUTS, "one of " + ", ".join(LAYOUTS)),
              ("case", lambda v: isinstance(v, str) and v != "", "a name"),
              ("kwargs", lambda v: isinstance(v, dict), "an object"),
              ("shape", lambda v: isinstance(v, list) and len(v) >= 2 and all(isinstance(x, int) and x > 0 for x in v),
               "a list of at least two positive integers"),
              ("forward_s", lambda v: isinstance(v, (int, float)) and v >= 0, "a number >= 0"),
              ("backward_s", lambda v: isinstance(v, (int, float)), "a number"),
              ("kernels", lambda v: isinstance(v, list), "a list"))
    for key, ok, allowed in checks:
        if key not in c:
            return "%s/%s: missing; expected %s" % (where, key, allowed)
        if not ok(c[key]):
            return "%s/%s: %r is not allowed; expected %s" % (where, key, c[key], allowed)
    return None


def compare(args):
    def fail(msg):
        sys.stderr.write("measure_kernels.py: error: %s: %s\n" % (args.compare, msg))
        return 2

    try:
        with open(args.compare) as f:
            doc = json.load(f)
    except ValueError as e:
        return fail("not JSON (%s)" % e)
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or not isinstance(doc.get("cases"), list):
        return fail("not a %s file (its \"format\" and \"cases\")" % FORMAT)
    for i, c in enumerate(doc["cases"]):
        why = bad_case(i, c)
        if why:
            return fail(why)
    rel = lambda e, m: (e / m - 1.0) if m > 0 else None  # noqa: E731
    rows, exported = [], {}
    with tempfile.TemporaryDirectory() as td:
        for c in doc["cases"]:
            key = c["case"]
            if key not in exported:
                small = 2 if c["op"] in ("conv", "bmm") else 64
                path = os.path.join(td, key + ".json")
                with open(path, "w") as f:
                    json.dump(export_case(c, min(small, int(c["shape"][0]))), f)
                exported[key] = path
            fwd, bwd, tr = estimate(args.ddpsim, args.preset, c, exported[key])
            r = {"case": c["case"], "dtype": c["dtype"], "layout": c["layout"], "shape": c["shape"],
                 "measured_forward_s": c["forward_s"], "measured_backward_s": c["backward_s"],
                 "estimated_forward_s": fwd, "estimated_backward_s": bwd,
                 "forward_error": rel(fwd, c["forward_s"]), "backward_error": rel(bwd, c["backward_s"]),
                 "error": rel(fwd + bwd, c["forward_s"] + c["backward_s"])}
            if c["op"] == "conv":
                tk = [k for k in c["kernels"] if TRANSPOSE_RE.search(k["name"])]
                r["measured_transposes"] = {"calls": sum(k["calls"] for k in tk), "time_s": sum(k["time_s"] for k in tk)}
                r["estimated_transposes_s"] = tr
            rows.append(r)
    out = {"format": FORMAT + "-compare", "preset": args.preset, "measured": {k: doc.get(k) for k in
           ("device", "torch", "cuda", "cudnn", "date_utc")}, "rows": rows}
    if args.output:
        with open(args.output, "w") as f:
            json.dump(out, f, indent=1)
    text = markdown(out)
    if args.md:
        with open(args.md, "w") as f:
            f.write(text)
    sys.stdout.write(text)
    return 0


def markdown(out):
    pct = lambda v: "n/a" if v is None else "%+.1f %%" % (100 * v)  # noqa: E731
    us = lambda s: "n/a" if s is None else "%.1f" % (1e6 * s)  # noqa: E731
    m = out["measured"]
    lines = ["ddpsim (preset %s, per-kernel estimate) against single operators measured on %s (torch %s, cuDNN %s, "
             "%s UTC)" % (out["preset"], m.get("device"), m.get("torch"), m.get("cudnn"), m.get("date_utc")), "",
             "| case | dtype | layout | fwd us measured | estimated | error | bwd us measured | estimated | error | "
             "transposes measured (calls, us) | estimated us |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in out["rows"]:
        mt = r.get("measured_transposes")
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["case"], r["dtype"], r["layout"], us(r["measured_forward_s"]), us(r["estimated_forward_s"]),
            pct(r["forward_error"]), us(r["measured_backward_s"]), us(r["estimated_backward_s"]),
            pct(r["backward_error"]), "%.0f, %.1f" % (mt["calls"], 1e6 * mt["time_s"]) if mt else "",
            us(r.get("estimated_transposes_s")) if mt else ""))
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", help="measure: write the cases here")
    ap.add_argument("--cpu", action="store_true", help="dry run on the CPU")
    ap.add_argument("--quick", action="store_true", help="a few cases at small shapes")
    ap.add_argument("--only", default=None, help="cases whose name matches this regular expression")
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--budget-s", type=float, default=300.0)
    ap.add_argument("--compare", default=None, help="compare this measured file with ddpsim")
    ap.add_argument("--preset", default="h200")
    ap.add_argument("--ddpsim", default=os.path.join(REPO_ROOT, "build", "ddpsim"))
    ap.add_argument("--md", default=None)
    ap.add_argument("-o", "--output", default=None)
    args = ap.parse_args(argv)
    if args.iters < 1 or args.warmup < 0 or args.budget_s <= 0:
        ap.error("--iters must be >= 1, --warmup >= 0 and --budget-s > 0")
    if args.only is not None:
        try:
            re.compile(args.only)
        except re.error as e:
            ap.error("--only %r: not a regular expression (%s)" % (args.only, e))
    if args.compare:
        if not os.path.isfile(args.compare):
            ap.error("--compare %s: no such file" % args.compare)
        return compare(args)
    if not args.out:
        ap.error("give --out FILE (measure) or --compare FILE")
    if not os.path.isdir(os.path.dirname(os.path.abspath(args.out))):
        ap.error("--out %s: its folder does not exist" % args.out)
    return measure(args)


if __name__ == "__main__":
    sys.exit(main())
