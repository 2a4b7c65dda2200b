#!/usr/bin/python3
"""A/B of the lead-in pass before the profile's whole passes, on the same runs: `ddpsim validate`
on each file as written (its profile scaled to the medians of the passes timed after an untimed
pass of the profiled model, each round) and on a copy whose profile is scaled as before 6 Dec 2026
(the round's first two passes after the sweep: the untimed lead-in pass, kept in
`profile_check.lead_in_*_whole_iters_s`, and the first timed one). Prints per file the two
forward medians, each case's step-time and compute-only errors both ways, and the summary.

Usage: /usr/bin/python3 ab_whole_lead_in.py [--ddpsim build/ddpsim] FILE.json ...
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile


def validate(ddpsim, path):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "v.json")
        subprocess.run([ddpsim, "validate", path, "--json", out], capture_output=True, timeout=600, check=False)
        with open(out) as f:
            return json.load(f)


def before_method(doc):
    """The file's profile rescaled to the passes the method before 6 Dec timed: per round the lead-in
    pass and the first timed pass (rescale_to_whole's rule: forward layers sum to the median forward,
    backward layers to the median backward less the backward outside the layers)."""
    pc = doc["step"]["profile_check"]
    lf, lb = pc["lead_in_forward_whole_iters_s"], pc["lead_in_backward_whole_iters_s"]
    wf, wb = pc["scaled_forward_whole_iters_s"], pc["scaled_backward_whole_iters_s"]
    per = len(wf) // len(lf)
    of = [x for i, l in enumerate(lf) for x in (l, wf[i * per])]
    ob = [x for i, l in enumerate(lb) for x in (l, wb[i * per])]
    out = pc["backward_outside_layers_s"]
    rf = statistics.median(of) / statistics.median(wf)
    rb = (statistics.median(ob) - out) / (statistics.median(wb) - out)
    for layer in doc["step"]["model"]["layers"]:
        layer["fwd_time_s"] *= rf
        layer["bwd_time_s"] *= rb
    return rf, rb


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ddpsim", default="build/ddpsim")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    rows = {"after lead-in": ([], []), "before": ([], [])}
    for f in args.files:
        with open(f) as fh:
            doc = json.load(fh)
        rf, rb = before_method(doc)
        print("%-26s scale before / after lead-in: forward %.4f, backward %.4f" % (os.path.basename(f), rf, rb))
        with tempfile.TemporaryDirectory() as d:
            alt = os.path.join(d, os.path.basename(f))
            with open(alt, "w") as fh:
                json.dump(doc, fh)
            for label, path in (("after lead-in", f), ("before", alt)):
                v = validate(args.ddpsim, path)
                errs = [100 * c["step_time_error"] for c in v["cases"]]
                co = [100 * (c["compute_only_parts"]["compute_only_predicted_s"]
                             / c["compute_only_parts"]["compute_only_measured_s"] - 1) for c in v["cases"]]
                rows[label][0].extend(errs)
                rows[label][1].extend(co)
                print("  %-14s step %s | compute-only %s" % (label, " ".join("%+.1f" % e for e in errs),
                                                           " ".join("%+.1f" % e for e in co)))
    for label, (e, co) in rows.items():
        print("%-14s cases %d: step median |err| %.1f %%, mean %+.1f %%, beyond 3 %% %d, beyond 5 %% %d; "
              "compute-only median |err| %.1f %%, mean %+.1f %%"
              % (label, len(e), statistics.median(abs(x) for x in e), statistics.mean(e),
                 sum(abs(x) > 3 for x in e), sum(abs(x) > 5 for x in e),
                 statistics.median(abs(x) for x in co), statistics.mean(co)))


if __name__ == "__main__":
    main()
