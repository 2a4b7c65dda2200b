#!/usr/bin/python3
"""ddpsim's one-GPU step predictions against scripts/device_step.py's measured steps.

    python3 scripts/device_step_compare.py STEP_JSON [--preset h200] [--ddpsim build/ddpsim]
        [-o OUT.json] [--md OUT.md]

For every measured row (model, dtype, batch, sequence length) and cap, `ddpsim run` of the same
training on one GPU of --preset (default: the preset the measured device name maps to): bundled
zoo model, the per-kernel estimate (nothing measured is fed in), SGD momentum `foreach`,
zero_grad(set_to_none=True), bucket_cap_mb = the cap, ddp.pytorch_version 2.4, the input already
on the GPU (device_step.py makes it there once: input_bytes_per_sample 0) and no loss kernels
(training.loss none: device_step.py's loss is a mean per output, one pass over the logits), and the
attention the step ran as its kernel table names it (`attention_backend`: torch 2.x's
nn.MultiheadAttention takes scaled_dot_product_attention; training.attention). Compared per row:
  - the DDP step (measured median vs step_time_s) and the no-DDP step (measured median vs
    step_time_s - ddp_overhead_s);
  - DDP's own cost at one GPU: measured ddp/no_ddp - 1 against ddp_overhead_s / (step - overhead);
  - the cap's effect: measured step(1 MB) / step(25 MB) - 1 against the same ratio predicted;
  - the no-DDP phases (forward, backward, optimizer; medians between synchronizations) against
    forward_s, backward_compute_s and optimizer_s of the largest cap's prediction (these hold
    DDP's share of the step too: its hooks' host time on the backward, the copies); and the
    optimizer again from a synced start, as device_step.py times it: the larger of the report's
    optimizer_host.host_s and optimizer_s (optimizer_s alone starts with the host ahead).
Errors are predicted / measured - 1; differences of ratios are in points. Exit 0, or 2 on bad input.
"""

import argparse
import json
import os
import sys

SCRIPT_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(SCRIPT_DIR)
if SCRIPT_DIR not in sys.path:
    sys.path.insert(0, SCRIPT_DIR)

from device_profile import DEVICE_PRESETS, ddpsim_report  # noqa: E402


def attention_backend(row):
    """The attention the measured step ran, named by its kernel table (device_step.py --kernels):
    torch 2.x's nn.MultiheadAttention (torchvision's ViT) calls scaled_dot_product_attention, whose
    flash kernels (PyTorch's or cuDNN's `..._flash_...`) or memory-efficient ones (`fmha_cutlass`,
    `MemEffAttention`) show there; "eager" when neither does or the row has no table."""
    names = [k.get("name", "") for k in (row.get("kernels") or {}).get("rows", [])]
    if any("flash" in n.lower() for n in names):
        return "sdpa_flash"
    if any("fmha_cutlass" in n or "MemEffAttention" in n for n in names):
        return "sdpa_mem_efficient"
    return "eager"


def predict(ddpsim, preset, row, cap):
    training = {"batch_size": row["batch"], "compute_dtype": row["dtype"], "optimizer": "sgd",
                "optimizer_impl": "foreach", "zero_grad_set_to_none": True, "input_bytes_per_sample": "0B",
                "loss": "none", "attention": attention_backend(row)}
    if row.get("seq_len"):
        training["seq_len"] = row["seq_len"]
    scen = {"name": "device-step", "model": row["model"],
            "cluster": {"name": "one-gpu", "gpu": preset, "nodes": 1, "gpus_per_node": 1},
            "ddp": {"bucket_cap_mb": cap, "pytorch_version": "2.4"}, "training": training,
            "compute": {"use_measured": False}}
    return ddpsim_report(ddpsim, scen)


