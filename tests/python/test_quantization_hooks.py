"""ddpsim's quantizing comm hooks against PyTorch's own (skipped without torch).

PyTorch's quantization_pertensor_hook and quantization_perchannel_hook
(torch/distributed/algorithms/ddp_comm_hooks/quantization_hooks.py) are run on a CPU tensor with
a recording stand-in for dist.all_gather and a two-rank process group stand-in; every all-gather
they issue (its input bytes, in order) must be the all-gathers ddpsim's trace shows for a bucket of
the same size.

    /usr/bin/python3 -m unittest tests.python.test_quantization_hooks
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
    import torch.distributed as dist
    from torch.distributed.algorithms.ddp_comm_hooks import quantization_hooks as qh
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False


class _Group:
    def rank(self):
        return 0

    def size(self):
        return 2


class _Bucket:
    def __init__(self, tensor):
        self._t = tensor

    def buffer(self):
        return self._t

    def get_tensor(self):  # older releases
        return self._t


def pytorch_all_gathers(hook, n):
    """Input bytes of each all_gather `hook` issues for a float32 bucket of n elements."""
    calls = []

    class _Work:
        def __init__(self, out):
            self._out = out

        def get_future(self):
            # ProcessGroupNCCL's all_gather work completes with [the outputs flattened into one
            # (world_size, *shape) tensor]; PyTorch 1.13's hooks index it ([0][rank, 0, :]).
            fut = torch.futures.Future()
            fut.set_result([torch.stack(self._out)])
            return fut

    def fake_all_gather(out_list, tensor, group=None, async_op=False):
        calls.append(tensor.numel() * tensor.element_size())
        for o in out_list:
            o.copy_(tensor)  # every rank sent the same: the mean is the input
        return _Work(out_list)

    saved = (dist.all_gather, torch.Tensor.cuda, torch.nn.Module.cuda)
    dist.all_gather = fake_all_gather
    # PyTorch 1.13's hooks call .cuda(tensor.device) on what they create: keep it on the CPU.
    torch.Tensor.cuda = lambda self, *a, **k: self
    torch.nn.Module.cuda = lambda self, *a, **k: self
    try:
        torch.manual_seed(0)
        grad = torch.randn(n)
        result = hook(_Group(), _Bucket(grad)).wait()
    finally:
        dist.all_gather, torch.Tensor.cuda, torch.nn.Module.cuda = saved
    return calls, grad, result


def ddpsim_all_gathers(hook, n, tmp):
    model = {"format": "ddpsim-model/1", "name": "one-tensor", "batch_size": 1,
             "params": [{"name": "w", "shape": [n], "dtype": "float32"}],
             "layers": [{"name": "l", "type": "linear", "params": [0], "fwd_time_s": 1e-3, "bwd_time_s": 2e-3}],
             "grad_ready_order": [0]}
    sc = {"name": "quant-check", "model": model, "cluster": "dgx-a100", "nodes": 1, "gpus_per_node": 2,
          "training": {"batch_size": 1}, "ddp": {"comm_hook": hook}}
    path = os.path.join(tmp, "sc-%s-%d.json" % (hook, n))
    trace = path + ".trace.json"
    with open(path, "w") as f:
        json.dump(sc, f)
    r = subprocess.run([DDPSIM, "run", path, "--trace", trace, "-q"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True, timeout=120, cwd=REPO)
    if r.returncode != 0:
        raise AssertionError(r.stdout + r.stderr)
    with open(trace) as f:
        events = json.load(f)["traceEvents"]
    marks = [e for e in events if e["ph"] == "i"]
    end1 = marks[1]["ts"] if len(marks) > 1 else float("inf")
    gathers = [e for e in events if e["ph"] == "X" and e.get("cat") == "allgather" and e["ts"] < end1]
    return [int(e["args"]["bytes"]) for e in sorted(gathers, key=lambda e: e["ts"])]


@unittest.skipUnless(HAVE_TORCH, "needs torch (use /usr/bin/python3)")
@unittest.skipUnless(os.path.exists(DDPSIM), "needs build/ddpsim")
class QuantizationHooksTest(unittest.TestCase):
    def test_all_gathers_match_pytorch(self):
        with tempfile.TemporaryDirectory(prefix="test-quant-hooks-") as tmp:
            for name, hook in (("quantize_per_tensor", qh.quantization_pertensor_hook),
                               ("quantize_per_channel", qh.quantization_perchannel_hook)):
                for n in (1000, 1024, 4096, 525584):
                    calls, grad, result = pytorch_all_gathers(hook, n)
                    # The hook really ran: its mean of two identical ranks is the input, to 8 bits.
                    self.assertEqual(result.numel(), n)
                    span = float(grad.max() - grad.min())
                    self.assertLess(float((result - grad).abs().max()), span / 255 + 1e-6)
                    self.assertEqual(ddpsim_all_gathers(name, n, tmp), calls, "%s n=%d" % (name, n))


if __name__ == "__main__":
    unittest.main()
