#!/usr/bin/env python3
"""A mutation fuzzer for the ddpsim command line, over every subcommand.

Each case starts from a valid invocation (run, buckets, sweep, collective, calibrate, validate,
import-trace, show, list, bench) and mutates one thing: a command-line number, a --set override,
the content of an input file (JSON values, duplicate keys, deep nesting, truncation, wrong types;
nccl-tests rows and banners), or an output path (a directory, a missing folder, a fifo). Every
outcome is classified:

  crash      killed by a signal, or a sanitizer report on stderr
  hang       still running after --timeout seconds
  exit1      exit code 1: bad input must be exit 2 with a message
  accepted   exit 0 for a mutation that is invalid by construction (NaN, 1e999, duplicate keys,
             nesting beyond 256, a fifo as output, ...)
  fine       exit 0, 2 (with a message) or 3

Usage: tests/fuzz/cli_fuzz.py [--bin build/ddpsim] [--seed N] [--cases N] [--timeout S] [-j N]
Exit 1 when any case is not fine; the failing cases are saved under --out (default
build/cli-fuzz/) with the command line to reproduce them.
"""
import argparse
import concurrent.futures as cf
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NCCL_LOGS = os.path.join(ROOT, "tests", "data", "nccl-tests")

# Values that are invalid wherever a number is expected, and values that are merely odd.
BAD_NUMBERS = ["nan", "inf", "-inf", "1e999", "-1e999", "NaN", "1e400"]
ODD_NUMBERS = ["0", "-1", "-0", "1e308", "-1e308", "99999999999", "9223372036854775808", "1e-320", "0.5",
               "2147483648", "4294967297", "1e13", "abc", "", "1,2", "0x10", "1e18", "3.999999999"]
BAD_QUANTITIES = ["1e308TBps", "1e30TBps", "nanGbps", "infus", "1e999MiB", "-5Gbps"]
ODD_QUANTITIES = ["0B", "1B", "1e-300s", "1e20Gbps", "5", "Gbps", "1.5 us", "1e6s", "1e18FLOPS", "12.5GB/s"]


def bundled(kind):
    d = {"scenario": "scenarios", "cluster": "configs/clusters", "model": "models"}[kind]
    return sorted(f[:-5] for f in os.listdir(os.path.join(ROOT, d)) if f.endswith(".json"))


def logs():
    out = []
    # the public all_reduce_perf / broadcast_perf logs the project keeps (sources in their README)
    out += [os.path.join(NCCL_LOGS, f) for f in sorted(os.listdir(NCCL_LOGS)) if f.endswith(".txt")]
    # the newer nccl-tests layouts (-I 1 -S 1, -C 1), in the repository
    formats = os.path.join(ROOT, "tests", "data", "nccl-tests", "formats")
    out += [os.path.join(formats, f) for f in sorted(os.listdir(formats)) if f.endswith(".txt")]
    return out


# ---------------------------------------------------------------- JSON mutations

