#!/usr/bin/env python3
"""Checks that the command blocks of README.md and docs/*.md print what they show.

A block is a fenced code block whose first line starts with `$ build/ddpsim` (continued by lines
ending in a backslash); the lines after the command up to the fence are the output it shows. The
command is run from the repository root with `build/ddpsim` replaced by --ddpsim, and its standard
output must equal the shown lines, trailing white space aside, where a line that is `...` alone
stands for any number of output lines (the docs elide long tables that way). Exit 1 names every
block that differs and its first differing line; a model change that moves a shown figure must
update the doc (README.md: re-run the block and paste its output).

Usage: scripts/check_doc_blocks.py --ddpsim build/ddpsim [FILE ...]
"""
import argparse
import glob
import os
import shlex
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROMPT = "$ build/ddpsim"


def blocks(text):
    """(line number, command, shown lines) of every command block in `text`."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        if lines[i].startswith(PROMPT) and i > 0 and lines[i - 1].startswith("```"):
            start = i
            cmd = [lines[i][2:]]
            while lines[i].endswith("\\") and i + 1 < len(lines):
                i += 1
                cmd.append(lines[i])
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            command = " ".join(c.rstrip("\\").strip() for c in cmd)
            yield start + 1, command, lines[i + 1:j]
            i = j
        i += 1


def first_mismatch(shown, actual):
    """None when `actual` matches `shown` (`...` = any run of lines), else the index into
    `shown` of the first line no alignment gets past."""
    shown = [s.rstrip() for s in shown]
    actual = [a.rstrip() for a in actual]
    best = 0
    memo = {}

    def match(i, j):
        nonlocal best
        if (i, j) in memo:
            return memo[(i, j)]
        best = max(best, i)
        if i == len(shown):
            ok = j == len(actual)
        elif shown[i].strip() == "...":
            ok = any(match(i + 1, k) for k in range(j, len(actual) + 1))
        else:
            ok = j < len(actual) and shown[i] == actual[j] and match(i + 1, j + 1)
        memo[(i, j)] = ok
        return ok

    sys.setrecursionlimit(max(10000, 4 * (len(shown) + len(actual))))
    return None if match(0, 0) else min(best, len(shown) - 1 if shown else 0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ddpsim", required=True, help="the ddpsim binary to run the blocks with")
    ap.add_argument("--timeout", type=float, default=300, help="seconds per command (default 300)")
    ap.add_argument("files", nargs="*", help="default: README.md and docs/*.md")
    args = ap.parse_args()
    files = args.files or [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
    binary = shlex.quote(os.path.abspath(args.ddpsim))
    checked, failed = 0, 0
    for path in files:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for line, command, shown in blocks(text):
            checked += 1
            run = binary + command[len("build/ddpsim"):]
            try:
                res = subprocess.run(run, shell=True, cwd=ROOT, capture_output=True, text=True, timeout=args.timeout)
                out = res.stdout.rstrip("\n").split("\n")
                bad = first_mismatch(shown, out)
                why = None if bad is None else "shows %r" % (shown[bad] if shown else "")
            except subprocess.TimeoutExpired:
                why = "did not finish within %.0f s" % args.timeout
            where = "%s:%d" % (os.path.relpath(path, ROOT), line)
            if why is None:
                print("ok   %s  %s" % (where, command[:90]))
            else:
                failed += 1
                print("FAIL %s  %s\n     %s; re-run it and paste its output" % (where, command[:90], why))
    print("%d blocks, %d differ" % (checked, failed))
    return 1 if failed or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
