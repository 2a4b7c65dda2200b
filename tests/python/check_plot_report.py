#!/usr/bin/env python3
"""scripts/ddpsim-plot on a real sweep, run and comparison, then its HTML report rendered by
headless Chromium and checked by the screenshot (size, not blank, the figures drawn).

Usage: check_plot_report.py BUILD/ddpsim. Exit 0 pass, 1 fail, 77 skipped (matplotlib or
chromium not installed: Debian python3-matplotlib, chromium; scripts/setup.sh installs both).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

try:
    import matplotlib.image as mpimg
except ImportError:
    print("SKIP: python3-matplotlib not installed")
    sys.exit(77)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLOT = os.path.join(REPO, "scripts", "ddpsim-plot")
W, H = 1200, 1800


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, **kw)
    if r.returncode != 0:
        print(f"FAIL: {' '.join(cmd)} -> {r.returncode}\n{r.stdout}\n{r.stderr}")
        sys.exit(1)
    return r


def png_ok(path, min_w=400):
    img = mpimg.imread(path)
    h, w = img.shape[:2]
    rgb = img[..., :3]
    ink = float(((rgb < 0.9).any(axis=-1)).mean())  # share of pixels that are not near-white
    return w, h, ink, w >= min_w and 0.02 < ink < 0.9


def main():
    ddpsim = os.path.abspath(sys.argv[1])
    d = tempfile.mkdtemp(prefix="ddpsim-plot-")
    try:
        sweep = os.path.join(d, "sweep.json")
        run([ddpsim, "sweep", "resnet50-2x8-a100-hdr", "--set", "simulation.backend=analytic", "-q",
             "--param", "ddp.bucket_cap_mb=5,25,50,100", "--json", sweep, "--out", os.path.join(d, "rows.jsonl")])
        runj = os.path.join(d, "run.json")
        run([ddpsim, "run", "resnet50-2x8-a100-hdr", "--json", runj, "-q"])
        # A comparison as `ddpsim compare --json` writes it: rows with a label and the report fields.
        rows = json.load(open(sweep))["rows"]
        cmp_path = os.path.join(d, "compare.json")
        json.dump({"rows": [dict(rows[0], label="option A"), dict(rows[2], label="option B")]}, open(cmp_path, "w"))
        # A real `ddpsim compare --json` (every column, the bill of materials, the why block) and a
        # two-parameter sweep grouped by nodes (one line per group).
        cmpj = os.path.join(d, "cmp.json")
        run([ddpsim, "compare", "default", "--set", "training.batch_size=8", "--set", "simulation.backend=analytic",
             "--nodes", "2", "--cluster", "p4d", "--cluster", "ft=dgx-h100:fabric.topology=fat_tree,fabric.nics_per_leaf=8",
             "-q", "--samples", "1e6", "--json", cmpj])
        sweep2 = os.path.join(d, "sweep2.json")
        run([ddpsim, "sweep", "resnet50-2x8-a100-hdr", "--set", "simulation.backend=analytic", "-q",
             "--param", "nodes=2,4", "--param", "ddp.bucket_cap_mb=1,25,100", "--json", sweep2])
        outs = os.path.join(d, "figs")
        os.makedirs(outs)
        report = os.path.join(d, "report.html")
        run([sys.executable, PLOT, sweep, runj, cmp_path, os.path.join(d, "rows.jsonl"), cmpj, sweep2, "-o", outs,
             "--html", report])
        for name in ("sweep", "run", "compare", "rows", "cmp", "sweep2"):
            w, h, ink, ok = png_ok(os.path.join(outs, name + ".png"))
            print(f"{name}.png: {w}x{h}, {100 * ink:.1f} % ink")
            if not ok:
                print(f"FAIL: {name}.png looks blank or malformed")
                return 1
        # The first python3 on PATH lacks matplotlib (a virtual environment's, here one run with -S):
        # ddpsim-plot finds one that has it, as `compare --plot` does, instead of an ImportError.
        fake = os.path.join(d, "nompl")
        os.makedirs(fake)
        with open(os.path.join(fake, "python3"), "w") as f:
            f.write("#!/bin/sh\nexec /usr/bin/python3 -S \"$@\"\n")
        os.chmod(os.path.join(fake, "python3"), 0o755)
        env = dict(os.environ, PATH=fake + os.pathsep + os.environ.get("PATH", ""))
        env.pop("DDPSIM_PYTHON", None)
        if subprocess.run([os.path.join(fake, "python3"), "-c", "import matplotlib"], capture_output=True,
                          timeout=60).returncode == 0:
            print("FAIL: the stand-in python3 without matplotlib imports it")
            return 1
        run([PLOT, sweep, "-o", os.path.join(d, "nompl.png")], env=env)
        if png_ok(os.path.join(d, "nompl.png"))[3] is not True:
            print("FAIL: ddpsim-plot under a python3 without matplotlib drew nothing")
            return 1
        # A sweep that names no best (1 and 5 MB within the model's resolution): its plot marks the
        # flat range instead (the title is drawn, not read back here; the figure must not be blank).
        flat = os.path.join(d, "flat.json")
        run([ddpsim, "sweep", "resnet50-2x8-a100-hdr", "--set", "simulation.backend=analytic", "-q",
             "--param", "ddp.bucket_cap_mb=1,5,25,100", "--json", flat])
        if json.load(open(flat))["groups"][0].get("best") is not None:
            print("FAIL: the 1,5,25,100 sweep named a best; this check wants a flat one")
            return 1
        run([sys.executable, PLOT, flat, "-o", os.path.join(d, "flat.png")])
        if png_ok(os.path.join(d, "flat.png"))[3] is not True:
            print("FAIL: the flat sweep's plot is blank or malformed")
            return 1
        svg = os.path.join(d, "sweep.svg")
        run([sys.executable, PLOT, sweep, "-o", svg])
        if "<svg" not in open(svg).read(2000):
            print("FAIL: -o sweep.svg is not SVG")
            return 1
        page = open(report, encoding="utf-8").read()
        if page.count("src='data:image/png;base64,") != 6 or "http" in page.replace("http-equiv", ""):
            print("FAIL: the report is not self-contained (6 inline images, no external references)")
            return 1
        if "why the best wins" not in page or "<table>" not in page:
            print("FAIL: the report lacks the tables or the recommendation")
            return 1
        # compare: every column of its table, the bill of materials and the why block.
        for want in ("samples/s per GPU", "scaling %", "$/GPU-hour", "$/M samples", "fits", "mem/GPU GiB",
                     "time to train s", "cost to train $", "fabric bill of materials", "switch ports", "<h3>why</h3>",
                     "decision per group", "nodes=4: "):
            if want not in page:
                print(f"FAIL: the report lacks {want!r}")
                return 1
        chromium = shutil.which("chromium") or shutil.which("chromium-browser")
        if not chromium:
            print("SKIP: chromium not installed (figures and HTML checked, not the rendering)")
            return 77
        shot = os.path.join(d, "shot.png")
        r = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                            f"--user-data-dir={d}/profile", f"--window-size={W},{H}", f"--screenshot={shot}",
                            "file://" + report], capture_output=True, text=True, timeout=120)
        if not os.path.exists(shot):
            print(f"FAIL: chromium wrote no screenshot (exit {r.returncode})\n{r.stderr[-2000:]}")
            return 1
        w, h, ink, ok = png_ok(shot)
        print(f"screenshot: {w}x{h}, {100 * ink:.1f} % ink")
        if (w, h) != (W, H) or not ok:
            print(f"FAIL: screenshot {w}x{h} (expected {W}x{H}) with {100 * ink:.1f} % ink")
            return 1
        # The first figure is drawn: its bar colours (compute blue, exposed red) appear on the page.
        img = mpimg.imread(shot)[..., :3]
        blue = ((abs(img[..., 0] - 0x4c / 255) < 0.05) & (abs(img[..., 1] - 0x72 / 255) < 0.05) &
                (abs(img[..., 2] - 0xb0 / 255) < 0.05)).mean()
        red = ((abs(img[..., 0] - 0xc4 / 255) < 0.05) & (abs(img[..., 1] - 0x4e / 255) < 0.05) &
               (abs(img[..., 2] - 0x52 / 255) < 0.05)).mean()
        print(f"screenshot: {100 * blue:.2f} % compute blue, {100 * red:.2f} % exposed-comm red")
        if blue < 0.005 or red < 0.001:
            print("FAIL: the figures did not render in the page")
            return 1
        print("PASS")
        return 0
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
