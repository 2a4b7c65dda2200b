#!/usr/bin/python3
"""Measure a model's per-layer forward/backward times and write a ddpsim-model/1 file with them.

Usage:
  /usr/bin/python3 scripts/profile_model.py torchvision.models:resnet50 --input 8x3x224x224 \
      -o resnet50-measured.json [--device cuda|cpu] [--threads N] [--iters 5] [--warmup 2] \
      [--model-json EXISTING.json] [--input-dtype float32|int64] [--vocab N] [--kwargs JSON] \
      [--set-to-none auto|true|false] [--no-scale] [--check-json CHECK.json] [--no-verify]
      [--channels-last] [--autocast bfloat16|float16]

SPEC is "module.path:callable", as for scripts/export_model.py.  The model is exported in-process
(export_model.export: one traced forward/backward on the CPU, at the --input batch), or
--model-json names an existing export of the same model, which is checked against the model
(parameter names and shapes, input shape beyond the batch, and layer names).  Then
ddpsim_profile.measure_profile_with_check times every layer's forward and backward on --device
(median of --iters passes after --warmup untimed ones; per-layer medians scaled so they add up to
the un-hooked whole passes unless --no-scale) and the output is the export plus `fwd_time_s` /
`bwd_time_s` on every layer, `measured_on` and `measured_batch_size` -- a file `ddpsim run`
prefers over its roofline estimate (compute.use_measured).  When build/ddpsim exists the file is
checked with `ddpsim show` (skip with --no-verify).

--set-to-none: how gradients are cleared in the training loop being modelled (see
ddpsim_profile.measure_profile_with_check): `auto` (default) is the installed torch's
optimizer.zero_grad() default (False in torch 1.13, True from 2.0).

Exit status: 0 on success, 2 on a usage/model error (message on stderr), 1 if ddpsim rejects the
written file.
"""

import argparse
import inspect
import json
import os
import subprocess
import sys
import time

SCRIPT_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(SCRIPT_DIR)
if SCRIPT_DIR not in sys.path:
    sys.path.insert(0, SCRIPT_DIR)
import export_model as em  # noqa: E402
import ddpsim_profile as dp  # noqa: E402

DDPSIM = os.path.join(REPO_ROOT, "build", "ddpsim")


class UsageError(Exception):
    """A user-facing error: exit status 2."""


def _die(msg, code=2):
    sys.stderr.write("profile_model.py: error: %s\n" % msg)
    sys.exit(code)


def default_set_to_none():
    """The installed torch's optimizer.zero_grad() default (False in 1.13, True in >= 2.0)."""
    import torch
    try:
        d = inspect.signature(torch.optim.Optimizer.zero_grad).parameters["set_to_none"].default
        return bool(d)
    except (KeyError, ValueError, TypeError):
        return int(torch.__version__.split(".")[0]) >= 2


def resolve_device(device):
    import torch
    if device in (None, "", "auto"):
        return "cuda" if torch.cuda.is_available() else "cpu"
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as e:
        raise UsageError("bad --device %r: %s (use cuda, cuda:N or cpu)" % (device, e))
    if dev.type not in ("cpu", "cuda"):
        raise UsageError("bad --device %r: only cpu and cuda are supported" % device)
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise UsageError("--device %s: CUDA is not available in this torch (%s)"
                             % (device, torch.__version__))
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise UsageError("--device %s: only %d CUDA device(s)" % (device, torch.cuda.device_count()))
    return str(dev)


def load_model_json(path):
    try:
        with open(path) as f:
            doc = json.load(f)
    except OSError as e:
        raise UsageError("cannot read --model-json %s: %s" % (path, e))
    except ValueError as e:
        raise UsageError("--model-json %s is not valid JSON: %s" % (path, e))
    if not isinstance(doc, dict) or doc.get("format") != em.FORMAT:
        raise UsageError("--model-json %s: not a %s file (format %r)"
                         % (path, em.FORMAT, doc.get("format") if isinstance(doc, dict) else None))
    for k in ("params", "layers", "batch_size"):
        if k not in doc:
            raise UsageError("--model-json %s: missing %r" % (path, k))
    return doc