def walk(node, path=()):
    yield path, node
    if isinstance(node, dict):
        for k, v in node.items():
            yield from walk(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from walk(v, path + (i,))


def set_at(doc, path, value):
    if not path:
        return value
    node = doc
    for p in path[:-1]:
        node = node[p]
    node[path[-1]] = value
    return doc


def mutate_json(rng, text):
    """Returns (new text, invalid-by-construction?)."""
    try:
        doc = json.loads(text)
    except ValueError:
        return text[: rng.randrange(len(text) + 1)], False
    nodes = list(walk(doc))
    kind = rng.choice(["number", "number", "quantity", "type", "dup", "deep", "truncate", "delete", "bytes"])
    if kind == "number":
        nums = [p for p, v in nodes if isinstance(v, (int, float)) and not isinstance(v, bool)]
        if nums:
            p = rng.choice(nums)
            bad = rng.random() < 0.4
            lit = rng.choice(["1e999", "-1e999", "1E400"]) if bad else rng.choice(
                ["0", "-1", "1e308", "-1e308", "99999999999999999999", "4611686018427387904", "1e-320", "2.5",
                 "1e13", "2147483648"])
            marker = "\"@@NUM@@\""
            out = json.dumps(set_at(doc, p, "@@NUM@@")).replace(marker, lit)
            return out, bad
    if kind == "quantity":
        strs = [p for p, v in nodes if isinstance(v, str) and re.match(r"^[0-9.]+ ?[A-Za-z/]+$", v)]
        if strs:
            p = rng.choice(strs)
            bad = rng.random() < 0.5
            return json.dumps(set_at(doc, p, rng.choice(BAD_QUANTITIES if bad else ODD_QUANTITIES))), bad
    if kind == "type" and len(nodes) > 1:
        p, _ = rng.choice(nodes[1:])
        return json.dumps(set_at(doc, p, rng.choice([None, True, "x", [], {}, -3, [1, 2], {"a": 1}]))), False
    if kind == "dup" and isinstance(doc, dict) and doc:
        objs = [p for p, v in nodes if isinstance(v, dict) and v]
        p = rng.choice(objs)
        key = rng.choice(list(_get(doc, p).keys()))
        marker = "\"@@DUP@@\": 0"
        target = _get(doc, p)
        target["@@DUP@@"] = 0
        out = json.dumps(doc).replace(marker, json.dumps(key) + ": " + json.dumps(target[key]))
        return out, True
    if kind == "deep":
        depth = rng.choice([300, 5000, 100000])
        p, _ = rng.choice(nodes)
        marker = "\"@@DEEP@@\""
        return json.dumps(set_at(doc, p, "@@DEEP@@")).replace(marker, "[" * depth + "]" * depth), True
    if kind == "truncate":
        return text[: rng.randrange(len(text))], False
    if kind == "delete" and len(nodes) > 1:
        p, _ = rng.choice(nodes[1:])
        parent = _get(doc, p[:-1])
        if isinstance(parent, dict):
            del parent[p[-1]]
        else:
            parent.pop(p[-1])
        return json.dumps(doc), False
    b = bytearray(text.encode())
    for _ in range(rng.randint(1, 8)):
        if b:
            b[rng.randrange(len(b))] = rng.randrange(256)
    return b.decode("latin-1"), False


def _get(doc, path):
    for p in path:
        doc = doc[p]
    return doc


def mutate_log(rng, text):
    lines = text.split("\n")
    kind = rng.choice(["field", "field", "banner", "version", "dup", "truncate"])
    rows = [i for i, l in enumerate(lines) if l.strip() and not l.lstrip().startswith("#")]
    if kind == "field" and rows:
        i = rng.choice(rows)
        f = lines[i].split()
        j = rng.randrange(len(f))
        bad = rng.random() < 0.5 and j >= 4
        f[j] = rng.choice(["nan", "inf", "1e999", "-inf"] if bad else ["-1", "0", "1e308", "99999999999999999999",
                                                                        "abc", "N/A", "1e-320"])
        lines[i] = "  ".join(f)
        return "\n".join(lines), bad and j >= 4 and f[j] != "N/A"
    if kind == "banner":
        lines.insert(0, "# nThread %s nGpus %s minBytes 8" % (rng.choice(["1", "99999999999", "-1", "0"]),
                                                               rng.choice(["8", "99999999999", "0", "4294967296"])))
        return "\n".join(lines), False
    if kind == "version":
        lines.insert(0, "# NCCL version %s" % rng.choice(["2.18.3", "999999.0.0", "99999999999.0.0", "2.999.1"]))
        return "\n".join(lines), False
    if kind == "dup":
        return "\n".join(lines * rng.randint(2, 4)), False
    return text[: rng.randrange(len(text) + 1)], False


# ---------------------------------------------------------------- cases

class Case:
    def __init__(self, args, invalid, files, what):
        self.args, self.invalid, self.files, self.what = args, invalid, files, what


def make_case(rng, work, idx):
    d = os.path.join(work, "c%d" % idx)
    os.makedirs(d)
    files = {}

    def put(name, text):
        p = os.path.join(d, name)
        with open(p, "w", encoding="latin-1", errors="replace") as f:
            f.write(text)
        files[name] = p
        return p

    def read(p):
        with open(p, encoding="utf-8", errors="replace") as f:
            return f.read()

    cmd = rng.choice(["run", "run", "buckets", "sweep", "collective", "calibrate", "validate", "import-trace",
                      "show", "list", "bench"])
    scen = rng.choice(bundled("scenario"))
    cluster = rng.choice(["dgx-a100", "dgx-h100", "p4d", "pcie-4090x8", "hgx-a100-1hdr", "azure-nc12s-v3"])
    invalid = False
    what = cmd
    mode = rng.choice(["cli", "set", "file", "output", "fsdp"])
    if cmd == "run":
        base = ["run", scen, "-q"]
        if mode == "fsdp":
            # Several FSDP settings at once, valid and odd, on an FSDP scenario or a DDP one switched
            # over: their combinations (strategy x version x resharding x accumulation x nodes) must
            # each run or exit 2.
            base = ["run", rng.choice(["llama3-8b-fsdp-8x-h100", "gpt2-4x8-h100-ndr", "default"]), "-q",
                    "--set", "training.wrapper=fsdp"]
            choices = {
                "training.fsdp.sharding_strategy": ["FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD", "HYBRID_SHARD", "x"],
                "training.fsdp.version": ["1", "2", "3", "0"],
                "training.fsdp.wrap": ["block", "every_k_blocks", "root", "leaf"],
                "training.fsdp.k": ["1", "2", "3", "1000", "0", "-1"],
                "training.fsdp.reshard_after_forward": ["true", "false", "1", "2", "3", "4", "8", "16", "64", "0",
                                                        "-2", "2.5", "1e999", "\"8\""],
                "training.fsdp.reshard_after_backward": ["true", "false", "2"],
                "training.fsdp.no_sync": ["true", "false", "null"],
                "training.fsdp.limit_all_gathers": ["true", "false"],
                "training.fsdp.forward_prefetch": ["true", "false"],
                "training.fsdp.backward_prefetch": ["BACKWARD_PRE", "BACKWARD_POST", "none", "x"],
                "training.fsdp.num_to_forward_prefetch": ["0", "1", "2", "40", "-1", "1.5", "true"],
                "training.fsdp.num_to_backward_prefetch": ["0", "1", "3", "1000", "-2", "null"],
                "training.fsdp.param_dtype": ["float32", "bfloat16", "float16", "int8"],
                "training.fsdp.reduce_dtype": ["float32", "bfloat16", "float16"],
                "training.gradient_accumulation_steps": ["1", "2", "3", "0"],
                "training.activation_checkpointing": ["none", "full", "selective_block", "selective_op"],
                "nodes": ["1", "2", "3", "8"],
                "gpus_per_node": ["1", "2", "8"],
            }
            picked = rng.sample(sorted(choices), rng.randint(2, 6))
            for key in picked:
                base += ["--set", "%s=%s" % (key, rng.choice(choices[key]))]
            what = "run: FSDP settings " + " ".join(base[6::2])
        elif mode == "file":
            src = os.path.join(ROOT, "scenarios", scen + ".json")
            text, invalid = mutate_json(rng, read(src))
            base = ["run", put("s.json", text), "-q", "--data-dir", ROOT]
            what = "run: mutated scenario file"
        elif mode in ("set", "cli"):
            path = rng.choice(["nodes", "gpus_per_node", "ddp.bucket_cap_mb", "ddp.first_bucket_cap_mb",
                               "training.batch_size", "training.gradient_accumulation_steps",
                               "stragglers.jitter_cv", "stragglers.steps", "contention.max_slowdown",
                               "compute.kernel_overhead", "collective.base_latency", "ddp.powersgd.start_powerSGD_iter",
                               "simulation.seed", "limits.max_gpus", "limits.max_seconds", "collective.NCCL_MIN_NCHANNELS"])
            bad = rng.random() < 0.3
            val = rng.choice(["1e999", "-1e999"] if bad else ODD_NUMBERS + ODD_QUANTITIES)
            base += ["--set", "%s=%s" % (path, val)]
            invalid = bad
            what = "run --set %s=%s" % (path, val)
    elif cmd == "buckets":
        base = ["buckets", "--model", rng.choice(bundled("model"))]
        if mode == "cli":
            bad = rng.random() < 0.4
            v = rng.choice(BAD_NUMBERS if bad else ODD_NUMBERS)
            base += ["--bucket-cap-mb", v]
            invalid = bad
        elif mode == "file":
            src = os.path.join(ROOT, "models", base[2] + ".json")
            text, invalid = mutate_json(rng, read(src))
            base = ["buckets", "--model", put("m.json", text)]
        else:
            base += ["--set", "ddp.bucket_cap_mb=%s" % rng.choice(ODD_NUMBERS)]
    elif cmd == "sweep":
        vals = ",".join(rng.choice(ODD_NUMBERS[:8] + ["1", "5", "25"]) for _ in range(rng.randint(1, 3)))
        base = ["sweep", "default", "--param", "ddp.bucket_cap_mb=" + vals, "-j", rng.choice(["1", "2", "0", "-1", "nan"])]
        invalid = base[-1] in ("-1", "nan")
    elif cmd == "collective":
        op = rng.choice(["allreduce", "allreduce", "broadcast"])
        base = ["collective", op, "--cluster", cluster, "-b", "1M", "-e", "64M"]
        opt = rng.choice(["-b", "-e", "-f", "--nodes", "--min-channels", "--max-channels", "--tolerance", "-g",
                          "--explain", "--nccl-version"])
        bad = rng.random() < 0.4 and opt in ("-f", "--nodes", "--min-channels", "--max-channels", "--tolerance")
        v = rng.choice(BAD_NUMBERS if bad else ODD_NUMBERS + ["64K", "1.5M", "8G", "2.18.3"])
        base += [opt, v]
        invalid = bad
        if mode == "file" and logs():
            src = rng.choice(logs())
            text, invalid = mutate_log(rng, read(src))
            op = "broadcast" if "broadcast" in os.path.basename(src) else "allreduce"
            base = ["collective", op, "--cluster", cluster, "--compare", put("log.txt", text)]
        what = "collective %s %s" % (opt, v)
    elif cmd == "calibrate":
        src = rng.choice(logs()) if logs() else None
        if src is None:
            return None
        text, invalid = mutate_log(rng, read(src)) if mode in ("file", "set") else (read(src), False)
        base = ["calibrate", put("log.txt", text), "--cluster", cluster, "-g", rng.choice(["8,1", "1", "8"])]
        if mode == "cli":
            opt = rng.choice(["--nodes", "--min-channels", "--max-channels"])
            v = rng.choice(BAD_NUMBERS + ODD_NUMBERS)
            base += [opt, v]
            invalid = v in BAD_NUMBERS
    elif cmd == "validate":
        # the LSTM file's profile has measured gradient-ready shares (layers[].bwd_param_ready)
        src = os.path.join(ROOT, "bench", "results", rng.choice(["cpu-2rank-resnet18.json",
                                                                  "other-models-2026-12-03c/cpu-2rank-lstm.json"]))
        text, invalid = mutate_json(rng, read(src)) if mode != "cli" else (read(src), False)
        base = ["validate", put("r.json", text)]
        if mode == "cli":
            v = rng.choice(BAD_NUMBERS + ODD_NUMBERS)
            base += ["--tolerance", v]
            invalid = v in BAD_NUMBERS
    elif cmd == "import-trace":
        trace = os.path.join(ROOT, "tests", "golden", "traces", rng.choice(["tiny3_cpu.json", "tiny3_gpu.json"]))
        model = os.path.join(ROOT, "tests", "golden", "traces", "tiny3.json")
        if rng.random() < 0.5:
            text, invalid = mutate_json(rng, read(trace))
            trace = put("t.json", text)
        else:
            text, invalid = mutate_json(rng, read(model))
            model = put("m.json", text)
        base = ["import-trace", trace, "--model", model]
        if mode == "cli":
            v = rng.choice(BAD_NUMBERS + ODD_NUMBERS)
            base += ["--batch", v]
            invalid = invalid or v in BAD_NUMBERS
    elif cmd == "show":
        src = os.path.join(ROOT, "models", rng.choice(bundled("model")) + ".json")
        text, invalid = mutate_json(rng, read(src))
        base = ["show", put("m.json", text)]
    elif cmd == "list":
        base = ["list", rng.choice(["models", "gpus", "links", "clusters", "scenarios", "x", ""])]
        if mode == "file":
            # A data dir with one mutated cluster file.
            dd = os.path.join(d, "data")
            shutil.copytree(os.path.join(ROOT, "configs"), os.path.join(dd, "configs"))
            os.makedirs(os.path.join(dd, "models"))
            os.makedirs(os.path.join(dd, "scenarios"))
            p = os.path.join(dd, "configs", "clusters", cluster + ".json")
            text, _ = mutate_json(rng, read(p))
            with open(p, "w", encoding="latin-1", errors="replace") as f:
                f.write(text)
            base = ["--data-dir", dd, "list", "clusters"]
    else:  # bench: one quick repeat on a small scenario
        base = ["bench", "--scenario", "default", "--repeat", "1"]
        if mode == "cli":
            opt = rng.choice(["--repeat", "--nodes"])
            v = rng.choice(BAD_NUMBERS + ["0", "-1", "abc", "2", "1e13"])
            base += [opt, v]
            invalid = v in BAD_NUMBERS
        else:
            base += ["--set", "ddp.bucket_cap_mb=%s" % rng.choice(ODD_NUMBERS)]
    if mode == "output" and cmd in ("run", "buckets", "show", "collective", "calibrate", "validate", "import-trace"):
        out = rng.choice(["dir", "missing", "fifo", "ok"])
        flag = {"import-trace": "-o", "calibrate": "--json"}.get(cmd, "--json")
        if out == "dir":
            target = d
        elif out == "missing":
            target = os.path.join(d, "no", "such", "o.json")
        elif out == "fifo":
            target = os.path.join(d, "fifo")
            os.mkfifo(target)
        else:
            target = os.path.join(d, "o.json")
        base += [flag, target]
        invalid = invalid or out in ("dir", "fifo", "missing")
        what += " output=" + out
    return Case(base, invalid, files, what)


SANITIZER = re.compile(r"AddressSanitizer|UndefinedBehaviorSanitizer|runtime error:|LeakSanitizer")


def run_case(binary, case, timeout):
    t0 = time.time()
    try:
        p = subprocess.run([binary] + case.args, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "hang", None, "", time.time() - t0
    err = p.stderr.decode(errors="replace")
    rc = p.returncode
    if rc < 0 or rc >= 128 or SANITIZER.search(err):
        return "crash", rc, err, time.time() - t0
    if rc == 1:
        return "exit1", rc, err, time.time() - t0
    if rc == 0 and case.invalid:
        return "accepted", rc, err, time.time() - t0
    if rc == 2 and not err.strip():
        return "exit1", rc, "(exit 2 without a message)", time.time() - t0
    return "fine", rc, err, time.time() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "ddpsim"))
    ap.add_argument("--seed", type=int, default=int(time.time()))
    ap.add_argument("--cases", type=int, default=300)
    ap.add_argument("--timeout", type=float, default=20.0)
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "cli-fuzz"))
    a = ap.parse_args()
    rng = random.Random(a.seed)
    work = tempfile.mkdtemp(prefix="ddpsim-cli-fuzz-")
    cases = [c for c in (make_case(rng, work, i) for i in range(a.cases)) if c is not None]
    counts = {"crash": 0, "hang": 0, "exit1": 0, "accepted": 0, "fine": 0}
    by_cmd = {}
    by_rc = {}
    invalid = sum(1 for c in cases if c.invalid)
    bad = []
    with cf.ThreadPoolExecutor(a.jobs) as ex:
        for case, (kind, rc, err, secs) in zip(cases, ex.map(lambda c: run_case(a.bin, c, a.timeout), cases)):
            counts[kind] += 1
            by_rc[rc] = by_rc.get(rc, 0) + 1
            cmd = next((x for x in case.args if not x.startswith("-") and x in (
                "run", "buckets", "sweep", "collective", "calibrate", "validate", "import-trace", "show", "list",
                "bench")), "?")
            by_cmd[cmd] = by_cmd.get(cmd, 0) + 1
            if kind != "fine":
                bad.append((kind, case, rc, err))
    os.makedirs(a.out, exist_ok=True)
    for n, (kind, case, rc, err) in enumerate(bad):
        d = os.path.join(a.out, "%s-%d" % (kind, n))
        os.makedirs(d, exist_ok=True)
        for name, p in case.files.items():
            if os.path.isfile(p):
                shutil.copy(p, os.path.join(d, name))
        with open(os.path.join(d, "case.txt"), "w") as f:
            f.write("%s\nrc %s\n%s\n\n%s\n" % (case.what, rc, " ".join(case.args), err[-4000:]))
    shutil.rmtree(work, ignore_errors=True)
    print("cli-fuzz seed %d: %d cases (%s)" % (a.seed, len(cases), ", ".join("%s %d" % kv for kv in sorted(by_cmd.items()))))
    print("  " + ", ".join("%s %d" % (k, v) for k, v in counts.items()))
    print("  exit codes: " + ", ".join("%s: %d" % (k, v) for k, v in sorted(by_rc.items(), key=str)) +
          "; %d cases invalid by construction" % invalid)
    for kind, case, rc, err in bad[:20]:
        print("  %s rc=%s: %s\n    %s\n    %s" % (kind, rc, case.what, " ".join(case.args)[:300],
                                                 err.strip().splitlines()[-1][:300] if err.strip() else ""))
    if bad:
        print("  saved under " + a.out)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
