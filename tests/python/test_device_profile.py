"""Tests of scripts/device_profile.py's CPU dry run (skipped without torch or build/ddpsim).

    /usr/bin/python3 -m unittest tests.python.test_device_profile
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SCRIPT = os.path.join(REPO, "scripts", "device_profile.py")
DDPSIM = os.path.join(REPO, "build", "ddpsim")

try:
    import torch  # noqa: F401
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False
try:
    import torchvision  # noqa: F401  (the zoo's resnet50)
    HAVE_TORCHVISION = True
except ImportError:
    HAVE_TORCHVISION = False


@unittest.skipUnless(HAVE_TORCH and os.path.isfile(DDPSIM), "needs torch and build/ddpsim")
class DeviceProfileCpuTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="test-device-profile-")
        cls.r = subprocess.run([sys.executable, SCRIPT, "--cpu", "--out", cls.tmp, "--models", "skip-branch",
                                "--iters", "1", "--warmup", "0", "--threads", "1", "--matmul-n", "256"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                               timeout=600, cwd=REPO)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_runs_and_writes_the_table(self):
        self.assertEqual(self.r.returncode, 0, self.r.stderr)
        with open(os.path.join(self.tmp, "run.json")) as f:
            run = json.load(f)
        steps = {(s["step"], s.get("model")): s for s in run["steps"]}
        self.assertEqual(steps[("profile_model", "skip-branch")]["status"], "ok")
        self.assertEqual(steps[("ddpbench", None)]["status"], "skipped")
        with open(os.path.join(self.tmp, "estimate-vs-measured.json")) as f:
            table = json.load(f)
        with open(os.path.join(self.tmp, "profile-skip-branch.json")) as f:
            prof = json.load(f)
        # The measured column is the profile's own per-layer sum, type by type.
        measured = sum(l["fwd_time_s"] + l["bwd_time_s"] for l in prof["layers"])
        self.assertAlmostEqual(sum(r["measured_s"] for r in table["by_type_all_models"]), measured, places=12)
        types = {l["type"] for l in prof["layers"]}
        self.assertEqual({r["type"] for r in table["by_type_all_models"]}, types)
        for r in table["by_type_all_models"]:
            if r["measured_s"] > 0:  # (skip-branch's unused branch is timed 0 and has no kernels)
                self.assertGreater(r["estimated_s"], 0.0, r)
        self.assertTrue(table["models"][0]["ddpsim_provenance"].startswith("estimated"))
        with open(os.path.join(self.tmp, "estimate-vs-measured.md")) as f:
            self.assertIn("not a GPU result", f.read())
        # Step 4: the loss timed here against ddpsim's estimate for gpt2's logits at 64 rows.
        self.assertEqual(steps[("loss", None)]["status"], "ok")
        with open(os.path.join(self.tmp, "loss.json")) as f:
            loss = json.load(f)
        self.assertEqual(loss["device"], "cpu")
        (case,) = loss["cases"]
        self.assertEqual((case["rows"], case["classes"], case["dtype"]), (64, 50257, "float32"))
        self.assertGreater(case["measured_s"], 0.0)
        self.assertGreater(case["estimated_s"], 0.0)
        self.assertAlmostEqual(case["error"], case["estimated_s"] / case["measured_s"] - 1.0, places=12)
        # Step 5: ResNet-50's optimizer step (for_loop and foreach) against ddpsim's optimizer phase;
        # on the CPU without a GradScaler, so ddpsim's float32 step has no sync.
        if HAVE_TORCHVISION:
            self.assertEqual(steps[("optimizer", None)]["status"], "ok")
            with open(os.path.join(self.tmp, "optimizer.json")) as f:
                opt = json.load(f)
            self.assertEqual([c["impl"] for c in opt["cases"]], ["for_loop", "foreach"])
            for c in opt["cases"]:
                self.assertEqual(c["tensors"], 161)
                self.assertFalse(c["grad_scaler"])
                self.assertFalse(c["optimizer_host"]["grad_scaler_sync"])
                self.assertGreater(c["measured_s"], 0.0)
                self.assertAlmostEqual(c["error"], c["estimated_s"] / c["measured_s"] - 1.0, places=12)

    @unittest.skipUnless(HAVE_TORCHVISION, "needs torchvision (the zoo's resnet50)")
    def test_autocast_profile_is_estimated_in_bfloat16_and_kept_out_of_the_float32_table(self):
        # resnet50 (torch 1.13's CPU autocast refuses the skip-branch model's mixed ops)
        out = os.path.join(self.tmp, "amp")
        r = subprocess.run([sys.executable, SCRIPT, "--cpu", "--out", out, "--models", "resnet50",
                            "--autocast-models", "resnet50", "--iters", "1", "--warmup", "0", "--threads", "1",
                            "--matmul-n", "256"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, timeout=600, cwd=REPO)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(out, "profile-resnet50-bfloat16.json")) as f:
            amp = json.load(f)
        self.assertEqual(amp["measured_dtype"], "bfloat16")
        with open(os.path.join(out, "profile-resnet50.json")) as f:
            fp32 = json.load(f)
        self.assertNotIn("measured_dtype", fp32)
        with open(os.path.join(out, "estimate-vs-measured.json")) as f:
            table = json.load(f)
        dtypes = {m["model"]: m["dtype"] for m in table["models"]}
        self.assertEqual(dtypes, {"resnet50": "float32", "resnet50-bfloat16": "bfloat16"})
        measured32 = sum(l["fwd_time_s"] + l["bwd_time_s"] for l in fp32["layers"])
        self.assertAlmostEqual(sum(r["measured_s"] for r in table["by_type_all_models"]), measured32, places=12)

    def test_retable_recomputes_the_estimate_and_keeps_the_measurements(self):
        self.assertEqual(self.r.returncode, 0, self.r.stderr)
        d = os.path.join(self.tmp, "retable")
        shutil.copytree(self.tmp, d, ignore=shutil.ignore_patterns("retable", "cl", "amp"))
        with open(os.path.join(d, "estimate-vs-measured.json")) as f:
            before = json.load(f)
        r = subprocess.run([sys.executable, SCRIPT, "--retable", d, "--preset", "h200"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True, timeout=300, cwd=REPO)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(d, "estimate-vs-measured.json")) as f:
            after = json.load(f)
        self.assertEqual(after["preset"], "h200")
        self.assertIn("retabled", after)
        b = {m["model"]: m for m in before["models"]}
        a = {m["model"]: m for m in after["models"]}
        self.assertEqual(set(a), set(b))
        for k in a:
            self.assertEqual(a[k]["measured_s"], b[k]["measured_s"])
            self.assertEqual(a[k]["dtype"], b[k]["dtype"])
            # an H200 against this CPU: the estimate moves
            self.assertLess(a[k]["estimated_s"], b[k]["estimated_s"])
        r = subprocess.run([sys.executable, SCRIPT, "--retable", os.path.join(self.tmp, "nowhere")],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=60,
                           cwd=REPO)
        self.assertEqual(r.returncode, 2)
        self.assertIn("run.json", r.stderr)

    @unittest.skipUnless(HAVE_TORCHVISION, "needs torchvision (the zoo's resnet50)")
    def test_channels_last_profile_is_estimated_in_channels_last(self):
        # a second, tiny run: resnet50 at the dry run's batch, also in channels_last
        out = os.path.join(self.tmp, "cl")
        r = subprocess.run([sys.executable, SCRIPT, "--cpu", "--out", out, "--models", "resnet50",
                            "--channels-last-models", "resnet50", "--iters", "1", "--warmup", "0", "--threads",
                            "1", "--matmul-n", "256"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, timeout=600, cwd=REPO)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(out, "profile-resnet50-channels_last.json")) as f:
            self.assertEqual(json.load(f)["measured_memory_format"], "channels_last")
        with open(os.path.join(out, "estimate-vs-measured.json")) as f:
            table = json.load(f)
        formats = {m["model"]: m["memory_format"] for m in table["models"]}
        self.assertEqual(formats, {"resnet50": "contiguous_format", "resnet50-channels_last": "channels_last"})
        # the all-models table is the default format only
        default = next(m for m in table["models"] if m["model"] == "resnet50")
        self.assertAlmostEqual(sum(r["measured_s"] for r in table["by_type_all_models"]), default["measured_s"],
                               places=12)
        # a channels_last model not in --models is refused
        r = subprocess.run([sys.executable, SCRIPT, "--cpu", "--out", out, "--models", "skip-branch",
                            "--channels-last-models", "nope"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, cwd=REPO, timeout=300)
        self.assertEqual(r.returncode, 2)
        self.assertIn("nope", r.stderr)

    def test_ddpbench_runs_the_models_at_the_profiles_sequence_length(self):
        # gpt2-medium is bundled at 128 tokens and profiled at 1024: ddpbench gets an export at
        # 1024 (every layer's per-sample counts 8x and more); bert-base is bundled at its 128.
        sys.path.insert(0, os.path.join(REPO, "scripts"))
        import device_profile as dp
        with tempfile.TemporaryDirectory() as d:
            self.assertEqual(dp.ddpbench_model_file("bert-base", d), os.path.join(REPO, "models", "bert-base.json"))
            path = dp.ddpbench_model_file("gpt2-medium", d)
            self.assertEqual(os.path.dirname(path), d)
            with open(path) as f:
                new = json.load(f)
        with open(os.path.join(REPO, "models", "gpt2-medium.json")) as f:
            old = json.load(f)
        self.assertEqual(new["exported_with"]["input_shape"], [1, 1024])
        self.assertEqual(old["exported_with"]["input_shape"], [1, 128])
        self.assertEqual([layer["name"] for layer in new["layers"]], [layer["name"] for layer in old["layers"]])
        # A linear's FLOPs per sample grow with the tokens: 8x.
        fc = next(i for i, layer in enumerate(old["layers"]) if layer["name"].endswith("mlp.c_fc"))
        self.assertAlmostEqual(new["layers"][fc]["fwd_flops"] / old["layers"][fc]["fwd_flops"], 8.0, places=9)

    def test_unknown_model_is_a_usage_error(self):
        r = subprocess.run([sys.executable, SCRIPT, "--cpu", "--out", self.tmp, "--models", "nope"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, cwd=REPO,
                           timeout=300)
        self.assertEqual(r.returncode, 2)
        self.assertIn("nope", r.stderr)


if __name__ == "__main__":
    unittest.main()
