"""ddpsim's activation memory against what real PyTorch saves for the backward.

For each model, scripts/measure_saved_activations.py runs one training forward (with the
cross-entropy loss) under torch.autograd.graph.saved_tensors_hooks and sums the distinct storages
autograd keeps (parameters and buffers aside; dropout as CUDA runs it, a one-byte mask); ddpsim's
`memory.activations_saved` for the model exported by scripts/export_model.py (float32, one GPU)
must be within 1 % of it: CNNs (ResNet, MobileNet, ConvNeXt with stochastic depth), ViT-B/16 with
eager attention, and the decoder-only transformers of scripts/zoo (GPT-2 with dropout, LLaMA with
RMSNorm and rotary embeddings). Two cases run ddpsim at another batch and size than the export
(the records' batch and size scaling, within the export's probes: a CNN's side extrapolated far
beyond them drifts, ResNet-18 exported at 64 px and run at 128 px +1.4 %, its 16 px probe's
last stages rounded up to one pixel). The export records what autograd saves per op (`sv`, the
same hooks on a meta-device forward, each storage charged once); what ddpsim adds is CUDA's
dropout mask, the loss (log_softmax's result, the targets) and the scaling. Before the export
recorded it (2026-12-07) the byte rules counted GPT-2 and LLaMA 34 % high (a tensor saved by two
ops twice, a multiply by a number as saving both operands). Two cases checkpoint every block
(torch.utils.checkpoint keeps a block's input; ddpsim the bytes its first op reads; before
2026-12-07 it kept the first layer's saves). LLaMA is not among them: its blocks also take the
rotary cos/sin and the mask, tensors shared by every block that checkpoint keeps and ddpsim does
not see (-4.9 % at 2 x 64 tokens of width 128; once for all blocks: the float32 mask is 16 MiB
at 2,048 tokens).

Run from the repository root (the discover run of python.zoo_and_model_files):
  /usr/bin/python3 -m unittest tests/python/test_saved_activations.py
DDPSIM_BIN overrides the binary (default build/ddpsim). Skipped without torch or the binary.
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
DDPSIM = os.environ.get("DDPSIM_BIN", os.path.join(REPO, "build", "ddpsim"))
EXPORT = os.path.join(REPO, "scripts", "export_model.py")
MEASURE = os.path.join(REPO, "scripts", "measure_saved_activations.py")

try:
    import torch  # noqa: F401
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False

GPT2 = '{"n_layer": 2, "n_embd": 128, "n_head": 4, "vocab_size": 500, "n_positions": 64}'
LLAMA = '{"dim": 128, "n_layers": 2, "n_heads": 4, "vocab_size": 500, "multiple_of": 32, "max_seq_len": 64}'
# (spec, export input, measured and simulated input, input dtype, vocab, kwargs, checkpointed
# containers: each of their modules under torch.utils.checkpoint, ddpsim's
# training.activation_checkpointing "full" over the same blocks)
CASES = [
    ("torchvision.models:resnet18", "4x3x64x64", "4x3x64x64", "float32", None, "{}", ""),
    ("torchvision.models:resnet18", "2x3x128x128", "4x3x96x96", "float32", None, "{}", ""),
    ("torchvision.models:resnet18", "4x3x64x64", "4x3x64x64", "float32", None, "{}", "layer1,layer2,layer3,layer4"),
    ("torchvision.models:mobilenet_v2", "4x3x64x64", "4x3x64x64", "float32", None, "{}", ""),
    ("torchvision.models:convnext_tiny", "2x3x64x64", "2x3x64x64", "float32", None, "{}", ""),
    ("torchvision.models:vit_b_16", "1x3x224x224", "1x3x224x224", "float32", None, "{}", ""),
    ("zoo.gpt2:gpt2", "2x64", "2x64", "int64", 500, GPT2, ""),
    ("zoo.gpt2:gpt2", "2x64", "4x32", "int64", 500, GPT2, ""),
    ("zoo.gpt2:gpt2", "2x64", "2x64", "int64", 500, GPT2, "transformer.h"),
    ("zoo.llama:llama", "2x64", "2x64", "int64", 500, LLAMA, ""),
]
WITHIN = 0.01


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=600,
                       cwd=REPO)
    return p


@unittest.skipUnless(HAVE_TORCH, "python3-torch not installed")
@unittest.skipUnless(os.access(DDPSIM, os.X_OK), "ddpsim binary not built (%s)" % DDPSIM)
class TestSavedActivations(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="saved-activations-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def measure_and_predict(self, spec, export_shape, shape, dtype, vocab, kwargs, checkpoint):
        common = ["--input-dtype", dtype, "--kwargs", kwargs] + (["--vocab", str(vocab)] if vocab else [])
        out = os.path.join(self.tmp, "%s-%s.json" % (spec.replace(":", "_"), export_shape))
        if not os.path.exists(out):
            p = run([sys.executable, EXPORT, spec, "-o", out, "--input", export_shape] + common)
            self.assertEqual(p.returncode, 0, p.stderr[-2000:])
        p = run([sys.executable, MEASURE, spec, "--loss", "--json", "--input", shape, "--checkpoint", checkpoint] +
                common)
        self.assertEqual(p.returncode, 0, p.stderr[-2000:])
        measured = json.loads(p.stdout)["saved_bytes"]
        dims = [int(d) for d in shape.split("x")]
        size = ["--set", "training.seq_len=%d" % dims[1]] if dtype == "int64" else (
            ["--set", "training.image_size=%d" % dims[2]] if export_shape != shape else [])
        p = run([DDPSIM, "run", "--model", out, "--cluster", "dgx-a100", "--nodes", "1", "--set", "gpus_per_node=1",
                 "--set", "training.batch_size=%d" % dims[0], "--set", "training.compute_dtype=float32",
                 "--set", "training.activation_checkpointing=" + ("full" if checkpoint else "none")] + size +
                ["--json", "-", "-q"])
        self.assertEqual(p.returncode, 0, p.stderr[-2000:])
        predicted = json.loads(p.stdout)["memory"]["activations_saved"]
        return measured, predicted

    def test_against_what_torch_saves(self):
        for spec, export_shape, shape, dtype, vocab, kwargs, checkpoint in CASES:
            with self.subTest(model=spec, input=shape, checkpoint=checkpoint):
                measured, predicted = self.measure_and_predict(spec, export_shape, shape, dtype, vocab, kwargs,
                                                               checkpoint)
                self.assertGreater(measured, 0)
                err = predicted / measured - 1
                sys.stderr.write("  %s exported at %s, run at %s%s: torch saves %d B, ddpsim %d B (%+.2f %%)\n"
                                 % (spec, export_shape, shape, " checkpointing " + checkpoint if checkpoint else "",
                                    measured, predicted, 100 * err))
                self.assertLessEqual(abs(err), WITHIN)

    def test_checkpoint_names_a_container_that_exists(self):
        for path, says in (("layer9", "no such module"), ("fc", "holds no modules")):
            with self.subTest(path=path):
                p = run([sys.executable, MEASURE, "torchvision.models:resnet18", "--input", "1x3x32x32",
                         "--checkpoint", "layer1," + path])
                self.assertEqual(p.returncode, 2, p.stderr[-2000:])
                self.assertIn("--checkpoint '%s': " % path, p.stderr)
                self.assertIn(says, p.stderr)
                self.assertEqual(p.stdout, "")


if __name__ == "__main__":
    unittest.main()