def compare(step, ddpsim, preset):
    out = []
    for row in step["rows"]:
        med = row["median_step_s"]
        caps = sorted(float(k[len("ddp_cap_"):]) for k in med if k.startswith("ddp_cap_"))
        pred = {c: predict(ddpsim, preset, row, c) for c in caps}
        r = {"model": row["model"], "dtype": row["dtype"], "batch": row["batch"], "seq_len": row.get("seq_len"),
             "attention": attention_backend(row), "caps": []}
        for c in caps:
            p = pred[c]
            m_ddp, m_no = med["ddp_cap_%g" % c], med["no_ddp"]
            p_ddp, p_over = p["step_time_s"], p["ddp_overhead_s"]
            p_no = p_ddp - p_over
            r["caps"].append({"cap_mb": c, "measured_step_s": m_ddp, "predicted_step_s": p_ddp,
                              "step_error": p_ddp / m_ddp - 1.0,
                              "measured_no_ddp_s": m_no, "predicted_no_ddp_s": p_no, "no_ddp_error": p_no / m_no - 1.0,
                              "measured_ddp_cost": m_ddp / m_no - 1.0, "predicted_ddp_cost": p_over / p_no,
                              "ddp_cost_error_points": 100.0 * (p_over / p_no - (m_ddp / m_no - 1.0)),
                              "num_buckets": p.get("num_buckets")})
        if 25.0 in pred and 1.0 in pred:
            m = med["ddp_cap_1"] / med["ddp_cap_25"] - 1.0
            p = pred[1.0]["step_time_s"] / pred[25.0]["step_time_s"] - 1.0
            r["cap_25_to_1"] = {"measured": m, "predicted": p, "error_points": 100.0 * (p - m)}
        ph, p = row.get("no_ddp_phases_s", {}), pred[caps[-1]] if caps else None
        if ph and p:
            r["no_ddp_phases"] = {
                "forward": {"measured_s": ph["forward"], "predicted_s": p["forward_s"]},
                "backward": {"measured_s": ph["backward"], "predicted_s": p["backward_compute_s"]},
                "optimizer": {"measured_s": ph["optimizer"], "predicted_s": p["optimizer_s"]}}
            # device_step.py synchronizes before the optimizer, so its phase starts with an empty
            # queue; ddpsim's optimizer_s starts with the host ahead of the GPU (the backward's
            # lead). From a synced start the step cannot be shorter than its host work
            # (optimizer_host.host_s) nor than its GPU work: the larger of the two.
            host = (p.get("optimizer_host") or {}).get("host_s")
            if host is not None:
                r["no_ddp_phases"]["optimizer_synced"] = {"measured_s": ph["optimizer"],
                                                          "predicted_s": max(host, p["optimizer_s"])}
            for v in r["no_ddp_phases"].values():
                v["error"] = v["predicted_s"] / v["measured_s"] - 1.0
        out.append(r)
    return out


def markdown(rows, step, preset):
    pct = lambda v: "%+.1f %%" % (100 * v)  # noqa: E731
    ms = lambda s: "%.2f" % (s * 1e3)  # noqa: E731
    lines = ["ddpsim (preset %s, per-kernel estimate) against whole steps measured on %s (torch %s, %s UTC)"
             % (preset, step["device"], step["torch"], step["date_utc"]), "",
             "| model | dtype | batch | cap MB | measured ms | predicted ms | error | no-DDP error | DDP cost "
             "measured | predicted |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        for c in r["caps"]:
            lines.append("| %s | %s | %d | %g | %s | %s | %s | %s | %s | %s |" % (
                r["model"], r["dtype"], r["batch"], c["cap_mb"], ms(c["measured_step_s"]), ms(c["predicted_step_s"]),
                pct(c["step_error"]), pct(c["no_ddp_error"]), pct(c["measured_ddp_cost"]),
                pct(c["predicted_ddp_cost"])))
    lines += ["", "| model | dtype | 25 -> 1 MB measured | predicted | forward error | backward error | "
              "optimizer error | optimizer error, synced start |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        c = r.get("cap_25_to_1")
        ph = r.get("no_ddp_phases", {})
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["model"], r["dtype"], pct(c["measured"]) if c else "n/a", pct(c["predicted"]) if c else "n/a",
            *(pct(ph[k]["error"]) if k in ph else "n/a"
              for k in ("forward", "backward", "optimizer", "optimizer_synced"))))
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("step_json")
    ap.add_argument("--preset", default=None)
    ap.add_argument("--ddpsim", default=os.path.join(REPO_ROOT, "build", "ddpsim"))
    ap.add_argument("-o", "--output", default=None)
    ap.add_argument("--md", default=None)
    args = ap.parse_args(argv)
    try:
        with open(args.step_json) as f:
            step = json.load(f)
        if step.get("format") != "ddpsim-device-step/1":
            raise ValueError("/format: %r, expected \"ddpsim-device-step/1\"" % step.get("format"))
    except (OSError, ValueError) as e:
        sys.stderr.write("device_step_compare.py: error: %s: %s\n" % (args.step_json, e))
        return 2
    if not os.path.isfile(args.ddpsim):
        sys.stderr.write("device_step_compare.py: error: %s not built\n" % args.ddpsim)
        return 2
    preset = args.preset or DEVICE_PRESETS.get(step["device"].strip().lower(), "h200")
    rows = compare(step, args.ddpsim, preset)
    doc = {"format": "ddpsim-device-step-compare/1", "measured": args.step_json, "device": step["device"],
           "preset": preset, "rows": rows}
    text = json.dumps(doc, indent=1, sort_keys=True)
    if args.output:
        with open(args.output, "w") as f:
            f.write(text + "\n")
    md = markdown(rows, step, preset)
    if args.md:
        with open(args.md, "w") as f:
            f.write(md)
    sys.stdout.write(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
