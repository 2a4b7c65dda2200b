"""scripts/measure_cpu_optimizer.py (the CPU costs behind FSDP CPU offload, sim/gpu/optimizer_model.cpp):
bad arguments exit 2 naming the flag; a --quick run times every case at one thread and at the
machine's cores, each with its page faults, and SGD (no temporaries) never faults while Adam/AdamW
(two temporaries the tensor's size) cost more per element than SGD."""
import json
import os
import subprocess
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "measure_cpu_optimizer.py")
CASES = ["AdamW", "AdamW_foreach", "Adam", "Adam_foreach", "SGD_momentum", "SGD_momentum_foreach", "SGD", "unscale",
         "clip_grad_norm", "zero_grad_zero", "zero_grad_none"]


def _run(*args, timeout=300):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, timeout=timeout)


class MeasureCpuOptimizerTest(unittest.TestCase):
    def setUp(self):
        try:
            import torch  # noqa: F401
        except ImportError:
            raise unittest.SkipTest("python3-torch is needed")

    def test_bad_arguments_exit_2(self):
        for args, word in ((["--steps", "0"], "--steps"), (["--warmup", "1"], "--warmup"),
                           (["--out", "/nonexistent-dir/x.json"], "--out"), (["--bogus"], "--bogus")):
            p = _run(*args, timeout=120)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn(word, p.stderr)
            self.assertEqual(p.stdout, "")

    def test_quick_run(self):
        p = _run("--quick")
        self.assertEqual(p.returncode, 0, p.stderr)
        d = json.loads(p.stdout)
        self.assertEqual(d["meta"]["dtype"], "float32")
        self.assertIn("1", d["blocks"])
        one = d["blocks"]["1"]
        self.assertEqual(one["threads"], 1)
        for size, row in one["sizes"].items():
            for case in CASES:
                self.assertGreaterEqual(row[case]["median_ns_per_element"], 0, (size, case))
            self.assertGreater(row["copy"]["median_GB_per_s"], 0)
            for case in ("SGD", "SGD_momentum", "clip_grad_norm"):
                self.assertLess(row[case]["faulted_bytes_per_element"], 1.0, (size, case))
            self.assertGreater(row["AdamW"]["median_ns_per_element"], row["SGD"]["median_ns_per_element"], size)
        for case in CASES:
            self.assertGreater(one["fixed_cost"][case]["us_per_tensor"], 0 if case != "zero_grad_none" else -1, case)
        self.assertNotIn("allocator_check", d)


if __name__ == "__main__":
    unittest.main()
