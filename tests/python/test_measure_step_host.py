"""scripts/measure_step_host.py: bad arguments exit 2 naming the flag; a tiny BERT step reports its
forward, backward and optimizer times and op counts that agree with the model's structure."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "measure_step_host.py")
TINY = json.dumps({"vocab_size": 64, "hidden_size": 12, "intermediate_size": 12, "num_hidden_layers": 2,
                   "max_position_embeddings": 16})
BERT = ["--spec", "zoo.bert:bert_base", "--kwargs", TINY, "--input", "1x4", "--input-dtype", "int64"]


def _run(*args, timeout=300):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, timeout=timeout)


def _need_torch():
    try:
        import torch  # noqa: F401
    except ImportError:
        raise unittest.SkipTest("python3-torch is needed")


class MeasureStepHostTest(unittest.TestCase):
    def test_bad_arguments_exit_2(self):
        _need_torch()
        for args, word in ((["--kwargs", "{nope"], "--kwargs"), (["--kwargs", "[1]"], "--kwargs"),
                           (["--steps", "0"], "--steps"), (["--warmup", "x"], "--warmup"),
                           (["--optimizer", "lamb"], "--optimizer"), (["--input-dtype", "int8"], "--input-dtype"),
                           (["--autocast", "float16"], "--autocast")):
            base = {"--kwargs": TINY, "--steps": "2", "--warmup": "0", "--optimizer": "sgd", "--input-dtype": "int64"}
            base[args[0]] = args[1]
            argv = ["--spec", "zoo.bert:bert_base", "--input", "1x4"] + [x for kv in base.items() for x in kv]
            p = _run(*argv, timeout=120)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn(word, p.stderr)
        p = _run("--spec", "zoo.bert:no_such_model", "--input", "1x4", "--input-dtype", "int64", timeout=120)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("no_such_model", p.stderr)

    def test_tiny_bert_step(self):
        _need_torch()
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "host.json")
            p = _run(*BERT, "--steps", "5", "--warmup", "2", "--optimizer", "adamw", "--json", out)
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(out) as f:
                r = json.load(f)
        self.assertEqual(r, json.loads(p.stdout))
        for k in ("forward_s", "backward_s", "optimizer_s"):
            self.assertGreater(r[k], 0, k)
            self.assertLess(r[k], 5.0, k)  # a tiny model: milliseconds, not seconds
        # BERT with 2 layers: 2 x 16 parameters per layer + 5 embedding + 2 pooler = 39 tensors.
        self.assertEqual(r["parameters"], 39)
        # Every parameter has its AccumulateGrad node, and each of the 2 x 6 linears its AddmmBackward.
        self.assertGreaterEqual(r["backward_nodes"], r["parameters"] + 12)
        self.assertGreater(r["forward_top_level_ops"], r["forward_view_ops"])
        self.assertGreater(r["forward_view_ops"], 0)  # attention's view/permute/transpose
        self.assertEqual((r["optimizer"], r["threads"], r["steps"], r["warmup"]), ("adamw", 1, 5, 2))

    def test_tiny_bert_step_under_bf16_autocast_dispatches_its_casts(self):
        # Under torch.autocast('cpu', bfloat16) the forward casts every linear's input and weight,
        # and the backward runs a node for each cast's gradient: more autograd nodes than the
        # float32 step of the same model. (The profiler's top-level op count is not compared: under
        # autocast the casts are sometimes recorded inside the op that made them.)
        _need_torch()
        runs = {}
        for ac in ([], ["--autocast", "bfloat16"]):
            p = _run(*BERT, "--steps", "2", "--warmup", "1", *ac)
            self.assertEqual(p.returncode, 0, p.stderr)
            runs[bool(ac)] = json.loads(p.stdout)
        self.assertEqual((runs[False]["autocast"], runs[True]["autocast"]), (None, "bfloat16"))
        self.assertGreater(runs[True]["backward_nodes"], runs[False]["backward_nodes"])

    def test_compare_prices_ddpsims_counts_at_the_chains_costs(self):
        # 100 kernels at 3 us and 50 views at 1.5 us + 10 module calls at 1 us: 0.3 ms and 0.385
        # ms against 0.5 ms measured (-40 %, -23 %); backward 200 kernels at 4 us + 40 view nodes at
        # 2 us: 0.8 and 0.88 ms against 1 ms (-20 %, -12 %).
        sys.path.insert(0, os.path.join(ROOT, "scripts"))
        import measure_step_host as msh
        counts = {"kernels_forward": 100, "kernels_backward": 200, "views": 50, "view_nodes": 40, "module_calls": 10}
        chains = {"mul": (3e-6, 4e-6), "view": (1.5e-6, 2e-6), "module": (1e-6, 0.0)}
        d = msh.compare({"forward_s": 5e-4, "backward_s": 1e-3}, counts, chains)
        self.assertAlmostEqual(d["forward_kernels_only_s"], 3e-4, places=15)
        self.assertAlmostEqual(d["forward_with_host_ops_s"], 3.85e-4, places=15)
        self.assertAlmostEqual(d["forward_error_kernels_only"], -0.4, places=12)
        self.assertAlmostEqual(d["forward_error_with_host_ops"], -0.23, places=12)
        self.assertAlmostEqual(d["backward_error_kernels_only"], -0.2, places=12)
        self.assertAlmostEqual(d["backward_error_with_host_ops"], -0.12, places=12)

    def test_ddpsim_and_model_go_together(self):
        _need_torch()
        for args in (["--ddpsim", SCRIPT], ["--model", SCRIPT], ["--ddpsim", "/no/such/ddpsim", "--model", SCRIPT]):
            p = _run(*BERT, "--steps", "1", "--warmup", "0", *args, timeout=120)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn("--ddpsim" if "/no/such/ddpsim" in args else "go together", p.stderr)


if __name__ == "__main__":
    unittest.main()
