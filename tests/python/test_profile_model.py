"""Tests of scripts/profile_model.py (skipped without torch/torchvision).

    /usr/bin/python3 -m unittest tests.python.test_profile_model
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
SCRIPT = os.path.join(REPO, "scripts", "profile_model.py")
EXPORT = os.path.join(REPO, "scripts", "export_model.py")
DDPSIM = os.path.join(REPO, "build", "ddpsim")

try:
    import torch  # noqa: F401
    import torchvision  # noqa: F401  (the test model)
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False

SPEC = "torchvision.models:resnet18"
SMALL = ["--input", "2x3x32x32", "--threads", "1", "--iters", "2", "--warmup", "1", "--device", "cpu"]


def run(args, timeout=120):
    return subprocess.run([sys.executable, SCRIPT] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=timeout, cwd=REPO)


@unittest.skipUnless(HAVE_TORCH, "needs torch and torchvision (use /usr/bin/python3)")
class ProfileModelTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="test-profile-model-")
        cls.out = os.path.join(cls.tmp, "r18.json")
        cls.check = os.path.join(cls.tmp, "r18-check.json")
        cls.res = run([SPEC, "-o", cls.out, "--check-json", cls.check] + SMALL)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def estimate(self, model_path):
        """ddpsim's per-kernel estimate (forward + backward compute, s) of model_path at batch 8 on an A100."""
        scen = {"name": "est", "model": model_path,
                "cluster": {"name": "one", "gpu": "a100-sxm4-80gb", "nodes": 1, "gpus_per_node": 1},
                "training": {"batch_size": 8, "optimizer": "sgd"}, "compute": {"use_measured": False}}
        sp, rp = os.path.join(self.tmp, "est.json"), os.path.join(self.tmp, "est-report.json")
        with open(sp, "w") as f:
            json.dump(scen, f)
        r = subprocess.run([DDPSIM, "run", sp, "-q", "--json", rp], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(rp) as f:
            rep = json.load(f)
        return rep["forward_s"] + rep["backward_compute_s"]

    def test_writes_measured_model(self):
        r = self.res
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(self.out) as f:
            doc = json.load(f)
        self.assertEqual(doc["format"], "ddpsim-model/1")
        self.assertEqual(doc["measured_batch_size"], 2)
        self.assertTrue(doc["measured_on"].startswith("cpu"), doc["measured_on"])
        self.assertGreater(len(doc["layers"]), 50)
        for l in doc["layers"]:
            self.assertGreater(l["fwd_time_s"], 0.0, l["name"])
            self.assertGreater(l["bwd_time_s"], 0.0, l["name"])
        # per-layer times add up to the whole passes (scaled by default)
        with open(self.check) as f:
            chk = json.load(f)
        self.assertAlmostEqual(sum(l["fwd_time_s"] for l in doc["layers"]), chk["forward_whole_s"], delta=1e-9)
        self.assertIn("forward", r.stderr)
        self.assertIn("layer sum", r.stderr)

    def test_gradient_ready_shares(self):
        # one share per parameter of every layer; a layer with one parameter (a convolution, a
        # linear) has its AccumulateGrad right after the layer's node, so most of the layer is done
        self.assertEqual(self.res.returncode, 0, self.res.stderr)
        with open(self.out) as f:
            doc = json.load(f)
        for l in doc["layers"]:
            if not l["params"]:
                self.assertNotIn("bwd_param_ready", l)
                continue
            shares = l["bwd_param_ready"]
            self.assertEqual(len(shares), len(l["params"]), l["name"])
            self.assertTrue(all(0.0 <= x <= 1.0 for x in shares), (l["name"], shares))
            if len(shares) == 1:
                self.assertGreater(shares[0], 0.5, l["name"])

    def test_multi_layer_lstm_readies_its_upper_layers_midway(self):
        # On the CPU nn.LSTM runs one autograd graph per layer and time step (no cuDNN), and the
        # backward finishes the top layer first: its weights' gradients are ready well before the
        # module's backward ends, the bottom layer's at its end.
        out = os.path.join(self.tmp, "lstm.json")
        r = run(["torch.nn:LSTM", "--kwargs", '{"input_size": 16, "hidden_size": 64, "num_layers": 3}',
                 "--input", "12x4x16", "--threads", "1", "--iters", "3", "--warmup", "1", "--device", "cpu",
                 "--no-verify", "-o", out])
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out) as f:
            doc = json.load(f)
        self.assertEqual(len(doc["layers"]), 1)
        layer = doc["layers"][0]
        share = {doc["params"][p]["name"]: x for p, x in zip(layer["params"], layer["bwd_param_ready"])}
        top = [x for n, x in share.items() if n.endswith("_l2")]
        bottom = [x for n, x in share.items() if n.endswith("_l0")]
        self.assertEqual((len(top), len(bottom)), (4, 4), share)
        self.assertLess(max(top), min(bottom), share)
        self.assertLess(max(top), 0.8, share)
        self.assertGreater(min(bottom), 0.8, share)

    @unittest.skipUnless(os.path.isfile(DDPSIM), "build/ddpsim not built")
    def test_ddpsim_accepts_it(self):
        self.assertEqual(self.res.returncode, 0, self.res.stderr)
        r = subprocess.run([DDPSIM, "show", self.out, "--json", "-"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        shown = json.loads(r.stdout)
        self.assertTrue(all("fwd_time_s" in l and "bwd_time_s" in l for l in shown["layers"]))
        # and a scenario using it runs, with every layer measured
        sc = {"model": self.out,
              "cluster": {"name": "t", "gpu": {"name": "cpu", "arch": "ampere",
                                               "peak_flops": {"float32": "0.01TFLOPS"},
                                               "hbm_bandwidth": "10GBps", "sm_count": 1},
                          "nodes": 1, "gpus_per_node": 1},
              "training": {"batch_size": 2, "optimizer": "sgd", "input_bytes_per_sample": "0B"}}
        sp = os.path.join(self.tmp, "scenario.json")
        with open(sp, "w") as f:
            json.dump(sc, f)
        r = subprocess.run([DDPSIM, "run", sp, "--json", "-", "-q"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        rep = json.loads(r.stdout)
        with open(self.out) as f:
            doc = json.load(f)
        # the measured layers, plus DDP.forward's host work (DDP runs at one GPU too: ddp_overhead)
        fwd_host = rep["ddp_overhead"]["forward_host_s"]
        self.assertGreater(fwd_host, 0.0)
        self.assertAlmostEqual(rep["forward_s"] - fwd_host, sum(l["fwd_time_s"] for l in doc["layers"]),
                               delta=1e-9)

    def test_model_json_mismatch_exits_2(self):
        # an export of another model (resnet34 has more layers/params) must be refused
        other = os.path.join(self.tmp, "r34.json")
        r = subprocess.run([sys.executable, EXPORT, "torchvision.models:resnet34", "--input", "2x3x32x32",
                            "-o", other], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, timeout=120, cwd=REPO)
        self.assertEqual(r.returncode, 0, r.stderr)
        r = run([SPEC, "-o", os.path.join(self.tmp, "x.json"), "--model-json", other] + SMALL)
        self.assertEqual(r.returncode, 2)
        self.assertIn("does not match", r.stderr)

    def test_model_json_reused(self):
        self.assertEqual(self.res.returncode, 0, self.res.stderr)
        out = os.path.join(self.tmp, "again.json")
        # measured at batch 4 from the batch-2 file: the counts and kernel records stay at batch 2,
        # the times say batch 4
        r = run([SPEC, "-o", out, "--model-json", self.out, "--no-verify", "--input", "4x3x32x32",
                 "--threads", "1", "--iters", "1", "--warmup", "0", "--device", "cpu"])
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out) as f:
            doc = json.load(f)
        with open(self.out) as f:
            old = json.load(f)
        self.assertEqual(doc["measured_batch_size"], 4)
        self.assertEqual(doc["batch_size"], 2)
        self.assertEqual(doc["layers"][0]["fwd_flops"], old["layers"][0]["fwd_flops"])
        self.assertEqual(doc["layers"][0].get("kernels"), old["layers"][0].get("kernels"))
        # ... so ddpsim's per-kernel estimate from it (compute.use_measured false) is the export's
        est = [self.estimate(p) for p in (self.out, out)]
        self.assertGreater(est[0], 0)
        self.assertAlmostEqual(est[1] / est[0], 1.0, places=9)
        r = run([SPEC, "-o", out, "--model-json", self.out, "--input", "2x3x64x64", "--device", "cpu"])
        self.assertEqual(r.returncode, 2)
        self.assertIn("only the batch", r.stderr)

    def test_channels_last(self):
        # the model and input in NHWC: the file says so, and ddpsim reads it
        out = os.path.join(self.tmp, "r18-cl.json")
        r = run([SPEC, "-o", out, "--channels-last", "--input", "2x3x32x32", "--threads", "1", "--iters", "1",
                 "--warmup", "0", "--device", "cpu"])
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out) as f:
            doc = json.load(f)
        self.assertEqual(doc["measured_memory_format"], "channels_last")
        with open(self.out) as f:
            self.assertNotIn("measured_memory_format", json.load(f))  # contiguous: PyTorch's default, absent
        # a sequence model's 2-d input has no channels_last layout: refused before measuring
        r = run(["zoo.bert:bert_base", "-o", os.path.join(self.tmp, "b.json"), "--channels-last",
                 "--kwargs", '{"vocab_size": 64, "hidden_size": 12, "intermediate_size": 12, '
                             '"max_position_embeddings": 16, "num_hidden_layers": 1}',
                 "--input", "1x4", "--input-dtype", "int64", "--device", "cpu", "--iters", "1"])
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--channels-last needs a 4-d image input", r.stderr)

    def test_bad_arguments_exit_2(self):
        out = os.path.join(self.tmp, "bad.json")
        cases = [
            ([SPEC, "-o", out, "--input", "2xAx32"], "bad --input"),
            (["nocolon", "-o", out, "--input", "2x3x32x32"], "bad model spec"),
            (["no_such_module_xyz:f", "-o", out, "--input", "2x3x32x32"], "cannot import"),
            ([SPEC, "-o", out, "--input", "2x3x32x32", "--iters", "0"], "--iters"),
            ([SPEC, "-o", out, "--input", "2x3x32x32", "--device", "tpu"], "--device"),
            ([SPEC, "-o", out, "--input", "2x3x32x32", "--model-json", os.path.join(self.tmp, "missing.json")],
             "cannot read --model-json"),
            ([SPEC, "-o", os.path.join(self.tmp, "nodir", "x.json"), "--input", "2x3x32x32"], "does not exist"),
            ([SPEC, "-o", out], "--input"),   # argparse: required
        ]
        if not torch.cuda.is_available():
            cases.append(([SPEC, "-o", out, "--input", "2x3x32x32", "--device", "cuda"], "CUDA is not available"))
        for args, msg in cases:
            r = run(args)
            self.assertEqual(r.returncode, 2, (args, r.stderr))
            self.assertIn(msg, r.stderr, args)
            self.assertNotIn("Traceback", r.stderr, args)
        self.assertFalse(os.path.exists(out))


if __name__ == "__main__":
    unittest.main()
