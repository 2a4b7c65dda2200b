#!/usr/bin/python3
"""Measured per-layer times for a ddpsim-model/1 description (library).

    import ddpsim_profile as dp
    prof = dp.measure_profile(model, x, model_json, device="cpu", warmup=2, iters=5)
    prof, check = dp.measure_profile_with_check(model, x, model_json)   # + the check figures
    dp.measure_copy_bandwidth("cpu")   # bytes/s of a large tensor copy
    dp.measure_op_overhead("cpu")      # seconds per tiny op
    dp.ring_fit(rows)                  # base/alpha/bandwidth fit of all-reduce timings

`measure_profile` returns a copy of `model_json` (the dict scripts/export_model.py produced for the
same model and input) with `fwd_time_s` / `bwd_time_s` on every layer (seconds, at the batch of
`example_input`, median over `iters` timed passes after `warmup` untimed ones), plus top-level
`measured_on` and `measured_batch_size` (nothing else: ddpsim's model reader rejects unknown
keys).  `measure_profile_with_check` also returns the "check" dict: whole-pass times vs the
per-layer sums, per-iteration totals, scale factors, the method, thread count, measured_dtype.

Scaling: the sum of per-layer MEDIANS is below the median whole pass when the machine is loaded
(a preemption lands in a random layer, and each layer's median drops it: with 2 ranks on 2 shared
cores the raw sum was 5-35 % low at load averages 4-9 and up to 50 % low at 10, while every
single hooked pass still added up to its wall time).  By default the per-layer medians are therefore scaled by one factor per direction so that
they sum to the median un-hooked whole pass; the check dict keeps the raw sums and the factors
(`forward_scale`, `backward_scale`; ~1.0-1.1 on an idle machine, the hook cost).

Method
------
Layers are exactly the exporter's: `export_model.trace_model` is run once on the model (the same
TorchDispatchMode + module-stack pass that made `model_json`), and its list of module calls is
turned into layers by export_model's own `kept_calls`/`layer_names` (as `build_layers`); the
resulting names must equal `model_json["layers"][].name` (else ProfileError).  Module calls are
identified by their position in the forward (the k-th forward-pre-hook of a pass is the k-th call
of the trace), so the forward must call the same modules in the same order on every pass.

Forward: forward pre/post hooks on every module put a time mark at every module boundary; the
interval between two consecutive marks is charged to the module call that is innermost during it.
So a layer's forward time is the wall time while it is the innermost running module: its own ops
plus its own Python glue (children excluded).  Time in a call that is not a layer (a pure container
whose only "ops" are views, e.g. ResNet's root doing flatten) goes to its innermost enclosing
layer, or, when there is none, to the next layer that runs (the last one at the end).  The marks
partition the hooked forward, so the per-layer sum equals the hooked forward's wall time; it
differs from an un-hooked forward (check `forward_whole_s`) by the hooks' own cost
(~2 us per module call on this CPU).

Backward: one untimed forward runs under a TorchFunctionMode (above autograd, so every op's
outputs already carry their grad_fn) together with the module stack; after each op the new
autograd nodes reachable from its outputs are claimed by the layer innermost at that moment
(same fallback as above for non-layer calls).  Each parameter's AccumulateGrad node belongs to the
layer that lists it in `layers[].params`.  The backward is then timed with a post-hook
(Node.register_hook, present in torch 1.13) on every node of the graph: the interval between two
consecutive node completions is charged to the layer of the node that just completed (the first
interval starts at the `backward()` call).  Nodes created outside the model (the loss) are
reported as check `backward_outside_layers_s`, not charged to any layer.  Each parameter's
AccumulateGrad completion also records how much of its layer's backward was charged by then, as a
share of the layer's backward in that pass: `layers[].bwd_param_ready` (median over the timed
passes, one entry per entry of `params`) tells DDP's hooks when the gradient is ready inside a
layer (a multi-layer nn.LSTM on the CPU runs one autograd graph per layer, so its upper layers'
weights are ready midway; ordinary layers are at or near 1).

Limits: (1) wall-clock partition, not kernel time: Python glue, hook overhead (~2-4 us per mark)
and autograd-engine scheduling gaps are charged to the layer that ends the interval; for tiny
layers (batch 2 at 32x32) that overhead is a visible part of their time.  (2) backward nodes
run in the engine's order (by sequence number); with several ready branches (a ResNet downsample
next to the main path) a gap before a node is charged to that node even if it was caused by the
previous one.  (3) The forward must be deterministic in its module-call sequence (no
data-dependent control flow between passes).  (4) Ops run through functions the TorchFunctionMode
cannot see (custom autograd.Function internals are claimed as a unit with their outputs) are
fine; nodes that never reach an op output (dead branches) are never executed, hence harmless.
(5) On CUDA the marks are CUDA events on the current stream (forward) / the autograd device
stream (backward): a layer's time is the GPU-timeline span between its marks, which includes GPU
idle time if the CPU is the bottleneck.  Not run on a GPU yet.
"""

