"""scripts/measure_rank_skew.py: bad arguments exit 2; a tiny two-rank run prints, per bucket, a
skew that is the spread of the printed launches and an all-reduce time from the last launch."""
import os
import re
import subprocess
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "measure_rank_skew.py")


def _run(*args, timeout=600):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, timeout=timeout)


def _need_torch():
    try:
        import torch  # noqa: F401
        import torchvision  # noqa: F401
    except ImportError:
        raise unittest.SkipTest("python3-torch and torchvision are needed")


class MeasureRankSkewTest(unittest.TestCase):
    def test_bad_arguments_exit_2(self):
        _need_torch()
        for args, word in ((["--spec", "nosuchmodel"], "--spec"), (["--cap", "-1"], "--cap"),
                           (["--cap", "abc"], "--cap"), (["--input", "8xa"], "--input"),
                           (["--world-size", "1"], "--world-size")):
            p = _run(*args, timeout=120)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn(word, p.stderr)

    def test_tiny_run(self):
        _need_torch()
        p = _run("--spec", "squeezenet1_1", "--cap", "1", "--input", "2x3x32x32", "--steps", "2", "--warmup", "1")
        self.assertEqual(p.returncode, 0, p.stderr)
        steps = [line for line in p.stdout.splitlines() if line.startswith("step ")]
        self.assertEqual(len(steps), 2)
        rows = re.findall(r"launch ([\d./]+), done ([\d./]+); skew ([\d.]+) ms, all-reduce from the last launch "
                          r"([-\d.]+) ms", p.stdout)
        self.assertGreaterEqual(len(rows), 2)  # SqueezeNet 1.1's 4.9 MB of gradients, 1 MiB buckets
        for launch, done, skew, after in rows:
            launch = [float(v) for v in launch.split("/")]
            done = [float(v) for v in done.split("/")]
            self.assertEqual(len(launch), 2)
            self.assertAlmostEqual(float(skew), max(launch) - min(launch), delta=0.11)  # printed to 0.1 ms
            self.assertAlmostEqual(float(after), max(done) - max(launch), delta=0.11)
            self.assertGreaterEqual(min(done) + 0.05, max(launch))  # no rank finishes before the last launch


if __name__ == "__main__":
    unittest.main()
