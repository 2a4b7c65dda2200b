#!/usr/bin/python3
"""Compare ddpsim's DDP bucket assignment with what real torch DDP does.

  /usr/bin/python3 tests/python/check_buckets_vs_ddp.py --ddpsim build/ddpsim \
      --spec torchvision.models:resnet50 --model-json models/resnet50.json \
      --input 2x3x224x224 --caps default,1,10,50 [--find-unused-parameters] [--kwargs JSON]

For each cap: runs scripts/ddp_reference_buckets.py (real DDP, gloo, CPU, 2 ranks) and
`ddpsim buckets --model M [--bucket-cap-mb X] --json -`, then compares the steady-state buckets
one by one: bytes, the set of parameter indices and (unless --ignore-order) their order inside
the bucket.  Iteration-1 buckets are compared too but only reported (--strict-iteration1 makes a
mismatch fatal), because the first-iteration layout depends on the torch release.

Exit status: 0 all caps match, 1 mismatch, 2 usage/tool error, 77 torch not installed (skip).
"""

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
REF_SCRIPT = os.path.join(REPO, "scripts", "ddp_reference_buckets.py")


def _err(msg, code=2):
    sys.stderr.write("check_buckets_vs_ddp: %s\n" % msg)
    sys.exit(code)


def parse_caps(text):
    caps = []
    for c in text.split(","):
        c = c.strip()
        if not c:
            continue
        if c.lower() in ("default", "none", "-"):
            caps.append(None)
        else:
            try:
                float(c)
            except ValueError:
                _err("bad cap %r in --caps (use 'default' or a number of MiB)" % c)
            caps.append(c)
    if not caps:
        _err("--caps is empty")
    return caps


def cap_label(cap):
    return "default" if cap is None else cap


def run_reference(args, cap):
    cmd = [sys.executable, REF_SCRIPT, args.spec, "--input", args.input,
           "--input-dtype", args.input_dtype, "--world-size", str(args.world_size),
           "--iterations", str(args.iterations), "-o", "-"]
    if args.kwargs:
        cmd += ["--kwargs", args.kwargs]
    if cap is not None:
        cmd += ["--bucket-cap-mb", cap]
    if args.find_unused_parameters:
        cmd += ["--find-unused-parameters"]
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                           cwd=REPO, timeout=1200)
    except subprocess.TimeoutExpired as e:
        _err("reference run timed out after %d s: %s\n%s" % (e.timeout, " ".join(cmd), (e.stderr or "")[-3000:]))
    if p.returncode != 0:
        _err("reference run failed (exit %d): %s\n%s" % (p.returncode, " ".join(cmd), p.stderr[-3000:]))
    try:
        return json.loads(p.stdout)
    except ValueError as e:
        _err("reference output is not JSON (%s): %s" % (e, p.stdout[:500]))


def extract_json(text):
    """Parse stdout; tolerate log lines before/after the JSON object."""
    text = text.strip()
    try:
        return json.loads(text)
    except ValueError:
        pass
    start = text.find("{")
    end = text.rfind("}")
    if start >= 0 and end > start:
        return json.loads(text[start:end + 1])
    raise ValueError("no JSON object in output")


def torch_major_minor():
    import torch
    major, minor = torch.__version__.split(".")[:2]
    return "%s.%s" % (major, minor)


def run_ddpsim(args, cap):
    cmd = [args.ddpsim, "buckets", "--model", args.model_json]
    # ddpsim follows the installed torch's first-bucket rule (it changed in PyTorch 2.x).
    cmd += ["--set", "ddp.pytorch_version=\"%s\"" % torch_major_minor()]
    if args.find_unused_parameters:
        cmd += ["--set", "ddp.find_unused_parameters=true"]
    if cap is not None:
        cmd += ["--bucket-cap-mb", cap]
    cmd += ["--json", "-"]
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                           cwd=REPO, timeout=300)
    except subprocess.TimeoutExpired as e:
        _err("ddpsim timed out after %d s: %s" % (e.timeout, " ".join(cmd)))
    except OSError as e:
        _err("cannot run ddpsim %s: %s" % (args.ddpsim, e))
    if p.returncode != 0:
        _err("ddpsim failed (exit %d): %s\n%s" % (p.returncode, " ".join(cmd), p.stderr[-3000:]))
    try:
        doc = extract_json(p.stdout)
    except ValueError as e:
        _err("ddpsim output is not JSON (%s): %s" % (e, p.stdout[:500]))
    for key in ("steady_state",):
        if key not in doc or not isinstance(doc[key], list):
            _err("ddpsim JSON has no list %r (keys: %s)" % (key, ", ".join(sorted(doc))))
    return doc


def normalise(buckets, where):
    out = []
    for i, b in enumerate(buckets):
        if not isinstance(b, dict) or "bytes" not in b or "param_indices" not in b:
            _err("%s bucket %d lacks 'bytes'/'param_indices': %r" % (where, i, b))
        out.append({"bytes": int(b["bytes"]), "param_indices": [int(x) for x in b["param_indices"]]})
    return out


def _plist(idx, pname):
    if not idx:
        return "-"
    return ", ".join(pname(i) for i in idx[:10]) + (" ... (%d more)" % (len(idx) - 10) if len(idx) > 10 else "")