import os
import platform
import statistics
import sys
import time

SCRIPT_DIR = os.path.dirname(os.path.abspath(__file__))
if SCRIPT_DIR not in sys.path:
    sys.path.insert(0, SCRIPT_DIR)
import export_model as em  # noqa: E402


UNUSED_LAYER = getattr(em, "UNUSED_LAYER", "<unused-params>")


class ProfileError(Exception):
    """A user-facing profiling error."""


# --------------------------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------------------------

def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown cpu"


def device_description(device):
    import torch
    dev = torch.device(device)
    if dev.type == "cuda":
        return "cuda: %s" % torch.cuda.get_device_name(dev)
    return "cpu: %s, %d threads" % (cpu_name(), torch.get_num_threads())


def _is_cuda(device):
    import torch
    return torch.device(device).type == "cuda"


def _sync(device):
    import torch
    if _is_cuda(device):
        torch.cuda.synchronize(torch.device(device))


class _Clock(object):
    """Time marks: perf_counter on CPU, CUDA events on the current stream on CUDA."""

    def __init__(self, device):
        import torch
        self.cuda = _is_cuda(device)
        self.torch = torch

    def mark(self):
        if self.cuda:
            ev = self.torch.cuda.Event(enable_timing=True)
            ev.record()
            return ev
        return time.perf_counter()

    def elapsed(self, a, b):
        if self.cuda:
            return a.elapsed_time(b) / 1000.0
        return b - a


def _median(xs):
    return float(statistics.median(xs)) if xs else 0.0


# --------------------------------------------------------------------------------------------
# Layer identification (export_model.kept_calls / layer_names, as build_layers)
# --------------------------------------------------------------------------------------------

def _layer_plan(model, x, model_json):
    """Trace the model like the exporter; return (call_layer, call_modules, names) where
    call_layer[k] is the layer index of the k-th module call of a forward (None if that call is
    not a layer) and call_modules[k] its module."""
    import torch
    res = em.trace_model(model, x)   # (calls, ready, plist[, first_use]) depending on the version
    calls, plist = res[0], res[2]
    model.zero_grad(set_to_none=True)
    kept = em.kept_calls(calls, plist)
    names = em.layer_names(kept)
    kept = [c for c, _ in kept]
    # the exporter's zero-cost "<unused-params>" layer (front in older, end in newer versions)
    # never runs: it keeps 0 s
    json_idx = [i for i, l in enumerate(model_json["layers"]) if l["name"] != UNUSED_LAYER]
    want = [model_json["layers"][i]["name"] for i in json_idx]
    if names != want:
        diff = next((i for i, (a, b) in enumerate(zip(names, want)) if a != b),
                    min(len(names), len(want)))
        raise ProfileError("the model's layers do not match model_json (first difference at layer %d: "
                           "traced %r vs model_json %r; %d vs %d layers) -- was model_json exported "
                           "from this model and input?"
                           % (diff, names[diff] if diff < len(names) else None,
                              want[diff] if diff < len(want) else None, len(names), len(want)))
    layer_of_call = {id(c): json_idx[i] for i, c in enumerate(kept)}
    mcalls = [c for c in calls if c.module is not None]
    call_layer = [layer_of_call.get(id(c)) for c in mcalls]
    call_modules = [c.module for c in mcalls]
    del torch
    return call_layer, call_modules, plist


