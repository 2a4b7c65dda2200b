"""scripts/measure_optimizer_host.py: bad arguments exit 2 naming the flag; a short run reports, for
every optimizer and implementation, per-tensor slopes that are positive and the per-op figure that
sim/gpu/optimizer_model.cpp takes (slope / the tensor's GPU ops), and each as a share of the reference op."""
import json
import os
import subprocess
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "measure_optimizer_host.py")


def _run(*args, timeout=300):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, timeout=timeout)


class MeasureOptimizerHostTest(unittest.TestCase):
    def setUp(self):
        try:
            import torch  # noqa: F401
        except ImportError:
            raise unittest.SkipTest("python3-torch is needed")

    def test_bad_arguments_exit_2(self):
        for args, word in ((["--sizes", "8"], "--sizes"), (["--sizes", "8,x"], "--sizes"), (["--sizes", "0,8"], "--sizes"),
                           (["--reps", "0"], "--reps")):
            p = _run(*args, timeout=120)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn(word, p.stderr)

    def test_cuda_without_a_gpu(self):
        import torch
        if torch.cuda.is_available():
            self.skipTest("a GPU is here")
        p = _run("--device", "cuda", timeout=120)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--device cuda: no CUDA device here", p.stderr)

    def test_short_run(self):
        p = _run("--reps", "5", "--sizes", "16,64,128")
        self.assertEqual(p.returncode, 0, p.stderr)
        d = json.loads(p.stdout)
        ops = {"sgd": 3, "adam": 8, "adamw": 9}
        for opt in ops:
            loop = d["step"][f"{opt}/for_loop"]
            self.assertGreater(loop["per_tensor_s"], 0)
            self.assertAlmostEqual(loop["per_tensor_op_s"], loop["per_tensor_s"] / ops[opt])
            # A step of more tensors takes longer, and the no-op foreach run is cheaper than the real one.
            self.assertLess(loop["median_s"][0], loop["median_s"][-1])
            self.assertLess(d["step"][f"{opt}/foreach_python_only"]["median_s"][-1], d["step"][f"{opt}/foreach"]["median_s"][-1])
        self.assertEqual(len(d["foreach_call_one_tensor_s"]), 3)
        self.assertGreater(d["zero_grad"]["zero_"]["per_tensor_s"], 0)
        # Every cost is also a share of the reference op timed in the same run.
        ref = d["reference_op"]["forward_s"]
        self.assertGreater(ref, 0)
        r = d["ratio_to_op"]
        self.assertAlmostEqual(r["sgd/for_loop/per_tensor_op_s"], d["step"]["sgd/for_loop"]["per_tensor_op_s"] / ref)
        self.assertAlmostEqual(r["adam/foreach_python_only/per_tensor_s"],
                               d["step"]["adam/foreach_python_only"]["per_tensor_s"] / ref)
        calls = sorted(d["foreach_call_one_tensor_s"].values())
        self.assertAlmostEqual(r["foreach_call_one_tensor_s"], calls[1] / ref)
        self.assertAlmostEqual(r["zero_grad/set_to_none/per_tensor_s"],
                               d["zero_grad"]["set_to_none"]["per_tensor_s"] / ref)


if __name__ == "__main__":
    unittest.main()
