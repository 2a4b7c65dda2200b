"""ddpsim's plans issue the collectives real torch issues: FSDP1's units, bytes and order, and
ZeroRedundancyOptimizer's broadcasts (partition, bytes and order).

Each case runs scripts/cpu_collectives_trace.py (real PyTorch 1.13, CPU ranks over gloo, two
training steps) and `ddpsim run --trace` with the same settings
(tests/python/check_collectives_vs_torch.py) and asserts the two ordered lists of (collective,
unit, bytes) are equal in both steps. The models are exported here with scripts/export_model.py,
small enough for a loaded 2-core machine (about 5-8 s a case). World size 3 makes FSDP pad the flat
parameters (65,600 elements -> 65,601 for the tiny LLaMA's root unit), so the padded shard sizes
are checked too. One case runs ddpsim with another backward prefetch than torch and must differ:
the comparison can fail.

Run from the repository root (ctest: python.fsdp_and_zero_collectives_equal_real_torch; the file is
not named test_*.py so that the discover run of python.zoo_and_model_files leaves it out):
  /usr/bin/python3 -m unittest tests/python/collectives_vs_torch_tests.py
DDPSIM_BIN overrides the binary (default build/ddpsim). Skipped without torch or the binary.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import check_collectives_vs_torch as check  # noqa: E402

DDPSIM = os.environ.get("DDPSIM_BIN", os.path.join(REPO, "build", "ddpsim"))
EXPORT = os.path.join(REPO, "scripts", "export_model.py")

try:
    import torch  # noqa: F401
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False

LLAMA = ("zoo.llama:llama", '{"dim": 64, "n_layers": 4, "n_heads": 4, "vocab_size": 512, "multiple_of": 32, '
         '"max_seq_len": 64}', "2x16", "int64", 512)
GPT2 = ("zoo.gpt2:gpt2", '{"n_layer": 3, "n_embd": 64, "n_head": 4, "vocab_size": 500, "n_positions": 32}',
        "2x16", "int64", 500)
RESNET18 = ("torchvision.models:resnet18", "{}", "2x3x32x32", "float32", None)


@unittest.skipUnless(HAVE_TORCH, "python3-torch not installed")
@unittest.skipUnless(os.access(DDPSIM, os.X_OK), "ddpsim binary not built (%s)" % DDPSIM)
class TestCollectivesVsTorch(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="collectives-vs-torch-models-")
        cls.models = {}

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def model_json(self, model):
        spec, kwargs, shape, dtype, vocab = model
        if spec not in self.models:
            out = os.path.join(self.tmp, spec.replace(":", "_") + ".json")
            cmd = [sys.executable, EXPORT, spec, "--kwargs", kwargs, "--input", shape, "--input-dtype", dtype,
                   "-o", out]
            if vocab:
                cmd += ["--vocab", str(vocab)]
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                               timeout=600, cwd=REPO)
            self.assertEqual(p.returncode, 0, p.stderr[-2000:])
            self.models[spec] = out
        return self.models[spec]

    def compare(self, model=LLAMA, world_size=3, options=()):
        spec, kwargs, shape, _, _ = model
        args = check.parser().parse_args(["--ddpsim", DDPSIM, "--model-json", self.model_json(model), "--spec", spec,
                                          "--kwargs", kwargs, "--input", shape, "--world-size", str(world_size)]
                                         + list(options))
        real, simulated, err = check.run(args)
        self.assertIsNone(err)
        self.assertEqual(len(real), 2)
        self.assertEqual(len(simulated), 2, "ddpsim's trace should hold two steps")
        return real, simulated

    def assert_same(self, model=LLAMA, world_size=3, options=()):
        real, simulated = self.compare(model, world_size, options)
        for step, (r, s) in enumerate(zip(real, simulated)):
            self.assertTrue(r, "torch issued no collective in step %d" % (step + 1))
            self.assertEqual(r, s, "step %d, options %s:\n  torch:\n%s\n  ddpsim:\n%s"
                             % (step + 1, " ".join(options), check.describe(r), check.describe(s)))
        return real

    def test_full_shard_defaults_with_padding(self):
        real = self.assert_same()  # BACKWARD_PRE, limit_all_gathers, float32
        kinds = [c[0] for c in real[1]]
        # 5 units: 5 forward all-gathers, 4 backward ones (the root stays unsharded), 5 reduce-scatters
        self.assertEqual((kinds.count("all_gather"), kinds.count("reduce_scatter")), (9, 5))
        self.assertIn(("all_gather", "root", 65601 // 3 * 4), real[1])

    def test_full_shard_without_the_rate_limiter(self):
        self.assert_same(options=["--no-limit-all-gathers"])

    def test_backward_prefetch_post_and_none(self):
        self.assert_same(options=["--backward-prefetch", "BACKWARD_POST"])
        self.assert_same(options=["--backward-prefetch", "none"])

    def test_forward_prefetch(self):
        self.assert_same(options=["--forward-prefetch"])

    def test_shard_grad_op_and_no_shard(self):
        self.assert_same(options=["--strategy", "SHARD_GRAD_OP"])
        real = self.assert_same(options=["--strategy", "NO_SHARD"])
        self.assertEqual({c[0] for c in real[1]}, {"all_reduce"})

    def test_mixed_precision(self):
        self.assert_same(options=["--param-dtype", "bfloat16", "--reduce-dtype", "float32"])
        self.assert_same(options=["--param-dtype", "bfloat16"])

    def test_activation_checkpointing(self):
        self.assert_same(world_size=2, options=["--checkpoint", "NO_REENTRANT"])

    def test_gradient_accumulation_with_and_without_no_sync(self):
        # Two micro-steps, the first inside FSDP1's no_sync(): both all-gather (9 each), only the
        # last reduce-scatters (5).
        real = self.assert_same(options=["--accumulation", "2"])
        kinds = [c[0] for c in real[1]]
        self.assertEqual((kinds.count("all_gather"), kinds.count("reduce_scatter")), (18, 5))
        # Three micro-steps, each reducing (training.fsdp.no_sync false).
        real = self.assert_same(options=["--accumulation", "3", "--sync-each-micro-step"])
        kinds = [c[0] for c in real[1]]
        self.assertEqual((kinds.count("all_gather"), kinds.count("reduce_scatter")), (27, 15))
        # ddpsim told to reduce every micro-step while torch ran no_sync(): the lists differ.
        real, simulated = self.compare(options=["--accumulation", "2", "--ddpsim-set", "training.fsdp.no_sync=false"])
        self.assertNotEqual(real[1], simulated[1])

    def test_shard_grad_op_keeps_parameters_between_micro_steps_under_no_sync(self):
        # SHARD_GRAD_OP inside no_sync() does not free the unsharded parameters after the backward
        # (_should_free_unsharded_flat_param), so the next micro-step's forward gathers nothing:
        # 5 all-gathers (the first forward's) and 5 reduce-scatters (the last backward's) per step.
        real = self.assert_same(options=["--strategy", "SHARD_GRAD_OP", "--accumulation", "3"])
        kinds = [c[0] for c in real[1]]
        self.assertEqual((kinds.count("all_gather"), kinds.count("reduce_scatter")), (5, 5))
        # Reducing every micro-step frees them each time: 3 x 5 all-gathers and 3 x 5 reduce-scatters.
        real = self.assert_same(options=["--strategy", "SHARD_GRAD_OP", "--accumulation", "3",
                                         "--sync-each-micro-step"])
        kinds = [c[0] for c in real[1]]
        self.assertEqual((kinds.count("all_gather"), kinds.count("reduce_scatter")), (15, 15))

    def test_gpt2_tied_embeddings_four_ranks(self):
        self.assert_same(model=GPT2, world_size=4)

    def test_resnet18_blocks(self):
        self.assert_same(model=RESNET18, world_size=3)

    def test_zero_broadcasts_parameter_by_parameter(self):
        real = self.assert_same(options=["--wrapper", "zero"])
        # Every parameter once per step: the tiny LLaMA's 39 tensors.
        self.assertEqual(len(real[1]), 39)
        self.assertEqual({c[0] for c in real[1]}, {"broadcast"})

    def test_zero_bucket_views_and_resnet18(self):
        real = self.assert_same(options=["--wrapper", "zero", "--bucket-view"])
        self.assertEqual([c[1] for c in real[1]], ["rank 0 bucket", "rank 1 bucket", "rank 2 bucket"])
        self.assert_same(model=RESNET18, world_size=2, options=["--wrapper", "zero"])

    def test_the_comparison_can_fail(self):
        real, simulated = self.compare(options=["--ddpsim-set", "training.fsdp.backward_prefetch=none"])
        self.assertNotEqual(real[1], simulated[1])
        self.assertEqual(sorted(real[1]), sorted(simulated[1]))  # the same collectives, in another order


if __name__ == "__main__":
    unittest.main()
