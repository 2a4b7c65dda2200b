#!/usr/bin/python3
"""Measure torch.nn.DataParallel's host-side (Python) costs on this CPU; prints JSON.

What sim/engine/data_parallel.cpp takes from it (README "DataParallel"):
- gil_share: the share of an eager op's host cost that two Python threads cannot overlap. Method:
  the chain of tiny element-wise ops of scripts/measure_dispatch.py, run by 1 thread, then by 2
  threads at once (each its own chain, as parallel_apply's threads do); share =
  T(2 threads, n ops each) / T(1 thread, n ops) - 1, clipped to [0, 1]. Needs 2 idle cores; on a
  loaded machine it reads high.
- replicate_per_module_s, replicate_per_tensor_s: torch.nn.parallel.replicate's Python work per
  replica, with comm's broadcast stubbed out (no CUDA here: the copies are the simulator's job).
  Solved from two models with different module/tensor ratios: torchvision resnet50 and a module
  holding 200 parameters directly.
- thread_s: starting and joining one threading.Thread (parallel_apply starts one per GPU).
- device_check_per_tensor_s: DataParallel.forward's loop over parameters and buffers checking
  their device, per tensor.
Medians of repeated runs, torch.set_num_threads(1).
"""
import json
import importlib
import statistics
import sys
import threading
import time

import torch

rep = importlib.import_module("torch.nn.parallel.replicate")


def chain(n):
    x = torch.ones(1, requires_grad=True)
    y = x
    for _ in range(n):
        y = y * 1.0001
    return y


def gil_share(n=4000, reps=7):
    one, two = [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        chain(n)
        one.append(time.perf_counter() - t0)
        ts = [threading.Thread(target=chain, args=(n,)) for _ in range(2)]
        t0 = time.perf_counter()
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        two.append(time.perf_counter() - t0)
    t1, t2 = statistics.median(one), statistics.median(two)
    return {"one_thread_s": t1, "two_threads_s": t2, "gil_share": min(1.0, max(0.0, t2 / t1 - 1.0)),
            "fwd_per_op_s": t1 / n}


def stub_broadcast(tensors, devices, detach=False):
    return [list(tensors) for _ in devices]


def replicate_time(module, replicas, reps=7):
    rep._broadcast_coalesced_reshape = stub_broadcast
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        rep.replicate(module, [0] * replicas, detach=True)
        out.append(time.perf_counter() - t0)
    return statistics.median(out)


class Flat(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.ps = torch.nn.ParameterList([torch.nn.Parameter(torch.ones(1)) for _ in range(n)])


def counts(m):
    return (sum(1 for _ in m.modules()),
            sum(1 for _ in m.parameters()) + sum(1 for _ in m.buffers()))


def main():
    torch.set_num_threads(1)
    import torchvision
    out = {"torch": torch.__version__}
    out.update(gil_share())
    r50 = torchvision.models.resnet50()
    flat = Flat(200)
    g = 8
    t_r = replicate_time(r50, g) / g
    t_f = replicate_time(flat, g) / g
    (m_r, n_r), (m_f, n_f) = counts(r50), counts(flat)
    # t = a * modules + b * tensors, per replica
    det = m_r * n_f - m_f * n_r
    a = (t_r * n_f - t_f * n_r) / det
    b = (m_r * t_f - m_f * t_r) / det
    out.update({"resnet50_modules": m_r, "resnet50_tensors": n_r, "resnet50_replicate_per_replica_s": t_r,
                "flat_modules": m_f, "flat_tensors": n_f, "flat_replicate_per_replica_s": t_f,
                "replicate_per_module_s": a, "replicate_per_tensor_s": b})
    ts = []
    for _ in range(7):
        th = [threading.Thread(target=lambda: None) for _ in range(8)]
        t0 = time.perf_counter()
        for t in th:
            t.start()
        for t in th:
            t.join()
        ts.append((time.perf_counter() - t0) / 8)
    out["thread_s"] = statistics.median(ts)
    import itertools
    dev = torch.device("cpu")
    cs = []
    for _ in range(7):
        t0 = time.perf_counter()
        for t in itertools.chain(r50.parameters(), r50.buffers()):
            if t.device != dev:
                raise RuntimeError
        cs.append((time.perf_counter() - t0) / n_r)
    out["device_check_per_tensor_s"] = statistics.median(cs)
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