class _Stack(object):
    """Module-call stack for timed/claiming passes: the k-th pre-hook is call k of the trace."""

    def __init__(self, call_layer, call_modules):
        self.call_layer = call_layer
        self.call_modules = call_modules
        self.reset()

    def reset(self):
        self.k = 0
        self.stack = []   # (module, target layer or None)

    def push(self, mod):
        k = self.k
        self.k += 1
        if k >= len(self.call_modules) or self.call_modules[k] is not mod:
            raise ProfileError("the forward is not deterministic: module call %d is %s, the trace had %s"
                               % (k, type(mod).__name__,
                                  type(self.call_modules[k]).__name__ if k < len(self.call_modules)
                                  else "no call"))
        t = self.call_layer[k]
        if t is None and self.stack:
            t = self.stack[-1][1]
        self.stack.append((mod, t))

    def pop(self, mod):
        while self.stack:
            m, _ = self.stack.pop()
            if m is mod:
                break

    def target(self):
        return self.stack[-1][1] if self.stack else None


def _install_module_hooks(model, on_pre, on_post):
    hs = []
    for m in model.modules():
        hs.append(m.register_forward_pre_hook(on_pre))
        hs.append(m.register_forward_hook(on_post))
    return hs


def _resolve(intervals, nlayers, outside=None):
    """intervals: [(target or None or 'out', seconds)] in time order.  None-target time goes to the
    next layer that gets time (the last one at the end).  Returns (per-layer list, outside_s)."""
    per = [0.0] * nlayers
    pending = 0.0
    last = None
    out_s = 0.0
    for t, dt in intervals:
        if t == "out":
            out_s += dt
        elif t is None:
            pending += dt
        else:
            per[t] += dt + pending
            pending = 0.0
            last = t
    if pending and last is not None:
        per[last] += pending
    return per, out_s


# --------------------------------------------------------------------------------------------
# measure_profile
# --------------------------------------------------------------------------------------------

def _whole_scales(fwd_whole, bwd_whole, fwd_raw, bwd_raw, bwd_outside):
    """The factors that make the per-layer sums (fwd_raw, bwd_raw) add up to the median whole
    forward and the median whole backward minus its part outside the layers (1.0 where a sum is 0)."""
    fs = _median(fwd_whole) / fwd_raw if fwd_raw > 0 else 1.0
    bs = max(0.0, _median(bwd_whole) - bwd_outside) / bwd_raw if bwd_raw > 0 else 1.0
    return fs, bs


def whole_pass(model, x, device="cpu", set_to_none=True, before_pass=None, clock=None):
    """One un-hooked forward + loss + backward of `model` on `x`, gradients cleared first as the
    training loop does: returns (forward_s, backward_s), the profile's whole-pass times (pass (a)
    of measure_profile_with_check; the CPU bench also runs it between its step rounds)."""
    import torch
    dev = torch.device(device)
    clock = clock or _Clock(dev)
    model.zero_grad(set_to_none=set_to_none)
    if before_pass:
        before_pass()
    _sync(dev)
    a = clock.mark()
    out = model(x)
    b = clock.mark()
    loss = em.output_loss(out)
    _sync(dev)
    c = clock.mark()
    loss.backward()
    d = clock.mark()
    _sync(dev)
    del out, loss
    return clock.elapsed(a, b), clock.elapsed(c, d)


