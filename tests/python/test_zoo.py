"""Tests for scripts/zoo, scripts/export_model.py and models/*.json.

Run from the repository root:
  /usr/bin/python3 -m unittest discover -s tests/python -p 'test_*.py'
Tests needing torch are skipped when it is not importable; the models/*.json checks need only
the standard library.
"""

import glob
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SCRIPTS = os.path.join(REPO, "scripts")
for p in (SCRIPTS, HERE):
    if p not in sys.path:
        sys.path.insert(0, p)

try:
    import torch  # noqa: F401
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False

LAYER_TYPES = {"conv2d", "linear", "matmul", "batchnorm", "layernorm", "embedding", "elementwise",
               "pool", "softmax", "other"}
# Parameter counts (numel) of the zoo: torchvision's models as built, the published counts of the
# reference implementations (BERT-large with pooler, GPT-2 medium/large/XL, LLaMA-7B), and the
# repository's own small models.
KNOWN_TOTALS = {"resnet50": 25557032, "bert-base": 109482240, "gpt2": 124439808,
                "resnet101": 44549160, "resnet152": 60192808, "vgg16": 138357544,
                "vit-b16": 86567656, "vit-l16": 304326632, "bert-large": 335141888,
                "gpt2-medium": 354823168, "gpt2-large": 774030080, "gpt2-xl": 1557611200,
                "llama-7b": 6738415616, "mixed-gpt": 7419392, "skip-branch": 4496416,
                # meta-llama's published sizes: Llama 3 8B 8,030,261,248; Llama 2 13B 13,015,864,320
                "llama3-8b": 8030261248, "llama2-13b": 13015864320}
# name -> (spec, kwargs): what the file must have been exported from
ZOO = {"resnet50": "torchvision.models:resnet50", "resnet101": "torchvision.models:resnet101",
       "resnet152": "torchvision.models:resnet152", "vgg16": "torchvision.models:vgg16",
       "vit-b16": "torchvision.models:vit_b_16", "vit-l16": "torchvision.models:vit_l_16",
       "bert-base": "zoo.bert:bert_base", "bert-large": "zoo.bert:bert_large",
       "gpt2": "zoo.gpt2:gpt2", "gpt2-medium": "zoo.gpt2:gpt2_medium",
       "gpt2-large": "zoo.gpt2:gpt2_large", "gpt2-xl": "zoo.gpt2:gpt2_xl",
       "llama-7b": "zoo.llama:llama_7b", "mixed-gpt": "zoo.mixed:mixed_gpt",
       "llama3-8b": "zoo.llama:llama3_8b", "llama2-13b": "zoo.llama:llama2_13b",
       "skip-branch": "zoo.unused:skip_branch_net"}
# models small enough to instantiate for real in a test (the rest are built on the meta device)
REAL_BUILD_MAX = 400 * 1000 * 1000


def numel(shape):
    n = 1
    for d in shape:
        n *= int(d)
    return n


