#!/usr/bin/python3
"""One prepared measurement run on a GPU machine (docs/modelled.md, compute on a GPU), and its CPU dry run.

    python3 scripts/device_profile.py [--out bench/results/device-h200] [--preset h200]
        [--models resnet50,bert-base,...] [--budget-s 540] [--iters 5] [--warmup 2]
    python3 scripts/device_profile.py --cpu --out /tmp/dp [--models skip-branch]   # dry run here

Steps (each model is skipped, with the reason recorded, when the time budget is spent):
 1. scripts/profile_model.py's run_profile on every listed zoo model at its usual per-GPU batch
    (float32 parameters, PyTorch's default TF32 convolutions): OUT/profile-<model>.json
    (ddpsim-model/1 with fwd_time_s/bwd_time_s, measured_on = the CUDA device name); the models of
    --channels-last-models (GPU default: resnet50) again in torch.channels_last:
    OUT/profile-<model>-channels_last.json, which checks training.memory_format (the TF32
    convolutions' NCHW<->NHWC transposes it removes) against the same GPU; the models of
    --autocast-models (GPU default: resnet50, bert-base, gpt2, vit-b16) last, under torch.autocast
    in bfloat16 (profile_model.py --autocast): OUT/profile-<model>-bfloat16.json, estimated in
    bfloat16.
 2. GPU only, when build/bench/ddpbench exists (run after steps 4 and 5, which take seconds, so
    that a spent budget cuts ddpbench rather than them): `ddpbench layers` on the same models and batch
    (OUT/ddpbench-layers-<model>.json) and `ddpbench contention -g 1` (OUT/ddpbench-contention.json).
 3. The estimate-vs-measured table: every measured profile against `ddpsim run` of the same model,
    batch and dtype on the --preset GPU (compute.use_measured false, so the per-kernel model's
    estimate; per-layer kernel times from --trace), summed per layer type:
    OUT/estimate-vs-measured.json and .md.
 4. The training loss (`training.loss`, sim/gpu/kernel_model.cpp loss_kernels): F.cross_entropy
    forward + backward on GPT-2-sized logits (8 x 1,024 rows x 50,257 classes; float32, and fp16
    logits under autocast on a GPU; 64 rows in float32 with --cpu), timed on the device, against
    ddpsim's `loss_compute.seconds` for gpt2 at the same rows on the preset: OUT/loss.json.
 5. The optimizer step as a training loop issues it (sim/gpu/compute_model.cpp optimizer_host_walk):
    ResNet-50's 161 parameters with gradients, SGD momentum `for_loop` and `foreach`; on a GPU
    `GradScaler.step` (unscale_, found_inf.item(), step) + `update` + `zero_grad(set_to_none=True)`
    from a synchronized start, on --cpu a plain `step` + `zero_grad`; median wall time against
    ddpsim's `optimizer_s` for resnet50 on one GPU of the preset (float16 with a GradScaler on a
    GPU, float32 on --cpu) with the same optimizer: OUT/optimizer.json.
With --cpu the same steps run on this CPU (step 2 skipped; the "preset" is this CPU as an inline
GPU: its float32 matmul rate, copy bandwidth and small-op time, as scripts/check_cpu_profile.py
does), so the pipeline and the table format are exercised without a GPU.

OUT/run.json records the command, the device, the torch version, every step's status and wall
time. Exit status: 0 when every step that ran succeeded, 1 when a step failed, 2 on bad arguments.
"""

import argparse
import contextlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

SCRIPT_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(SCRIPT_DIR)
if SCRIPT_DIR not in sys.path:
    sys.path.insert(0, SCRIPT_DIR)

DDPSIM = os.path.join(REPO_ROOT, "build", "ddpsim")
DDPBENCH = os.path.join(REPO_ROOT, "build", "bench", "ddpbench")

