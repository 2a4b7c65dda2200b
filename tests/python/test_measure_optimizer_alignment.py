"""scripts/measure_optimizer_alignment.py: bad arguments exit 2; the summary's arithmetic on made-up
samples (worked by hand); a tiny two-rank run prints a line per way with its ratio."""
import os
import re
import subprocess
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "measure_optimizer_alignment.py")
sys.path.insert(0, os.path.join(ROOT, "scripts"))


def _run(*args, timeout=600):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, timeout=timeout)


def _need_torch():
    try:
        import torch  # noqa: F401
    except ImportError:
        raise unittest.SkipTest("python3-torch is needed")


class MeasureOptimizerAlignmentTest(unittest.TestCase):
    def test_bad_arguments_exit_2(self):
        _need_torch()
        for args, word in ((["--reps", "2"], "--reps"), (["--warmup", "0"], "--warmup"),
                           (["--input", "8x0x32x32"], "--input"), (["--input", "8xax32"], "--input"),
                           (["--spec", "nosuchmodule:f"], "--spec"), (["--spec", "resnet18"], "--spec")):
            p = _run(*args, timeout=120)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn(word, p.stderr)

    def test_summary_by_hand(self):
        _need_torch()
        import measure_optimizer_alignment as m
        # noop_free: rank 0 [10, 12, 30] ms, rank 1 [11, 13, 9]: sorted 9 10 11 12 13 30, median 11.5.
        # noop_aligned: [12, 12, 12] and [13, 13, 13]: median 12.5, ratio 12.5 / 11.5.
        # alone: rank 0's [10, 11, 12] only (rank 1 waited and has none): median 11.
        ms = 1e-3
        r0 = {"noop_free": [10 * ms, 12 * ms, 30 * ms], "comm_free": [12 * ms] * 3, "noop_aligned": [12 * ms] * 3,
              "comm_aligned": [14 * ms] * 3, "alone": [10 * ms, 11 * ms, 12 * ms]}
        r1 = {"noop_free": [11 * ms, 13 * ms, 9 * ms], "comm_free": [12 * ms] * 3, "noop_aligned": [13 * ms] * 3,
              "comm_aligned": [14 * ms] * 3, "alone": []}
        s = m.summarize([r0, r1])
        self.assertAlmostEqual(s["noop_free"]["median_s"], 11.5 * ms, places=12)
        self.assertAlmostEqual(s["noop_free"]["ratio"], 1.0, places=12)
        self.assertAlmostEqual(s["noop_aligned"]["ratio"], 12.5 / 11.5, places=12)
        self.assertAlmostEqual(s["comm_aligned"]["median_s"], 14 * ms, places=12)
        self.assertEqual((s["alone"]["n"], s["noop_free"]["n"]), (3, 6))
        self.assertAlmostEqual(s["alone"]["median_s"], 11 * ms, places=12)

    def test_tiny_run(self):
        _need_torch()
        p = _run("--spec", "torchvision.models:resnet18", "--input", "2x3x16x16", "--reps", "3", "--warmup", "1")
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = re.findall(r"^(\w+) +optimizer\.step\(\) \+ zero_grad\(\) median ([\d.]+) ms \(n=(\d+)\), x([\d.]+)",
                          p.stdout, re.M)
        self.assertEqual([(r[0], int(r[2])) for r in rows],
                         [("noop_free", 6), ("comm_free", 6), ("noop_aligned", 6), ("comm_aligned", 6), ("alone", 3)],
                         p.stdout)
        base = float(rows[0][1])
        for _, med, _, ratio in rows:
            self.assertGreater(float(med), 0.0)
            self.assertAlmostEqual(float(ratio), float(med) / base, delta=0.002 * float(ratio) + 0.002)


if __name__ == "__main__":
    unittest.main()