def check_model_doc(tc, doc, where):
    """Structural checks shared by the models/*.json test and the exporter tests."""
    tc.assertEqual(doc["format"], "ddpsim-model/1", where)
    for key in ("name", "source", "exported_with", "batch_size", "params", "buffers", "layers",
                "grad_ready_order"):
        tc.assertIn(key, doc, where)
    ew = doc["exported_with"]
    tc.assertEqual(ew["input_shape"][0], doc["batch_size"], where)
    params = doc["params"]
    n = len(params)
    names = [p["name"] for p in params]
    tc.assertEqual(len(set(names)), n, "%s: duplicate parameter names" % where)
    for p in params:
        tc.assertTrue(all(isinstance(d, int) and d >= 0 for d in p["shape"]), (where, p))
        tc.assertIn("dtype", p)
        tc.assertIsInstance(p["requires_grad"], bool)
    rg = sorted(i for i, p in enumerate(params) if p["requires_grad"])
    # every requires_grad param in exactly one layer
    seen = {}
    for li, l in enumerate(doc["layers"]):
        tc.assertIn(l["type"], LAYER_TYPES, (where, l["name"]))
        for k in ("fwd_flops", "bwd_flops", "fwd_bytes", "bwd_bytes"):
            tc.assertGreaterEqual(l[k], 0, (where, l["name"], k))
        for pi in l["params"]:
            tc.assertTrue(0 <= pi < n, (where, l["name"], pi))
            tc.assertTrue(params[pi]["requires_grad"], (where, l["name"], pi))
            if pi in seen:
                tc.fail("%s: param %d in layers %d and %d" % (where, pi, seen[pi], li))
            seen[pi] = li
    tc.assertEqual(sorted(seen), rg, "%s: requires_grad params not covered by layers" % where)
    tc.assertEqual(sorted(doc["grad_ready_order"]), rg,
                   "%s: grad_ready_order is not a permutation of the requires_grad params" % where)
    unused = doc.get("unused_params")
    if unused is not None:
        # representation of parameters the forward never uses (export_model.py --allow-unused)
        tc.assertTrue(unused, where)
        tc.assertEqual(unused, sorted(set(unused)), where)
        last = doc["layers"][-1]
        tc.assertEqual(last["name"], "<unused-params>", where)
        tc.assertEqual(last["params"], unused, where)
        tc.assertEqual([last[k] for k in ("fwd_flops", "bwd_flops", "fwd_bytes", "bwd_bytes")],
                       [0, 0, 0, 0], where)
        tc.assertEqual(doc["grad_ready_order"][:len(unused)], unused, where)
    else:
        tc.assertNotIn("<unused-params>", [l["name"] for l in doc["layers"]], where)
    method = ew.get("method", "traced")
    tc.assertIn(method, ("traced", "meta"), where)
    tc.assertEqual(ew.get("grad_ready_order", "recorded"),
                   "derived" if method == "meta" else "recorded", where)
    tc.assertGreater(sum(l["fwd_flops"] for l in doc["layers"]), 0, where)
    return sum(numel(p["shape"]) for p in params)


class TestModelsJson(unittest.TestCase):
    def test_models_json(self):
        files = sorted(glob.glob(os.path.join(REPO, "models", "*.json")))
        self.assertTrue(files, "no models/*.json")
        for path in files:
            with open(path) as f:
                doc = json.load(f)
            where = os.path.relpath(path, REPO)
            total = check_model_doc(self, doc, where)
            self.assertIn(doc["name"], KNOWN_TOTALS, "%s: add its parameter count to KNOWN_TOTALS" % where)
            self.assertEqual(total, KNOWN_TOTALS[doc["name"]], where)
            self.assertEqual(doc["source"], ZOO[doc["name"]], where)

    def test_special_models(self):
        """llama-7b comes from the analytic (meta) path; mixed-gpt has two parameter dtypes;
        skip-branch declares its unused parameters."""
        def load(name):
            path = os.path.join(REPO, "models", name + ".json")
            if not os.path.exists(path):
                self.fail("models/%s.json missing" % name)
            with open(path) as f:
                return json.load(f)
        llama = load("llama-7b")
        self.assertEqual(llama["exported_with"]["method"], "meta")
        self.assertEqual(llama["exported_with"]["grad_ready_order"], "derived")
        self.assertEqual(len(llama["params"]), 291)
        names = [p["name"] for p in llama["params"]]
        self.assertEqual(llama["grad_ready_order"][0], names.index("output.weight"))
        self.assertEqual(llama["grad_ready_order"][-1], names.index("tok_embeddings.weight"))
        mixed = load("mixed-gpt")
        dts = {}
        for p in mixed["params"]:
            dts.setdefault(p["dtype"], []).append(p["name"])
        self.assertEqual(sorted(dts), ["bfloat16", "float32"])
        self.assertTrue(all(".ln_" in n or n.startswith(("wte", "wpe", "ln_f")) for n in dts["float32"]))
        import ddpsim_buckets_oracle as oracle
        ss = oracle.buckets_for(mixed)["steady_state"]
        for b in ss:  # DDP never mixes dtypes in a bucket
            self.assertEqual(len({mixed["params"][i]["dtype"] for i in b["param_indices"]}), 1)
        skip = load("skip-branch")
        unused = [skip["params"][i]["name"] for i in skip["unused_params"]]
        self.assertEqual(unused, ["branch_b.0.weight", "branch_b.0.bias", "branch_b.2.weight",
                                  "branch_b.2.bias", "aux_head.weight", "aux_head.bias"])

    def test_gpt2_json_tied(self):
        path = os.path.join(REPO, "models", "gpt2.json")
        if not os.path.exists(path):
            self.fail("models/gpt2.json missing")
        with open(path) as f:
            doc = json.load(f)
        names = [p["name"] for p in doc["params"]]
        self.assertNotIn("lm_head.weight", names)
        wte = names.index("transformer.wte.weight")
        owner = [l for l in doc["layers"] if wte in l["params"]]
        self.assertEqual(len(owner), 1)
        self.assertEqual(owner[0]["name"], "transformer.wte")
        self.assertIn("lm_head", [l["name"] for l in doc["layers"]])

    def test_resnet50_reference_buckets(self):
        """grad_ready_order + DDP's rules reproduce the buckets real DDP used (recorded with
        scripts/ddp_reference_buckets.py, torch 1.13, default cap)."""
        path = os.path.join(REPO, "models", "resnet50.json")
        if not os.path.exists(path):
            self.fail("models/resnet50.json missing")
        import ddpsim_buckets_oracle as oracle
        with open(path) as f:
            doc = json.load(f)
        res = oracle.buckets_for(doc)
        self.assertEqual([b["bytes"] for b in res["steady_state"]],
                         [8196000, 31502336, 26255360, 26550272, 9724160])
        self.assertEqual(res["steady_state"][0]["param_indices"], [160, 159])
        self.assertEqual([b["bytes"] for b in res["iteration1"]], [102228128])


