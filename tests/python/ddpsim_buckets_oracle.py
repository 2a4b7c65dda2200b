#!/usr/bin/python3
"""A tiny Python model of DDP's bucket assignment, driven by an exported model JSON.

Mimics the command line of the ddpsim binary's `buckets` subcommand so it can stand in for it:

  /usr/bin/python3 tests/python/ddpsim_buckets_oracle.py buckets --model models/resnet50.json \
      [--bucket-cap-mb X] [--first-bucket-mb Y] --json -

Rules (torch 1.13 reducer / distributed.py, see docs/facts.md §1):
- iteration 1 (not static_graph, not find_unused_parameters): limits [unbounded] -> one bucket per
  dtype, parameters in registration order;
- rebuilt buckets (steady state): the requires_grad parameters in grad_ready_order, limits
  [1 MiB, cap]; a bucket closes when its size >= the current limit (the crossing tensor stays);
  cap = int(bucket_cap_mb * 1024 * 1024), default 25 MiB.
Used by test_zoo.py to check that grad_ready_order in models/*.json reproduces real DDP, and as a
stand-in --ddpsim for check_buckets_vs_ddp.py.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
from ddp_bucket_rule import DTYPE_BYTES, cap_bytes, first_bucket_bytes  # noqa: E402


def _numel(shape):
    n = 1
    for d in shape:
        n *= int(d)
    return n


def assign(order, params, limits):
    """compute_bucket_assignment_by_size over `order` (indices into params) with size limits."""
    acc = {}  # dtype -> [indices, size, limit_pos]
    buckets = []
    for i in order:
        p = params[i]
        key = p["dtype"]
        a = acc.setdefault(key, [[], 0, 0])
        a[0].append(i)
        a[1] += _numel(p["shape"]) * DTYPE_BYTES.get(p["dtype"], 4)
        if a[1] >= limits[a[2]]:
            buckets.append((a[0], a[1]))
            acc[key] = [[], 0, min(a[2] + 1, len(limits) - 1)]
    for key, a in acc.items():
        if a[0]:
            buckets.append((a[0], a[1]))
    return [{"bytes": b, "param_indices": idx} for idx, b in buckets]


def buckets_for(model, bucket_cap_mb=None, first_bucket_mb=1.0):
    params = model["params"]
    cap = cap_bytes(bucket_cap_mb)
    first = first_bucket_bytes(bucket_cap_mb, "1.13", first_bucket_mb)
    rg = [i for i, p in enumerate(params) if p.get("requires_grad", True)]
    it1 = assign(rg, params, [sys.maxsize])
    it1.sort(key=lambda b: min(b["param_indices"]))
    it1.reverse()
    ss = assign(model["grad_ready_order"], params, [first, cap])
    return {"iteration1": it1, "steady_state": ss}


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("command", choices=["buckets"])
    ap.add_argument("--model", required=True)
    ap.add_argument("--bucket-cap-mb", type=float, default=None)
    ap.add_argument("--first-bucket-mb", type=float, default=1.0)
    ap.add_argument("--json", default="-")
    args = ap.parse_args(argv)
    with open(args.model) as f:
        model = json.load(f)
    res = buckets_for(model, args.bucket_cap_mb, args.first_bucket_mb)
    text = json.dumps(res) + "\n"
    if args.json == "-":
        sys.stdout.write(text)
    else:
        with open(args.json, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
