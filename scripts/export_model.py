#!/usr/bin/python3
"""Export any torch.nn.Module to a ddpsim model description ("ddpsim-model/1").

Usage:
  /usr/bin/python3 scripts/export_model.py torchvision.models:resnet50 -o models/resnet50.json \
      [--input 2x3x224x224] [--input-dtype float32|int64] [--vocab N] [--name resnet50] \
      [--kwargs '{"num_classes": 10}'] [--meta] [--allow-unused]

SPEC is "module.path:callable"; the callable (function or class) is called with **kwargs and
must return an nn.Module.  scripts/, the repository root and the working directory are put on
sys.path, so "zoo.gpt2:gpt2", "scripts.zoo.gpt2:gpt2" and "mymodels:net" (mymodels.py in the
directory you run from) all work without PYTHONPATH.

The model runs ONE forward pass (train mode, seed 0) under a TorchDispatchMode that counts
aten ops and attributes them to the innermost nn.Module on the call stack (tracked with
forward pre/post hooks), then ONE backward pass during which the order in which each
parameter's AccumulateGrad node fires is recorded (that is exactly what DDP's Reducer sees).

--meta (the analytic path, for models that do not fit in memory): the model is built on the
`meta` device and the same forward/op accounting runs on shape-only tensors; no backward, so
grad_ready_order is derived (the reverse of the forward parameter first-use order), not recorded.
--allow-unused: parameters the forward never reads go into a final zero-cost layer
"<unused-params>", lead grad_ready_order, and are listed in the top-level "unused_params".

See models/README.md for the output format and the FLOP/byte rules.
"""

import argparse
import json
import os
import sys

SCRIPT_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(SCRIPT_DIR)
FORMAT = "ddpsim-model/1"
UNUSED_LAYER = "<unused-params>"
GRAD_ORDER_RECORDED = "recorded"   # AccumulateGrad hooks during one real backward
GRAD_ORDER_DERIVED = "derived"     # reverse of the forward first-use order (--meta)


class ExportError(Exception):
    """A user-facing error: printed to stderr, exit status 2."""


def _die(msg):
    sys.stderr.write("export_model.py: error: %s\n" % msg)
    sys.exit(2)


# --------------------------------------------------------------------------------------------
# Loading (shared with scripts/ddp_reference_buckets.py)
# --------------------------------------------------------------------------------------------

def _import_torch():
    try:
        import torch  # noqa: F401
    except ImportError as e:
        raise ExportError("cannot import torch (%s); use /usr/bin/python3 with python3-torch" % e)
    return torch


def setup_sys_path():
    for p in (SCRIPT_DIR, REPO_ROOT):
        if p not in sys.path:
            sys.path.insert(0, p)
    # "mymodels:net" from the directory the user is in, as `python3 -c "import mymodels"` would
    # (a script's sys.path[0] is its own folder, not the working directory). Last, so that the
    # bundled zoo is not shadowed.
    cwd = os.getcwd()
    if cwd not in sys.path and os.path.realpath(cwd) not in [os.path.realpath(x) for x in sys.path if x]:
        sys.path.append(cwd)


def parse_shape(text):
    """'2x3x224x224' -> [2, 3, 224, 224]; the first dimension is the batch size."""
    if not isinstance(text, str) or not text.strip():
        raise ExportError("bad --input shape %r: expected e.g. 2x3x224x224" % (text,))
    parts = text.lower().replace("*", "x").replace(",", "x").split("x")
    try:
        shape = [int(p) for p in parts]
    except ValueError:
        raise ExportError("bad --input shape %r: expected positive integers separated by 'x', "
                          "e.g. 2x3x224x224" % text)
    if not shape or any(d <= 0 for d in shape):
        raise ExportError("bad --input shape %r: every dimension must be a positive integer" % text)
    return shape


def parse_kwargs(text):
    if text is None or text == "":
        return {}
    try:
        kw = json.loads(text)
    except ValueError as e:
        raise ExportError("bad --kwargs %r: not valid JSON (%s)" % (text, e))
    if not isinstance(kw, dict):
        raise ExportError("bad --kwargs %r: must be a JSON object" % text)
    return kw


_META_FACTORIES = ("empty", "zeros", "ones", "full", "tensor", "as_tensor", "arange", "randn", "rand",
                   "randint", "normal", "eye", "linspace", "logspace", "empty_strided", "tril_indices",
                   "triu_indices", "randperm", "scalar_tensor")


def _build_on_meta(torch, obj, kwargs):
    """Build obj(**kwargs) with every parameter and buffer on the `meta` device (shapes only, no
    memory).  A callable taking `device=` gets device="meta"; anything else is built under a
    TorchFunctionMode that sends tensor factory calls without an explicit device to `meta`."""
    import inspect
    kwargs = dict(kwargs or {})
    try:
        sig = inspect.signature(obj)
        takes_device = "device" in sig.parameters
    except (TypeError, ValueError):
        takes_device = False
    if takes_device and "device" not in kwargs:
        kwargs["device"] = "meta"
        return obj(**kwargs)
    from torch.overrides import TorchFunctionMode
    factories = set(getattr(torch, n) for n in _META_FACTORIES if hasattr(torch, n))

    class _MetaFactories(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kw=None):
            kw = kw or {}
            if func in factories and kw.get("device") is None:
                kw = dict(kw)
                kw["device"] = "meta"
            return func(*args, **kw)
    with _MetaFactories():
        return obj(**kwargs)


def load_model(spec, kwargs=None, seed=0, meta=False):
    """Import 'module.path:callable', build the model with callable(**kwargs), train mode.
    meta=True builds it on the `meta` device (see _build_on_meta)."""
    torch = _import_torch()
    setup_sys_path()
    import importlib
    if not isinstance(spec, str) or spec.count(":") != 1:
        raise ExportError("bad model spec %r: expected 'module.path:callable', "
                          "e.g. torchvision.models:resnet50" % (spec,))
    mod_name, attr = spec.split(":")
    if not mod_name or not attr:
        raise ExportError("bad model spec %r: expected 'module.path:callable'" % spec)
    try:
        mod = importlib.import_module(mod_name)
    except Exception as e:  # ImportError and anything raised while importing
        raise ExportError("cannot import module %r from spec %r: %s: %s"
                          % (mod_name, spec, type(e).__name__, e))
    obj = mod
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ExportError("module %r has no attribute %r (spec %r)" % (mod_name, attr, spec))
        obj = getattr(obj, part)
    if not callable(obj):
        raise ExportError("%r in spec %r is not callable" % (attr, spec))
    torch.manual_seed(seed)
    try:
        model = _build_on_meta(torch, obj, kwargs) if meta else obj(**(kwargs or {}))
    except Exception as e:
        raise ExportError("building the model with %s(**%r) failed: %s: %s"
                          % (spec, kwargs or {}, type(e).__name__, e))
    if not isinstance(model, torch.nn.Module):
        raise ExportError("%s(...) returned %s, not a torch.nn.Module" % (spec, type(model).__name__))
    if meta:
        off = sorted(set(str(t.device) for t in list(model.parameters()) + list(model.buffers()))
                     - {"meta"})
        if off:
            raise ExportError("--meta: %s built tensors on %s, not on the meta device; let the "
                              "callable accept device= or create tensors without an explicit device"
                              % (spec, ", ".join(off)))
    model.train()
    return model