@unittest.skipUnless(HAVE_TORCH, "python3-torch not installed")
class TestZoo(unittest.TestCase):
    def test_bert_base_param_count(self):
        from export_model import ddp_param_list
        from zoo.bert import bert_base
        m = bert_base()
        self.assertEqual(sum(p.numel() for p in m.parameters()), 109482240)
        names = [n for n, _ in ddp_param_list(m)]
        self.assertEqual(len(names), 199)
        self.assertEqual(names[0], "embeddings.word_embeddings.weight")
        self.assertIn("encoder.layer.0.attention.self.query.weight", names)
        self.assertIn("encoder.layer.11.output.LayerNorm.bias", names)
        self.assertEqual(names[-1], "pooler.dense.bias")

    def test_gpt2_param_count_and_tying(self):
        from export_model import ddp_param_list
        from zoo.gpt2 import gpt2
        m = gpt2()
        self.assertIs(m.lm_head.weight, m.transformer.wte.weight)
        self.assertEqual(sum(p.numel() for p in m.parameters()), 124439808)
        plist = ddp_param_list(m)
        self.assertEqual(sum(p.numel() for _, p in plist), 124439808)
        names = [n for n, _ in plist]
        self.assertEqual(len(names), 148)
        self.assertNotIn("lm_head.weight", names)
        self.assertEqual(names[0], "transformer.wte.weight")
        self.assertEqual(dict(plist)["transformer.h.0.attn.c_attn.weight"].shape, (768, 2304))

    def test_spec_forms(self):
        import export_model as em
        a = em.load_model("zoo.gpt2:gpt2", {"n_layer": 1, "n_embd": 64, "n_head": 2})
        b = em.load_model("scripts.zoo.gpt2:gpt2", {"n_layer": 1, "n_embd": 64, "n_head": 2})
        self.assertEqual([n for n, _ in em.ddp_param_list(a)], [n for n, _ in em.ddp_param_list(b)])


