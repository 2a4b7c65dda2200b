#!/usr/bin/python3
"""Check ddpsim's compute model on this machine's CPU: ResNet-50, one "GPU" = this CPU.

    /usr/bin/python3 scripts/check_cpu_profile.py [-o bench/results/profile-check/resnet50-profile-check.json]
        [--profile-out bench/results/profile-check/resnet50-profile.json] [--spec torchvision.models:resnet50]
        [--input 8x3x224x224] [--threads 1] [--iters 3] [--warmup 1] [--profile-iters 3]
        [--profile-warmup 1] [--set-to-none auto|true|false]

(a) calibration: the achievable float32 FLOP rate (median of large torch.mm calls; also probed at
    every thread count up to the logical CPUs, to show which is best), the memory bandwidth (a large
    tensor copy: bytes read + written per second) and the small-op time (ddpsim_profile).
(b) whole training iterations, as a user's loop runs them: forward, CrossEntropy loss, backward,
    SGD(momentum=0.9).step(), zero_grad() -- each phase timed; medians of --iters iterations run
    before the profile and --iters after it (the load drifts; both halves are kept).
(c) the measured per-layer profile (scripts/profile_model.py's run_profile), written to
    --profile-out (a ddpsim-model/1 file).
(d) two ddpsim scenarios, one GPU = this CPU (peak and bandwidth from (a), flops/memory
    efficiency 1.0 because (a) already is the achievable rate, kernel_overhead = the small-op
    time, input copy 0 B, SGD for_loop as torch on CPU): "measured" (the profile,
    compute.use_measured) and "roofline" (the same model without times).  `ddpsim run --json`
    gives forward/backward/optimizer/step; `--trace` gives the per-layer kernels, summed by layer
    type.

Reported: roofline estimate vs measured profile (forward, backward, total, per layer type), and
the measured-profile simulation's step vs the measured iteration (relative error; target 5 %),
with a breakdown of where the difference comes from (phases ddpsim models differently or not at
all: the optimizer step, zero_grad, the loss).  Nothing is tuned to the measurement.
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

SCRIPT_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(SCRIPT_DIR)
if SCRIPT_DIR not in sys.path:
    sys.path.insert(0, SCRIPT_DIR)
import export_model as em  # noqa: E402
import ddpsim_profile as dp  # noqa: E402
import profile_model as pm  # noqa: E402

DDPSIM = os.path.join(REPO_ROOT, "build", "ddpsim")


def med(xs):
    return float(statistics.median(xs)) if xs else 0.0


def loadavg():
    try:
        return list(os.getloadavg())
    except OSError:
        return None


def q(v, unit):
    return "%.17g%s" % (v, unit)


# ------------------------------------------------------------------------------------------
# (a) calibration
# ------------------------------------------------------------------------------------------

def measure_matmul(n, reps, threads):
    import torch
    old = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        a = torch.randn(n, n)
        b = torch.randn(n, n)
        c = torch.empty(n, n)
        torch.mm(a, b, out=c)
        ts = []
        for _ in range(reps):
            t = time.perf_counter()
            torch.mm(a, b, out=c)
            ts.append(time.perf_counter() - t)
    finally:
        torch.set_num_threads(old)
    flops = 2.0 * n ** 3
    return {"n": n, "threads": threads, "times_s": ts, "flops_per_s": flops / med(ts)}


def measure_conv(c, hw, k, reps, batch=8):
    """FLOP/s of a float32 conv2d forward (stride 1, 'same' padding) -- oneDNN's path in torch
    builds without MKL, which can be faster than torch.mm's BLAS."""
    import torch
    import torch.nn.functional as F
    x = torch.randn(batch, c, hw, hw)
    w = torch.randn(c, c, k, k)
    F.conv2d(x, w, padding=k // 2)
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        F.conv2d(x, w, padding=k // 2)
        ts.append(time.perf_counter() - t)
    flops = 2.0 * batch * hw * hw * c * c * k * k
    return {"shape": "%dx%dx%dx%d, %dx%d kernel" % (batch, c, hw, hw, k, k), "times_s": ts,
            "flops_per_s": flops / med(ts)}


def calibrate(args, log):
    import torch
    cal = {"load_average_before": loadavg()}
    ncpu = os.cpu_count() or 1
    probe = []
    for th in range(1, ncpu + 1):
        if th == args.threads:
            continue
        probe.append(measure_matmul(args.probe_n, 3, th))
    main = measure_matmul(args.matmul_n, args.matmul_reps, args.threads)
    probe.append(dict(main))
    probe.sort(key=lambda r: r["threads"])
    cal["matmul"] = main
    cal["matmul_thread_probe"] = [{"threads": r["threads"], "n": r["n"],
                                   "gflops": r["flops_per_s"] / 1e9} for r in probe]
    cal["peak_flops_per_s"] = main["flops_per_s"]
    # for information (not used as the peak): what the convolutions' own path reaches
    cal["conv_probe"] = [measure_conv(512, 28, 1, 3), measure_conv(256, 14, 3, 3)]
    cal["conv_peak_flops_per_s"] = max(r["flops_per_s"] for r in cal["conv_probe"])
    copy = dp.measure_copy_bandwidth("cpu", nbytes=args.copy_bytes, iters=9)
    cal["copy_bytes"] = args.copy_bytes
    cal["copy_bandwidth_Bps"] = copy               # destination bytes per second
    cal["memory_bandwidth_Bps"] = 2.0 * copy       # read + write
    cal["op_overhead_s"] = dp.measure_op_overhead("cpu")
    cal["load_average_after"] = loadavg()
    log("calibration: matmul %.2f GFLOP/s (n=%d, %d thread(s); probe %s), memory %.2f GB/s "
        "(copy %.2f GB/s), small op %.2f us; conv2d probe %.2f GFLOP/s"
        % (cal["peak_flops_per_s"] / 1e9, args.matmul_n, args.threads,
           ", ".join("%d thr %.2f" % (r["threads"], r["gflops"]) for r in cal["matmul_thread_probe"]),
           cal["memory_bandwidth_Bps"] / 1e9, copy / 1e9, cal["op_overhead_s"] * 1e6,
           cal["conv_peak_flops_per_s"] / 1e9))
    del torch
    return cal


# ------------------------------------------------------------------------------------------
# (b) training iterations
# ------------------------------------------------------------------------------------------

PHASES = ("forward", "loss", "backward", "optimizer_step", "zero_grad")


def make_training(args, shape):
    import torch
    model = em.load_model(args.spec, None, seed=0)
    x = em.make_input(model, shape, "float32", seed=0)
    g = torch.Generator().manual_seed(2)
    model.eval()   # (BatchNorm needs > 1 value per channel in train mode)
    with torch.no_grad():
        nout = model(x[:1]).shape[-1]
    model.train()
    target = torch.randint(0, nout, (shape[0],), generator=g)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    return model, x, target, opt


def train_iters(state, n, set_to_none, label, log):
    import torch
    model, x, target, opt = state
    lossf = torch.nn.CrossEntropyLoss()
    rows = []
    for i in range(n):
        la = loadavg()
        t0 = time.perf_counter()
        out = model(x)
        t1 = time.perf_counter()
        loss = lossf(out, target)
        t2 = time.perf_counter()
        loss.backward()
        t3 = time.perf_counter()
        opt.step()
        t4 = time.perf_counter()
        opt.zero_grad(set_to_none=set_to_none)
        t5 = time.perf_counter()
        del out, loss
        r = {"forward": t1 - t0, "loss": t2 - t1, "backward": t3 - t2, "optimizer_step": t4 - t3,
             "zero_grad": t5 - t4, "iteration": t5 - t0, "load_average_1m": la[0] if la else None}
        rows.append(r)
        if log:
            log("  %s iteration %d: %.3f s (fwd %.3f, bwd %.3f, step %.3f, zero_grad %.3f), load %.2f"
                % (label, i, r["iteration"], r["forward"], r["backward"], r["optimizer_step"],
                   r["zero_grad"], r["load_average_1m"] or -1))
    return rows


def phase_medians(rows):
    return {k: med([r[k] for r in rows]) for k in PHASES + ("iteration",)}


# ------------------------------------------------------------------------------------------
# (d) ddpsim
# ------------------------------------------------------------------------------------------

def scenario(name, model_path, cal, batch, use_measured, cpu, torch_version, peak=None, set_to_none=False):
    return {
        "name": name,
        "model": model_path,
        "cluster": {
            "name": "this-cpu",
            "gpu": {"name": "cpu: %s" % cpu, "arch": "ampere",
                    "peak_flops": {"float32": q((peak or cal["peak_flops_per_s"]) / 1e12, "TFLOPS")},
                    "hbm_bandwidth": q(cal["memory_bandwidth_Bps"], "Bps"), "sm_count": 1},
            "nodes": 1, "gpus_per_node": 1},
        "training": {"batch_size": batch, "optimizer": "sgd", "optimizer_impl": "for_loop",
                     "input_bytes_per_sample": "0B", "zero_grad_set_to_none": bool(set_to_none)},
        "ddp": {"pytorch_version": "1.13" if torch_version.startswith("1.") else "2.4"},
        "contention": {"enabled": False},
        "compute": {"flops_efficiency": 1.0, "memory_efficiency": 1.0,
                    "kernel_overhead": q(cal["op_overhead_s"], "s"), "use_measured": use_measured},
    }


def run_ddpsim(ddpsim, scen_path, trace_path):
    r = subprocess.run([ddpsim, "run", scen_path, "--json", "-", "--trace", trace_path, "-q"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=600)
    if r.returncode != 0:
        raise RuntimeError("ddpsim run %s failed (%d): %s" % (scen_path, r.returncode, r.stderr.strip()))
    rep = json.loads(r.stdout)
    with open(trace_path) as f:
        tr = json.load(f)
    # every (category, layer) kernel of the steady-state step (from the last "iteration N"
    # marker on), summed: a layer's backward can be cut into pieces (e.g. its weight gradient
    # apart from its bias gradient), and taking one piece dropped the rest
    marks = [e["ts"] for e in tr["traceEvents"] if e.get("cat") == "iteration" and e.get("ph") == "i"]
    last = max(marks) if marks else float("-inf")
    per = {}
    for e in tr["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat") in ("forward", "backward") and e["ts"] >= last:
            key = (e["cat"], e["name"])
            per[key] = per.get(key, 0.0) + e["dur"] * 1e-6
    return rep, per


def by_type(layers, fwd, bwd):
    out = {}
    for l in layers:
        e = out.setdefault(l["type"], {"layers": 0, "forward_s": 0.0, "backward_s": 0.0})
        e["layers"] += 1
        e["forward_s"] += fwd.get(l["name"], 0.0)
        e["backward_s"] += bwd.get(l["name"], 0.0)
    return out


def rel(a, b):
    return (a - b) / b if b else None


# ------------------------------------------------------------------------------------------

def main(argv=None):
    ap = argparse.ArgumentParser(description="ddpsim vs this CPU: ResNet-50 per-layer profile check")
    ap.add_argument("-o", "--output", default=os.path.join(REPO_ROOT, "bench", "results", "profile-check",
                                                           "resnet50-profile-check.json"))
    ap.add_argument("--profile-out", default=os.path.join(REPO_ROOT, "bench", "results", "profile-check",
                                                          "resnet50-profile.json"))
    ap.add_argument("--spec", default="torchvision.models:resnet50")
    ap.add_argument("--input", default="8x3x224x224")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--iters", type=int, default=3, help="training iterations before AND after the profile")
    ap.add_argument("--warmup", type=int, default=1, help="untimed training iterations first")
    ap.add_argument("--profile-iters", type=int, default=3)
    ap.add_argument("--profile-warmup", type=int, default=1)
    ap.add_argument("--set-to-none", default="auto", choices=("auto", "true", "false"))
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--matmul-n", type=int, default=1536)
    ap.add_argument("--matmul-reps", type=int, default=5)
    ap.add_argument("--probe-n", type=int, default=1024)
    ap.add_argument("--copy-bytes", type=int, default=256 << 20)
    ap.add_argument("--ddpsim", default=DDPSIM)
    ap.add_argument("--target", type=float, default=0.05)
    args = ap.parse_args(argv)

    def log(m):
        sys.stderr.write("check_cpu_profile.py: %s\n" % m)
        sys.stderr.flush()

    try:
        shape = em.parse_shape(args.input)
        torch = em._import_torch()
    except em.ExportError as e:
        sys.stderr.write("check_cpu_profile.py: error: %s\n" % e)
        return 2
    if args.threads < 1 or args.iters < 1 or args.warmup < 0 or args.profile_iters < 1:
        sys.stderr.write("check_cpu_profile.py: error: --threads, --iters and --profile-iters must be "
                         ">= 1, --warmup >= 0\n")
        return 2
    if not os.path.isfile(args.ddpsim):
        sys.stderr.write("check_cpu_profile.py: error: %s not found (build it first)\n" % args.ddpsim)
        return 2
    torch.set_num_threads(args.threads)
    set_to_none = {"auto": pm.default_set_to_none(), "true": True, "false": False}[args.set_to_none]
    wall0 = time.time()
    doc = {"format": "ddpsim-cpu-profile-check/1",
           "command": " ".join([os.path.relpath(sys.argv[0], REPO_ROOT)] + sys.argv[1:]),
           "date": time.strftime("%Y-%m-%d %H:%M:%S %z"),
           "hardware": {"cpu_name": dp.cpu_name(), "logical_cpus": os.cpu_count(),
                        "python": platform.python_version(), "torch": torch.__version__,
                        "torch_parallel": torch.__config__.parallel_info().splitlines()[-1].strip()},
           "config": {"spec": args.spec, "input": shape, "threads": args.threads,
                      "iters_each_side": args.iters, "warmup": args.warmup,
                      "profile_iters": args.profile_iters, "profile_warmup": args.profile_warmup,
                      "zero_grad_set_to_none": set_to_none, "optimizer": "SGD(lr=%g, momentum=%g), "
                      "foreach=False (torch's CPU default)" % (args.lr, args.momentum),
                      "loss": "CrossEntropyLoss (profile: the exporter's mean of the output)"},
           "load_average_start": loadavg()}
    log("load average at start: %s" % doc["load_average_start"])

    # (a)
    cal = calibrate(args, log)
    doc["calibration"] = cal

    # (b) first half
    state = make_training(args, shape)
    log("training iterations (%d warm-up, %d timed) ..." % (args.warmup, args.iters))
    train_iters(state, args.warmup, set_to_none, "warm-up", log)
    before = train_iters(state, args.iters, set_to_none, "before", log)

    # (c)
    log("per-layer profile ...")
    prof, check, base, info = pm.run_profile(args.spec, shape, "float32", "cpu", args.threads,
                                             args.profile_iters, args.profile_warmup,
                                             set_to_none=set_to_none, log=log)
    em.write_json(prof, args.profile_out)
    err = pm.verify_with_ddpsim(args.profile_out, args.ddpsim)
    if err:
        raise RuntimeError("ddpsim does not accept %s: %s" % (args.profile_out, err))
    check_small = {k: v for k, v in check.items() if not k.endswith("_iters_s")}
    check_small.update({"forward_whole_iters_s": check["forward_whole_iters_s"],
                        "backward_whole_iters_s": check["backward_whole_iters_s"],
                        "export_s": info["export_s"], "measure_s": info["measure_s"],
                        "load_average_after": loadavg()})
    doc["profile"] = {"file": os.path.relpath(args.profile_out, REPO_ROOT), "check": check_small}
    log(pm.summary(prof, check, info))

    # (b) second half
    after = train_iters(state, args.iters, set_to_none, "after", log)
    del state
    rows = before + after
    meas = phase_medians(rows)
    doc["training"] = {"iterations": rows, "median": meas,
                       "median_before_profile": phase_medians(before),
                       "median_after_profile": phase_medians(after)}

    # (d)
    tmp = tempfile.mkdtemp(prefix="ddpsim-cpu-check-")
    base_path = os.path.join(tmp, "model-roofline.json")
    em.write_json(base, base_path)
    sims = {}
    per_layer = {}
    for label, mpath, use, peak in (("measured", os.path.abspath(args.profile_out), True, None),
                                    ("roofline", base_path, False, None),
                                    ("roofline_conv_peak", base_path, False, cal["conv_peak_flops_per_s"])):
        sc = scenario("cpu-check-" + label, mpath, cal, shape[0], use, dp.cpu_name(), torch.__version__,
                      peak, set_to_none)
        sp = os.path.join(tmp, "scenario-%s.json" % label)
        with open(sp, "w") as f:
            json.dump(sc, f, indent=1)
        rep, per = run_ddpsim(args.ddpsim, sp, os.path.join(tmp, "trace-%s.json" % label))
        sims[label] = {"scenario": dict(sc, model=os.path.relpath(mpath, REPO_ROOT) if use
                                        else "(the profile's layers without times)"),
                       "step_time_s": rep["step_time_s"], "forward_s": rep["forward_s"],
                       "backward_compute_s": rep["backward_compute_s"],
                       "optimizer_s": rep["optimizer_s"],
                       "measured_layers": rep.get("measured_layers")}
        per_layer[label] = per
    layers = prof["layers"]
    fwd_m = {l["name"]: l["fwd_time_s"] for l in layers}
    bwd_m = {l["name"]: l["bwd_time_s"] for l in layers}
    fwd_r = {n: t for (c, n), t in per_layer["roofline"].items() if c == "forward"}
    bwd_r = {n: t for (c, n), t in per_layer["roofline"].items() if c == "backward"}
    fwd_s = {n: t for (c, n), t in per_layer["measured"].items() if c == "forward"}
    bwd_s = {n: t for (c, n), t in per_layer["measured"].items() if c == "backward"}
    tm, tr = by_type(layers, fwd_m, bwd_m), by_type(layers, fwd_r, bwd_r)
    fwd_c = {n: t for (c, n), t in per_layer["roofline_conv_peak"].items() if c == "forward"}
    bwd_c = {n: t for (c, n), t in per_layer["roofline_conv_peak"].items() if c == "backward"}
    tc = by_type(layers, fwd_c, bwd_c)
    types = []
    for t in sorted(tm, key=lambda t: -(tm[t]["forward_s"] + tm[t]["backward_s"])):
        m, r = tm[t], tr[t]
        flops = sum(l["fwd_flops"] + l["bwd_flops"] for l in layers if l["type"] == t)
        types.append({"type": t, "layers": m["layers"],
                      "measured_forward_s": m["forward_s"], "estimate_forward_s": r["forward_s"],
                      "measured_backward_s": m["backward_s"], "estimate_backward_s": r["backward_s"],
                      "estimate_vs_measured": rel(r["forward_s"] + r["backward_s"],
                                                  m["forward_s"] + m["backward_s"]),
                      "estimate_at_conv_peak_s": tc[t]["forward_s"] + tc[t]["backward_s"],
                      "estimate_at_conv_peak_vs_measured": rel(tc[t]["forward_s"] + tc[t]["backward_s"],
                                                               m["forward_s"] + m["backward_s"]),
                      "achieved_gflops": flops / (m["forward_s"] + m["backward_s"]) / 1e9
                      if m["forward_s"] + m["backward_s"] > 0 else None})
    # conv2d layers by kernel size: torch 1.13 on CPU runs 3x3/7x7 convs through oneDNN, but
    # 1x1 stride-1 unpadded convs at batch < 16 through slow_conv2d (im2col + torch.mm's BLAS)
    convs = {}
    for l in layers:
        if l["type"] != "conv2d" or not l.get("params"):
            continue
        shp = prof["params"][l["params"][0]]["shape"]
        key = "x".join(str(d) for d in shp[2:]) if len(shp) == 4 else "other"
        e = convs.setdefault(key, {"kernel": key, "layers": 0, "measured_s": 0.0, "estimate_s": 0.0,
                                   "flops": 0.0})
        e["layers"] += 1
        e["measured_s"] += fwd_m[l["name"]] + bwd_m[l["name"]]
        e["estimate_s"] += fwd_r.get(l["name"], 0.0) + bwd_r.get(l["name"], 0.0)
        e["flops"] += l["fwd_flops"] + l["bwd_flops"]
    for e in convs.values():
        e["achieved_gflops"] = e["flops"] / e["measured_s"] / 1e9 if e["measured_s"] > 0 else None
        e["estimate_vs_measured"] = rel(e["estimate_s"], e["measured_s"])
    mf, mb = sum(fwd_m.values()), sum(bwd_m.values())
    rf, rb = sum(fwd_r.values()), sum(bwd_r.values())
    sm, sr = sims["measured"], sims["roofline"]
    doc["ddpsim"] = sims
    doc["estimate_vs_measured"] = {
        "forward": {"measured_s": mf, "estimate_s": rf, "relative": rel(rf, mf)},
        "backward": {"measured_s": mb, "estimate_s": rb, "relative": rel(rb, mb)},
        "forward_backward": {"measured_s": mf + mb, "estimate_s": rf + rb, "relative": rel(rf + rb, mf + mb)},
        "step": {"measured_profile_sim_s": sm["step_time_s"], "roofline_sim_s": sr["step_time_s"],
                 "relative": rel(sr["step_time_s"], sm["step_time_s"])},
        "forward_backward_at_conv_peak": {"estimate_s": sum(fwd_c.values()) + sum(bwd_c.values()),
                                          "relative": rel(sum(fwd_c.values()) + sum(bwd_c.values()), mf + mb),
                                          "note": "roofline with the conv2d probe's rate as the peak "
                                                  "(information only)"},
        "by_type": types,
        "conv2d_by_kernel": sorted(convs.values(), key=lambda e: -e["measured_s"]),
        "per_layer_trace_consistent": {
            "measured_sim_layer_sum_vs_profile": rel(sum(fwd_s.values()) + sum(bwd_s.values()), mf + mb),
            "roofline_layer_sum_vs_forward_backward_s": rel(rf + rb, sr["forward_s"] + sr["backward_compute_s"])},
    }
    it = meas["iteration"]
    simulated = sm["step_time_s"]
    modelled = {  # what the simulated step contains vs the phases of the measured iteration
        "forward": {"measured_s": meas["forward"], "simulated_s": sm["forward_s"]},
        "backward": {"measured_s": meas["backward"], "simulated_s": sm["backward_compute_s"],
                     "note": "measured includes the CrossEntropy loss's backward nodes"},
        "optimizer_step": {"measured_s": meas["optimizer_step"], "simulated_s": sm["optimizer_s"],
                           "note": "ddpsim: SGD-momentum as 5 tensors of traffic per element + "
                                   "2 kernels per tensor (for_loop); torch 1.13's _single_tensor_sgd "
                                   "runs buf.mul_, buf.add_, param.add_ (3 ops, 8 tensors of traffic)"},
        "loss": {"measured_s": meas["loss"], "simulated_s": 0.0, "note": "not modelled"},
        "zero_grad": {"measured_s": meas["zero_grad"], "simulated_s": 0.0,
                      "note": "not modelled (set_to_none=%s)" % set_to_none},
    }
    for v in modelled.values():
        v["difference_s"] = v["simulated_s"] - v["measured_s"]
        v["share_of_iteration"] = v["difference_s"] / it if it else None
    doc["simulated_vs_measured_iteration"] = {
        "measured_iteration_s": it,
        "measured_iteration_before_profile_s": doc["training"]["median_before_profile"]["iteration"],
        "measured_iteration_after_profile_s": doc["training"]["median_after_profile"]["iteration"],
        "simulated_step_s": simulated,
        "relative_error": rel(simulated, it),
        "target": args.target,
        "within_target": abs(rel(simulated, it)) <= args.target,
        "roofline_simulated_step_s": sr["step_time_s"],
        "roofline_relative_error": rel(sr["step_time_s"], it),
        "by_phase": modelled,
        "profile_whole_passes_s": {"forward": check["forward_whole_s"], "backward": check["backward_whole_s"]},
    }
    doc["load_average_end"] = loadavg()
    doc["wall_s"] = time.time() - wall0
    d = os.path.dirname(os.path.abspath(args.output))
    if not os.path.isdir(d):
        os.makedirs(d)
    with open(args.output, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(table(doc))
    return 0


def table(doc):
    ms = lambda s: "%10.1f ms" % (s * 1e3)  # noqa: E731
    pc = lambda r: "%+7.1f %%" % (100 * r) if r is not None else "      -"  # noqa: E731
    cal = doc["calibration"]
    ev = doc["estimate_vs_measured"]
    sv = doc["simulated_vs_measured_iteration"]
    L = ["ResNet-50 check on %s, %d thread(s); load average start %s, end %s"
         % (doc["hardware"]["cpu_name"], doc["config"]["threads"],
            "/".join("%.2f" % x for x in doc["load_average_start"] or []),
            "/".join("%.2f" % x for x in doc["load_average_end"] or [])),
         "calibration: peak %.2f GFLOP/s (matmul), memory %.2f GB/s (copy r+w), small op %.2f us"
         % (cal["peak_flops_per_s"] / 1e9, cal["memory_bandwidth_Bps"] / 1e9, cal["op_overhead_s"] * 1e6),
         "",
         "roofline estimate vs measured profile      measured       estimate     est/meas-1",
         "  forward                             %s  %s   %s" % (ms(ev["forward"]["measured_s"]),
                                                             ms(ev["forward"]["estimate_s"]), pc(ev["forward"]["relative"])),
         "  backward                            %s  %s   %s" % (ms(ev["backward"]["measured_s"]),
                                                             ms(ev["backward"]["estimate_s"]), pc(ev["backward"]["relative"])),
         "  forward + backward                  %s  %s   %s" % (ms(ev["forward_backward"]["measured_s"]),
                                                             ms(ev["forward_backward"]["estimate_s"]),
                                                             pc(ev["forward_backward"]["relative"])),
         "  simulated step (measured vs roofline) %s  %s   %s" % (ms(ev["step"]["measured_profile_sim_s"]),
                                                               ms(ev["step"]["roofline_sim_s"]), pc(ev["step"]["relative"])),
         "  forward + backward, roofline at the conv2d probe's %.2f GFLOP/s: %s (%s)"
         % (cal["conv_peak_flops_per_s"] / 1e9, ms(ev["forward_backward_at_conv_peak"]["estimate_s"]).strip(),
            pc(ev["forward_backward_at_conv_peak"]["relative"]).strip()),
         "  by type (fwd+bwd)        layers     measured       estimate     est/meas-1  achieved GFLOP/s"
         "  (at conv peak)"]
    for t in ev["by_type"]:
        L.append("    %-20s %6d %s  %s   %s   %8.2f        %s" % (
            t["type"], t["layers"], ms(t["measured_forward_s"] + t["measured_backward_s"]),
            ms(t["estimate_forward_s"] + t["estimate_backward_s"]),
            pc(t["estimate_vs_measured"]), t["achieved_gflops"] or 0,
            pc(t["estimate_at_conv_peak_vs_measured"])))
    for e in ev.get("conv2d_by_kernel", []):
        L.append("      conv2d %-12s %6d %s  %s   %s   %8.2f" % (
            e["kernel"], e["layers"], ms(e["measured_s"]), ms(e["estimate_s"]),
            pc(e["estimate_vs_measured"]), e["achieved_gflops"] or 0))
    L += ["",
          "simulated (measured profile) vs measured training iteration",
          "  phase             measured      simulated    sim-meas",
          ]
    for k, v in sv["by_phase"].items():
        L.append("  %-15s %s  %s  %s" % (k, ms(v["measured_s"]), ms(v["simulated_s"]), ms(v["difference_s"])))
    L += ["  iteration       %s  %s   %s   (target +-%.0f %%: %s)"
          % (ms(sv["measured_iteration_s"]), ms(sv["simulated_step_s"]), pc(sv["relative_error"]),
             100 * sv["target"], "met" if sv["within_target"] else "MISSED"),
          "  (iteration medians before/after the profile: %.1f / %.1f ms; roofline-estimate step %s, %s)"
          % (sv["measured_iteration_before_profile_s"] * 1e3, sv["measured_iteration_after_profile_s"] * 1e3,
             ms(sv["roofline_simulated_step_s"]).strip(), pc(sv["roofline_relative_error"]).strip())]
    return "\n".join(L)


if __name__ == "__main__":
    sys.exit(main())