def check_model_json(doc, model, shape, input_dtype, path):
    """The existing export must describe this model at this input (the batch may differ: the
    output keeps the export's counts and batch_size and says measured_batch_size).  Layer names
    are checked by measure_profile."""
    plist = em.ddp_param_list(model)
    want = [(n, list(p.shape)) for n, p in plist]
    got = [(p.get("name"), list(p.get("shape", []))) for p in doc["params"]]
    if got != want:
        i = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
        raise UsageError("--model-json %s does not match the model: parameter %d is %s in the file "
                         "but %s in the model (%d vs %d parameter tensors)"
                         % (path, i, got[i] if i < len(got) else None,
                            want[i] if i < len(want) else None, len(got), len(want)))
    ew = doc.get("exported_with", {}) or {}
    ishape = ew.get("input_shape")
    if ishape and list(ishape[1:]) != list(shape[1:]):
        raise UsageError("--model-json %s was exported at input %s, --input is %s: only the batch "
                         "(first) dimension may differ (sequence length and image size are baked "
                         "into the counts)" % (path, "x".join(map(str, ishape)),
                                               "x".join(map(str, shape))))
    idt = ew.get("input_dtype")
    canon = {"float": "float32", "fp32": "float32", "half": "float16", "long": "int64"}
    if idt and canon.get(idt, idt) != canon.get(input_dtype, input_dtype):
        raise UsageError("--model-json %s was exported with input dtype %s, --input-dtype is %s"
                         % (path, idt, input_dtype))
    if ew.get("method") == "meta":
        sys.stderr.write("profile_model.py: note: %s was exported on the meta device; its layers "
                         "must still match the traced model\n" % path)


def run_profile(spec, shape, input_dtype="float32", device=None, threads=0, iters=5, warmup=2,
                model_json=None, model_json_path="--model-json", kwargs=None, vocab=None, seed=0,
                name=None, allow_unused=False, set_to_none=None, scale_to_whole=True, log=None,
                channels_last=False, autocast=None):
    """Export (or take model_json), build the model and input, measure.  Returns
    (profile_doc, check, export_doc, info) where export_doc is the model without times and
    info has the device, the thread count and the wall times of the steps."""
    torch = em._import_torch()
    if threads and threads > 0:
        torch.set_num_threads(int(threads))
    if iters < 1:
        raise UsageError("--iters must be >= 1 (got %d)" % iters)
    if warmup < 0:
        raise UsageError("--warmup must be >= 0 (got %d)" % warmup)
    dev = resolve_device(device)
    if set_to_none is None:
        set_to_none = default_set_to_none()
    info = {"device": dev, "threads": int(torch.get_num_threads()), "set_to_none": bool(set_to_none)}
    t0 = time.time()
    if model_json is None:
        doc = em.export(spec, shape, input_dtype, name, kwargs, vocab, seed, allow_unused=allow_unused)
    else:
        doc = model_json
    info["export_s"] = time.time() - t0
    model = em.load_model(spec, kwargs, seed=seed)
    x = em.make_input(model, shape, input_dtype, vocab=vocab, seed=seed)
    if model_json is not None:
        check_model_json(doc, model, shape, input_dtype, model_json_path)
    if channels_last:
        # As the PyTorch tutorial "(beta) Channels Last Memory Format in PyTorch" does: the model's
        # 4-d parameters and the input in NHWC; convolutions then run and return channels_last.
        if x.dim() != 4:
            raise UsageError("--channels-last needs a 4-d image input (N x C x H x W); --input has %d dimensions"
                             % x.dim())
        model = model.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    if log:
        log("measuring %d layers on %s (%d thread(s)), %d warm-up + %d timed iterations ..."
            % (len(doc["layers"]), dev, info["threads"], warmup, iters))
    t1 = time.time()
    torch.manual_seed(seed)
    if autocast not in (None, "bfloat16", "float16"):
        raise UsageError("--autocast %r: bfloat16 or float16" % autocast)
    if autocast:
        # Mixed precision as the PyTorch AMP recipe runs it: the model's forward under
        # torch.autocast, backward() called outside it (the engine would carry the autocast state
        # into the backward otherwise; the backward ops take the forward's dtypes). The instance's
        # forward is wrapped, so module names and hooks stay those of the model.
        fwd = model.forward
        amp_dtype = getattr(torch, autocast)
        amp_device = torch.device(dev).type

        def forward_under_autocast(*a, **k):
            with torch.autocast(amp_device, dtype=amp_dtype):
                return fwd(*a, **k)

        model.forward = forward_under_autocast
    try:
        prof, check = dp.measure_profile_with_check(model, x, doc, device=dev, warmup=warmup,
                                                    iters=iters, scale_to_whole=scale_to_whole,
                                                    set_to_none=set_to_none)
    except dp.ProfileError as e:
        raise UsageError(str(e))
    if autocast:
        prof["measured_dtype"] = autocast
    info["measure_s"] = time.time() - t1
    if channels_last:
        prof["measured_memory_format"] = "channels_last"  # absent: contiguous_format, PyTorch's default
    # the export without measured times (what ddpsim's roofline estimate uses)
    base = json.loads(json.dumps(prof))
    for l in base["layers"]:
        l.pop("fwd_time_s", None)
        l.pop("bwd_time_s", None)
    base.pop("measured_on", None)
    base.pop("measured_batch_size", None)
    base.pop("measured_memory_format", None)
    base.pop("measured_dtype", None)
    return prof, check, base, info


