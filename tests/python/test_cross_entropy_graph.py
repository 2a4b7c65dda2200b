"""ddpsim's training loss against the autograd graph PyTorch builds for it (skipped without torch).

`training.loss` models F.cross_entropy on class-index targets as log_softmax + nll_loss, with
log_softmax's float32 result kept for the backward (sim/gpu/kernel_model.cpp loss_kernels). Here
PyTorch itself says which backward nodes the call creates and what they keep, and ddpsim's peak
memory must grow by exactly that many bytes per logit. The autocast cast is checked on the CPU's
autocast (bfloat16), whose policy lists cross_entropy_loss as float32 like CUDA's.

    /usr/bin/python3 -m unittest tests.python.test_cross_entropy_graph
"""

import json
import os
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DDPSIM = os.path.join(REPO, "build", "ddpsim")

try:
    import torch
    import torch.nn.functional as F
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False


def nodes(fn):
    """Names of the backward graph's nodes below fn, depth first."""
    out, stack, seen = [], [fn], set()
    while stack:
        f = stack.pop()
        if f is None or id(f) in seen:
            continue
        seen.add(id(f))
        out.append(type(f).__name__)
        stack.extend(n for n, _ in f.next_functions)
    return out


@unittest.skipUnless(HAVE_TORCH, "python3-torch not installed")
class CrossEntropyGraph(unittest.TestCase):
    def test_log_softmax_then_nll_loss_keeping_the_float32_result(self):
        rows, classes = 6, 1500
        logits = torch.randn(rows, classes, requires_grad=True)
        target = torch.randint(0, classes, (rows,))
        loss = F.cross_entropy(logits, target)
        self.assertEqual(type(loss.grad_fn).__name__, "NllLossBackward0")
        log_softmax = loss.grad_fn.next_functions[0][0]
        self.assertEqual(type(log_softmax).__name__, "LogSoftmaxBackward0")
        saved = log_softmax._saved_result
        self.assertEqual(tuple(saved.shape), (rows, classes))
        self.assertEqual(saved.dtype, torch.float32)
        self.assertEqual(saved.element_size(), 4)

    def test_autocast_casts_the_half_logits_to_float32_first(self):
        logits = torch.randn(4, 300).to(torch.bfloat16).requires_grad_()
        target = torch.randint(0, 300, (4,))
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = F.cross_entropy(logits, target)
        self.assertEqual(loss.dtype, torch.float32)
        graph = nodes(loss.grad_fn)
        self.assertIn("ToCopyBackward0", graph)  # the cast, whose backward converts the gradient back
        self.assertIn("LogSoftmaxBackward0", graph)

    @unittest.skipUnless(os.path.exists(DDPSIM), "build/ddpsim not built")
    def test_ddpsim_keeps_four_bytes_per_logit(self):
        # GPT-2 at 2 x 1,024 tokens: 2,048 x 50,257 logits on one A100; the peak (in the backward)
        # holds every activation, so with the loss it is 4 B per logit higher.
        with tempfile.TemporaryDirectory() as d:
            peak = {}
            for loss in ("auto", "none"):
                f = os.path.join(d, loss + ".json")
                subprocess.run([DDPSIM, "run", "-q", "--model", "gpt2", "--cluster", "dgx-a100", "--nodes", "1",
                                "--gpus-per-node", "1", "--set", "training.batch_size=2", "--set",
                                "training.loss=" + loss, "--json", f], check=True, timeout=300)
                with open(f) as fh:
                    peak[loss] = json.load(fh)["memory_per_gpu_bytes"]
        # PyTorch's own figure for what the loss keeps per logit (float32 logits, as ddpsim's peak
        # is in float32 compute here).
        logits = torch.randn(3, 50257, requires_grad=True)
        kept = F.cross_entropy(logits, torch.zeros(3, dtype=torch.long)).grad_fn.next_functions[0][0]._saved_result
        self.assertEqual(peak["auto"] - peak["none"], kept.element_size() * 2048 * 50257)


if __name__ == "__main__":
    unittest.main()