# Usual per-GPU training batch and sequence length (tests/unit/gpu/ZooMfu_test.cpp's table),
# smaller where float32 eager activations would not fit or time would run out; llama-7b and
# gpt2-xl are left out of the default list (their CPU-side construction alone takes minutes).
USUAL = {
    "resnet50": (64, None), "resnet101": (64, None), "resnet152": (32, None), "vgg16": (32, None),
    "vit-b16": (32, None), "vit-l16": (16, None), "bert-base": (32, 128), "bert-large": (16, 128),
    "gpt2": (8, 1024), "gpt2-medium": (4, 1024), "gpt2-large": (2, 1024), "gpt2-xl": (1, 1024),
    "llama-7b": (1, 2048), "mixed-gpt": (32, 128), "skip-branch": (256, None),
}
# CUDA device name -> bundled preset: the same table as config::gpu_preset_for_device
# (sim/config/kernel_records.cpp), which ddpsim uses to identify a measured profile's GPU.
DEVICE_PRESETS = {
    "tesla v100-sxm2-16gb": "v100-sxm2-32gb", "tesla v100-sxm2-32gb": "v100-sxm2-32gb",
    "tesla v100-pcie-16gb": "v100-pcie-16gb", "tesla v100-pcie-32gb": "v100-pcie-16gb",
    "nvidia a100-sxm4-40gb": "a100-sxm4-40gb", "nvidia a100-sxm4-80gb": "a100-sxm4-80gb",
    "nvidia a100 80gb pcie": "a100-pcie-80gb", "nvidia h100 80gb hbm3": "h100-sxm", "nvidia h100 pcie": "h100-pcie",
    "nvidia h200": "h200", "nvidia b200": "b200", "nvidia geforce rtx 4090": "rtx-4090", "nvidia l40s": "l40s",
}
DEFAULT_GPU_MODELS = ["resnet50", "bert-base", "gpt2", "vit-b16", "vgg16", "gpt2-medium", "bert-large",
                      "resnet101", "mixed-gpt", "skip-branch"]
DEFAULT_CPU_MODELS = ["skip-branch"]
CPU_BATCH = {"skip-branch": 8, "mixed-gpt": 2, "resnet50": 2, "bert-base": 2}


def log(msg):
    sys.stderr.write("device_profile.py: %s\n" % msg)
    sys.stderr.flush()


def model_input(name, batch, seq):
    with open(os.path.join(REPO_ROOT, "models", name + ".json")) as f:
        doc = json.load(f)
    ew = doc.get("exported_with", {})
    shape = list(ew["input_shape"])
    shape[0] = batch
    if seq is not None and len(shape) == 2:
        shape[1] = seq
    return doc, doc["source"], shape, ew.get("input_dtype", "float32")


def profile_models(args, out, status, deadline):
    import profile_model as pm
    made = []
    runs = []
    for name in args.models:
        runs.append((name, False, None))
        if name in args.channels_last_models:
            runs.append((name, True, None))
    # the mixed-precision profiles after every float32 one (a spent budget cuts them first)
    runs += [(name, False, "bfloat16") for name in args.models if name in args.autocast_models]
    for name, cl, amp in runs:
        t0 = time.time()
        label = name + ("-channels_last" if cl else "") + ("-" + amp if amp else "")
        row = {"step": "profile_model", "model": label}
        status.append(row)
        if time.time() > deadline:
            row.update(status="skipped", reason="time budget spent")
            continue
        batch, seq = USUAL[name]
        if args.cpu:
            batch, seq = CPU_BATCH.get(name, 2), (min(seq, 64) if seq else None)
        try:
            doc, spec, shape, idt = model_input(name, batch, seq)
            # The export's own records are at its size; a different sequence length re-exports.
            same_size = len(shape) < 2 or shape[1:] == doc["exported_with"]["input_shape"][1:]
            prof, check, _, info = pm.run_profile(
                spec, shape, input_dtype=idt, device="cpu" if args.cpu else "cuda", threads=args.threads,
                iters=args.iters, warmup=args.warmup, model_json=doc if same_size else None,
                name=name, log=log, channels_last=cl, autocast=amp)
            path = os.path.join(out, "profile-%s.json" % label)
            with open(path, "w") as f:
                json.dump(prof, f, indent=1, sort_keys=True)
            row.update(status="ok", file=os.path.basename(path), batch=batch, input=shape,
                       measured_on=prof.get("measured_on"), forward_whole_s=check.get("forward_whole_s"),
                       backward_whole_s=check.get("backward_whole_s"))
            made.append((label, path, amp or "float32"))
        except Exception as e:  # noqa: BLE001 -- recorded, the run goes on
            row.update(status="failed", error="%s: %s" % (type(e).__name__, e))
        row["wall_s"] = time.time() - t0
        log("%s %s (%.1f s)" % (label, row["status"], row["wall_s"]))
    return made