def ddp_param_list(model):
    """(name, param) pairs in DDP's order: named_modules(), each module's own parameters,
    shared parameters once (first name wins).  Includes requires_grad=False parameters."""
    seen = set()
    out = []
    for mname, m in model.named_modules():
        for pname, p in m.named_parameters(recurse=False):
            if id(p) in seen:
                continue
            seen.add(id(p))
            out.append(((mname + "." + pname) if mname else pname, p))
    return out


def ddp_param_finder(plist):
    """A function giving a tensor's index in `plist` (ddp_param_list order), or None: by identity,
    else by storage pointer (DDP's GradBucket.parameters() may hand back other tensor objects
    over the same storage)."""
    index_of = {}
    for i, (_, p) in enumerate(plist):
        index_of[id(p)] = i
        index_of[("ptr", p.data_ptr())] = i

    def find(t):
        i = index_of.get(id(t))
        return i if i is not None else index_of.get(("ptr", t.data_ptr()))
    return find


def find_vocab(model):
    torch = _import_torch()
    for _, m in model.named_modules():
        if isinstance(m, torch.nn.Embedding):
            return m.num_embeddings
    return None


def make_input(model, shape, dtype_name="float32", vocab=None, seed=0, meta=False):
    torch = _import_torch()
    if meta:  # shapes only
        dts = {"float32": torch.float32, "float": torch.float32, "fp32": torch.float32,
               "float16": torch.float16, "half": torch.float16, "bfloat16": torch.bfloat16,
               "float64": torch.float64, "int64": torch.int64, "long": torch.int64}
        if dtype_name not in dts:
            raise ExportError("unsupported --input-dtype %r (use float32 or int64)" % dtype_name)
        return torch.empty(shape, dtype=dts[dtype_name], device="meta")
    g = torch.Generator().manual_seed(seed + 1)
    if dtype_name in ("float32", "float", "fp32"):
        return torch.randn(shape, generator=g, dtype=torch.float32)
    if dtype_name in ("float16", "half", "bfloat16", "float64"):
        dt = {"float16": torch.float16, "half": torch.float16, "bfloat16": torch.bfloat16,
              "float64": torch.float64}[dtype_name]
        return torch.randn(shape, generator=g, dtype=torch.float32).to(dt)
    if dtype_name in ("int64", "long"):
        if vocab is None:
            vocab = find_vocab(model)
        if vocab is None:
            raise ExportError("--input-dtype int64 needs a vocabulary size: pass --vocab N "
                              "(the model has no nn.Embedding to take it from)")
        if vocab <= 0:
            raise ExportError("--vocab must be positive")
        return torch.randint(0, vocab, shape, generator=g, dtype=torch.int64)
    raise ExportError("unsupported --input-dtype %r (use float32 or int64)" % dtype_name)


def output_loss(out):
    """A scalar loss touching every floating output: sum of means."""
    torch = _import_torch()
    from torch.utils._pytree import tree_flatten
    if hasattr(out, "to_tuple"):  # HF-style ModelOutput
        out = out.to_tuple()
    if isinstance(out, dict):
        out = list(out.values())
    leaves, _ = tree_flatten(out)
    ts = [t for t in leaves if isinstance(t, torch.Tensor) and t.is_floating_point() and t.requires_grad]
    if not ts:
        raise ExportError("the model's forward output has no floating-point tensor that requires grad; "
                          "cannot run backward")
    loss = ts[0].float().mean()
    for t in ts[1:]:
        loss = loss + t.float().mean()
    return loss


def dtype_str(dt):
    return str(dt).replace("torch.", "")


# --------------------------------------------------------------------------------------------
# Tracing
# --------------------------------------------------------------------------------------------

GEMM_OPS = {"mm", "addmm", "bmm", "baddbmm", "addbmm", "convolution", "_convolution",
            "matmul", "dot", "mv", "addmv"}
NORM_OPS = {"native_layer_norm": "layernorm", "native_batch_norm": "batchnorm",
            "_native_batch_norm_legit": "batchnorm", "native_group_norm": "layernorm",
            "_batch_norm_impl_index": "batchnorm", "batch_norm": "batchnorm"}
SOFTMAX_OPS = {"_softmax", "_log_softmax", "softmax", "log_softmax"}
POOL_OPS = {"max_pool2d_with_indices", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d",
            "_adaptive_avg_pool2d", "adaptive_max_pool2d", "max_pool1d", "avg_pool1d",
            "max_pool3d_with_indices", "avg_pool3d", "_adaptive_avg_pool3d"}
REDUCE_OPS = {"mean", "sum", "amax", "amin", "max", "min", "var", "std", "var_mean", "norm",
              "logsumexp", "cumsum", "prod"}
EMBED_OPS = {"embedding", "embedding_bag", "_embedding_bag", "index_select"}
# zero-cost bookkeeping ops (no data traffic)
FREE_OPS = {"empty", "empty_like", "empty_strided", "detach", "lift_fresh", "alias", "_to_copy_noop",
            "_local_scalar_dense", "resize_", "set_", "is_nonzero", "item", "size", "stride",
            "sym_size", "sym_stride", "new_empty", "new_empty_strided"}
# FLOPs per output element for pointwise ops that are more than one operation
POINTWISE_COST = {"gelu": 8, "tanh": 6, "sigmoid": 4, "exp": 4, "log": 4, "erf": 6, "pow": 2,
                  "sqrt": 2, "rsqrt": 2, "silu": 5, "native_dropout": 2, "bernoulli": 1,
                  "bernoulli_": 1, "hardtanh": 1, "hardswish": 4, "hardsigmoid": 2, "softplus": 4,
                  "elu": 4, "leaky_relu": 2, "addcmul": 2, "addcdiv": 2, "lerp": 3}
# Memory-bound ops that CUDA runs through TensorIterator's element-wise loops (the pointwise ops
# of the last branch of _account, and the copies below); the rest have kernels of their own.
TI_COPY_OPS = {"copy_", "clone", "_to_copy", "contiguous", "fill_", "zero_"}
NOT_TI_OPS = {"bernoulli_", "bernoulli", "native_dropout", "triu", "tril"}
# FLOPs per input element for normalisation (mean, var, normalise, scale+shift)
NORM_FLOPS_PER_ELEM = 8
SOFTMAX_FLOPS_PER_ELEM = 5


