"""scripts/measure_cpu_contention.py: bad arguments exit 2; the summary's arithmetic on made-up
samples (worked by hand); a tiny two-rank run prints a row per size and the fitted line."""
import os
import re
import subprocess
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "measure_cpu_contention.py")
sys.path.insert(0, os.path.join(ROOT, "scripts"))


def _run(*args, timeout=600):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, timeout=timeout)


def _need_torch():
    try:
        import torch  # noqa: F401
    except ImportError:
        raise unittest.SkipTest("python3-torch is needed")


class MeasureCpuContentionTest(unittest.TestCase):
    def test_bad_arguments_exit_2(self):
        _need_torch()
        for args, word in ((["--sizes", "1X"], "--sizes"), (["--sizes", "2"], "--sizes"), (["--sizes", ""], "--sizes"),
                           (["--chunk", "1x32x8"], "--chunk"), (["--chunk", "0x32x8x8"], "--chunk"),
                           (["--reps", "2"], "--reps")):
            p = _run(*args, timeout=120)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn(word, p.stderr)

    def test_summary_by_hand(self):
        _need_torch()
        import measure_cpu_contention as m
        # Ten samples per rank and size: the trimmed mean drops the two fastest and two slowest of the 20.
        # Size 1: alone 1 ms (and outliers 0.1 / 9 ms), beside 3 ms; size 2: alone 4 ms, beside 9 ms.
        # Line through (1, 3) and (4, 9) ms: a = 2, b = 1 ms. Chunks: 0.5 ms alone; a 3 ms window
        # with 4 chunks inside: 3 / (4 x 0.5) = 1.5.
        def size(sz, alone, beside, chunks):
            return {"size_bytes": sz, "alone_s": alone, "beside_s": beside, "chunks_inside": chunks}
        r0 = {"chunk_alone_s": [0.0005] * 5,
              "sizes": [size(1024, [0.0001] + [0.001] * 9, [0.003] * 10, [4] * 10),
                        size(4096, [0.004] * 10, [0.009] * 10, [12] * 10)]}
        r1 = {"chunk_alone_s": [0.0005] * 5,
              "sizes": [size(1024, [0.009] + [0.001] * 9, [0.003] * 10, [4] * 10),
                        size(4096, [0.004] * 10, [0.009] * 10, [0] * 10)]}
        s = m.summarize([r0, r1])
        self.assertAlmostEqual(s["rows"][0]["alone_s"], 0.001, places=12)
        self.assertAlmostEqual(s["rows"][0]["ratio"], 3.0, places=9)
        self.assertAlmostEqual(s["rows"][0]["compute_slowdown"], 1.5, places=9)
        # size 2: rank 1's windows had no chunk inside; rank 0's: 9 / (12 x 0.5) = 1.5
        self.assertAlmostEqual(s["rows"][1]["compute_slowdown"], 1.5, places=9)
        self.assertAlmostEqual(s["line"]["a"], 2.0, places=9)
        self.assertAlmostEqual(s["line"]["b_s"], 0.001, places=12)

    def test_tiny_run(self):
        _need_torch()
        p = _run("--sizes", "64K,256K", "--reps", "3", "--chunks-alone", "5")
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = re.findall(r"(\d+) B: all-reduce alone ([\d.]+) ms, beside compute ([\d.]+) ms \(x([\d.]+)\)", p.stdout)
        self.assertEqual([int(r[0]) for r in rows], [65536, 262144], p.stdout)
        for _, alone, beside, ratio in rows:
            self.assertGreater(float(alone), 0)
            self.assertAlmostEqual(float(ratio), float(beside) / float(alone), delta=0.01 * float(ratio) + 0.01)
        self.assertRegex(p.stdout, r"beside = [-\d.]+ x alone \+ [-\d.]+ ms")


if __name__ == "__main__":
    unittest.main()
