#!/usr/bin/python3
"""What real PyTorch keeps for the backward: the bytes of the tensors autograd saves in one
training forward, the ground truth for ddpsim's activation memory (`memory.activations` at the
backward's start).

Method: one forward (train mode, seed 0, float32, CPU) inside
torch.autograd.graph.saved_tensors_hooks, whose pack hook sees every tensor an autograd node
saves (torch/csrc/autograd/saved_variable.cpp: a SavedVariable keeps a reference, not a copy).
The bytes are counted per distinct storage (a view, an in-place result and a tensor saved by two
nodes share one), the whole storage as the allocator holds it; the storages of the parameters and
buffers are left out (they exist without a forward), the input batch is kept (a first
convolution saves it, and ddpsim counts it). With --loss, F.cross_entropy over the output with
random targets runs inside the hooks too (what ddpsim's training.loss auto adds for a classifier).
F.dropout runs as CUDA runs it (native_dropout: a one-byte mask; --cpu-dropout keeps the CPU's
float32 one). Other kernels that save backend-specific tensors (cuDNN's batch-norm reserve space,
flash attention's log-sum-exp) are not emulated; docs/accuracy.md says where that matters.

--checkpoint A[,B...]: each module of the containers A, B (attribute paths such as
"transformer.h", "layers", "layer1") runs under torch.utils.checkpoint.checkpoint (reentrant, 1.13's
default), which keeps the module's tensor inputs and runs its forward without saving anything
(ddpsim's training.activation_checkpointing "full" over the same blocks).

Usage:
  /usr/bin/python3 scripts/measure_saved_activations.py SPEC --input 8x3x224x224 [--input-dtype int64]
      [--vocab N] [--kwargs JSON] [--loss] [--checkpoint A[,B...]] [--json]
SPEC as scripts/export_model.py takes it ("torchvision.models:resnet18", "zoo.gpt2:gpt2").
Prints the saved bytes, by dtype and by the autograd node that saved them first.
"""

import argparse
import json
import os
import sys

SCRIPT_DIR = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, SCRIPT_DIR)
sys.path.insert(0, os.path.dirname(SCRIPT_DIR))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("spec")
    ap.add_argument("--input", required=True, help="input shape, e.g. 8x3x224x224")
    ap.add_argument("--input-dtype", default="float32", choices=["float32", "int64"])
    ap.add_argument("--vocab", type=int, default=None, help="int64 inputs: token ids below this")
    ap.add_argument("--kwargs", default="{}", help="JSON keyword arguments for the model's callable")
    ap.add_argument("--loss", action="store_true", help="add F.cross_entropy over the output (random targets)")
    ap.add_argument("--json", action="store_true", help="print JSON")
    ap.add_argument("--checkpoint", default="",
                    help="comma-separated containers whose modules run under torch.utils.checkpoint")
    ap.add_argument("--cpu-dropout", action="store_true",
                    help="keep the CPU's dropout (a float32 mask) instead of CUDA's native_dropout (a bool mask)")
    a = ap.parse_args(argv)

    import importlib
    import torch
    import torch.nn.functional as F

    torch.manual_seed(0)
    if not a.cpu_dropout:
        # F.dropout as CUDA runs it: native_dropout when 0 < p < 1 in training (Dropout.cpp,
        # is_fused_kernel_acceptable), which saves a one-byte mask; the CPU's _dropout_impl saves a
        # float32 one. torch.native_dropout has a CPU kernel with the CUDA one's autograd.
        plain = F.dropout

        def cuda_dropout(input, p=0.5, training=True, inplace=False):
            if training and 0 < p < 1 and input.numel() > 0:
                return torch.native_dropout(input, p, True)[0]
            return plain(input, p, training, inplace)

        F.dropout = cuda_dropout
    mod_name, fn_name = a.spec.split(":", 1)
    model = getattr(importlib.import_module(mod_name), fn_name)(**json.loads(a.kwargs))
    model.train()
    if a.checkpoint:
        import torch.utils.checkpoint as cp

        def checkpointed(forward):
            return lambda *args: cp.checkpoint(forward, *args)

        for path in a.checkpoint.split(","):
            container = model
            for part in path.split("."):
                container = getattr(container, part, None)
                if container is None:
                    sys.stderr.write("measure_saved_activations.py: error: --checkpoint %r: no such module in the "
                                     "model\n" % path)
                    return 2
            blocks = list(container.children())
            if not blocks:
                sys.stderr.write("measure_saved_activations.py: error: --checkpoint %r: that module holds no modules "
                                 "to checkpoint (name their container, e.g. \"layers\")\n" % path)
                return 2
            for block in blocks:
                block.forward = checkpointed(block.forward)
    shape = [int(x) for x in a.input.split("x")]
    if a.input_dtype == "int64":
        x = torch.randint(0, a.vocab or 1000, shape)
    else:
        x = torch.randn(shape)

    def storage_of(t):
        s = t.storage() if hasattr(t, "storage") else None
        return (s.data_ptr(), s.nbytes()) if s is not None else (t.data_ptr(), t.numel() * t.element_size())

    owned = set()
    for p in list(model.parameters()) + list(model.buffers()):
        owned.add(storage_of(p)[0])
    seen = {}
    order = []

    def pack(t):
        ptr, nbytes = storage_of(t)
        if ptr not in owned and ptr not in seen and nbytes > 0:
            seen[ptr] = (nbytes, str(t.dtype).replace("torch.", ""), type(t.grad_fn).__name__ if t.grad_fn else "leaf")
            order.append(ptr)
        return t

    def unpack(t):
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        out = model(x)
        if isinstance(out, (tuple, list)):
            out = out[0]
        if hasattr(out, "logits"):
            out = out.logits
        if a.loss:
            classes = out.shape[-1]
            target = torch.randint(0, classes, out.shape[:-1])
            loss = F.cross_entropy(out.reshape(-1, classes), target.reshape(-1))
        else:
            loss = out.float().sum()
    total = sum(seen[p][0] for p in order)
    by_dtype = {}
    for p in order:
        by_dtype[seen[p][1]] = by_dtype.get(seen[p][1], 0) + seen[p][0]
    result = {"spec": a.spec, "input": a.input, "loss": a.loss, "checkpoint": a.checkpoint, "saved_bytes": total,
              "storages": len(order),
              "by_dtype": by_dtype, "torch": torch.__version__}
    del loss
    if a.json:
        print(json.dumps(result, sort_keys=True))
    else:
        print("%s at %s%s: %d bytes saved for the backward in %d storages (%s); torch %s" % (
            a.spec, a.input, " with cross_entropy" if a.loss else "", total, len(order),
            ", ".join("%s %d" % kv for kv in sorted(by_dtype.items())), torch.__version__))
    return 0


if __name__ == "__main__":
    sys.exit(main())