def ddpbench_model_file(name, out):
    """The model file `ddpbench layers` runs for `name`: the bundled export when it is at the
    sequence length PyTorch's profile of the same model uses (USUAL), else the model exported again
    at that length (meta device: shapes only, seconds) into OUT. ddpbench sizes every layer from the
    file's per-sample counts, so the bundled gpt2-medium (exported at 128 tokens) ran 8x fewer
    tokens than PyTorch's profile at 1024 (the 2026-12-04 H200 run: 32.6 against 276 ms)."""
    path = os.path.join(REPO_ROOT, "models", name + ".json")
    doc, spec, shape, idt = model_input(name, 1, USUAL[name][1])
    if len(shape) < 2 or shape[1:] == doc["exported_with"]["input_shape"][1:]:
        return path
    import export_model as em
    new = em.export(spec, shape, input_dtype=idt, name=name, meta=True)
    path = os.path.join(out, "ddpbench-model-%s.json" % name)
    em.write_json(new, path)
    return path


def ddpbench_steps(args, out, status, deadline):
    made = []
    if args.cpu:
        status.append({"step": "ddpbench", "status": "skipped", "reason": "--cpu"})
        return made
    if not os.path.isfile(args.ddpbench):
        status.append({"step": "ddpbench", "status": "skipped", "reason": "%s not built" % args.ddpbench})
        return made
    for name in args.models:
        row = {"step": "ddpbench layers", "model": name}
        status.append(row)
        if time.time() > deadline:
            row.update(status="skipped", reason="time budget spent")
            continue
        path = os.path.join(out, "ddpbench-layers-%s.json" % name)
        t0 = time.time()
        try:
            model_file = ddpbench_model_file(name, out)
        except Exception as e:  # noqa: BLE001 -- recorded, the run goes on
            row.update(status="failed", error="re-export: %s: %s" % (type(e).__name__, e))
            continue
        row["model_file"] = os.path.relpath(model_file, REPO_ROOT) if model_file.startswith(REPO_ROOT) else \
            os.path.basename(model_file)
        r = subprocess.run([args.ddpbench, "layers", "--model", model_file,
                            "--batch", str(USUAL[name][0]), "--dtype", "float32", "--json", path],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                           timeout=max(10, deadline - time.time()))
        row.update(status="ok" if r.returncode == 0 else "failed", rc=r.returncode, wall_s=time.time() - t0,
                   stderr_tail=r.stderr[-2000:])
        if r.returncode == 0:
            with open(path) as f:
                layers = json.load(f)["layers"]
            lp = os.path.join(out, "ddpbench-profile-%s.json" % name)
            with open(lp, "w") as f:
                json.dump(layers, f, indent=1, sort_keys=True)
            made.append((name + " (ddpbench)", lp, layers.get("measured_dtype", "float32")))
    row = {"step": "ddpbench contention"}
    status.append(row)
    if time.time() > deadline:
        row.update(status="skipped", reason="time budget spent")
    else:
        t0 = time.time()
        r = subprocess.run([args.ddpbench, "contention", "-g", "1", "--dtype", "bfloat16", "--json",
                            os.path.join(out, "ddpbench-contention.json")],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                           timeout=max(10, deadline - time.time()))
        row.update(status="ok" if r.returncode == 0 else "failed", rc=r.returncode, wall_s=time.time() - t0,
                   stderr_tail=r.stderr[-2000:])
    return made


