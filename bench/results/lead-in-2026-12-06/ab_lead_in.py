#!/usr/bin/python3
"""A/B of --lead-in on the same runs: `ddpsim validate` on each file as written (the timed comm
steps, each after an untimed comm step of its own model) and on a copy with the lead-in steps
(`lead_in_step_times_s`: the first comm step of each round, what --lead-in 0 timed) in their
place; prints each case's step-time error both ways and the summary over all cases.

Usage: /usr/bin/python3 ab_lead_in.py [--ddpsim build/ddpsim] FILE.json ...
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ddpsim", default="build/ddpsim")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    rows = {"timed": [], "lead-in": []}
    for f in args.files:
        with open(f) as fh:
            doc = json.load(fh)
        for c in doc["step"]["cases"]:
            c["step_times_s"] = c["lead_in_step_times_s"]
            c["step_time_s"] = statistics.median(c["step_times_s"])
            c["exposed_comm_s"] = c["step_time_s"] - c["compute_only_s"]
        with tempfile.TemporaryDirectory() as d:
            alt = os.path.join(d, os.path.basename(f))
            with open(alt, "w") as fh:
                json.dump(doc, fh)
            for label, path in (("timed", f), ("lead-in", alt)):
                v = validate(args.ddpsim, path)
                errs = [100 * c["step_time_error"] for c in v["cases"]]
                rows[label] += errs
                print("%-28s %-8s %s" % (os.path.basename(f), label, " ".join("%+.1f" % e for e in errs)))
    for label, e in rows.items():
        print("%-8s cases %d: median |err| %.1f %%, mean %+.1f %%, beyond 3 %% %d, beyond 5 %% %d"
              % (label, len(e), statistics.median(abs(x) for x in e), statistics.mean(e),
                 sum(abs(x) > 3 for x in e), sum(abs(x) > 5 for x in e)))


if __name__ == "__main__":
    main()