def summary(prof, check, info):
    """Text summary: whole passes vs per-layer sums, and the layer types."""
    ms = lambda s: "%9.2f ms" % (s * 1e3)  # noqa: E731
    lines = ["profile of %s (batch %d) on %s; gradients set_to_none=%s"
             % (prof.get("name"), prof["measured_batch_size"], prof["measured_on"], info["set_to_none"]),
             "                        whole pass   layer sum (raw)   scale   hooked pass",
             "  forward   %s   %s      %6.3f   %s" % (ms(check["forward_whole_s"]),
                                                     ms(check["forward_sum_layers_s"]),
                                                     check["forward_scale"], ms(check["forward_hooked_s"])),
             "  backward  %s   %s      %6.3f   %s" % (ms(check["backward_whole_s"]),
                                                     ms(check["backward_sum_layers_s"]),
                                                     check["backward_scale"], ms(check["backward_hooked_s"])),
             "  (backward whole includes the loss's own nodes: %s; per-layer times written: "
             "forward %s, backward %s)" % (ms(check["backward_outside_layers_s"]).strip(),
                                           ms(sum(l["fwd_time_s"] for l in prof["layers"])).strip(),
                                           ms(sum(l["bwd_time_s"] for l in prof["layers"])).strip())]
    by = {}
    for l in prof["layers"]:
        e = by.setdefault(l["type"], [0, 0.0, 0.0])
        e[0] += 1
        e[1] += l["fwd_time_s"]
        e[2] += l["bwd_time_s"]
    tot = sum(e[1] + e[2] for e in by.values()) or 1.0
    lines.append("  %-12s %6s %12s %12s %7s" % ("type", "layers", "forward", "backward", "share"))
    for t, e in sorted(by.items(), key=lambda kv: -(kv[1][1] + kv[1][2])):
        lines.append("  %-12s %6d %s %s %6.1f%%" % (t, e[0], ms(e[1]), ms(e[2]), 100.0 * (e[1] + e[2]) / tot))
    return "\n".join(lines)