def _dense(t):
    """Non-overlapping and dense: the strides of the dimensions that have more than one element,
    in increasing order, are the running products of their sizes (any permutation of a contiguous
    layout, channels_last included)."""
    expected = 1
    for stride, size in sorted((st, sz) for st, sz in zip(t.stride(), t.shape) if sz != 1):
        if stride != expected:
            return False
        expected *= size
    return True


def _ti_strided(inputs, out):
    """True when TensorIterator cannot run the op on its contiguous path (aten/src/ATen/native/
    cuda/CUDALoops.cuh gpu_kernel_impl: iter.is_contiguous()): an input broadcast against the
    output (another shape, a 0-dim tensor among them; Python numbers are not tensors here and
    become kernel arguments on CUDA), an input laid out differently from the output (strides
    compared over the dimensions with more than one element), or an output that is not dense."""
    if out is None or out.numel() <= 1:
        return False
    if not _dense(out):
        return True
    shape = tuple(out.shape)
    big = [i for i, sz in enumerate(shape) if sz != 1]
    for t in inputs:
        if t is out:
            continue
        if tuple(t.shape) != shape:
            return True
        if any(t.stride()[i] != out.stride()[i] for i in big):
            return True
    return False


def _prod(xs):
    r = 1
    for x in xs:
        r *= int(x)
    return r


def _gemm_record(torch, name, kind, args, a, b, bias, out):
    """One GEMM-like op as a kernel record: the dimensions a per-kernel model needs (tiles, waves,
    alignment) and which operands need a gradient (the backward GEMMs follow from them)."""
    def rg(t):
        return 1 if isinstance(t, torch.Tensor) and t.requires_grad else 0
    dt = dtype_str(a.dtype)
    has_bias = 1 if isinstance(bias, torch.Tensor) else 0
    nd = a.dim() - 2
    if (kind == "conv" and nd in (1, 2, 3) and b.dim() == a.dim() and out is not None
            and out.dim() == a.dim()):
        groups = int(args[8]) if len(args) > 8 else 1
        transposed = bool(args[6]) if len(args) > 6 else False
        n, c = int(a.shape[0]), int(a.shape[1])
        o = int(out.shape[1])
        # The record is two-dimensional (h x w in, r x s filter, p x q out). Conv1d is a 2-D
        # convolution of height 1; Conv3d folds depth into height (h = D*H, r = T*R, p = D'*H'),
        # which keeps the implicit GEMM's M = N*D'*H'*W' and K = C*T*R*S, the tensors' bytes and
        # the FLOPs exact (ddpsim's dgrad then reads one stride over depth x height).
        ins, ks, outs = [int(x) for x in a.shape[2:]], [int(x) for x in b.shape[2:]], [int(x) for x in out.shape[2:]]
        if nd == 1:
            ins, ks, outs = [1] + ins, [1] + ks, [1] + outs
        elif nd == 3:
            ins, ks, outs = [ins[0] * ins[1], ins[2]], [ks[0] * ks[1], ks[2]], [outs[0] * outs[1], outs[2]]
        rec = {"op": "conv", "n": n, "c": c, "h": ins[0], "w": ins[1], "o": o, "r": ks[0],
               "s": ks[1], "p": outs[0], "q": outs[1], "g": groups, "gi": rg(a), "gw": rg(b),
               "bias": has_bias, "dt": dt}
        if transposed:
            rec["transposed"] = 1
        return rec
    # C[m, n] = A[m, k] B[k, n], batched over `b`
    if name in ("bmm", "baddbmm"):
        bb, m, k, n = int(a.shape[0]), int(a.shape[1]), int(a.shape[2]), int(b.shape[2])
    elif name == "addbmm":
        bb, m, k, n = int(a.shape[0]), int(a.shape[1]), int(a.shape[2]), int(b.shape[2])
    elif a.dim() == 2 and b.dim() == 2:
        bb, m, k, n = 1, int(a.shape[0]), int(a.shape[1]), int(b.shape[1])
    elif a.dim() == 2 and b.dim() == 1:  # mv
        bb, m, k, n = 1, int(a.shape[0]), int(a.shape[1]), 1
    else:  # dot, or an unusual shape: as a 1 x k x 1 product per output element
        bb, m, k, n = 1, max(1, int(out.numel()) if out is not None else 1), int(a.shape[-1]), 1
    return {"op": "gemm", "b": bb, "m": m, "n": n, "k": k, "ga": rg(a), "gb": rg(b),
            "bias": has_bias, "dt": dt}


# Dimensions of a kernel record that can grow with the batch or the input size, and the byte /
# FLOP fields of a memory-bound record.
KERNEL_DIMS = {"gemm": ("b", "m", "n", "k"), "conv": ("n", "h", "w", "p", "q")}
MEM_FIELDS = ("in", "out", "f")


class _Call(object):
    """One execution of one module's forward."""
    __slots__ = ("module", "name", "start_seq", "first_op_seq", "fwd_flops", "bwd_flops",
                 "fwd_bytes", "bwd_bytes", "kinds", "params_used", "n_ops", "order", "kern", "views")

    def __init__(self, module, name, seq):
        self.module = module
        self.name = name
        self.start_seq = seq
        self.first_op_seq = None
        self.fwd_flops = 0.0
        self.bwd_flops = 0.0
        self.fwd_bytes = 0.0
        self.bwd_bytes = 0.0
        self.kinds = {}      # op kind -> fwd flops (used to pick the layer type)
        self.params_used = set()
        self.n_ops = 0
        self.order = None
        self.kern = []       # kernel records (see _kernel_record), in op order
        self.views = []      # (seq, autograd view node?) of each view op this call ran itself


