#!/usr/bin/env python3
"""Writes RUN B of ../a100-sxm4-80gb_1x8_nvswitch.txt (8 x A100, mpirun -np 8, -g 1) in the
output layouts of nccl-tests 2.19.6 (NVIDIA/nccl-tests a0b82b2, src/util.cu and src/common.cu),
so that the parser's newer layouts are checked against a log it already reads:

  a100-runb-I1-S1.txt  text with -I 1 (per-iteration columns) and -S 1 (a timestamp per row)
  a100-runb-C1.txt     text with -C 1 (the time columns hold the host's enqueue time per call)
  a100-runb.json       the -J file (JSON_FILE_VERSION 3)

Sizes, counts and times are RUN B's (out-of-place and in-place); algbw and busbw are recomputed
as nccl-tests does (all_reduce.cu AllReduceGetBw: algbw = bytes / 1e9 / sec, busbw = algbw x
2(n-1)/n) and printed with util.cu getFloatStr. The per-iteration statistics, the timestamps,
the host times of -C 1 and the banner values are made up: they only fill the layout.
Run: python3 make_formats.py [OUT_DIR] (default: this folder); the outputs are committed, and
tests/python/test_nccl_formats.py checks that the script still writes them byte for byte.
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "..", "a100-sxm4-80gb_1x8_nvswitch.txt")
N = 8


def run_b_rows():
    rows, in_b = [], False
    for line in open(SRC):
        if line.startswith("## RUN B"):
            in_b = True
            continue
        if not in_b or line.startswith("#") or not line.strip():
            continue
        f = line.split()
        rows.append((int(f[0]), int(f[1]), float(f[5]), float(f[9])))
    return rows


def float_str(value, width):  # util.cu getFloatStr
    for fmt in ("%*.2f", "%*.1f", "%*.0f"):
        s = fmt.replace("*", str(width)) % value
        if len(s) <= width:
            return s
    return ("%*.1e" if width >= 7 else "%*.0e").replace("*", str(width)) % value


def bw(size, t_us):
    alg = size / 1e9 / (t_us * 1e-6)
    return alg, alg * 2 * (N - 1) / N


def banner(per_iter, cputime, ts):
    out = ["# nccl-tests version 2.19.6 nccl-headers=22807 nccl-library=22807",
           "# Collective test starting: all_reduce_perf",
           "# nThread 1 nGpus 1 minBytes 8 maxBytes 4294967296 step: 2(factor) warmup iters: 5 iters: 20 "
           "agg iters: 1 validation: 1 graph: 0 unalign: 0"]
    if per_iter:
        out.append("# Per-Iteration Report: CUDA event timing; i_* uses max over process rows ")
    out.append("#")
    out.append("# Using devices")
    for r in range(N):
        out.append("#  Rank %2d Group %2d Pid %6d on %10s device %2d [%04x:%02x:%02x] %s"
                   % (r, 0, 4000 + r, "thanos", r, 0, 7 + 4 * r, 0, "NVIDIA A100-SXM4-80GB"))
    out.append("#")
    t = "cputime" if cputime else "time"
    ts_lbl, ts_pad, ts_fmt = ("timestamp", 19, "%Y-%m-%d %H:%M:%S") if ts else ("", 0, "")
    if per_iter:
        out.append("# %10s  %12s  %8s  %6s  %6s              out-of-place (+ per-iteration)"
                   "                                in-place (+ per-iteration)" % ("", "", "", "", ""))
        cols = ("size", "count", "type", "redop", "root", t, "algbw", "busbw", "#wrong", "i_min", "i_max",
                "i_p99", "i_cv%", t, "algbw", "busbw", "#wrong", "i_min", "i_max", "i_p99", "i_cv%")
        units = ("(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)", "(us)", "(%)",
                 "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)", "(us)", "(%)")
        fmt = "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %7s  %7s  %7s  %7s  %6s  %6s  %6s  %7s  %7s  %7s  %7s %*s"
        out.append(fmt.replace("%*s", "%" + str(ts_pad) + "s") % (cols + (ts_lbl,)))
        out.append(fmt.replace("%*s", "%" + str(ts_pad) + "s") % (units + (ts_fmt,)))
    else:
        out.append("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          "
                   % ("", "", "", "", ""))
        fmt = "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s".replace("%*s", "%" + str(ts_pad) + "s")
        out.append(fmt % ("size", "count", "type", "redop", "root", t, "algbw", "busbw", "#wrong", t, "algbw",
                          "busbw", "#wrong", ts_lbl))
        out.append(fmt % ("(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)",
                          "(GB/s)", "", ts_fmt))
    return out


def text(rows, per_iter, cputime, ts):
    out = banner(per_iter, cputime, ts)
    for i, (size, count, t_oop, t_ip) in enumerate(rows):
        line = "%12li  %12li  %8s  %6s  %6s" % (size, count, "float", "sum", "%6i" % -1)
        for t in (t_oop, t_ip):
            alg, bus = bw(size, t)
            shown = 6.5 if cputime else t  # -C 1: the host's enqueue time per call (made up)
            line += "  %7s  %6s  %6s  %6g" % (float_str(shown, 7), float_str(alg, 6), float_str(bus, 6), 0)
            if per_iter:
                line += "  %7s  %7s  %7s  %7s" % (float_str(0.97 * t, 7), float_str(1.05 * t, 7),
                                                  float_str(1.04 * t, 7), float_str(1.5, 7))
        if ts:
            line += "%21s" % ("2026-07-09 14:%02d:%02d" % (i // 60, i % 60))
        out.append(line)
    out.append("# %-20s : %d %s" % ("Out of bounds values", 0, "OK"))
    out.append("# %-20s : %g %s" % ("Avg bus bandwidth", 72.7724, ""))
    out.append("#")
    out.append("# Collective test concluded: all_reduce_perf")
    return "\n".join(out) + "\n"


def as_json(rows):
    results = []
    for size, count, t_oop, t_ip in rows:
        r = {"size": size, "count": count, "type": "float", "redop": "sum", "root": "%6i" % -1}
        for key, t in (("out_of_place", t_oop), ("in_place", t_ip)):
            alg, bus = bw(size, t)
            r[key] = {"time": t, "alg_bw": round(alg, 6), "bus_bw": round(bus, 6), "nwrong": 0.0}
        r["actual_iterations"] = 20
        r["experiment_name"] = ""
        results.append(r)
    doc = {"version": 3, "start_time": "2026-07-09 14:00:00",
           "args": ["./build/all_reduce_perf", "-b", "8", "-e", "4G", "-f", "2", "-g", "1", "-J", "a100-runb.json"],
           "env": [], "nccl_version": 22807,
           "config": {"nthreads": 1, "ngpus": 1, "minimum_bytes": 8, "maximum_bytes": 4294967296, "step_factor": 2,
                      "warmup_iters": 5, "iterations": 20, "aggregated_iterations": 1, "validation": 1, "graph": 0,
                      "blocking_collectives": "false", "per_iter_timing": "false", "per_iter_skip": 0,
                      "parallel_init": "false",
                      "devices": [{"rank": r, "group": 0, "pid": 4000 + r, "hostname": "thanos", "device": r,
                                   "device_hex": "%04x:%02x:%02x" % (0, 7 + 4 * r, 0),
                                   "device_info": "NVIDIA A100-SXM4-80GB"} for r in range(N)]},
           "results": results,
           "out_of_bounds": {"count": 0, "okay": "true"},
           "average_bus_bandwidth": {"bandwidth": 72.7724, "okay": "unchecked"},
           "end_time": "2026-07-09 14:01:00"}
    return json.dumps(doc, indent=2) + "\n"


if __name__ == "__main__":
    import sys
    out = sys.argv[1] if len(sys.argv) > 1 else HERE
    rows = run_b_rows()
    assert len(rows) == 30, len(rows)
    with open(os.path.join(out, "a100-runb-I1-S1.txt"), "w") as f:
        f.write(text(rows, per_iter=True, cputime=False, ts=True))
    with open(os.path.join(out, "a100-runb-C1.txt"), "w") as f:
        f.write(text(rows, per_iter=False, cputime=True, ts=False))
    with open(os.path.join(out, "a100-runb.json"), "w") as f:
        f.write(as_json(rows))
