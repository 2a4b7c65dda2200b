#!/usr/bin/python3
"""`ddpsim validate` of each results file as written and with calibration.hook_callback_s removed
(no callback charged, as before 6 Dec 2026). From the repository root:

    python3 bench/results/hook-gil-2026-12-06/ab_callback.py FILE.json ...
"""
import json
import os
import subprocess
import sys
import tempfile


def validate(doc):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(doc, f)
        path = f.name
    try:
        r = subprocess.run(["build/ddpsim", "validate", path, "--json", "-"], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, timeout=600)
    finally:
        os.unlink(path)
    return json.loads(r.stdout)


def main(files):
    for fn in files:
        with open(fn) as f:
            doc = json.load(f)
        before = json.loads(json.dumps(doc))
        before["calibration"].pop("hook_callback_s", None)
        a, b = validate(before), validate(doc)
        cal = doc["calibration"]
        cb = cal.get("hook_callback_s")
        print(os.path.basename(fn), "callback %.0f us (samples %s)" % (
            1e6 * cb, " ".join("%.0f" % (1e6 * s) for s in cal.get("hook_callback_samples_s") or []))
            if cb else "no callback field", "call %.0f us" % (1e6 * (cal.get("allreduce_call_s") or 0)))
        for ca, cb_ in zip(a["cases"], b["cases"]):
            line = "  %-8s step err %+.1f -> %+.1f %%" % (ca["bucket_cap"], 100 * ca["step_time_error"],
                                                        100 * cb_["step_time_error"])
            o1, o2 = ca.get("ddp_overhead"), cb_.get("ddp_overhead")
            if o1 and o1.get("error_points") is not None:
                line += ";  DDP cost meas %.2f %%, pred %.2f -> %.2f %% (err %+.2f -> %+.2f pt)" % (
                    100 * o1["measured"], 100 * o1["predicted"], 100 * o2["predicted"], o1["error_points"],
                    o2["error_points"])
            print(line)


if __name__ == "__main__":
    main(sys.argv[1:])