def verify_with_ddpsim(path, ddpsim=DDPSIM):
    """Run `ddpsim show PATH`; returns None (accepted), or the error text.  Skipped (returns
    None) when the binary does not exist."""
    if not os.path.isfile(ddpsim):
        return None
    r = subprocess.run([ddpsim, "show", path, "--json", "-"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True, timeout=300)
    if r.returncode != 0:
        return (r.stderr or r.stdout).strip()
    return None


def build_parser():
    ap = argparse.ArgumentParser(
        description="Measure a torch.nn.Module's per-layer forward/backward times and write a "
                    "ddpsim-model/1 file with them (fwd_time_s/bwd_time_s).")
    ap.add_argument("spec", help="module.path:callable, e.g. torchvision.models:resnet50")
    ap.add_argument("-o", "--output", required=True, help="output ddpsim-model/1 JSON ('-': stdout)")
    ap.add_argument("--input", required=True, help="input shape, first dim = batch, e.g. 8x3x224x224")
    ap.add_argument("--input-dtype", default="float32", help="float32 (default) or int64 (token ids)")
    ap.add_argument("--vocab", type=int, default=None, help="token-id range for int64 inputs")
    ap.add_argument("--kwargs", default=None, help="JSON object of keyword arguments for the callable")
    ap.add_argument("--name", default=None, help="model name (default: the callable's name)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--allow-unused", action="store_true",
                    help="export parameters the forward never uses (see export_model.py)")
    ap.add_argument("--device", default=None, help="cuda, cuda:N or cpu (default: cuda if available)")
    ap.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0: torch default)")
    ap.add_argument("--iters", type=int, default=5, help="timed iterations (median; default 5)")
    ap.add_argument("--warmup", type=int, default=2, help="untimed warm-up iterations (default 2)")
    ap.add_argument("--model-json", default=None,
                    help="use this existing export of the model (checked against it) instead of exporting")
    ap.add_argument("--set-to-none", default="auto", choices=("auto", "true", "false"),
                    help="zero_grad(set_to_none=...) of the loop being modelled (default: torch's default)")
    ap.add_argument("--no-scale", action="store_true",
                    help="keep the raw per-layer medians (do not scale them to the whole passes)")
    ap.add_argument("--check-json", default=None, help="also write the check figures to this JSON file")
    ap.add_argument("--no-verify", action="store_true", help="do not run `ddpsim show` on the output")
    ap.add_argument("--autocast", default=None, choices=("bfloat16", "float16"),
                    help="measure under torch.autocast in this dtype (mixed precision; no GradScaler); "
                         "the file records measured_dtype")
    ap.add_argument("--channels-last", action="store_true",
                    help="measure with the model and input in torch.channels_last (NHWC); the file records "
                         "measured_memory_format")
    return ap


def main(argv=None):
    args = build_parser().parse_args(argv)
    log = lambda m: sys.stderr.write("profile_model.py: %s\n" % m)  # noqa: E731
    try:
        if args.threads < 0:
            raise UsageError("--threads must be >= 0 (got %d)" % args.threads)
        shape = em.parse_shape(args.input)
        kwargs = em.parse_kwargs(args.kwargs)
        if args.output != "-":
            d = os.path.dirname(os.path.abspath(args.output))
            if not os.path.isdir(d):
                raise UsageError("output folder %s does not exist" % d)
        mj = load_model_json(args.model_json) if args.model_json else None
        stn = {"auto": None, "true": True, "false": False}[args.set_to_none]
        prof, check, _, info = run_profile(
            args.spec, shape, args.input_dtype, args.device, args.threads, args.iters, args.warmup,
            model_json=mj, model_json_path=args.model_json, kwargs=kwargs, vocab=args.vocab,
            seed=args.seed, name=args.name, allow_unused=args.allow_unused, set_to_none=stn,
            scale_to_whole=not args.no_scale, log=log, channels_last=args.channels_last,
            autocast=args.autocast)
    except (UsageError, em.ExportError, dp.ProfileError) as e:
        _die(str(e))
    em.write_json(prof, args.output)
    if args.check_json:
        check = dict(check, **{"export_s": info["export_s"], "measure_s": info["measure_s"]})
        with open(args.check_json, "w") as f:
            json.dump(check, f, indent=1)
            f.write("\n")
    sys.stderr.write(summary(prof, check, info) + "\n")
    if args.output != "-" and not args.no_verify:
        err = verify_with_ddpsim(args.output)
        if err:
            _die("ddpsim does not accept %s: %s" % (args.output, err), code=1)
        if os.path.isfile(DDPSIM):
            log("%s accepted by `ddpsim show`" % args.output)
    log("wrote %s (%d layers, measure %.1f s)" % (args.output, len(prof["layers"]), info["measure_s"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
