"""scripts/measure_dispatch.py: --ratios measures the three chains and reports each against `mul`;
bad counts exit 2."""
import json
import os
import subprocess
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "measure_dispatch.py")


def _run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, timeout=300)


class MeasureDispatchTest(unittest.TestCase):
    def setUp(self):
        try:
            import torch  # noqa: F401
        except ImportError:
            raise unittest.SkipTest("python3-torch is needed")

    def test_ratios(self):
        p = _run("--ratios", "--ops", "200", "--reps", "3")
        self.assertEqual(p.returncode, 0, p.stderr)
        d = json.loads(p.stdout)
        self.assertEqual(d["op"], "ratios")
        self.assertEqual(set(d["per_op_s"]), {"mul", "view", "module"})
        self.assertEqual(set(d["ratio_to_mul"]), {"view", "module"})
        for k in ("view", "module"):
            for w in ("fwd", "bwd"):
                self.assertAlmostEqual(d["ratio_to_mul"][k][w], d["per_op_s"][k][w] / d["per_op_s"]["mul"][w], places=12)
        # Timings themselves are not checked (a shared machine); the chains ran and took time.
        self.assertGreater(d["per_op_s"]["mul"]["fwd"], 0)
        self.assertGreater(d["per_op_s"]["view"]["fwd"], 0)

    def test_single_chains(self):
        for op in ("view", "module"):
            p = _run("--op", op, "--ops", "100", "--reps", "2")
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(json.loads(p.stdout)["op"], op)

    def test_bad_counts_exit_2(self):
        for args in (["--ops", "0"], ["--reps", "0"], ["--op", "conv"]):
            p = _run(*args)
            self.assertEqual(p.returncode, 2, p.stderr)


if __name__ == "__main__":
    unittest.main()
