"""scripts/device_step.py: its kernel table and its argument errors (the GPU run itself is not
possible here; its CPU dry run takes minutes with a zoo model, so it is left to the device)."""

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