def rescale_to_whole(prof, check, forward_whole_s, backward_whole_s, note):
    """The profile scaled to other whole passes (medians of the lists): the per-layer shares stay
    those measured, the sums become median(forward_whole_s) and median(backward_whole_s) minus the
    backward outside the layers, as measure_profile_with_check does with its own passes.  Returns
    (profile, check) copies; the check keeps the profile phase's figures and names the new ones."""
    import copy
    if not check.get("scaled_to_whole"):
        raise ProfileError("rescale_to_whole needs a profile scaled to whole passes")
    if not forward_whole_s or not backward_whole_s:
        raise ProfileError("rescale_to_whole needs at least one forward and one backward pass")
    prof, check = copy.deepcopy(prof), dict(check)
    fs, bs = _whole_scales(forward_whole_s, backward_whole_s, check["forward_sum_layers_s"],
                           check["backward_sum_layers_s"], check["backward_outside_layers_s"])
    rf = fs / check["forward_scale"] if check["forward_scale"] > 0 else 1.0
    rb = bs / check["backward_scale"] if check["backward_scale"] > 0 else 1.0
    for l in prof["layers"]:
        l["fwd_time_s"] = l["fwd_time_s"] * rf
        l["bwd_time_s"] = l["bwd_time_s"] * rb
    check.update({
        "whole_passes": note,
        "profile_phase_forward_scale": check["forward_scale"],
        "profile_phase_backward_scale": check["backward_scale"],
        "forward_scale": fs, "backward_scale": bs,
        "scaled_forward_whole_s": _median(forward_whole_s),
        "scaled_backward_whole_s": _median(backward_whole_s),
        "scaled_forward_whole_iters_s": list(forward_whole_s),
        "scaled_backward_whole_iters_s": list(backward_whole_s),
    })
    return prof, check


def measure_profile(model, example_input, model_json, device="cpu", warmup=2, iters=5,
                    scale_to_whole=True, set_to_none=True, before_pass=None):
    """Copy of model_json with fwd_time_s/bwd_time_s on every layer and top-level measured_on /
    measured_batch_size (see measure_profile_with_check, which also returns the check figures)."""
    return measure_profile_with_check(model, example_input, model_json, device, warmup, iters,
                                      scale_to_whole, set_to_none, before_pass)[0]