def cpu_gpu(args):
    """This CPU as an inline GPU (check_cpu_profile.py's calibration, shortened)."""
    import check_cpu_profile as cp
    import ddpsim_profile as dp
    mm = cp.measure_matmul(args.matmul_n, 3, max(1, args.threads or 1))
    copy = dp.measure_copy_bandwidth("cpu", nbytes=64 << 20, iters=3)
    op = dp.measure_op_overhead("cpu")
    gpu = {"name": "cpu", "arch": "ampere", "sm_count": 1,
           # bfloat16 (the --autocast-models dry run): the float32 rate, not a measurement
           "peak_flops": {"float32": cp.q(mm["flops_per_s"] / 1e12, "TFLOPS"),
                          "bfloat16": cp.q(mm["flops_per_s"] / 1e12, "TFLOPS")},
           "hbm_bandwidth": cp.q(2.0 * copy, "Bps")}
    return gpu, {"matmul_flops_per_s": mm["flops_per_s"], "memory_bandwidth_Bps": 2.0 * copy, "op_overhead_s": op}


def estimate_table(args, out, made, gpu, extra_compute):
    import check_cpu_profile as cp
    rows, per_model = {}, []
    for label, path, dtype in made:
        with open(path) as f:
            prof = json.load(f)
        fmt = prof.get("measured_memory_format", "contiguous_format")
        scen = {"name": "estimate-" + label.split()[0], "model": os.path.abspath(path),
                "cluster": {"name": "one-gpu", "gpu": gpu, "nodes": 1, "gpus_per_node": 1},
                "training": {"batch_size": int(prof.get("measured_batch_size", prof["batch_size"])),
                             "optimizer": "sgd", "compute_dtype": dtype,
                             "memory_format": fmt},
                "contention": {"enabled": False},
                "compute": dict(extra_compute, use_measured=False)}
        with tempfile.TemporaryDirectory() as td:
            sp = os.path.join(td, "s.json")
            with open(sp, "w") as f:
                json.dump(scen, f)
            rep, per = cp.run_ddpsim(args.ddpsim, sp, os.path.join(td, "trace.json"))
        fwd = {n: t for (c, n), t in per.items() if c == "forward"}
        bwd = {n: t for (c, n), t in per.items() if c == "backward"}
        est = cp.by_type(prof["layers"], fwd, bwd)
        mes = cp.by_type(prof["layers"], {l["name"]: l["fwd_time_s"] for l in prof["layers"]},
                         {l["name"]: l["bwd_time_s"] for l in prof["layers"]})
        model_rows = []
        for t in sorted(mes):
            m, e = mes[t], est.get(t, {"forward_s": 0.0, "backward_s": 0.0})
            r = {"model": label, "type": t, "layers": m["layers"],
                 "measured_fwd_s": m["forward_s"], "measured_bwd_s": m["backward_s"],
                 "estimated_fwd_s": e["forward_s"], "estimated_bwd_s": e["backward_s"]}
            ms_, es_ = m["forward_s"] + m["backward_s"], e["forward_s"] + e["backward_s"]
            r["error"] = cp.rel(es_, ms_)
            model_rows.append(r)
            if fmt != "contiguous_format" or dtype != "float32":
                continue  # the all-models table is the zoo in float32 and PyTorch's default format
            agg = rows.setdefault(t, {"type": t, "layers": 0, "measured_s": 0.0, "estimated_s": 0.0})
            agg["layers"] += m["layers"]
            agg["measured_s"] += ms_
            agg["estimated_s"] += es_
        tot_m = sum(r["measured_fwd_s"] + r["measured_bwd_s"] for r in model_rows)
        tot_e = sum(r["estimated_fwd_s"] + r["estimated_bwd_s"] for r in model_rows)
        per_model.append({"model": label, "measured_on": prof.get("measured_on"), "dtype": dtype,
                          "memory_format": fmt,
                          "batch": scen["training"]["batch_size"], "measured_s": tot_m, "estimated_s": tot_e,
                          "error": cp.rel(tot_e, tot_m), "by_type": model_rows,
                          "ddpsim_provenance": rep.get("compute_provenance")})
    by_type = []
    for t in sorted(rows):
        r = rows[t]
        r["error"] = cp.rel(r["estimated_s"], r["measured_s"])
        by_type.append(r)
    return {"by_type_all_models": by_type, "models": per_model}