def trace_model(model, x, meta=False, saved_bytes=False):
    """Run one forward (counting ops per module call) and one backward (recording the
    AccumulateGrad order).  Returns (calls, grad_ready_order, param_list, first_use) where
    first_use maps a parameter index to (sequence number of the first op that read it, position
    of the parameter among that op's tensor arguments).

    meta=True (model and input on the `meta` device): the forward runs on meta tensors -- every
    op computes output shapes only, no kernel runs, no memory is allocated -- so the per-op FLOP
    and byte rules give exactly what a real run would; there is no backward, and the returned
    grad_ready_order is None (the caller derives it from first_use).

    saved_bytes=True: the forward also runs under saved_tensors_hooks and each kernel record gets
    "sv", the bytes of the storages autograd saved for it first. The hooks change what the forward
    dispatches (without them a SavedVariable of an op's result dispatches a detach, a view op the
    host_ops count), so they run in a pass of their own, whose records give only "sv"."""
    torch = _import_torch()
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    plist = ddp_param_list(model)
    names = {id(m): n for n, m in model.named_modules()}

    def storage_key(t):
        try:
            if t.device.type == "meta":  # meta storages have no data pointer: use the StorageImpl
                return ("meta", t.storage()._cdata)
            return t.storage().data_ptr()
        except Exception:
            return None

    param_storage = {}
    for i, (_, p) in enumerate(plist):
        k = storage_key(p)
        if k is not None and p.numel() > 0:
            param_storage[k] = i
    buffer_storage = set()
    for _, b in model.named_buffers():
        k = storage_key(b)
        if k is not None and b.numel() > 0:
            buffer_storage.add(k)

    state = {"seq": 0, "stack": [], "calls": []}
    first_use = {}  # param index -> seq of the first op that read it
    root_call = _Call(None, "<toplevel>", 0)  # ops run outside any module (should be none)

    def pre_hook(mod, inp):
        state["seq"] += 1
        c = _Call(mod, names.get(id(mod), type(mod).__name__), state["seq"])
        state["stack"].append(c)
        state["calls"].append(c)

    def post_hook(mod, inp, out):
        st = state["stack"]
        # pop up to and including this module (robust against exceptions in children)
        while st:
            c = st.pop()
            if c.module is mod:
                break

    # What autograd saves for the backward (a record's "sv"): the pack hook of
    # torch.autograd.graph.saved_tensors_hooks sees every tensor a SavedVariable keeps
    # (torch/csrc/autograd/saved_variable.cpp keeps a reference, not a copy). An op's autograd
    # kernel saves its inputs before it redispatches to this mode and its results after the mode
    # returns (the generated VariableType code), so the saves seen when the next op is dispatched
    # are the last op's results and this op's inputs; the last op's node names its own
    # (`_saved_result*` of its grad_fn). Each save is charged to the op that made it, a storage once,
    # whole (what the allocator holds), to the first; parameters and buffers (they exist without a
    # forward) and wrapped Python numbers (0-dim) never.
    saved = {"pending": [], "rec": None, "outs": [], "out_rec": None, "seen": set(param_storage) | buffer_storage}

    def _storage_nbytes(t):
        try:
            return float(t.storage().nbytes())
        except Exception:
            return float(t.numel() * t.element_size())

    def pack(t):
        if isinstance(t, torch.Tensor) and t.dim() > 0:
            k = storage_key(t)
            if k is not None:
                saved["pending"].append((k, _storage_nbytes(t)))
        return t

    def unpack(t):
        return t

    def charge(rec, key, nbytes):
        if key in saved["seen"] or nbytes <= 0:
            return
        saved["seen"].add(key)
        rec = rec if rec is not None else saved["rec"]
        if rec is not None:
            rec["sv"] += nbytes

    def results_saved_by_last_op():
        keys = set()
        nodes = set()
        for t in saved["outs"]:
            gf = t.grad_fn
            if gf is None or id(gf) in nodes:
                continue
            nodes.add(id(gf))
            for attr in dir(gf):
                if attr.startswith("_saved_result"):
                    try:
                        v = getattr(gf, attr)
                    except Exception:  # a saved result that cannot be read back: not this op's to charge
                        continue
                    if isinstance(v, torch.Tensor):
                        keys.add(storage_key(v))
        return keys

    def settle(rec, inputs):
        """Charge the saves pending since the last dispatch: the last op's results to its record,
        the rest (this op's inputs) to `rec`."""
        items, saved["pending"] = saved["pending"], []
        if not items:
            return
        theirs = results_saved_by_last_op()
        out_keys = set(storage_key(t) for t in saved["outs"])
        for k, nbytes in items:
            if k in theirs or (k in out_keys and k not in inputs):
                theirs.discard(k)
                charge(saved["out_rec"], k, nbytes)
            else:
                charge(rec, k, nbytes)

    class Counter(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            rec = None
            try:
                rec = _account(func, args, kwargs, out)
            except Exception as e:  # never break the model because of accounting
                sys.stderr.write("export_model.py: warning: could not account %s: %s\n" % (func, e))
            if saved_bytes:
                inputs = set(storage_key(t) for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor))
                settle(rec, inputs)
                saved["outs"] = [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
                saved["out_rec"] = rec
                if rec is not None:
                    saved["rec"] = rec
            return out

    def _classify(t):
        """'param' (with index), 'buffer', or 'act'."""
        k = storage_key(t)
        if k in param_storage:
            return "param", param_storage[k]
        if k in buffer_storage:
            return "buffer", None
        return "act", None

    def _nbytes(t):
        return float(t.numel() * t.element_size())

    def _account(func, args, kwargs, out):
        name = func.overloadpacket.__name__
        schema = func._schema
        # pure views / aliases: no computation, no traffic
        rets = schema.returns
        is_view = bool(rets) and all(r.alias_info is not None and not r.alias_info.is_write for r in rets)
        if is_view:
            # Host work without a kernel (the export's op count leaves views out): a view op, and
            # an autograd view node to run in backward when its input requires grad (detach and
            # alias record none). Counted per layer by host_op_counts.
            call = state["stack"][-1] if state["stack"] else root_call
            node = name not in ("detach", "alias") and any(
                isinstance(t, torch.Tensor) and t.requires_grad for t in tree_flatten((args, kwargs))[0])
            call.views.append((state["seq"], node))
        if is_view or name in FREE_OPS:
            return
        in_leaves = [a for a in tree_flatten((args, kwargs))[0] if isinstance(a, torch.Tensor)]
        out_leaves = [a for a in tree_flatten(out)[0] if isinstance(a, torch.Tensor)]
        if not in_leaves:
            return  # factory ops (zeros, arange, randn...): negligible, not batch-scaled
        call = state["stack"][-1] if state["stack"] else root_call
        state["seq"] += 1
        if call.first_op_seq is None:
            call.first_op_seq = state["seq"]
        call.n_ops += 1

        cls = [(_classify(t), t) for t in in_leaves]
        for pos, ((kind, idx), t) in enumerate(cls):
            if kind == "param":
                call.params_used.add(idx)
                first_use.setdefault(idx, (state["seq"], pos))
        act_in = [t for (kind, _), t in cls if kind == "act"]
        if not act_in:
            return  # parameter/buffer bookkeeping (e.g. num_batches_tracked += 1): not batch-scaled
        act_in_bytes = sum(_nbytes(t) for t in act_in)
        act_out = [t for t in out_leaves if _classify(t)[0] == "act"]
        if name in NORM_OPS:
            act_out = act_out[:1]  # saved mean/invstd: per-channel for batch norm, negligible
        out_bytes = sum(_nbytes(t) for t in act_out)
        fwd_bytes = act_in_bytes + out_bytes
        any_grad = any(t.requires_grad for t in in_leaves if t.is_floating_point())
        main_out = out_leaves[0] if out_leaves else None
        out_numel = float(main_out.numel()) if main_out is not None else 0.0

        if name in GEMM_OPS:
            kind = "conv" if "convolution" in name else "gemm"
            if name in ("mm", "matmul", "dot", "mv"):
                a, b, bias = args[0], args[1], None
            elif name in ("addmm", "baddbmm", "addbmm", "addmv"):
                bias, a, b = args[0], args[1], args[2]
            elif name == "bmm":
                a, b, bias = args[0], args[1], None
            else:  # convolution(input, weight, bias, ...)
                a, b, bias = args[0], args[1], args[2]
            if kind == "conv":
                transposed = bool(args[6]) if len(args) > 6 else False
                k = _prod(b.shape[1:])
                flops = 2.0 * (a.numel() if transposed else out_numel) * k
            elif name in ("mm", "addmm", "matmul"):
                flops = 2.0 * a.shape[0] * a.shape[1] * b.shape[-1]
            elif name in ("bmm", "baddbmm"):
                flops = 2.0 * a.shape[0] * a.shape[1] * a.shape[2] * b.shape[2]
            elif name == "addbmm":
                flops = 2.0 * a.shape[0] * a.shape[1] * a.shape[2] * b.shape[2]
            else:  # dot, mv, addmv
                flops = 2.0 * a.numel() * (b.shape[-1] if b.dim() > 1 and name != "dot" else 1)
            if isinstance(bias, torch.Tensor):
                flops += out_numel
            bflops = 0.0
            bbytes = 0.0
            out_b = _nbytes(main_out) if (main_out is not None and _classify(main_out)[0] == "act") else 0.0

            def abytes(t):
                return _nbytes(t) if _classify(t)[0] == "act" else 0.0
            for x, y in ((a, b), (b, a)):
                if isinstance(x, torch.Tensor) and x.requires_grad:
                    bflops += flops - (out_numel if isinstance(bias, torch.Tensor) else 0.0)
                    # read grad_out + the other operand, write grad of x
                    bbytes += out_b + abytes(y) + abytes(x)
            if isinstance(bias, torch.Tensor) and bias.requires_grad:
                bflops += out_numel
                bbytes += out_b
            rec = _gemm_record(torch, name, kind, args, a, b, bias, main_out)
            if saved_bytes:
                rec["sv"] = 0.0
            call.kern.append(rec)
            call.fwd_flops += flops
            call.bwd_flops += bflops
            call.fwd_bytes += fwd_bytes
            call.bwd_bytes += bbytes
            call.kinds[kind] = call.kinds.get(kind, 0.0) + flops + 1.0
            return rec

        ti = False  # a TensorIterator element-wise loop on CUDA
        if name in NORM_OPS:
            kind = NORM_OPS[name]
            flops = NORM_FLOPS_PER_ELEM * float(in_leaves[0].numel())
            bf = 2.0 * flops
        elif name in SOFTMAX_OPS:
            kind = "softmax"
            flops = SOFTMAX_FLOPS_PER_ELEM * float(in_leaves[0].numel())
            bf = flops
        elif name in POOL_OPS:
            kind = "pool"
            if name.startswith("max_pool") or name == "avg_pool2d" or name.startswith("avg_pool"):
                ks = args[1] if len(args) > 1 else [1]
                ks = list(ks) if isinstance(ks, (list, tuple)) else [ks]
                if len(ks) == 1:
                    ks = ks * 2
                flops = out_numel * _prod(ks)
            else:
                flops = float(in_leaves[0].numel())
            bf = flops
        elif name in EMBED_OPS:
            kind = "embedding"
            flops = 0.0
            bf = out_numel  # scatter-add of grad_out rows into the weight gradient
        elif name in REDUCE_OPS:
            kind = "elementwise"
            flops = float(in_leaves[0].numel())
            bf = out_numel if False else float(in_leaves[0].numel())
        elif name in ("copy_", "clone", "_to_copy", "contiguous", "cat", "stack", "index", "gather",
                      "scatter", "_unsafe_view", "masked_select", "constant_pad_nd", "repeat",
                      "index_put_", "fill_", "zero_"):
            kind = "elementwise"
            flops = 0.0
            bf = 0.0
            ti = name in TI_COPY_OPS
        else:
            kind = "elementwise"
            flops = POINTWISE_COST.get(name, 1) * out_numel
            bf = flops
            ti = name not in NOT_TI_OPS
        rec = {"op": "mem", "name": name, "in": act_in_bytes, "out": out_bytes,
               "f": float(flops), "bwd": 1 if any_grad else 0}
        if saved_bytes:
            rec["sv"] = 0.0
        if ti and _ti_strided(in_leaves, main_out):
            rec["strided"] = 1  # TensorIterator's strided (non-vectorized) path on CUDA
        call.kern.append(rec)
        call.fwd_flops += flops
        call.fwd_bytes += fwd_bytes
        if any_grad:
            call.bwd_flops += bf
            # read grad_out, read the saved inputs/outputs, write grad_in ~ fwd traffic + grad_out
            call.bwd_bytes += fwd_bytes + out_bytes
        call.kinds[kind] = call.kinds.get(kind, 0.0) + flops + 1.0
        return rec

    handles = []
    for m in model.modules():
        handles.append(m.register_forward_pre_hook(pre_hook))
        handles.append(m.register_forward_hook(post_hook))

    # AccumulateGrad hooks, exactly as DDP's Reducer registers them
    ready = []
    accs = []
    for i, (_, p) in enumerate(plist):
        if meta or not p.requires_grad:
            continue
        acc = p.expand_as(p).grad_fn.next_functions[0][0]
        accs.append(acc)

        def make(i):
            def hook(*unused):
                ready.append(i)
            return hook
        handles.append(acc.register_hook(make(i)))

    model.zero_grad(set_to_none=True)
    try:
        if saved_bytes:
            with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
                with Counter():
                    out = model(x)
                settle(None, set())  # the last op's own saves
        else:
            with Counter():
                out = model(x)
    except ExportError:
        raise
    except Exception as e:
        for h in handles:
            h.remove()
        raise ExportError("the model's forward failed on an input of shape %s (%s): %s: %s"
                          % (list(x.shape), dtype_str(x.dtype), type(e).__name__, e))
    try:
        if meta:
            ready = None
        else:
            loss = output_loss(out)
            loss.backward()
    finally:
        for h in handles:
            h.remove()
    del accs

    calls = state["calls"]
    if root_call.n_ops:
        calls = [root_call] + calls
    return calls, ready, plist, first_use


def derived_grad_ready_order(plist, first_use):
    """The exact reverse of the forward parameter-use order: parameters sorted by the sequence
    number of the first op that read them, latest first.  Parameters read by the same op (a
    linear's or a norm's weight and bias) are ordered by their position among the op's tensor
    arguments, first argument first -- the order in which autograd runs their AccumulateGrad
    nodes: addmm(bias, x, weight.t()) -> bias, weight; native_layer_norm(x, weight, bias) and
    convolution(x, weight, bias) -> weight, bias.  Only requires_grad parameters the forward read."""
    used = [i for i, (_, p) in enumerate(plist) if p.requires_grad and i in first_use]
    return sorted(used, key=lambda i: (-first_use[i][0], first_use[i][1], i))


def _layer_type(torch, call):
    m = call.module
    nn = torch.nn
    if m is not None:
        if isinstance(m, (nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.ConvTranspose1d, nn.ConvTranspose2d,
                          nn.ConvTranspose3d)):
            return "conv2d"
        if isinstance(m, nn.Linear) or type(m).__name__ == "Conv1D":
            return "linear"
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            return "batchnorm"
        if isinstance(m, (nn.LayerNorm, nn.GroupNorm)):
            return "layernorm"
        if isinstance(m, (nn.Embedding, nn.EmbeddingBag)):
            return "embedding"
        if isinstance(m, (nn.modules.pooling._MaxPoolNd, nn.modules.pooling._AvgPoolNd,
                          nn.modules.pooling._AdaptiveAvgPoolNd, nn.modules.pooling._AdaptiveMaxPoolNd)):
            return "pool"
        if isinstance(m, (nn.Softmax, nn.LogSoftmax)):
            return "softmax"
    if not call.kinds:
        return "other"
    k = call.kinds
    if "conv" in k:
        return "conv2d"
    if "gemm" in k:
        owns = False
        if m is not None:
            owns = any(True for _ in m.parameters(recurse=False))
        return "linear" if owns else "matmul"
    for kind in ("batchnorm", "layernorm", "embedding", "softmax", "pool"):
        if kind in k:
            return kind
    if "elementwise" in k:
        return "elementwise"
    return "other"


def kept_calls(calls, plist):
    """The module calls that become layers, in forward order, each with the indices of its own
    (non-recursive) parameters: calls that run ops or own parameters (pure containers and
    modules that only reshape drop out). ddpsim_profile.py maps its timed calls with this too."""
    pindex = {id(p): i for i, (_, p) in enumerate(plist)}
    kept = []
    for c in calls:
        own = []
        if c.module is not None:
            own = [pindex[id(p)] for p in c.module.parameters(recurse=False) if id(p) in pindex]
        if c.n_ops == 0 and not own:
            continue  # pure container, or a module that only reshapes
        c.order = c.first_op_seq if c.first_op_seq is not None else c.start_seq
        kept.append((c, own))
    kept.sort(key=lambda co: co[0].order)
    return kept


def host_op_counts(calls, kept, n_layers):
    """Per layer, the eager host work that launches no kernel: {"views": forward view ops,
    "view_nodes": the autograd view nodes among them (run in backward), "module_calls": nn.Module
    calls}. A kept call's own views and its own call count to its layer; those of a call that is
    not a layer (a container, a module that only reshapes) to the first layer whose first op
    follows them (the last layer if none does). Layers past the kept calls (<unused-params>)
    get zeros."""
    import bisect
    index = {id(c): li for li, (c, _) in enumerate(kept)}
    orders = [c.order for c, _ in kept]
    out = [{"views": 0, "view_nodes": 0, "module_calls": 0} for _ in range(n_layers)]
    if not kept:
        return out

    def layer_of(c, seq):
        if id(c) in index:
            return index[id(c)]
        return min(bisect.bisect_right(orders, seq), len(kept) - 1)

    for c in calls:
        if c.module is not None:
            out[layer_of(c, c.start_seq)]["module_calls"] += 1
        for seq, node in c.views:
            h = out[layer_of(c, seq)]
            h["views"] += 1
            h["view_nodes"] += 1 if node else 0
    return out


def layer_names(kept):
    """Layer names for kept calls: the module's qualified name ("<root>" for the model itself),
    "#k" appended to its k-th repeated call."""
    names = []
    count = {}
    for c, _ in kept:
        n = c.name if c.name else "<root>"
        k = count.get(n, 0)
        count[n] = k + 1
        names.append(n if k == 0 else "%s#%d" % (n, k))
    return names


def build_layers(torch, calls, plist):
    """Turn module calls into layers, in forward order, and assign parameters to layers."""
    kept = kept_calls(calls, plist)

    # candidate layers for each param: calls of its owning module, and calls whose ops read it
    first_use = {}
    for li, (c, own) in enumerate(kept):
        for pi in list(own) + sorted(c.params_used):
            if pi not in first_use:
                first_use[pi] = li

    layers = []
    for (c, own), name in zip(kept, layer_names(kept)):
        layers.append({
            "name": name,
            "type": _layer_type(torch, c),
            "params": [],
            "fwd_flops": float(c.fwd_flops),
            "bwd_flops": float(c.bwd_flops),
            "fwd_bytes": float(c.fwd_bytes),
            "bwd_bytes": float(c.bwd_bytes),
        })
    unplaced = []
    for pi, (_, p) in enumerate(plist):
        if not p.requires_grad:
            continue
        if pi in first_use:
            layers[first_use[pi]]["params"].append(pi)
        else:
            unplaced.append(pi)
    if unplaced:
        # parameters the forward never read (see export(allow_unused=True)): one zero-cost layer
        # after the last real layer, so every requires_grad parameter has a layer.  Being last in
        # forward order its "backward" comes first, matching DDP, which marks unused parameters
        # ready at the first autograd hook of the backward pass.
        layers.append({"name": UNUSED_LAYER, "type": "other", "params": unplaced,
                       "fwd_flops": 0.0, "bwd_flops": 0.0, "fwd_bytes": 0.0, "bwd_bytes": 0.0})
    for l in layers:
        l["params"].sort()
    return layers


def export(spec, shape, input_dtype="float32", name=None, kwargs=None, vocab=None, seed=0,
           meta=False, allow_unused=False, kernels=True):
    """meta=True: the analytic path -- build the model on the meta device and count every op of
    one forward from shapes alone; grad_ready_order is derived (reverse forward first-use order),
    not recorded.  allow_unused=True: parameters the forward never reads are exported in a final
    zero-cost layer "<unused-params>", first in grad_ready_order, and listed in "unused_params"."""
    torch = _import_torch()
    model = load_model(spec, kwargs, seed=seed, meta=meta)
    x = make_input(model, shape, input_dtype, vocab=vocab, seed=seed, meta=meta)
    torch.manual_seed(seed)
    calls, ready, plist, first_use = trace_model(model, x, meta=meta)
    if meta:
        ready = derived_grad_ready_order(plist, first_use)
    rg = [i for i, (_, p) in enumerate(plist) if p.requires_grad]
    unused = sorted(set(rg) - set(ready))
    if unused and not allow_unused:
        raise ExportError("backward did not produce a gradient for %d parameter(s) (e.g. %s): the "
                          "forward does not use them; pass --allow-unused to export them anyway "
                          "(DDP then needs find_unused_parameters=True)"
                          % (len(unused), ", ".join(plist[i][0] for i in unused[:5])))
    if unused:
        sys.stderr.write("export_model.py: warning: %d parameter(s) unused in forward: %s\n"
                         % (len(unused), ", ".join(plist[i][0] for i in unused[:8])))
        # DDP (find_unused_parameters=True) marks them ready at the first autograd hook, i.e.
        # before any used parameter: they lead the ready order.
        ready = unused + list(ready)
    layers = build_layers(torch, calls, plist)

    params = [{"name": n, "shape": list(p.shape), "dtype": dtype_str(p.dtype),
               "requires_grad": bool(p.requires_grad)} for n, p in plist]
    buffers = [{"name": n, "shape": list(b.shape), "dtype": dtype_str(b.dtype)}
               for n, b in model.named_buffers()]
    # sanity
    total = sum(p.numel() for p in model.parameters())
    listed = sum(p.numel() for _, p in plist)
    assert total == listed, (total, listed)
    if sorted(ready) != rg:
        raise ExportError("internal error: grad_ready_order is not a permutation of the "
                          "requires_grad parameters")
    doc = {
        "format": FORMAT,
        "name": name or spec.split(":")[1],
        "source": spec,
        "exported_with": {"script": "scripts/export_model.py", "torch": torch.__version__,
                          "input_shape": list(shape), "input_dtype": dtype_str(x.dtype),
                          "method": "meta" if meta else "traced",
                          "grad_ready_order": GRAD_ORDER_DERIVED if meta else GRAD_ORDER_RECORDED},
        "batch_size": int(shape[0]),
        "params": params,
        "buffers": buffers,
        "layers": layers,
        "grad_ready_order": ready,
    }
    if unused:
        doc["unused_params"] = unused
    if kernels:
        why = add_kernels(doc, kwargs, vocab, seed)
        if why:
            sys.stderr.write("export_model.py: warning: no kernel records (%s)\n" % why)
    return doc


# --------------------------------------------------------------------------------------------
# Kernel records (per layer, per GEMM/conv/memory-bound op) and how they scale
# --------------------------------------------------------------------------------------------

def _meta_layers_with_kernels(spec, shape, input_dtype, kwargs, vocab, seed):
    """One meta-device forward at `shape`: (layers, kernels per layer, host op counts per layer) --
    shapes only, cheap.
    A model whose constructor computes with tensor values (torchvision's RegNet derives its
    block widths with torch ops and .tolist(), which a meta tensor cannot give) is built and run
    on the CPU instead: the same ops and shapes, at the cost of a real forward."""
    torch = _import_torch()
    meta = True
    try:
        model = load_model(spec, kwargs, seed=seed, meta=True)
    except ExportError:
        meta = False
        model = load_model(spec, kwargs, seed=seed, meta=False)
    x = make_input(model, shape, input_dtype, vocab=vocab, seed=seed, meta=meta)
    calls, _, plist, _ = trace_model(model, x, meta=meta)
    layers = build_layers(torch, calls, plist)
    kept = kept_calls(calls, plist)
    kern = [list(c.kern) for c, _ in kept]
    # What autograd saves, from a second forward under saved_tensors_hooks (trace_model); the
    # records' "sv" are left out when its records do not line up with the first's.
    x = make_input(model, shape, input_dtype, vocab=vocab, seed=seed, meta=meta)
    calls2, _, _, _ = trace_model(model, x, meta=meta, saved_bytes=True)
    kern2 = [list(c.kern) for c, _ in kept_calls(calls2, plist)]
    if _same_structure(kern, kern2):
        for lk, lk2 in zip(kern, kern2):
            for rec, rec2 in zip(lk, lk2):
                rec["sv"] = rec2["sv"]
    else:
        sys.stderr.write("export_model.py: warning: the saved-tensor pass's ops differ from the first pass's; "
                         "no \"sv\" (ddpsim estimates the saved bytes)\n")
    if len(kern) < len(layers):  # the "<unused-params>" layer has no ops
        kern.append([])
    return layers, kern, host_op_counts(calls, kept, len(layers))


def _size_probe_shapes(shape, input_dtype):
    """Input shapes at 1/2 and 1/4 of the export's sequence length (token models, [B, S]) or
    image side ([B, C, H, W]); None when the input has neither form."""
    if input_dtype in ("int64", "long") and len(shape) == 2 and shape[1] % 4 == 0:
        return "seq", shape[1], [[shape[0], shape[1] // 2], [shape[0], shape[1] // 4]]
    if len(shape) == 4 and shape[2] == shape[3] and shape[2] % 4 == 0:
        return "image", shape[2], [shape[:2] + [shape[2] // 2] * 2, shape[:2] + [shape[2] // 4] * 2]
    return None, None, None


def _same_structure(ka, kb):
    if len(ka) != len(kb):
        return False
    for la, lb in zip(ka, kb):
        if len(la) != len(lb) or any(x["op"] != y["op"] for x, y in zip(la, lb)):
            return False
    return True


def _exponent(big, small, ratio):
    """Integer exponent e with big ~ small * ratio**e (e in 0..2), from two probe values."""
    import math
    if small <= 0 or big <= 0:
        return 0
    e = math.log(float(big) / float(small)) / math.log(ratio)
    return int(max(0, min(2, round(e))))


def kernel_records(spec, shape, input_dtype, kwargs, vocab, seed, layers):
    """Per-layer kernel records for `layers` (the export's), from meta-device forwards, plus the
    top-level "kernel_scaling" note, or (None, reason) when they cannot be had.

    GEMM/conv records carry their dimensions; `eb` / `es` give, per dimension (KERNEL_DIMS order),
    the exponent with which it grows with the batch / with the sequence length or image side
    (from probes at twice the batch and at 1/2 and 1/4 of the size).  Memory-bound records carry
    bytes read (`in`), written (`out`) and FLOPs (`f`) at the export size; with size probes each
    is a list [c0, c1, c2]: value at size ratio r = c0 + c1 r + c2 r^2 (attention's score matrix
    is the r^2 term), solved exactly from the three sizes.  Every record also carries `sv`, the
    bytes autograd saved for it first (trace_model's saved_bytes pass), a number or the same
    [c0, c1, c2].  Batch scaling of memory-bound records and of `sv` is linear (the file's rule
    for the four layer cost fields)."""
    try:
        base_layers, base, host = _meta_layers_with_kernels(spec, shape, input_dtype, kwargs, vocab, seed)
    except ExportError as e:
        return None, "meta forward failed: %s" % e, None
    # Same layers, FLOPs and (within 0.1 %) bytes: Swin's shifted-window attention builds its mask
    # from tensor values, which on the meta device gives a few KB of different bytes per block.
    same = (len(base_layers) == len(layers) and all(
        a["name"] == b["name"] and a["fwd_flops"] == b["fwd_flops"]
        and abs(a["fwd_bytes"] - b["fwd_bytes"]) <= 1e-3 * max(a["fwd_bytes"], b["fwd_bytes"])
        for a, b in zip(base_layers, layers)))
    if not same:
        return None, "the meta forward's layers differ from the export's", None
    scaling = {}
    try:
        _, kb, _ = _meta_layers_with_kernels(spec, [shape[0] * 2] + list(shape[1:]), input_dtype,
                                             kwargs, vocab, seed)
        batch_ok = _same_structure(base, kb)
    except ExportError:
        batch_ok = False
    kind, size, probes = _size_probe_shapes(list(shape), input_dtype)
    ks = []
    if kind:
        try:
            ks = [_meta_layers_with_kernels(spec, pshape, input_dtype, kwargs, vocab, seed)[1]
                  for pshape in probes]
            if not all(_same_structure(base, k) for k in ks):
                ks = []
        except ExportError:
            ks = []
    if ks:
        scaling = {"size": kind, "export": size, "probes": [size // 2, size // 4]}
    for li, lk in enumerate(base):
        for ki, rec in enumerate(lk):
            dims = KERNEL_DIMS.get(rec["op"])
            if dims:
                if batch_ok:
                    rec["eb"] = [_exponent(kb[li][ki][d], rec[d], 2.0) for d in dims]
                if ks:
                    rec["es"] = [_exponent(rec[d], ks[0][li][ki][d], 2.0) for d in dims]
            if ks and "sv" in rec and not all("sv" in k[li][ki] for k in ks):
                del rec["sv"]  # a probe without it: the bytes at other sizes are not known
            if ks:
                for f in (MEM_FIELDS if not dims else ()) + (("sv",) if "sv" in rec else ()):
                    y1, y2, y4 = rec[f], ks[0][li][ki][f], ks[1][li][ki][f]
                    # y(r) = c0 + c1 r + c2 r^2 at r = 1, 1/2, 1/4
                    c2 = 8.0 * (y1 - 3.0 * y2 + 2.0 * y4) / 3.0
                    c1 = 2.0 * (y1 - y2) - 1.5 * c2
                    c0 = y1 - c1 - c2
                    rec[f] = [c0, c1, c2]
    note = {"method": "meta", "batch_exponents": bool(batch_ok)}
    note.update(scaling)
    return base, note, host


def add_kernels(doc, kwargs=None, vocab=None, seed=0):
    """Add `kernels` and `host_ops` to every layer of an export `doc` (and the top-level
    `kernel_scaling`); no other field changes.  Returns None on success, else the reason it could
    not be done."""
    ew = doc["exported_with"]
    kern, note, host = kernel_records(doc["source"], list(ew["input_shape"]), ew["input_dtype"], kwargs,
                                      vocab, seed, doc["layers"])
    if kern is None:
        return note
    for layer, k, h in zip(doc["layers"], kern, host):
        layer["kernels"] = k
        layer["host_ops"] = h
    doc["kernel_scaling"] = note
    return None


def write_json(doc, path):
    # compact-ish: one entry per line for the big arrays, readable diffs
    lines = ["{"]
    keys = list(doc.keys())
    for ki, k in enumerate(keys):
        v = doc[k]
        comma = "," if ki < len(keys) - 1 else ""
        if isinstance(v, list) and v and isinstance(v[0], dict):
            lines.append("  %s: [" % json.dumps(k))
            for i, e in enumerate(v):
                lines.append("    " + json.dumps(e) + ("," if i < len(v) - 1 else ""))
            lines.append("  ]" + comma)
        else:
            lines.append("  %s: %s%s" % (json.dumps(k), json.dumps(v), comma))
    lines.append("}")
    text = "\n".join(lines) + "\n"
    if path == "-":
        sys.stdout.write(text)
    else:
        d = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(d):
            os.makedirs(d)
        with open(path, "w") as f:
            f.write(text)


def main(argv=None):
    ap = argparse.ArgumentParser(description="Export a torch.nn.Module to ddpsim-model/1 JSON.")
    ap.add_argument("spec", help="module.path:callable, e.g. torchvision.models:resnet50 or zoo.gpt2:gpt2")
    ap.add_argument("-o", "--output", required=True, help="output JSON path ('-' for stdout)")
    ap.add_argument("--input", default="2x3x224x224",
                    help="input shape, first dim = batch size (default 2x3x224x224)")
    ap.add_argument("--input-dtype", default="float32", help="float32 (default) or int64 (token ids)")
    ap.add_argument("--vocab", type=int, default=None,
                    help="token-id range for int64 inputs (default: first nn.Embedding's size)")
    ap.add_argument("--name", default=None, help="model name (default: the callable's name)")
    ap.add_argument("--kwargs", default=None, help="JSON object of keyword arguments for the callable")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0: torch default)")
    ap.add_argument("--meta", action="store_true",
                    help="analytic path: build the model on the meta device (no memory) and count "
                         "FLOPs/bytes from shapes; grad_ready_order is derived (reverse forward "
                         "first-use order), not recorded")
    ap.add_argument("--allow-unused", action="store_true",
                    help="export parameters the forward never uses (final zero-cost layer "
                         "'<unused-params>', first in grad_ready_order, top-level 'unused_params')")
    ap.add_argument("--no-kernels", action="store_true",
                    help="leave out the per-layer kernel records (GEMM/conv dimensions, memory-bound "
                         "op bytes) that ddpsim's per-kernel compute model uses")
    ap.add_argument("--add-kernels", action="store_true",
                    help="SPEC is then an existing export (JSON file): add its kernel records (meta "
                         "forwards at the recorded input shape) and rewrite it in place (or to -o); "
                         "no other field changes")
    args = ap.parse_args(argv)
    if args.add_kernels:
        try:
            with open(args.spec) as f:
                doc = json.load(f)
            _import_torch()
            why = add_kernels(doc, parse_kwargs(args.kwargs), args.vocab, args.seed)
            if why:
                raise ExportError("%s: cannot add kernel records: %s" % (args.spec, why))
            write_json(doc, args.output)
        except ExportError as e:
            _die(str(e))
        sys.stderr.write("added kernel records to %s (%s) -> %s\n"
                         % (args.spec, json.dumps(doc["kernel_scaling"]), args.output))
        return 0
    try:
        shape = parse_shape(args.input)
        kwargs = parse_kwargs(args.kwargs)
        torch = _import_torch()
        if args.threads > 0:
            torch.set_num_threads(args.threads)
        doc = export(args.spec, shape, args.input_dtype, args.name, kwargs, args.vocab, args.seed,
                     meta=args.meta, allow_unused=args.allow_unused, kernels=not args.no_kernels)
        write_json(doc, args.output)
    except ExportError as e:
        _die(str(e))
    n = sum(_prod(p["shape"]) for p in doc["params"])
    sys.stderr.write("exported %s: %d params (%d tensors), %d layers, fwd %.3g GFLOP/batch %d -> %s\n"
                     % (doc["name"], n, len(doc["params"]), len(doc["layers"]),
                        sum(l["fwd_flops"] for l in doc["layers"]) / 1e9, doc["batch_size"], args.output))
    return 0


if __name__ == "__main__":
    sys.exit(main())
