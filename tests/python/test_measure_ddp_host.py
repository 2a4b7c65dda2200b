"""scripts/measure_ddp_host.py: the reference op is timed in the same run and every cost is given as
its share (forward-side costs over the forward op, backward-thread costs over the backward node);
--buffers-only does the same for the buffer sync; --comm-hooks times a Python comm hook's pieces
(python_hook_s = call - cpp_call); too few repetitions exit 2."""
import json
import os
import subprocess
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "measure_ddp_host.py")


def _run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, timeout=300)


class MeasureDdpHostTest(unittest.TestCase):
    def setUp(self):
        try:
            import torch  # noqa: F401
        except ImportError:
            raise unittest.SkipTest("python3-torch is needed")

    def check_shares(self, d, keys):
        ref = d["reference_op"]
        self.assertGreater(ref["forward_s"], 0)
        self.assertGreater(ref["backward_s"], 0)
        for k in keys:
            over = ref["forward_s"] if k in ("forward_s", "per_buffer_s") else ref["backward_s"]
            self.assertAlmostEqual(d["ratio_to_op"][k], d[k] / over, places=12)

    def test_shares_of_the_reference_op(self):
        p = _run("--reps", "3", "--warmup", "3")
        self.assertEqual(p.returncode, 0, p.stderr)
        d = json.loads(p.stdout)
        self.check_shares(d, ("forward_s", "per_buffer_s", "per_gradient_hook_s", "per_gradient_copies_s",
                              "per_bucket_s", "reducer_per_bucket_s"))

    def test_buffers_only(self):
        p = _run("--buffers-only", "--reps", "3", "--warmup", "3")
        self.assertEqual(p.returncode, 0, p.stderr)
        d = json.loads(p.stdout)
        self.assertEqual(set(d["ratio_to_op"]), {"per_buffer_s"})
        self.check_shares(d, ("per_buffer_s",))
        # -o writes the file (this mode wrote to stdout whatever -o said before 6 Dec 2026)
        import tempfile
        with tempfile.TemporaryDirectory() as td:
            out = os.path.join(td, "b.json")
            p = _run("--buffers-only", "--reps", "3", "--warmup", "3", "-o", out)
            self.assertEqual((p.returncode, p.stdout), (0, ""), p.stderr)
            with open(out) as f:
                self.assertIn("per_buffer_s", json.load(f))

    def test_comm_hooks(self):
        p = _run("--comm-hooks", "--reps", "3", "--warmup", "3")
        self.assertEqual(p.returncode, 0, p.stderr)
        h = json.loads(p.stdout)["comm_hooks"]
        calls = h["per_call_s"]
        self.assertEqual(set(calls), {"call_in_hook", "div", "call", "cpp_call", "then"})
        self.assertTrue(all(v > 0 for v in calls.values()), calls)
        self.assertEqual(h["calls_timed"], 30)
        self.assertAlmostEqual(h["python_hook_s"], calls["call"] - calls["cpp_call"], places=15)
        self.assertEqual(h["python_callback_s"], calls["then"])
        bwd = h["reference_op"]["backward_s"]
        self.assertAlmostEqual(h["ratio_to_op"]["python_hook_s"], h["python_hook_s"] / bwd, places=12)
        self.assertEqual([r["buckets"] for r in h["cases"]], [10, 200])
        self.assertEqual(set(h["backward_slope_per_bucket_s"]), {"builtin", "completed", "allreduce_hook"})

    def test_cuda_without_a_gpu(self):
        import torch
        if torch.cuda.is_available():
            self.skipTest("a GPU is here")
        p = _run("--device", "cuda")
        self.assertEqual(p.returncode, 2)
        self.assertIn("--device cuda: no CUDA device here", p.stderr)

    def test_too_few_repetitions(self):
        p = _run("--reps", "2")
        self.assertEqual(p.returncode, 2)
        self.assertIn("--reps and --warmup must be >= 3", p.stderr)


if __name__ == "__main__":
    unittest.main()