@unittest.skipUnless(HAVE_TORCH, "python3-torch not installed")
class TestExporter(unittest.TestCase):
    TINY = '{"n_layer": 2, "n_embd": 64, "n_head": 4, "vocab_size": 1000, "n_positions": 64}'

    def export(self, spec, shape, dtype="float32", kwargs=None):
        import export_model as em
        return em.export(spec, em.parse_shape(shape), dtype, None, json.loads(kwargs) if kwargs else {})

    def test_tiny_gpt2(self):
        doc = self.export("zoo.gpt2:gpt2", "2x16", "int64", self.TINY)
        check_model_doc(self, doc, "tiny gpt2")
        names = [p["name"] for p in doc["params"]]
        wte = names.index("transformer.wte.weight")
        owner = [l["name"] for l in doc["layers"] if wte in l["params"]]
        self.assertEqual(owner, ["transformer.wte"])
        # the tied weight's gradient completes last (it is also used by lm_head)
        self.assertEqual(doc["grad_ready_order"][-1], wte)
        types = {l["name"]: l["type"] for l in doc["layers"]}
        self.assertEqual(types["transformer.h.0.attn.c_attn"], "linear")
        self.assertEqual(types["transformer.h.0.attn"], "matmul")
        self.assertEqual(types["transformer.h.0.ln_1"], "layernorm")
        self.assertEqual(types["lm_head"], "linear")

    def test_scales_linearly_with_batch(self):
        d1 = self.export("torchvision.models:resnet18", "1x3x64x64")
        d2 = self.export("torchvision.models:resnet18", "2x3x64x64")
        self.assertEqual(len(d1["layers"]), len(d2["layers"]))
        for a, b in zip(d1["layers"], d2["layers"]):
            self.assertEqual(a["name"], b["name"])
            for k in ("fwd_flops", "bwd_flops", "fwd_bytes", "bwd_bytes"):
                self.assertAlmostEqual(b[k], 2 * a[k], delta=1e-6 * max(1.0, b[k]),
                                       msg="%s %s" % (a["name"], k))
        conv1 = d1["layers"][0]
        self.assertEqual(conv1["name"], "conv1")
        # 2 * out(64x32x32) * 3*7*7 ; the image needs no gradient -> weight grad only
        self.assertEqual(conv1["fwd_flops"], 2 * 64 * 32 * 32 * 3 * 49)
        self.assertEqual(conv1["bwd_flops"], conv1["fwd_flops"])

    def test_requires_grad_false_and_counts(self):
        import export_model as em
        import torch.nn as nn

        class Frozen(nn.Module):
            def __init__(self):
                super().__init__()
                self.a = nn.Linear(8, 8)
                self.b = nn.Linear(8, 4)
                self.a.weight.requires_grad_(False)

            def forward(self, x):
                return self.b(self.a(x).relu())
        sys.modules["_frozen_test_mod"] = type(sys)("_frozen_test_mod")
        sys.modules["_frozen_test_mod"].Frozen = Frozen
        doc = em.export("_frozen_test_mod:Frozen", [3, 8])
        check_model_doc(self, doc, "frozen")
        self.assertFalse(doc["params"][0]["requires_grad"])
        self.assertNotIn(0, doc["grad_ready_order"])
        self.assertEqual(doc["layers"][0]["params"], [1])
        self.assertEqual(doc["layers"][0]["fwd_flops"], 2 * 3 * 8 * 8 + 3 * 8)

    def test_conv_records_in_one_two_and_three_dimensions(self):
        """Conv1d, Conv3d and ConvTranspose2d become conv records (Conv1d as height 1, Conv3d with
        depth folded into height) whose implicit-GEMM sizes give the layer's FLOPs; before, Conv1d
        and Conv3d fell through to a GEMM with n = 1 and k = the input length."""
        import export_model as em
        import torch.nn as nn

        class Convs(nn.Module):
            def __init__(self):
                super().__init__()
                self.c1 = nn.Conv1d(6, 8, 3, stride=2, padding=1)
                self.c3 = nn.Conv3d(2, 4, 3, stride=2, padding=1, bias=False)
                self.tr = nn.ConvTranspose2d(4, 2, 4, stride=2, padding=1)

            def forward(self, x):
                # x: 2 x 6 x 20 -> c1: 2 x 8 x 10 -> 2 x 2 x 4 x 10 (a 3-D volume of 2 channels)
                y = self.c1(x).reshape(2, 2, 4, 2, 5).repeat(1, 1, 1, 2, 2)
                z = self.c3(y)                       # 2 x 4 x 2 x 2 x 5
                return self.tr(z.reshape(2, 4, 4, 5))  # 2 x 2 x 8 x 10
        sys.modules["_convs_test_mod"] = type(sys)("_convs_test_mod")
        sys.modules["_convs_test_mod"].Convs = Convs
        doc = em.export("_convs_test_mod:Convs", [2, 6, 20])
        convs = [(layer, k) for layer in doc["layers"] for k in layer.get("kernels", []) if k["op"] == "conv"]
        self.assertEqual(len(convs), 3, [layer["name"] for layer in doc["layers"]])
        (l1, k1), (l3, k3), (lt, kt) = convs
        # Conv1d(6, 8, 3, stride 2, pad 1) on length 20: out length floor((20 + 2 - 3) / 2) + 1 = 10.
        self.assertEqual((k1["n"], k1["c"], k1["h"], k1["w"], k1["o"], k1["r"], k1["s"], k1["p"], k1["q"]),
                         (2, 6, 1, 20, 8, 1, 3, 1, 10))
        # Conv3d(2, 4, 3, stride 2, pad 1) on 4 x 4 x 10: out 2 x 2 x 5; depth folded into height.
        self.assertEqual((k3["c"], k3["h"], k3["w"], k3["o"], k3["r"], k3["s"], k3["p"], k3["q"]),
                         (2, 16, 10, 4, 9, 3, 4, 5))
        # ConvTranspose2d(4, 2, 4, stride 2, pad 1): 4 x 5 -> 8 x 10, flagged.
        self.assertEqual((kt["c"], kt["h"], kt["w"], kt["o"], kt["p"], kt["q"], kt.get("transposed")),
                         (4, 4, 5, 2, 8, 10, 1))
        # The records' multiply-adds are the layers' FLOPs (bias adds one per output element).
        self.assertEqual(l1["fwd_flops"], 2 * 2 * 10 * 8 * 6 * 3 + 2 * 8 * 10)
        self.assertEqual(l3["fwd_flops"], 2 * 2 * (2 * 2 * 5) * 4 * 2 * 27)
        # Transposed: one multiply-add per input element, tap and output channel.
        self.assertEqual(lt["fwd_flops"], 2 * (2 * 4 * 4 * 5) * 2 * 16 + 2 * 2 * 8 * 10)

    def test_kernel_records_when_the_meta_build_fails(self):
        """A constructor that reads tensor values (torchvision's RegNet: block widths from torch ops
        and .tolist()) cannot be built on the meta device; the kernel records then come from a CPU
        forward instead of being left out."""
        import export_model as em
        import torch
        import torch.nn as nn

        class Valued(nn.Module):
            def __init__(self):
                super().__init__()
                width = int(torch.tensor([4.0]).item())  # a value: fails on the meta device
                self.conv = nn.Conv2d(3, width, 3, padding=1)
                self.fc = nn.Linear(width, 2)

            def forward(self, x):
                return self.fc(self.conv(x).mean(dim=(2, 3)))
        sys.modules["_valued_test_mod"] = type(sys)("_valued_test_mod")
        sys.modules["_valued_test_mod"].Valued = Valued
        with self.assertRaises(em.ExportError):
            em.load_model("_valued_test_mod:Valued", meta=True)
        doc = em.export("_valued_test_mod:Valued", [2, 3, 8, 8])
        ops = [k["op"] for layer in doc["layers"] for k in layer.get("kernels", [])]
        self.assertIn("conv", ops)
        self.assertIn("gemm", ops)

    def test_host_ops_counts(self):
        """Per layer, the host work without a kernel: views (detach included), the autograd view
        nodes among them, module calls; a container's own to the next layer in forward order."""
        import export_model as em
        import torch.nn as nn

        class Reshape(nn.Module):  # only a view: not a layer
            def forward(self, x):
                return x.view(2, 2, 2)

        class Host(nn.Module):
            def __init__(self):
                super().__init__()
                self.a = nn.Linear(4, 4)
                self.inner = Reshape()
                self.b = nn.Linear(4, 2)

            def forward(self, x):
                y = self.a(x)                     # t(weight): a view with a node, then addmm
                y = self.inner(y).reshape(2, 4)   # two views with nodes (inner's, the root's)
                y = y * 2.0                       # the root's own op: the root is a layer
                self.seen = y.detach()            # a view without a node
                return self.b(y)                  # b: t(weight)
        sys.modules["_host_ops_test_mod"] = type(sys)("_host_ops_test_mod")
        sys.modules["_host_ops_test_mod"].Host = Host
        doc = em.export("_host_ops_test_mod:Host", [2, 4])
        got = {layer["name"]: layer["host_ops"] for layer in doc["layers"]}
        self.assertEqual(list(got), ["a", "<root>", "b"])
        self.assertEqual(got["a"], {"views": 1, "view_nodes": 1, "module_calls": 1})
        # inner's call and view go to the next layer (the root's, whose first op follows them).
        # Tensor.detach() reaches the dispatcher twice in torch 1.13: counted as it happens.
        import torch
        from torch.utils._python_dispatch import TorchDispatchMode

        class Count(TorchDispatchMode):
            n = 0

            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                Count.n += 1
                return func(*args, **(kwargs or {}))
        t = torch.ones(2, requires_grad=True) * 1.0
        with Count():
            t.detach()
        self.assertEqual(got["<root>"], {"views": 2 + Count.n, "view_nodes": 2, "module_calls": 2})
        self.assertEqual(got["b"], {"views": 1, "view_nodes": 1, "module_calls": 1})

    def test_strided_flag(self):
        """`strided` marks the element-wise ops TensorIterator cannot run contiguously on CUDA: a
        broadcast operand (a 0-dim tensor, a mask of another shape), a permuted input copied
        contiguous, a sliced input; not ops on same-shaped contiguous tensors, not Python
        numbers, not a permuted tensor's element-wise op whose output follows its layout."""
        import export_model as em
        import torch
        import torch.nn as nn

        class Strided(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(8, 8)

            def forward(self, x):                                    # x: [2, 4, 8]
                y = self.fc(x)
                a = y * 0.5                                         # Python number: contiguous
                b = a / torch.full([], 2.0, device=a.device)        # 0-dim tensor: broadcast
                c = b + y                                           # same shape: contiguous
                d = c + torch.zeros(1, 4, 1, device=c.device)       # broadcast mask
                e = d.transpose(1, 2).contiguous()                  # permuted copy
                f = torch.tanh(d.transpose(1, 2))                   # output follows the layout
                g = -e[..., :2]                                     # a slice: strided input
                return e.sum() + f.sum() + g.sum()
        sys.modules["_strided_test_mod"] = type(sys)("_strided_test_mod")
        sys.modules["_strided_test_mod"].Strided = Strided
        doc = em.export("_strided_test_mod:Strided", [2, 4, 8])
        got = [(k["name"], k.get("strided", 0)) for layer in doc["layers"] for k in layer.get("kernels", [])
               if k["op"] == "mem" and k["name"] in ("mul", "div", "add", "clone", "tanh", "neg")]
        # The last two adds join the 0-dim sums: one element, no loop to vectorize.
        self.assertEqual(got, [("mul", 0), ("div", 1), ("add", 0), ("add", 1), ("clone", 1), ("tanh", 0),
                               ("neg", 1), ("add", 0), ("add", 0)])

    def test_cli_errors(self):
        exe = [sys.executable, os.path.join(SCRIPTS, "export_model.py")]
        out = os.path.join(tempfile.mkdtemp(), "x.json")
        for args in (["nocolon", "-o", out],
                     ["no_such_module_xyz:f", "-o", out],
                     ["torchvision.models:no_such_model", "-o", out],
                     ["torchvision.models:resnet18", "--input", "2xAx3", "-o", out],
                     ["torchvision.models:resnet18", "--input", "2x3", "-o", out]):
            p = subprocess.run(exe + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               universal_newlines=True, cwd=REPO, timeout=300)
            self.assertEqual(p.returncode, 2, (args, p.stderr))
            self.assertIn("error:", p.stderr)
            self.assertNotIn("Traceback", p.stderr)
        self.assertFalse(os.path.exists(out))

    def test_module_in_working_directory(self):
        """`export_model.py mymodels:net` finds mymodels.py where the user runs it, without
        PYTHONPATH (the script's own folder is sys.path[0], not the working directory)."""
        d = tempfile.mkdtemp()
        with open(os.path.join(d, "mymodels_cwd.py"), "w") as f:
            f.write("import torch.nn as nn\n\ndef net():\n    return nn.Sequential(nn.Linear(4, 3), nn.ReLU(), "
                    "nn.Linear(3, 2))\n")
        out = os.path.join(d, "net.json")
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        p = subprocess.run([sys.executable, os.path.join(SCRIPTS, "export_model.py"), "mymodels_cwd:net",
                            "--input", "2x4", "-o", out], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, cwd=d, env=env, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(out) as f:
            doc = json.load(f)
        # Two Linear layers: weights 3x4 and 2x3, biases 3 and 2 (the module above, by hand).
        self.assertEqual(sorted(tuple(x["shape"]) for x in doc["params"]), [(2,), (2, 3), (3,), (3, 4)])


@unittest.skipUnless(HAVE_TORCH, "python3-torch not installed")
class TestZooParams(unittest.TestCase):
    """Every models/*.json lists exactly the parameters (names, shapes, dtypes, DDP order) of the
    model it was exported from, and the count matches PyTorch's."""

    def test_models_match_their_source(self):
        import torch
        import export_model as em
        for path in sorted(glob.glob(os.path.join(REPO, "models", "*.json"))):
            with open(path) as f:
                doc = json.load(f)
            where = os.path.relpath(path, REPO)
            spec = doc["source"]
            big = KNOWN_TOTALS.get(doc["name"], 0) > REAL_BUILD_MAX
            # big models: shapes only (meta device); the count is then checked against the
            # published figure in KNOWN_TOTALS by TestModelsJson
            model = em.load_model(spec, {}, meta=big)
            plist = em.ddp_param_list(model)
            self.assertEqual(sum(p.numel() for p in model.parameters()),
                             sum(numel(p["shape"]) for p in doc["params"]), where)
            self.assertEqual([(n, list(p.shape), em.dtype_str(p.dtype), p.requires_grad)
                              for n, p in plist],
                             [(p["name"], p["shape"], p["dtype"], p["requires_grad"])
                              for p in doc["params"]], where)
            self.assertEqual([n for n, _ in model.named_buffers()],
                             [b["name"] for b in doc["buffers"]], where)
            del model, plist

    def test_published_counts(self):
        import export_model as em
        for spec, n in (("zoo.bert:bert_large", 335141888), ("zoo.gpt2:gpt2_medium", 354823168),
                        ("zoo.gpt2:gpt2_large", 774030080), ("zoo.gpt2:gpt2_xl", 1557611200),
                        ("zoo.llama:llama_7b", 6738415616), ("zoo.llama:llama3_8b", 8030261248),
                        ("zoo.llama:llama2_13b", 13015864320)):
            m = em.load_model(spec, {}, meta=True)
            self.assertEqual(sum(p.numel() for p in m.parameters()), n, spec)
        from zoo.llama import ffn_hidden_dim
        self.assertEqual(ffn_hidden_dim(4096), 11008)
        self.assertEqual(ffn_hidden_dim(5120), 13824)  # Llama 2 13B
        self.assertEqual(ffn_hidden_dim(4096, 1024, 1.3), 14336)  # Llama 3 8B

    def test_grouped_query_attention(self):
        """Llama 3 8B: wk and wv are 8 KV heads x 128 wide; a tiny GQA model runs for real."""
        import torch
        from zoo.llama import llama, llama3_8b
        m = llama3_8b(device="meta")
        self.assertEqual(list(m.layers[0].attention.wk.weight.shape), [1024, 4096])
        self.assertEqual(list(m.layers[0].attention.wq.weight.shape), [4096, 4096])
        tiny = llama(dim=32, n_layers=1, n_heads=4, n_kv_heads=2, vocab_size=50)
        out = tiny(torch.zeros(1, 5, dtype=torch.int64))
        self.assertEqual(list(out.shape), [1, 5, 50])


@unittest.skipUnless(HAVE_TORCH, "python3-torch not installed")
class TestMetaPath(unittest.TestCase):
    """The analytic path (--meta) gives the same layers and costs as a traced export, and its
    derived grad_ready_order equals the recorded one."""

    def same(self, spec, shape, dtype, kw):
        import export_model as em
        a = em.export(spec, shape, dtype, None, kw)
        b = em.export(spec, shape, dtype, None, kw, meta=True)
        check_model_doc(self, b, spec + " meta")
        self.assertEqual(b["exported_with"]["method"], "meta")
        self.assertEqual(a["params"], b["params"], spec)
        self.assertEqual(a["layers"], b["layers"], spec)
        self.assertEqual(a["grad_ready_order"], b["grad_ready_order"], spec)

    def test_tiny_llama(self):
        self.same("zoo.llama:llama", [2, 16], "int64",
                  {"dim": 64, "n_layers": 2, "n_heads": 4, "vocab_size": 100})

    def test_tiny_gpt2_and_bert(self):
        self.same("zoo.gpt2:gpt2", [2, 16], "int64", json.loads(TestExporter.TINY))
        self.same("zoo.bert:bert_base", [2, 16], "int64",
                  {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                   "intermediate_size": 128, "vocab_size": 1000})

    def test_traced_jsons_reproduced(self):
        """A meta export reproduces every traced models/*.json exactly: layers, costs and the
        recorded grad_ready_order (ResNets, VGG, ViTs, BERTs, GPT-2s, mixed-gpt, skip-branch)."""
        import export_model as em
        n = 0
        for path in sorted(glob.glob(os.path.join(REPO, "models", "*.json"))):
            with open(path) as f:
                ref = json.load(f)
            ew = ref["exported_with"]
            if ew.get("method", "traced") != "traced":
                continue
            doc = em.export(ref["source"], ew["input_shape"], ew["input_dtype"], ref["name"], {},
                            meta=True, allow_unused="unused_params" in ref)
            where = os.path.relpath(path, REPO)
            self.assertEqual(doc["grad_ready_order"], ref["grad_ready_order"], where)
            self.assertEqual(doc.get("unused_params"), ref.get("unused_params"), where)
            self.assertEqual(len(doc["layers"]), len(ref["layers"]), where)
            for a, b in zip(doc["layers"], ref["layers"]):
                self.assertEqual((a["name"], a["type"], a["params"]),
                                 (b["name"], b["type"], b["params"]), where)
                for k in ("fwd_flops", "bwd_flops", "fwd_bytes", "bwd_bytes"):
                    self.assertAlmostEqual(a[k], b[k], delta=1e-9 * max(1.0, b[k]),
                                           msg=(where, a["name"], k))
            n += 1
        if n == 0:
            self.fail("no traced models/*.json (the bundled models are part of the repository)")

    def test_meta_needs_no_memory(self):
        import export_model as em
        doc = em.export("zoo.llama:llama_7b", [1, 32], "int64", "llama-7b", {}, meta=True)
        self.assertEqual(sum(numel(p["shape"]) for p in doc["params"]), 6738415616)
        self.assertEqual(doc["exported_with"]["grad_ready_order"], "derived")
        # a torchvision callable without device=: built under the factory-redirecting mode
        m = em.load_model("torchvision.models:vgg16", {}, meta=True)
        self.assertEqual({p.device.type for p in m.parameters()}, {"meta"})


@unittest.skipUnless(HAVE_TORCH, "python3-torch not installed")
class TestUnused(unittest.TestCase):
    def test_allow_unused(self):
        import export_model as em
        with self.assertRaises(em.ExportError) as cm:
            em.export("zoo.unused:skip_branch_net", [4, 256])
        self.assertIn("--allow-unused", str(cm.exception))
        doc = em.export("zoo.unused:skip_branch_net", [4, 256], allow_unused=True)
        check_model_doc(self, doc, "skip-branch")
        names = [p["name"] for p in doc["params"]]
        self.assertEqual([names[i] for i in doc["unused_params"]],
                         ["branch_b.0.weight", "branch_b.0.bias", "branch_b.2.weight",
                          "branch_b.2.bias", "aux_head.weight", "aux_head.bias"])
        # a model without unused parameters is unaffected by the flag
        d2 = em.export("zoo.unused:skip_branch_net", [4, 256], kwargs={"use_aux": True},
                       allow_unused=True)
        self.assertEqual(d2["unused_params"], doc["unused_params"][:4])
        d3 = em.export("zoo.gpt2:gpt2", [2, 8], "int64", kwargs=json.loads(TestExporter.TINY),
                       allow_unused=True)
        self.assertNotIn("unused_params", d3)


@unittest.skipUnless(HAVE_TORCH, "python3-torch not installed")
class TestReferenceBuckets(unittest.TestCase):
    def test_tiny_gpt2_matches_oracle(self):
        """Real DDP (2 gloo ranks) vs the bucket rules applied to the exported grad_ready_order."""
        import export_model as em
        import ddp_reference_buckets as ref
        import ddpsim_buckets_oracle as oracle
        kw = json.loads(TestExporter.TINY)
        doc = em.export("zoo.gpt2:gpt2", [2, 16], "int64", None, kw)
        for cap in (None, 0.05):
            r = ref.run_reference("zoo.gpt2:gpt2", [2, 16], "int64", kw, bucket_cap_mb=cap, iterations=3)
            o = oracle.buckets_for(doc, cap)
            self.assertEqual(r["steady_state"], o["steady_state"], "cap %s" % cap)
            self.assertEqual(r["iteration1"], o["iteration1"], "cap %s" % cap)


if __name__ == "__main__":
    unittest.main()