def compare(ref, sim, names, check_order):
    """Returns a list of human-readable differences (empty when equal)."""
    diffs = []
    if len(ref) != len(sim):
        diffs.append("bucket count: ddp %d, ddpsim %d" % (len(ref), len(sim)))

    def pname(i):
        return "%d(%s)" % (i, names[i]) if names and 0 <= i < len(names) else str(i)

    for k in range(max(len(ref), len(sim))):
        if k >= len(ref):
            b = sim[k]
            diffs.append("bucket %d: only in ddpsim: %d bytes, %d params %s"
                         % (k, b["bytes"], len(b["param_indices"]), b["param_indices"][:12]))
            continue
        if k >= len(sim):
            b = ref[k]
            diffs.append("bucket %d: only in ddp: %d bytes, %d params %s"
                         % (k, b["bytes"], len(b["param_indices"]), b["param_indices"][:12]))
            continue
        r, s = ref[k], sim[k]
        if r["bytes"] != s["bytes"]:
            diffs.append("bucket %d bytes: ddp %d, ddpsim %d (diff %+d)"
                         % (k, r["bytes"], s["bytes"], s["bytes"] - r["bytes"]))
        rs, ss = set(r["param_indices"]), set(s["param_indices"])
        if rs != ss:
            only_r = sorted(rs - ss)
            only_s = sorted(ss - rs)
            diffs.append("bucket %d params: %d in ddp, %d in ddpsim; only in ddp: %s; only in ddpsim: %s"
                         % (k, len(rs), len(ss), _plist(only_r, pname), _plist(only_s, pname)))
        elif check_order and r["param_indices"] != s["param_indices"]:
            first = next(j for j, (a, b) in enumerate(zip(r["param_indices"], s["param_indices"])) if a != b)
            diffs.append("bucket %d order differs at position %d: ddp %s, ddpsim %s"
                         % (k, first, r["param_indices"][first:first + 6], s["param_indices"][first:first + 6]))
    return diffs


def main(argv=None):
    ap = argparse.ArgumentParser(description="Compare ddpsim buckets with real torch DDP buckets.")
    ap.add_argument("--ddpsim", required=True, help="path to the ddpsim binary")
    ap.add_argument("--spec", required=True, help="model spec, e.g. torchvision.models:resnet50")
    ap.add_argument("--model-json", required=True, help="exported model, e.g. models/resnet50.json")
    ap.add_argument("--input", default="2x3x224x224")
    ap.add_argument("--input-dtype", default="float32")
    ap.add_argument("--kwargs", default=None,
                    help="JSON kwargs for the model callable in the reference run (the ddpsim side "
                         "reads --model-json, which must have been exported with the same kwargs)")
    ap.add_argument("--find-unused-parameters", action="store_true",
                    help="run DDP with find_unused_parameters=True and pass "
                         "--set ddp.find_unused_parameters=true to ddpsim")
    ap.add_argument("--caps", default="default,1,10,50",
                    help="comma-separated bucket_cap_mb values; 'default' = DDP's default")
    ap.add_argument("--world-size", type=int, default=2)
    ap.add_argument("--iterations", type=int, default=3)
    ap.add_argument("--ignore-order", action="store_true", help="compare bucket contents as sets only")
    ap.add_argument("--strict-iteration1", action="store_true",
                    help="fail on iteration-1 mismatches too (default: report only)")
    args = ap.parse_args(argv)

    try:
        import torch  # noqa: F401
    except ImportError:
        print("SKIP: python3-torch not installed")
        return 77
    if not os.path.isfile(args.model_json):
        _err("no such model JSON: %s" % args.model_json)
    if not (os.path.isfile(args.ddpsim) and os.access(args.ddpsim, os.X_OK)):
        _err("ddpsim binary not found or not executable: %s" % args.ddpsim)
    with open(args.model_json) as f:
        model = json.load(f)
    names = [p.get("name", "?") for p in model.get("params", [])]
    caps = parse_caps(args.caps)

    failed = False
    for cap in caps:
        ref = run_reference(args, cap)
        sim = run_ddpsim(args, cap)
        ref_ss = normalise(ref["steady_state"], "ddp steady_state")
        sim_ss = normalise(sim["steady_state"], "ddpsim steady_state")
        diffs = compare(ref_ss, sim_ss, names, not args.ignore_order)
        it1_diffs = []
        if "iteration1" in sim and isinstance(sim["iteration1"], list):
            it1_diffs = compare(normalise(ref["iteration1"], "ddp iteration1"),
                                normalise(sim["iteration1"], "ddpsim iteration1"), names,
                                not args.ignore_order)
        label = cap_label(cap)
        if diffs or (args.strict_iteration1 and it1_diffs):
            failed = True
            print("MISMATCH cap=%s (steady state: ddp %d bucket(s), ddpsim %d bucket(s))"
                  % (label, len(ref_ss), len(sim_ss)))
            for d in diffs:
                print("  steady_state: " + d)
            print("  ddp    bytes: %s" % [b["bytes"] for b in ref_ss])
            print("  ddpsim bytes: %s" % [b["bytes"] for b in sim_ss])
        else:
            print("OK cap=%s: %d steady-state bucket(s) match (bytes %s)"
                  % (label, len(ref_ss), ",".join(str(b["bytes"]) for b in ref_ss)))
        if it1_diffs:
            tag = "  iteration1: " if args.strict_iteration1 else "  note (iteration1, not fatal): "
            for d in it1_diffs:
                print(tag + d)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