def step_row(status, name, deadline):
    """A step's status row, or None (recorded as skipped) once the time budget is spent."""
    row = {"step": name}
    status.append(row)
    if time.time() > deadline:
        row.update(status="skipped", reason="time budget spent")
        return None
    return row


def ddpsim_report(ddpsim, scen):
    """`ddpsim run` of an inline scenario; its JSON report (RuntimeError with ddpsim's message if it fails)."""
    with tempfile.TemporaryDirectory() as td:
        sp, rp = os.path.join(td, "s.json"), os.path.join(td, "r.json")
        with open(sp, "w") as f:
            json.dump(scen, f)
        r = subprocess.run([ddpsim, "run", sp, "-q", "--json", rp], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True, timeout=300)
        if r.returncode != 0:
            raise RuntimeError("ddpsim run failed (%d): %s" % (r.returncode, r.stderr.strip()))
        with open(rp) as f:
            return json.load(f)


def loss_step(args, out, status, deadline, gpu, extra):
    """Step 4: F.cross_entropy timed on the device against ddpsim's loss estimate."""
    import torch
    import torch.nn.functional as F
    row = step_row(status, "loss", deadline)
    if row is None:
        return
    dev = "cpu" if args.cpu else "cuda"
    seq, batch = (64, 1) if args.cpu else (1024, 8)
    rows, classes = seq * batch, 50257
    cases = [("float32", torch.float32)] + ([] if args.cpu else [("float16", torch.float16)])
    results = []
    try:
        for dtype, tdt in cases:
            logits = torch.randn(rows, classes, device=dev).to(tdt).requires_grad_()
            target = torch.randint(0, classes, (rows,), device=dev)
            times = []
            for i in range(args.warmup + args.iters):
                if dev == "cuda":
                    torch.cuda.synchronize()
                t0 = time.perf_counter()
                ctx = torch.autocast(dev, dtype=tdt) if tdt != torch.float32 else contextlib.nullcontext()
                with ctx:
                    loss = F.cross_entropy(logits, target)
                loss.backward()
                if dev == "cuda":
                    torch.cuda.synchronize()
                if i >= args.warmup:
                    times.append(time.perf_counter() - t0)
                logits.grad = None
            measured = sorted(times)[len(times) // 2]
            cluster = {"name": "one-gpu", "gpu": gpu, "nodes": 1, "gpus_per_node": 1}
            scen = {"name": "loss-check", "model": "gpt2", "cluster": cluster,
                    "training": {"batch_size": batch, "seq_len": seq, "compute_dtype": dtype, "optimizer": "sgd"},
                    "contention": {"enabled": False}, "compute": dict(extra)}
            est = ddpsim_report(args.ddpsim, scen)["loss_compute"]
            results.append({"rows": rows, "classes": classes, "dtype": dtype, "measured_s": measured,
                            "estimated_s": est["seconds"], "error": est["seconds"] / measured - 1.0})
            del logits, target
        with open(os.path.join(out, "loss.json"), "w") as f:
            json.dump({"device": dev, "cases": results}, f, indent=1, sort_keys=True)
        row.update(status="ok", cases=len(results))
    except Exception as e:  # noqa: BLE001
        row.update(status="failed", error="%s: %s" % (type(e).__name__, e))


def optimizer_step(args, out, status, deadline, gpu, extra):
    """Step 5: the optimizer step timed on the device against ddpsim's optimizer phase."""
    import torch
    row = step_row(status, "optimizer", deadline)
    if row is None:
        return
    dev = "cpu" if args.cpu else "cuda"
    version = "1.13" if torch.__version__.startswith("1.") else "2.4"
    results = []
    try:
        import torchvision
        model = torchvision.models.resnet50().to(dev)
        params = [p for p in model.parameters() if p.requires_grad]
        grads = [torch.randn_like(p) * 1e-3 for p in params]
        for impl in ("for_loop", "foreach"):
            opt = torch.optim.SGD(params, lr=1e-3, momentum=0.9, foreach=impl == "foreach")
            scaler = torch.cuda.amp.GradScaler() if dev == "cuda" else None
            times = []
            for i in range(args.warmup + max(args.iters, 5)):
                for p, g in zip(params, grads):
                    p.grad = g
                if scaler is not None:
                    # A training loop scales its loss before step(); torch >= 2.x refuses a step
                    # without it (the scale is created there). Untimed: it belongs to the backward.
                    scaler.scale(torch.ones((), device=dev))
                if dev == "cuda":
                    torch.cuda.synchronize()
                t0 = time.perf_counter()
                if scaler is not None:
                    scaler.step(opt)
                    scaler.update()
                else:
                    opt.step()
                opt.zero_grad(set_to_none=True)
                if dev == "cuda":
                    torch.cuda.synchronize()
                if i >= args.warmup:
                    times.append(time.perf_counter() - t0)
            measured = sorted(times)[len(times) // 2]
            dtype = "float16" if dev == "cuda" else "float32"
            scen = {"name": "optimizer-check", "model": "resnet50",
                    "cluster": {"name": "one-gpu", "gpu": gpu, "nodes": 1, "gpus_per_node": 1},
                    "ddp": {"pytorch_version": version},
                    "training": {"batch_size": 8, "compute_dtype": dtype, "optimizer": "sgd",
                                 "optimizer_impl": impl, "zero_grad_set_to_none": True},
                    "contention": {"enabled": False}, "compute": dict(extra)}
            rep = ddpsim_report(args.ddpsim, scen)
            est = rep["optimizer_s"]
            results.append({"impl": impl, "tensors": len(params), "grad_scaler": scaler is not None,
                            "measured_s": measured, "estimated_s": est, "error": est / measured - 1.0,
                            "optimizer_host": rep.get("optimizer_host")})
        with open(os.path.join(out, "optimizer.json"), "w") as f:
            json.dump({"device": dev, "torch": torch.__version__, "cases": results}, f, indent=1, sort_keys=True)
        row.update(status="ok", cases=len(results))
    except Exception as e:  # noqa: BLE001
        row.update(status="failed", error="%s: %s" % (type(e).__name__, e))


def write_markdown(path, table, header):
    pct = lambda v: "n/a" if v is None else "%+.1f %%" % (100 * v)  # noqa: E731
    ms = lambda s: "%.3f" % (s * 1e3)  # noqa: E731
    lines = [header, "", "| layer type | layers | measured fwd+bwd ms | estimated ms | error |",
             "|---|---:|---:|---:|---:|"]
    for r in table["by_type_all_models"]:
        lines.append("| %s | %d | %s | %s | %s |" % (r["type"], r["layers"], ms(r["measured_s"]),
                                                   ms(r["estimated_s"]), pct(r["error"])))
    lines += ["", "| model | measured on | batch | measured ms | estimated ms | error |",
              "|---|---|---:|---:|---:|---:|"]
    for m in table["models"]:
        lines.append("| %s | %s | %d | %s | %s | %s |" % (m["model"], m["measured_on"], m["batch"],
                                                        ms(m["measured_s"]), ms(m["estimated_s"]),
                                                        pct(m["error"])))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def retable(args):
    """--retable DIR: step 3 again from DIR's profiles (the order and labels of the run's steps)."""
    d = args.retable
    try:
        with open(os.path.join(d, "run.json")) as f:
            run = json.load(f)
    except (OSError, ValueError) as e:
        sys.stderr.write("device_profile.py: error: --retable %s: no readable run.json (%s)\n" % (d, e))
        return 2
    made = []
    for s in run["steps"]:
        if s.get("status") != "ok":
            continue
        if s["step"] == "profile_model":
            pp = os.path.join(d, s["file"])
            with open(pp) as f:
                made.append((s["model"], pp, json.load(f).get("measured_dtype", "float32")))
        elif s["step"] == "ddpbench layers":
            lp = os.path.join(d, "ddpbench-profile-%s.json" % s["model"])
            with open(lp) as f:
                made.append((s["model"] + " (ddpbench)", lp, json.load(f).get("measured_dtype", "float32")))
    preset = args.preset or DEVICE_PRESETS.get(run["device"].strip().lower(), "h200")
    table = estimate_table(args, d, made, preset, {})
    table["preset"] = preset
    table["retabled"] = {"date_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()), "ddpsim": args.ddpsim,
                         "measured": run.get("date_utc")}
    with open(os.path.join(d, "estimate-vs-measured.json"), "w") as f:
        json.dump(table, f, indent=1, sort_keys=True)
    write_markdown(os.path.join(d, "estimate-vs-measured.md"), table,
                   "Estimate (preset %s) vs measured on %s (measured %s UTC; table recomputed %s UTC)"
                   % (preset, run["device"], run.get("date_utc"), table["retabled"]["date_utc"]))
    log("wrote %s/estimate-vs-measured.{json,md} (%d profiles)" % (d, len(made)))
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=None, help="output folder (default bench/results/device-<preset>)")
    ap.add_argument("--preset", default=None,
                    help="bundled GPU preset the estimate uses (GPU mode; default: the preset the CUDA "
                         "device name maps to, else h200)")
    ap.add_argument("--models", default=None, help="comma-separated zoo models")
    ap.add_argument("--channels-last-models", default=None,
                    help="comma-separated models of --models profiled again in channels_last "
                         "(default: resnet50 on a GPU, none with --cpu; '' for none)")
    ap.add_argument("--autocast-models", default=None,
                    help="comma-separated models of --models profiled again under torch.autocast in "
                         "bfloat16 (default: resnet50,bert-base,gpt2,vit-b16 on a GPU, none with --cpu; "
                         "'' for none)")
    ap.add_argument("--cpu", action="store_true", help="dry run on this CPU (no GPU, no ddpbench)")
    ap.add_argument("--budget-s", type=float, default=540.0, help="stop starting new steps after this")
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--matmul-n", type=int, default=1024, help="--cpu: matmul size of the calibration")
    ap.add_argument("--retable", default=None, metavar="DIR",
                    help="only step 3, here: the estimate-vs-measured table again from the profiles an "
                         "earlier run left in DIR (its run.json names the device), with this build's "
                         "ddpsim; written into DIR (the measurements are not touched)")
    ap.add_argument("--ddpsim", default=DDPSIM)
    ap.add_argument("--ddpbench", default=DDPBENCH)
    args = ap.parse_args(argv)
    start = time.time()
    deadline = start + args.budget_s
    args.models = (args.models.split(",") if args.models else
                   (DEFAULT_CPU_MODELS if args.cpu else DEFAULT_GPU_MODELS))
    if args.channels_last_models is None:
        args.channels_last_models = [] if args.cpu else [m for m in ("resnet50",) if m in args.models]
    else:
        args.channels_last_models = [m for m in args.channels_last_models.split(",") if m]
    if args.autocast_models is None:
        args.autocast_models = [] if args.cpu else [m for m in ("resnet50", "bert-base", "gpt2", "vit-b16")
                                                    if m in args.models]
    else:
        args.autocast_models = [m for m in args.autocast_models.split(",") if m]
    bad = [m for m in args.models + args.channels_last_models + args.autocast_models if m not in USUAL]
    if bad:
        sys.stderr.write("device_profile.py: error: unknown model(s) %s; allowed: %s\n"
                         % (", ".join(bad), ", ".join(sorted(USUAL))))
        return 2
    if not os.path.isfile(args.ddpsim):
        sys.stderr.write("device_profile.py: error: %s not built (cmake --build build --target ddpsim)\n"
                         % args.ddpsim)
        return 2
    if args.retable:
        return retable(args)
    import torch
    if args.preset is None:
        dev = torch.cuda.get_device_name(0) if (not args.cpu and torch.cuda.is_available()) else ""
        args.preset = DEVICE_PRESETS.get(dev.strip().lower(), "h200")
    if not args.cpu and not torch.cuda.is_available():
        sys.stderr.write("device_profile.py: error: CUDA is not available (torch %s); use --cpu for the "
                         "dry run\n" % torch.__version__)
        return 2
    out = args.out or os.path.join(REPO_ROOT, "bench", "results", "device-" + ("cpu" if args.cpu else args.preset))
    os.makedirs(out, exist_ok=True)
    run = {"format": "ddpsim-device-profile/1", "command": " ".join(["scripts/device_profile.py"] + (argv or sys.argv[1:])),
           "date_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()), "torch": torch.__version__,
           "python": platform.python_version(),
           "device": "cpu" if args.cpu else torch.cuda.get_device_name(0), "steps": []}
    status = run["steps"]
    made = profile_models(args, out, status, deadline)
    if args.cpu:
        gpu, cal = cpu_gpu(args)
        run["cpu_calibration"] = cal
        extra = {"flops_efficiency": 1.0, "memory_efficiency": 1.0, "kernel_overhead": "%.17gs" % cal["op_overhead_s"]}
        header = "Estimate vs measured on this CPU (dry run of scripts/device_profile.py; not a GPU result)"
    else:
        gpu, extra = args.preset, {}
        header = "Estimate (preset %s) vs measured on %s" % (args.preset, run["device"])
    # The loss and optimizer steps take seconds: they run before ddpbench's, which the budget may
    # cut, and may start up to 90 s past the budget the profiles spent.
    loss_step(args, out, status, deadline + 90, gpu, extra)
    optimizer_step(args, out, status, deadline + 90, gpu, extra)
    made += ddpbench_steps(args, out, status, deadline)
    row = {"step": "estimate-vs-measured"}
    status.append(row)
    try:
        table = estimate_table(args, out, made, gpu, extra)
        table["preset"] = args.preset if not args.cpu else "this CPU (inline)"
        with open(os.path.join(out, "estimate-vs-measured.json"), "w") as f:
            json.dump(table, f, indent=1, sort_keys=True)
        write_markdown(os.path.join(out, "estimate-vs-measured.md"), table, header)
        row.update(status="ok", models=len(table["models"]))
    except Exception as e:  # noqa: BLE001
        row.update(status="failed", error="%s: %s" % (type(e).__name__, e))
    run["wall_s"] = time.time() - start
    with open(os.path.join(out, "run.json"), "w") as f:
        json.dump(run, f, indent=1, sort_keys=True)
    failed = [s for s in status if s.get("status") == "failed"]
    for s in failed:
        log("FAILED %s %s: %s" % (s["step"], s.get("model", ""), s.get("error", s.get("stderr_tail", ""))[-400:]))
    log("wrote %s (%.0f s)" % (out, run["wall_s"]))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
