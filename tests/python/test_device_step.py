"""scripts/device_step.py: its kernel table and its argument errors (the GPU run itself is not
possible here; its CPU dry run takes minutes with a zoo model, so it is left to the device)."""

import json
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SCRIPT = os.path.join(REPO, "scripts", "device_step.py")
sys.path.insert(0, os.path.join(REPO, "scripts"))

try:
    import torch
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False


@unittest.skipUnless(HAVE_TORCH, "needs torch")
class DeviceStepTest(unittest.TestCase):
    def test_kernel_table_leaves_out_the_optimizers_annotation(self):
        import device_step as ds
        model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))
        opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
        x = torch.randn(16, 64)

        def step():
            opt.zero_grad(set_to_none=True)
            model(x).sum().backward()
            opt.step()

        t = ds.kernel_table(torch, step, "cpu", steps=2, top=1000)
        names = [r["name"] for r in t["rows"]]
        self.assertTrue(names)
        self.assertFalse([n for n in names if n.startswith(("Optimizer.", "ProfilerStep"))], names)
        self.assertAlmostEqual(t["total_s_per_step"], sum(r["time_s_per_step"] for r in t["rows"]), places=12)
        self.assertIn("aten::addmm", names)

    def test_launch_list_joins_kernels_to_their_operators(self):
        import device_step as ds
        # A Chrome trace as torch.profiler writes it (Kineto): CPU ops with their External id and
        # input shapes, kernels carrying the id of the op that launched them, grid and block.
        trace = {"traceEvents": [
            {"ph": "X", "cat": "cpu_op", "name": "aten::linear", "ts": 0, "dur": 50,
             "args": {"External id": 1, "Input Dims": [[8, 64], [64, 64], [64]]}},
            {"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "ts": 5, "dur": 40,
             "args": {"External id": 2, "Input Dims": [[64], [8, 64], [64, 64]], "Input type": ["float"] * 3}},
            {"ph": "X", "cat": "kernel", "name": "gemm_kernel", "ts": 30, "dur": 7,
             "args": {"External id": 2, "grid": [4, 1, 1], "block": [128, 1, 1]}},
            {"ph": "X", "cat": "kernel", "name": "relu_kernel", "ts": 60, "dur": 2,
             "args": {"External id": 3, "grid": [1, 1, 1], "block": [512, 1, 1]}},
            {"ph": "X", "cat": "kernel", "name": "gemm_kernel", "ts": 20, "dur": 6,
             "args": {"External id": 2, "grid": [4, 1, 1], "block": [128, 1, 1]}},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 10, "dur": 3, "args": {}}]}
        got = ds.launch_list(trace)
        self.assertEqual(got["names"], ["gemm_kernel", "relu_kernel"])
        self.assertEqual([(x["k"], x["dur_us"], x["op"]) for x in got["launches"]],
                         [(0, 6, "aten::addmm"), (0, 7, "aten::addmm"), (1, 2, None)])
        self.assertEqual(got["launches"][0]["shapes"], [[64], [8, 64], [64, 64]])
        self.assertEqual(got["launches"][1]["grid"], [4, 1, 1])
        self.assertEqual(got["launches"][2]["block"], [512, 1, 1])

    def test_launches_on_this_cpu_writes_an_empty_list(self):
        import tempfile
        import device_step as ds
        model = torch.nn.Linear(8, 8)
        path = os.path.join(tempfile.mkdtemp(), "launches.json")
        n = ds.launches(torch, lambda: model(torch.randn(2, 8)).sum().backward(), path)
        self.assertEqual(n, 0)  # no CUDA here: no kernels
        with open(path) as f:
            self.assertEqual(json.load(f), {"names": [], "launches": []})

    def test_bad_arguments_exit_2(self):
        for args, want in ((["--models", "nope"], "nope"), (["--dtypes", "int8"], "int8"),
                           (["--caps", "25,x"], "--caps"), (["--caps", "0"], "cap <= 0")):
            r = subprocess.run([sys.executable, SCRIPT, "--cpu", "--out", "/nonexistent-never-written"] + args,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                               timeout=120)
            self.assertEqual(r.returncode, 2, (args, r.stderr))
            self.assertIn(want, r.stderr)
            self.assertFalse(os.path.exists("/nonexistent-never-written"))


if __name__ == "__main__":
    unittest.main()