def measure_profile_with_check(model, example_input, model_json, device="cpu", warmup=2, iters=5,
                               scale_to_whole=True, set_to_none=True, before_pass=None):
    """Copy of model_json with fwd_time_s/bwd_time_s on every layer (see the module docstring).

    Returns (profile, check).  Per layer the median over iters of its attributed time; with scale_to_whole (default) the
    forward (backward) times are then multiplied by one factor so that they add up to the median
    un-hooked whole forward (backward minus the loss's own nodes).  The check dict keeps the raw
    sums (forward_sum_layers_s, backward_sum_layers_s) and the factors.

    set_to_none: how gradients are cleared before every timed pass, as the training loop being
    modelled does it (optimizer.zero_grad(set_to_none=...): True is torch >= 2.0's default, False
    torch 1.13's).  It matters: with False every AccumulateGrad adds into an existing gradient
    (read + write of every parameter's gradient) instead of taking the new tensor -- +30-40 % of
    ResNet-18's backward at batch 8 on this CPU; that time is charged to the layer owning the
    parameter.

    before_pass: optional callable run before each of the three passes of an iteration (the
    DDP bench passes dist.barrier so that all ranks profile in lock step, as they run their steps).

    The profile carries only
    the keys ddpsim's model reader knows; the check figures are the second return value."""
    import copy
    import torch
    from torch.overrides import TorchFunctionMode
    from torch.utils._pytree import tree_flatten

    if iters < 1:
        raise ProfileError("iters must be >= 1")
    if warmup < 0:
        raise ProfileError("warmup must be >= 0")
    dev = torch.device(device)
    model = model.to(dev)
    x = example_input.to(dev)
    model.train()
    nl = len(model_json["layers"])
    call_layer, call_modules, plist = _layer_plan(model, x, model_json)
    clock = _Clock(dev)
    stk = _Stack(call_layer, call_modules)

    # parameter index -> layer (for AccumulateGrad nodes)
    param_layer = {}
    for li, l in enumerate(model_json["layers"]):
        for pi in l.get("params", []):
            param_layer[pi] = li
    accs = {}      # id(AccumulateGrad node) -> (node, layer)
    acc_param = {}  # id(AccumulateGrad node) -> parameter index
    keep = []      # graphs holding the AccumulateGrad nodes alive
    for pi, (_, p) in enumerate(plist):
        if not p.requires_grad:
            continue
        tmp = p.expand_as(p)
        node = tmp.grad_fn.next_functions[0][0]
        keep.append(tmp)
        accs[id(node)] = (node, param_layer.get(pi))
        acc_param[id(node)] = pi

    # ---------------- timed forward: marks at module boundaries ----------------
    fmarks = []   # (mark, target of the interval that ends here)

    def f_pre(mod, inp):
        fmarks.append((clock.mark(), stk.target()))
        stk.push(mod)

    def f_post(mod, inp, out):
        fmarks.append((clock.mark(), stk.target()))
        stk.pop(mod)

    # ---------------- claiming forward: node -> layer ----------------
    claimed = {}   # id(node) -> (node, target)
    pending_nodes = []

    def claim(outs, target):
        todo = [t.grad_fn for t in tree_flatten(outs)[0]
                if isinstance(t, torch.Tensor) and t.grad_fn is not None]
        new = []
        while todo:
            n = todo.pop()
            if n is None:
                continue
            i = id(n)
            if i in claimed or i in accs:
                continue
            claimed[i] = (n, target)
            new.append(i)
            for nf, _ in n.next_functions:
                if nf is not None and id(nf) not in claimed and id(nf) not in accs:
                    todo.append(nf)
        if target is None:
            pending_nodes.extend(new)
        elif pending_nodes:
            for i in pending_nodes:
                claimed[i] = (claimed[i][0], target)
            del pending_nodes[:]

    class Claim(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            if stk.stack:
                claim(out, stk.target())
            return out

    def c_pre(mod, inp):
        stk.push(mod)

    def c_post(mod, inp, out):
        stk.pop(mod)

    def all_nodes(root):
        seen = {}
        todo = [root]
        while todo:
            n = todo.pop()
            if n is None or id(n) in seen:
                continue
            seen[id(n)] = n
            for nf, _ in n.next_functions:
                if nf is not None and id(nf) not in seen:
                    todo.append(nf)
        return list(seen.values())

    fwd_whole, bwd_whole = [], []
    fwd_layers = [[] for _ in range(nl)]
    bwd_layers = [[] for _ in range(nl)]
    ready_share = {}   # parameter index -> per timed pass, the share of its layer's backward done
    fwd_sum, bwd_sum, bwd_out = [], [], []

    if not set_to_none:   # gradients exist from the first timed pass on, as in a training loop
        for _, p in plist:
            if p.requires_grad and p.grad is None:
                p.grad = torch.zeros_like(p)
    for it in range(warmup + iters):
        timed = it >= warmup
        # (a) plain forward + backward: whole-pass times
        f_s, b_s = whole_pass(model, x, dev, set_to_none, before_pass, clock)
        if timed:
            fwd_whole.append(f_s)
            bwd_whole.append(b_s)

        # (b) hooked forward (timed per layer), untimed backward
        model.zero_grad(set_to_none=set_to_none)
        stk.reset()
        del fmarks[:]
        if before_pass:
            before_pass()
        hs = _install_module_hooks(model, f_pre, f_post)
        try:
            _sync(dev)
            fmarks.append((clock.mark(), None))
            out = model(x)
        finally:
            for h in hs:
                h.remove()
        _sync(dev)
        if timed:
            ivs = [(fmarks[i][1], clock.elapsed(fmarks[i - 1][0], fmarks[i][0]))
                   for i in range(1, len(fmarks))]
            per, _ = _resolve(ivs, nl)
            for li in range(nl):
                fwd_layers[li].append(per[li])
            fwd_sum.append(sum(per))
        em.output_loss(out).backward()
        del out

        # (c) claiming forward (untimed), hooked backward (timed per layer)
        model.zero_grad(set_to_none=set_to_none)
        stk.reset()
        claimed.clear()
        del pending_nodes[:]
        if before_pass:
            before_pass()
        hs = _install_module_hooks(model, c_pre, c_post)
        try:
            with Claim():
                out = model(x)
        finally:
            for h in hs:
                h.remove()
        if pending_nodes:   # trailing non-layer nodes: the last layer of the forward
            last = max((t for _, t in claimed.values() if t is not None), default=None)
            for i in pending_nodes:
                claimed[i] = (claimed[i][0], last)
            del pending_nodes[:]
        loss = em.output_loss(out)
        bmarks = []
        nhs = []
        for n in all_nodes(loss.grad_fn):
            i = id(n)
            if i in accs:
                tgt = accs[i][1]
            elif i in claimed:
                tgt = claimed[i][1]
            else:
                tgt = "out"
            if tgt is None:
                tgt = "out"

            def mk(tgt, pi):
                def hook(*unused):
                    bmarks.append((clock.mark(), tgt, pi))
                return hook
            nhs.append(n.register_hook(mk(tgt, acc_param.get(i))))
        _sync(dev)
        start = clock.mark()
        loss.backward()
        _sync(dev)
        for h in nhs:   # AccumulateGrad nodes outlive the graph: their hooks must go
            h.remove()
        del nhs
        if timed:
            prev = start
            ivs = []
            cum = [0.0] * nl   # each layer's backward so far
            done_at = {}       # parameter -> its layer's backward done when its AccumulateGrad ran
            for m, t, pi in bmarks:
                dt = clock.elapsed(prev, m)
                ivs.append((t, dt))
                prev = m
                if t != "out":
                    cum[t] += dt
                    if pi is not None:
                        done_at[pi] = cum[t]
            per, out_s = _resolve(ivs, nl)
            for li in range(nl):
                bwd_layers[li].append(per[li])
            for pi, c in done_at.items():
                li = param_layer.get(pi)
                if li is not None and per[li] > 0:
                    ready_share.setdefault(pi, []).append(min(1.0, c / per[li]))
            bwd_sum.append(sum(per))
            bwd_out.append(out_s)
        claimed.clear()
        del out, loss
    model.zero_grad(set_to_none=True)
    del keep

    prof = copy.deepcopy(model_json)
    batch = int(x.shape[0]) if x.dim() > 0 else 1
    # The counts, the kernel records and `batch_size` stay at the export's batch; the times are at
    # `measured_batch_size` (as `ddpsim import-trace` writes them). Rescaling only the counts left
    # the kernel records at the export's batch under a batch_size that said otherwise, so the
    # per-kernel estimate from such a file was priced at the export's batch (ResNet-50 measured at
    # 64 from the batch-2 export: 4.1 ms instead of 27.7 ms on an H200).
    fwd_med = [_median(v) for v in fwd_layers]
    bwd_med = [_median(v) for v in bwd_layers]
    fwd_raw, bwd_raw = sum(fwd_med), sum(bwd_med)
    fs, bs = 1.0, 1.0
    if scale_to_whole:
        fs, bs = _whole_scales(fwd_whole, bwd_whole, fwd_raw, bwd_raw, _median(bwd_out))
    for li, l in enumerate(prof["layers"]):
        l["fwd_time_s"] = fwd_med[li] * fs
        l["bwd_time_s"] = bwd_med[li] * bs
        # Each parameter's readiness within the layer's backward (median over the timed passes; 1
        # for one that never got a gradient): a multi-layer nn.LSTM on the CPU readies its upper
        # layers' weights midway, cuDNN's fused RNN all of them at the end.
        if l.get("params"):
            l["bwd_param_ready"] = [round(_median(ready_share[pi]), 4) if ready_share.get(pi) else 1.0
                                    for pi in l["params"]]
    prof["measured_on"] = device_description(dev)
    prof["measured_batch_size"] = batch
    check = {
        "method": "module-boundary time marks (forward), autograd-node post-hook marks with "
                  "nodes attributed by a TorchFunctionMode (backward); see scripts/ddpsim_profile.py",
        "warmup": int(warmup), "iters": int(iters),
        "threads": int(torch.get_num_threads()),
        "scaled_to_whole": bool(scale_to_whole),
        "grads_set_to_none": bool(set_to_none),
        "forward_whole_s": _median(fwd_whole),
        "forward_sum_layers_s": fwd_raw,
        "forward_hooked_s": _median(fwd_sum),
        "forward_scale": fs,
        "backward_whole_s": _median(bwd_whole),
        "backward_sum_layers_s": bwd_raw,
        "backward_hooked_s": _median(bwd_sum),
        "backward_scale": bs,
        "backward_outside_layers_s": _median(bwd_out),
        # sums of per-layer MEANS (= mean hooked pass), robust to where a preemption lands
        "forward_sum_layer_means_s": sum(sum(v) / len(v) for v in fwd_layers if v),
        "backward_sum_layer_means_s": sum(sum(v) / len(v) for v in bwd_layers if v),
        "forward_whole_mean_s": sum(fwd_whole) / len(fwd_whole),
        "backward_whole_mean_s": sum(bwd_whole) / len(bwd_whole),
        "forward_whole_iters_s": fwd_whole,
        "forward_hooked_iters_s": fwd_sum,
        "backward_whole_iters_s": bwd_whole,
        "backward_hooked_iters_s": bwd_sum,
        "measured_dtype": em.dtype_str(next((p.dtype for p in model.parameters()), torch.float32)),
    }
    return prof, check


# --------------------------------------------------------------------------------------------
# Calibration helpers
# --------------------------------------------------------------------------------------------

def measure_copy_bandwidth(device="cpu", nbytes=64 << 20, iters=5):
    """Bytes per second of dst.copy_(src) for two float32 tensors of nbytes each (bytes of the
    destination per second; the memory traffic is twice that).  Median of iters."""
    import torch
    dev = torch.device(device)
    n = max(1, int(nbytes) // 4)
    src = torch.ones(n, dtype=torch.float32, device=dev)
    dst = torch.empty_like(src)
    dst.copy_(src)
    clock = _Clock(dev)
    ts = []
    for _ in range(max(1, iters)):
        _sync(dev)
        a = clock.mark()
        dst.copy_(src)
        b = clock.mark()
        _sync(dev)
        ts.append(clock.elapsed(a, b))
    t = _median(ts)
    return float(n * 4) / t if t > 0 else 0.0


def measure_op_overhead(device="cpu", n=200, rounds=7):
    """Seconds per tiny op (x.add_(1) on a 1-element tensor): the fixed per-op/per-kernel cost.
    On CUDA: n ops back to back, then a synchronise, divided by n (launch-bound)."""
    import torch
    dev = torch.device(device)
    x = torch.zeros(1, device=dev)
    for _ in range(20):
        x.add_(1)
    ts = []
    for _ in range(max(1, rounds)):
        _sync(dev)
        a = time.perf_counter()
        for _ in range(n):
            x.add_(1)
        _sync(dev)
        ts.append((time.perf_counter() - a) / n)
    return _median(ts)


# --------------------------------------------------------------------------------------------
# Ring all-reduce fit
# --------------------------------------------------------------------------------------------

def _solve(a, b):
    """Solve the small dense system a x = b (Gaussian elimination, partial pivoting); None if singular."""
    n = len(a)
    m = [list(a[i]) + [b[i]] for i in range(n)]
    for col in range(n):
        piv = max(range(col, n), key=lambda r: abs(m[r][col]))
        if abs(m[piv][col]) < 1e-300:
            return None
        m[col], m[piv] = m[piv], m[col]
        for r in range(n):
            if r != col:
                f = m[r][col] / m[col][col]
                if f:
                    for c in range(col, n + 1):
                        m[r][c] -= f * m[col][c]
    return [m[i][n] / m[i][i] for i in range(n)]


def _wls(cols, y, w):
    """Weighted least squares on the given feature columns; returns (coef, sse) or None."""
    k = len(cols)
    ata = [[sum(w[r] * cols[i][r] * cols[j][r] for r in range(len(y))) for j in range(k)] for i in range(k)]
    atb = [sum(w[r] * cols[i][r] * y[r] for r in range(len(y))) for i in range(k)]
    scale = [ata[i][i] ** 0.5 if ata[i][i] > 0 else 1.0 for i in range(k)]
    ata_s = [[ata[i][j] / (scale[i] * scale[j]) for j in range(k)] for i in range(k)]
    atb_s = [atb[i] / scale[i] for i in range(k)]
    sol = _solve(ata_s, atb_s)
    if sol is None:
        return None
    coef = [sol[i] / scale[i] for i in range(k)]
    sse = sum(w[r] * (y[r] - sum(coef[i] * cols[i][r] for i in range(k))) ** 2 for r in range(len(y)))
    return coef, sse


def ring_fit(rows, world_size=None):
    """Fit time = base + 2(N-1)*alpha + 2(N-1)/N * S / B to all-reduce rows.

    rows: [{"size_bytes": S, "time_s": t, "ranks": N (optional, default world_size)}].
    Weighted least squares minimising RELATIVE residuals (weight 1/t^2, so 4 KiB rows count as
    much as 64 MiB rows), all three coefficients constrained >= 0 (exact non-negative LS by
    trying every subset of free coefficients).  base and alpha are only separable when the rows
    cover at least two rank counts (the CPU bench adds single-rank rows, N=1, for that); with a
    single N the intercept is given to alpha (base = 0) and "identifiable" says so.
    Returns {"base_latency_s", "step_latency_s", "bandwidth_Bps", "rms_rel_error", "identifiable",
    "n_rows", "model"}."""
    pts = []
    for r in rows:
        n = r.get("ranks", world_size)
        if n is None:
            raise ValueError("ring_fit: row without 'ranks' and no world_size given")
        t = float(r["time_s"])
        if t <= 0:
            continue
        pts.append((float(r["size_bytes"]), t, int(n)))
    if not pts:
        raise ValueError("ring_fit: no rows with positive time")
    ns = sorted(set(p[2] for p in pts))
    y = [p[1] for p in pts]
    w = [1.0 / (p[1] * p[1]) for p in pts]
    f_base = [1.0 for p in pts]
    f_alpha = [2.0 * (p[2] - 1) for p in pts]
    f_bw = [2.0 * (p[2] - 1) / p[2] * p[0] for p in pts]
    separable = len(ns) >= 2 and any(n > 1 for n in ns)
    feats = [f_base, f_alpha, f_bw] if separable else ([f_alpha, f_bw] if ns[-1] > 1 else [f_base])
    best = None
    k = len(feats)
    for mask in range(1, 1 << k):
        idx = [i for i in range(k) if mask >> i & 1]
        res = _wls([feats[i] for i in idx], y, w)
        if res is None:
            continue
        coef, sse = res
        if any(c < 0 for c in coef):
            continue
        full = [0.0] * k
        for i, c in zip(idx, coef):
            full[i] = c
        if best is None or sse < best[1] - 1e-18:
            best = (full, sse)
    if best is None:
        full = [0.0] * k
        sse = sum(wi * yi * yi for wi, yi in zip(w, y))
        best = (full, sse)
    full, sse = best
    if separable:
        base, alpha, inv_b = full
    elif ns[-1] > 1:
        base, (alpha, inv_b) = 0.0, full
    else:
        base, alpha, inv_b = full[0], 0.0, 0.0
    return {
        "model": "time = base + 2(N-1)*alpha + 2(N-1)/N * S / B",
        "base_latency_s": float(base),
        "step_latency_s": float(alpha),
        "bandwidth_Bps": float(1.0 / inv_b) if inv_b > 0 else None,
        "rms_rel_error": float((sse / len(pts)) ** 0.5),
        "identifiable": "base and alpha separately" if separable else "base + 2(N-1)alpha only (base set to 0)",
        "n_rows": len(pts),
        "ranks": ns,
    }


def ring_predict(fit, size_bytes, n):
    t = fit["base_latency_s"] + 2.0 * (n - 1) * fit["step_latency_s"]
    if fit.get("bandwidth_Bps"):
        t += 2.0 * (n - 1) / n * size_bytes / fit["bandwidth_Bps"]
    return t
