"""scripts/measure_kernels.py: its CPU dry run (the method end to end at small shapes), the comparison
with ddpsim on what the dry run wrote, and its argument errors. The GPU run itself is left to the
device (scripts/device_run.sh's header)."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SCRIPT = os.path.join(REPO, "scripts", "measure_kernels.py")
DDPSIM = os.environ.get("DDPSIM_BIN", os.path.join(REPO, "build", "ddpsim"))
sys.path.insert(0, os.path.join(REPO, "scripts"))

try:
    import torch  # noqa: F401
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False


def run(*args, timeout=240):
    return subprocess.run([sys.executable, SCRIPT] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=timeout, cwd=REPO)


@unittest.skipUnless(HAVE_TORCH, "needs torch")
class MeasureKernelsTest(unittest.TestCase):
    def test_dry_run_then_compare(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "k.json")
            r = run("--cpu", "--quick", "--only", "conv1x1_56|stem|ln_", "--iters", "1", "--warmup", "1",
                    "--out", out)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(out) as f:
                doc = json.load(f)
            self.assertEqual(doc["format"], "ddpsim-kernel-cases/1")
            got = {(c["case"], c["dtype"], c["layout"]) for c in doc["cases"]}
            # float16 and tf32 are left out on the CPU; both layouts for convolutions only
            self.assertEqual(got, {(n, dt, lay) for n in ("conv1x1_56", "stem") for dt in ("float32", "bfloat16")
                                   for lay in ("contiguous", "channels_last")}
                             | {("ln_4096x768", dt, "contiguous") for dt in ("float32", "bfloat16")})
            for c in doc["cases"]:
                self.assertGreater(c["forward_s"], 0, c["case"])
                self.assertTrue(c["kernels"], c["case"])
                # the forward's kernels are a subset of the forward + backward's, by name
                self.assertTrue(all(k["forward_calls"] <= k["calls"] + 1e-9 for k in c["kernels"]))
            conv = [c for c in doc["cases"] if c["case"] == "conv1x1_56" and c["dtype"] == "float32"]
            # the convolution's weight gradient and input gradient both ran (the input required it)
            names = {k["name"] for k in conv[0]["kernels"] if k["forward_calls"] == 0}
            self.assertTrue(any("backward" in n for n in names), names)
            if not os.path.exists(DDPSIM):
                self.skipTest("no build/ddpsim")
            cmp_json, md = os.path.join(d, "c.json"), os.path.join(d, "c.md")
            r = run("--compare", out, "--preset", "h200", "--ddpsim", DDPSIM, "-o", cmp_json, "--md", md)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(cmp_json) as f:
                rows = json.load(f)["rows"]
            self.assertEqual(len(rows), len(doc["cases"]))
            for row in rows:
                self.assertGreater(row["estimated_forward_s"], 0, row)
                if row["case"] != "stem":  # the first convolution has no input gradient, still a weight gradient
                    self.assertGreater(row["estimated_backward_s"], 0, row)
            # ddpsim prices cuDNN's NCHW <-> NHWC transposes for contiguous tensor-core convolutions
            # (TF32 on an H200 in float32) and none in channels_last
            for row in rows:
                if row["case"] == "conv1x1_56":
                    if row["layout"] == "contiguous":
                        self.assertGreater(row["estimated_transposes_s"] or 0, 0, row)
                    else:
                        self.assertFalse(row["estimated_transposes_s"], row)
            with open(md) as f:
                self.assertEqual(len(f.read().strip().split("\n")), 4 + len(rows))

    def test_bad_arguments_exit_2(self):
        with tempfile.TemporaryDirectory() as d:
            bad = os.path.join(d, "bad.json")
            with open(bad, "w") as f:
                json.dump({"format": "something-else"}, f)
            notjson = os.path.join(d, "notjson.json")
            with open(notjson, "w") as f:
                f.write("{not json")
            badcase = os.path.join(d, "badcase.json")
            with open(badcase, "w") as f:
                json.dump({"format": "ddpsim-kernel-cases/1", "cases": [
                    {"case": "x", "op": "conv", "kwargs": {}, "shape": [2, 3], "dtype": "float8", "layout": "contiguous",
                     "forward_s": 1e-3, "backward_s": 1e-3, "kernels": []}]}, f)
            r = run("--compare", badcase)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn("/cases/0/dtype: 'float8' is not allowed; expected one of", r.stderr)
            r = run("--compare", notjson)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn("not JSON", r.stderr)
            for args in (["--compare", bad], ["--compare", os.path.join(d, "missing.json")],
                         ["--cpu", "--out", os.path.join(d, "no", "such", "x.json")],
                         ["--cpu", "--out", os.path.join(d, "x.json"), "--only", "("],
                         ["--cpu", "--out", os.path.join(d, "x.json"), "--only", "nothing-matches"],
                         ["--cpu", "--out", os.path.join(d, "x.json"), "--iters", "0"], []):
                r = run(*args)
                self.assertEqual(r.returncode, 2, (args, r.stderr))
                self.assertIn("measure_kernels.py", r.stderr)
            self.assertFalse(os.path.exists(os.path.join(d, "x.json")))


if __name__ == "__main__":
    unittest.main()
