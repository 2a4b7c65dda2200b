"""Tests for scripts/ddpsim_profile.py and scripts/ddp_cpu_bench.py.

Run from the repository root:
  /usr/bin/python3 -m unittest tests.python.test_ddp_cpu_bench
  /usr/bin/python3 -m unittest discover -s tests/python -p 'test_*.py'
The ring-fit test needs only the standard library; the others need torch/torchvision (skipped
without them).  About 30-40 s on two CPU cores.
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SCRIPTS = os.path.join(REPO, "scripts")
if SCRIPTS not in sys.path:
    sys.path.insert(0, SCRIPTS)

try:
    import torch  # noqa: F401
    import torchvision  # noqa: F401
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False

import ddpsim_profile as dp  # noqa: E402  (no torch needed at import)


def _need_torch():
    if not HAVE_TORCH:
        raise unittest.SkipTest("torch/torchvision not importable (use /usr/bin/python3)")


class MallocEnvTest(unittest.TestCase):
    def test_steady_sets_only_what_the_environment_does_not(self):
        import ddp_cpu_bench as bench
        self.assertEqual(bench.malloc_env("default", {}), {})
        self.assertEqual(bench.malloc_env("steady", {}), bench.STEADY_MALLOC_ENV)
        # 32 MiB: the largest mmap threshold glibc accepts on 64-bit (HEAP_MAX_SIZE / 2)
        self.assertEqual(bench.STEADY_MALLOC_ENV["MALLOC_MMAP_THRESHOLD_"], str(32 << 20))
        mine = bench.malloc_env("steady", {"MALLOC_MMAP_THRESHOLD_": "131072"})
        self.assertNotIn("MALLOC_MMAP_THRESHOLD_", mine)
        self.assertEqual(set(mine), {"MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_"})
        # what a process runs under: only these variables, whatever else the environment holds
        self.assertEqual(bench.malloc_env_in({"MALLOC_TOP_PAD_": "1", "PATH": "/bin"}), {"MALLOC_TOP_PAD_": "1"})


class RingFitTest(unittest.TestCase):
    def _rows(self, base, alpha, bw, ns, sizes):
        rows = []
        for n in ns:
            for s in sizes:
                t = base + 2 * (n - 1) * alpha + (2.0 * (n - 1) / n * s / bw if n > 1 else 0.0)
                rows.append({"size_bytes": s, "time_s": t, "ranks": n})
        return rows

    def test_recovers_known_parameters(self):
        base, alpha, bw = 12e-6, 35e-6, 2.5e9
        sizes = [4096 * 4 ** k for k in range(8)]
        rows = self._rows(base, alpha, bw, [2], sizes) + self._rows(base, alpha, bw, [1], sizes[:3])
        fit = dp.ring_fit(rows)
        self.assertAlmostEqual(fit["base_latency_s"], base, delta=base * 1e-6)
        self.assertAlmostEqual(fit["step_latency_s"], alpha, delta=alpha * 1e-6)
        self.assertAlmostEqual(fit["bandwidth_Bps"], bw, delta=bw * 1e-6)
        self.assertLess(fit["rms_rel_error"], 1e-9)
        # several rank counts, no single-rank rows
        fit = dp.ring_fit(self._rows(base, alpha, bw, [2, 4, 8], sizes))
        self.assertAlmostEqual(fit["step_latency_s"], alpha, delta=alpha * 1e-6)
        self.assertAlmostEqual(fit["bandwidth_Bps"], bw, delta=bw * 1e-6)
        self.assertAlmostEqual(fit["base_latency_s"], base, delta=base * 1e-6)

    def test_noisy_and_nonnegative(self):
        base, alpha, bw = 5e-6, 60e-6, 1e9
        sizes = [4096 * 4 ** k for k in range(8)]
        rows = self._rows(base, alpha, bw, [2], sizes) + self._rows(base, alpha, bw, [1], sizes[:3])
        for i, r in enumerate(rows):
            r["time_s"] *= 1.0 + (0.03 if i % 2 else -0.03)
        fit = dp.ring_fit(rows)
        self.assertAlmostEqual(fit["step_latency_s"], alpha, delta=alpha * 0.15)
        self.assertAlmostEqual(fit["bandwidth_Bps"], bw, delta=bw * 0.1)
        # a negative intercept is clamped: base and alpha stay >= 0
        rows = [{"size_bytes": s, "time_s": s / 1e9 - 1e-6 if s > 4096 else 1e-7, "ranks": 2}
                for s in sizes]
        fit = dp.ring_fit(rows)
        self.assertGreaterEqual(fit["base_latency_s"], 0.0)
        self.assertGreaterEqual(fit["step_latency_s"], 0.0)
        self.assertGreater(fit["bandwidth_Bps"], 0.0)


def _median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])


def _spread(v):
    """Interquartile range over the median (0 for fewer than four values)."""
    v = sorted(v)
    if len(v) < 4:
        return 0.0
    q = lambda f: v[min(len(v) - 1, int(round(f * (len(v) - 1))))]
    m = _median(v)
    return (q(0.75) - q(0.25)) / m if m > 0 else 0.0


class ProfileTest(unittest.TestCase):
    def test_measure_profile_resnet18(self):
        _need_torch()
        import export_model as em
        torch.set_num_threads(1)
        spec, shape = "torchvision.models:resnet18", [2, 3, 32, 32]
        mj = em.export(spec, shape)
        model = em.load_model(spec)
        x = em.make_input(model, shape)
        last = None
        quiet_failures = 0
        # The machine may be shared: retry a noisy measurement. Under two busy loops on two cores
        # the passes split into fast and slow ones (11 and 24 ms for the same forward) and three
        # attempts were not always enough (2026-12-03); under heavier load the whole forward passes
        # of one attempt ranged 42-218 ms, where no 25 % check can resolve anything.
        for attempt in range(5):
            raw, pc = dp.measure_profile_with_check(model, x, mj, "cpu", warmup=1, iters=15,
                                                    scale_to_whole=False)
            self.assertEqual([l["name"] for l in raw["layers"]], [l["name"] for l in mj["layers"]])
            for l in raw["layers"]:
                self.assertGreater(l["fwd_time_s"], 0.0, l["name"])
                self.assertGreater(l["bwd_time_s"], 0.0, l["name"])
            ok = True
            for d in ("forward", "backward"):
                hooked = pc[d + "_hooked_iters_s"]
                whole = pc[d + "_whole_iters_s"]
                # the per-layer medians, each taken on its own, still add up to a typical hooked
                # pass (the median one) within 25 %: both come from the same passes, so load on
                # the machine moves them together
                ok &= abs(pc[d + "_sum_layers_s"] - pc[d + "_hooked_s"]) <= 0.25 * pc[d + "_hooked_s"]
                # a hooked pass loses no time (a dropped interval, a mark taken before the work
                # it ends): its fastest run is not faster than the fastest un-hooked run, the
                # fastest runs being the ones the machine's load left alone
                ok &= min(hooked) >= 0.85 * min(whole)
                # ... and the hooks' own cost (Python per module call, about 60 modules here) stays
                # under the pass itself: counting every interval twice would give 2x
                ok &= _median(hooked) <= 1.7 * _median(whole)
            last = pc
            if ok:
                break
            # An attempt whose whole passes spread by more than the check's own 25 % (interquartile
            # range over the median) could not have resolved it: only a failure on a quiet
            # attempt counts against the method.
            if max(_spread(pc[d + "_whole_iters_s"]) for d in ("forward", "backward")) <= 0.25:
                quiet_failures += 1
        if not ok and quiet_failures == 0:
            self.skipTest("every attempt too noisy to check per-layer medians (whole passes' IQR/median %.2f, "
                          "%.2f in the last)" % tuple(_spread(last[d + "_whole_iters_s"])
                                                      for d in ("forward", "backward")))
        self.assertTrue(ok, "per-layer sums vs whole passes: %s" % json.dumps(
            {k: v for k, v in last.items() if k.endswith("_s")}))
        # default: scaled so that the layers add up to the whole pass
        prof, pc = dp.measure_profile_with_check(model, x, mj, "cpu", warmup=1, iters=3)
        self.assertEqual(set(prof) - set(mj), {"measured_on", "measured_batch_size"})
        fsum = sum(l["fwd_time_s"] for l in prof["layers"])
        bsum = sum(l["bwd_time_s"] for l in prof["layers"])
        self.assertAlmostEqual(fsum, pc["forward_whole_s"], delta=0.01 * pc["forward_whole_s"])
        self.assertAlmostEqual(bsum + pc["backward_outside_layers_s"], pc["backward_whole_s"],
                               delta=0.01 * pc["backward_whole_s"])
        self.assertEqual(prof["measured_batch_size"], 2)
        self.assertTrue(prof["measured_on"].startswith("cpu: "))
        self.assertNotIn("fwd_time_s", mj["layers"][0])   # a copy, the input is untouched

    def test_mismatched_model_json(self):
        _need_torch()
        import export_model as em
        mj = em.export("torchvision.models:resnet18", [2, 3, 32, 32])
        model = em.load_model("torchvision.models:resnet34")
        x = em.make_input(model, [2, 3, 32, 32])
        with self.assertRaises(dp.ProfileError):
            dp.measure_profile(model, x, mj, "cpu", warmup=0, iters=1)

    def test_calibration_helpers(self):
        _need_torch()
        bw = dp.measure_copy_bandwidth("cpu", nbytes=8 << 20, iters=3)
        self.assertGreater(bw, 1e8)
        ov = dp.measure_op_overhead("cpu", n=50, rounds=3)
        self.assertGreater(ov, 0.0)
        self.assertLess(ov, 1e-3)


class RescaleTest(unittest.TestCase):
    def test_hand_computed(self):
        # layers measured 1 and 3 ms forward (sum 4, scaled 1.0), 2 and 4 ms backward (sum 6), 1 ms
        # of backward outside the layers; whole passes between the steps: forward 8/10/12 ms
        # (median 10 -> x2.5), backward 13/11 ms (median 12; 12 - 1 = 11 over 6)
        prof = {"layers": [{"fwd_time_s": 1.0, "bwd_time_s": 2.0}, {"fwd_time_s": 3.0, "bwd_time_s": 4.0}]}
        check = {"scaled_to_whole": True, "forward_sum_layers_s": 4.0, "backward_sum_layers_s": 6.0,
                 "forward_scale": 1.0, "backward_scale": 1.0, "backward_outside_layers_s": 1.0}
        p2, c2 = dp.rescale_to_whole(prof, check, [8.0, 10.0, 12.0], [13.0, 11.0], "n")
        self.assertEqual([l["fwd_time_s"] for l in p2["layers"]], [2.5, 7.5])
        self.assertAlmostEqual(p2["layers"][0]["bwd_time_s"], 2.0 * 11 / 6)
        self.assertAlmostEqual(p2["layers"][1]["bwd_time_s"], 4.0 * 11 / 6)
        self.assertEqual((c2["forward_scale"], c2["profile_phase_forward_scale"]), (2.5, 1.0))
        self.assertEqual(prof["layers"][0]["fwd_time_s"], 1.0)   # the input is left as it was
        # a profile scaled 0.5 in its own phase: the factor applies to the raw layer times
        check2 = dict(check, forward_scale=0.5)
        prof2 = {"layers": [{"fwd_time_s": 0.5, "bwd_time_s": 2.0}, {"fwd_time_s": 1.5, "bwd_time_s": 4.0}]}
        p3, _ = dp.rescale_to_whole(prof2, check2, [10.0], [12.0], "n")
        self.assertEqual([l["fwd_time_s"] for l in p3["layers"]], [2.5, 7.5])
        with self.assertRaises(dp.ProfileError):
            dp.rescale_to_whole(prof, check, [], [1.0], "n")


class TrimmedMeanTest(unittest.TestCase):
    def test_hand_computed(self):
        import ddp_cpu_bench as bench
        # under 5 samples nothing is dropped
        self.assertAlmostEqual(bench.trimmed_mean([3.0, 1.0, 8.0]), 4.0)
        # 5 samples: one each side goes (10 % of 5 rounds to 0, at least 1): mean(2, 3, 4)
        self.assertAlmostEqual(bench.trimmed_mean([100.0, 2.0, 1.0, 4.0, 3.0]), 3.0)
        # 20 samples: two each side: 1..20 -> mean(3..18) = 10.5; a huge outlier changes nothing
        xs = [float(i) for i in range(1, 21)]
        self.assertAlmostEqual(bench.trimmed_mean(xs), 10.5)
        self.assertAlmostEqual(bench.trimmed_mean(xs[:-1] + [1e6]), 10.5)
        # two modes (a 2-vCPU machine's gloo): the mean keeps their mix, 8 x 1 ms + 8 x 3 ms -> 2 ms
        self.assertAlmostEqual(bench.trimmed_mean([1e-3] * 8 + [3e-3] * 8), 2e-3)


class ProgressTest(unittest.TestCase):
    """The timed phase's progress reports and the deadline they move (no torch needed)."""

    def test_remaining_estimate_hand_computed(self):
        import ddp_cpu_bench as bench
        # before the first unit: 12 rounds of the warm-up's 30 s estimate
        self.assertEqual(bench.remaining_estimate(0, 12, 30.0, 5.0), 360.0)
        # after 3 of 12 rounds in 120 s: 40 s each, 9 left
        self.assertEqual(bench.remaining_estimate(3, 12, 30.0, 120.0), 360.0)
        self.assertEqual(bench.remaining_estimate(12, 12, 30.0, 500.0), 0.0)

    def test_report_and_read(self):
        import io
        import ddp_cpu_bench as bench
        with tempfile.TemporaryDirectory() as d:
            self.assertIsNone(bench.read_progress(d))   # nothing reported yet
            out = io.StringIO()
            bench.report_progress(d, 0, 12, "round", 30.0, 2.0, stream=out)
            self.assertEqual(bench.read_progress(d), 360.0)
            self.assertIn("12 round(s) of timed steps to go, about 6 min", out.getvalue())
            bench.report_progress(d, 3, 12, "round", 0.0, 120.0, stream=out)
            self.assertEqual(bench.read_progress(d), 360.0)
            self.assertIn("round 3/12 done (40.0 s each); about 6 min left", out.getvalue())
            bench.report_progress(d, 11, 12, "round", 0.0, 440.0, stream=out)   # under 2 min: seconds
            self.assertIn("round 11/12 done (40.0 s each); about 40 s left", out.getvalue())
            self.assertEqual(sorted(os.listdir(d)), [bench.PROGRESS_FILE])   # written in place, no temp left
            with open(os.path.join(d, bench.PROGRESS_FILE), "w") as f:
                f.write("{not json")
            self.assertIsNone(bench.read_progress(d))

    def test_deadline_moves_only_later(self):
        import spawn_guard as sg
        m = sg.PROGRESS_MARGIN_S
        # 900 s deadline, at t = 400 s a report of 1,000 s left: 400 + 2,000 + margin
        self.assertEqual(sg.extended_deadline(900.0, 400.0, 1000.0), 2400.0 + m)
        # a report of little work left never brings the deadline earlier
        self.assertEqual(sg.extended_deadline(900.0, 400.0, 10.0), 900.0)
        # no report (or a nonsensical one): unchanged, so a hang is still ended
        self.assertEqual(sg.extended_deadline(900.0, 400.0, None), 900.0)
        self.assertEqual(sg.extended_deadline(900.0, 400.0, float("nan")), 900.0)
        self.assertEqual(sg.extended_deadline(900.0, 400.0, -5.0), 900.0)


class BenchTest(unittest.TestCase):
    def _run(self, *args):
        return subprocess.run([sys.executable, os.path.join(SCRIPTS, "ddp_cpu_bench.py")] + list(args),
                              cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, timeout=300)

    def test_bad_arguments_exit_2(self):
        _need_torch()
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "r.json")
            for args, word in ((["--spec", "nosuchmodule:f"], "cannot import"),
                               (["--spec", "torchvision.models:resnet18", "--caps", "default,-1"], "--caps"),
                               (["--spec", "torchvision.models:resnet18", "--caps", "default,abc"], "--caps"),
                               (["--spec", "torchvision.models:resnet18", "--warmup", "0"], "--warmup"),
                               (["--spec", "torchvision.models:resnet18", "--optimizer-start", "late"],
                                "--optimizer-start"),
                               (["--spec", "torchvision.models:resnet18", "--allocator", "tcmalloc"],
                                "--allocator"),
                               (["--spec", "torchvision.models:resnet18", "--lead-in", "-1"], "--lead-in"),
                               (["--spec", "torchvision.models:resnet18", "--lead-in", "11"], "--lead-in")):
                p = self._run(*(args + ["-o", out]))
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn(word, p.stderr)
                self.assertFalse(os.path.exists(out))

    def _tiny(self, caps, *extra):
        """A 2-step ResNet-18 run at batch 2x3x32x32 with a short sweep; its results document."""
        _need_torch()
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "r.json")
            p = self._run("--spec", "torchvision.models:resnet18", "--input", "2x3x32x32",
                          "--caps", caps, "--iters", "2", "--warmup", "1",
                          "--profile-iters", "2", "--profile-warmup", "1",
                          "--ar-max-bytes", str(1 << 20), *extra, "-o", out)
            self.assertEqual(p.returncode, 0, p.stderr)
            # the timed phase reports its progress: after the warm-up, then after each unit
            unit, total = ("cap", len(caps.split(","))) if "sequential" in extra else ("round", 2)
            self.assertIn("ddp_cpu_bench: warm-up done; %d %s(s) of timed steps to go" % (total, unit), p.stderr)
            for k in range(1, total + 1):
                self.assertIn("ddp_cpu_bench: %s %d/%d done" % (unit, k, total), p.stderr)
            # two rounds of whole passes (--iters 2, or two caps one after the other) are warned about
            rounds = 2 if "sequential" not in extra else len(caps.split(","))
            self.assertEqual("round(s) of whole passes" in p.stderr, rounds < 3, p.stderr)
            with open(out) as f:
                return json.load(f)

    def test_sequential_schedule_profile_alone(self):
        # --schedule sequential: one sweep pass and the whole passes after each cap; --profile-mode
        # alone: only rank 0 profiles and runs the whole passes
        doc = self._tiny("default,5,1", "--schedule", "sequential", "--profile-mode", "alone",
                         "--optimizer-start", "aligned", "--lead-in", "0")
        # --optimizer-start aligned: the compute-only steps' optimizer timed from a barrier, which
        # the step time leaves out
        self.assertEqual(doc["config"]["optimizer_start"], "aligned")
        # --lead-in 0: the order before 6 Dec 2026, no lead-in step kept
        self.assertEqual(doc["config"]["lead_in"], 0)
        self.assertTrue(all(c["lead_in_step_times_s"] == [] for c in doc["step"]["cases"]))
        self.assertEqual(doc["step"]["profile_check"]["lead_in_forward_whole_iters_s"], [])
        self.assertEqual(doc["step"]["profile_check"]["lead_in_backward_whole_iters_s"], [])
        for c in doc["step"]["cases"]:
            self.assertIn("dist.barrier()", c["compute_only_optimizer_method"])
            self.assertEqual(len(c["compute_only_optimizer_times_s"]), 2)
            for t_opt, t_step in zip(c["compute_only_optimizer_times_s"], c["compute_only_times_s"]):
                self.assertLess(t_opt, t_step)
        pc = doc["step"]["profile_check"]
        self.assertEqual(len(pc["scaled_forward_whole_iters_s"]), 3 * 2)   # 3 caps x 2 passes
        self.assertEqual(len(pc["scaled_backward_whole_iters_s"]), 3 * 2)
        self.assertEqual([r is None for r in doc["step"]["rank_profile_check"]], [False, True])
        for r in doc["calibration"]["allreduce"]:   # 2 passes before + 1 per cap, 2 calls each
            self.assertEqual([len(x) for x in r["rank_samples_s"]], [(2 + 3) * 2] * 2)
        self.assertEqual(len(doc["step"]["cases"]), 3)

    def test_one_rank_times_the_hook_callback(self):
        # calibration.hook_callback_s: HOOK_ROUNDS paired backwards of the probe model, per round
        # the hooked less the builtin over the hook's buckets; the median. Its buckets by hand
        # (torch 1.13, reverse registration order): the first bucket closes at >= 1 MiB after two
        # 576 KiB conv weights (with their blocks' BN parameters), then every 576 KiB weight closes
        # a 0.5 MiB bucket: 1 + 10 = 11.
        doc = self._tiny("default", "--world-size", "1")
        import ddp_cpu_bench as bench
        cal = doc["calibration"]
        self.assertEqual(cal["hook_callback_buckets"], 11)
        self.assertEqual(len(cal["hook_callback_samples_s"]), bench.HOOK_ROUNDS)
        self.assertEqual(cal["hook_callback_s"], statistics.median(cal["hook_callback_samples_s"]))
        self.assertIn("then() callback", cal["hook_callback_note"])
        # a sample is a difference of two backwards over 11 buckets: well under a backward each
        self.assertTrue(all(abs(t) < 0.05 for t in cal["hook_callback_samples_s"]))

    def test_tiny_run(self):
        doc = self._tiny("default,5")
        self.assertEqual(doc["format"], "ddpbench-results/1")
        self.assertEqual(doc["mode"], "step")
        hw = doc["hardware"]
        for k in ("device", "gpu_name", "cpu_name", "threads_per_rank", "ngpus", "nnodes",
                  "gpus_per_node", "torch_version"):
            self.assertIn(k, hw)
        self.assertEqual((hw["device"], hw["gpu_name"], hw["ngpus"], hw["nnodes"], hw["gpus_per_node"]),
                         ("cpu", "cpu", 2, 1, 2))
        # ProcessGroupGloo's worker threads, read from the group: torch's default group has
        # devices.size() * 2 = 2 (torch/csrc/distributed/c10d/init.cpp)
        self.assertEqual(hw["gloo_threads"], 2)
        cfg = doc["config"]
        for k in ("command", "spec", "input", "world_size", "caps", "iters", "warmup", "lead_in", "threads",
                  "ar_max_bytes", "profile_mode"):
            self.assertIn(k, cfg)
        self.assertEqual(cfg["caps"], ["default", 5.0])
        # what `ddpsim validate` simulates: the hook the run registered, no gradient views
        self.assertEqual((cfg["comm_hook"], cfg["gradient_as_bucket_view"]), ("allreduce_hook", False))
        self.assertEqual(cfg["optimizer_start"], "free")
        # --allocator steady (the default): the rank processes ran with the glibc settings (unless
        # this test's own environment set one), and their page faults and system time are kept
        import ddp_cpu_bench as bench
        want = {k: os.environ.get(k, v) for k, v in bench.STEADY_MALLOC_ENV.items()}
        self.assertEqual((cfg["allocator"], cfg["malloc_env"]), ("steady", want))
        self.assertEqual(len(hw["rank_rusage"]), 2)
        for ru in hw["rank_rusage"]:
            self.assertEqual(ru["malloc_env"], want)
            self.assertGreater(ru["minor_faults"], 0)
            self.assertGreater(ru["user_cpu_s"], 0.0)
        cal = doc["calibration"]
        self.assertGreater(cal["copy_bandwidth_Bps"], 0)
        self.assertGreater(cal["op_overhead_s"], 0)
        # the copy rate and the op cost: once before the steps and after each of the 2 rounds; the
        # figure the file gives is rank 0's median of the three, each rank's median listed
        self.assertEqual(len(cal["copy_bandwidth_samples_Bps"]), 3)
        self.assertEqual(len(cal["op_overhead_samples_s"]), 3)
        self.assertEqual(cal["copy_bandwidth_Bps"], statistics.median(cal["copy_bandwidth_samples_Bps"]))
        self.assertEqual(cal["op_overhead_s"], statistics.median(cal["op_overhead_samples_s"]))
        self.assertEqual(cal["rank_copy_bandwidth_Bps"][0], cal["copy_bandwidth_Bps"])
        # the collective call amid compute: CALL_REPS calls with each of the three copy-rate
        # readings, rank 0's median, every rank's median listed; `ddpsim validate` charges it per bucket
        self.assertEqual(len(cal["allreduce_call_samples_s"]), 3 * bench.CALL_REPS)
        self.assertTrue(all(t > 0 for t in cal["allreduce_call_samples_s"]))
        self.assertEqual(cal["allreduce_call_s"], statistics.median(cal["allreduce_call_samples_s"]))
        self.assertEqual(cal["rank_allreduce_call_s"][0], cal["allreduce_call_s"])
        self.assertEqual(len(cal["rank_allreduce_call_s"]), 2)
        self.assertIn("wakes it", cal["allreduce_call_note"])
        # the hook's callback is timed at one rank only (test_one_rank_times_the_hook_callback)
        self.assertIsNone(cal["hook_callback_s"])
        self.assertIsNone(cal["hook_callback_samples_s"])
        self.assertIn("not measured at world size > 1", cal["hook_callback_note"])
        sizes = [r["size_bytes"] for r in cal["allreduce"]]
        self.assertEqual(sizes, [4096, 16384, 65536, 262144, 1048576])
        self.assertTrue(all(r["time_s"] > 0 for r in cal["allreduce"]))
        # the sweep: 2 passes before the steps and one after each of the 2 rounds of timed steps,
        # 2 calls per size and pass, per rank; time_s = the mean over ranks of the trimmed means
        for r in cal["allreduce"]:
            self.assertEqual([len(x) for x in r["rank_samples_s"]], [(2 + 2) * 2] * 2)
            want = sum(bench.trimmed_mean(x) for x in r["rank_samples_s"]) / 2
            self.assertAlmostEqual(r["time_s"], want, places=12)
        fit = cal["ring_fit"]
        for k in ("base_latency_s", "step_latency_s", "bandwidth_Bps"):
            self.assertIsInstance(fit[k], float)
            self.assertGreaterEqual(fit[k], 0.0)
        self.assertGreater(fit["bandwidth_Bps"], 0.0)
        step = doc["step"]
        model = step["model"]
        self.assertEqual(model["format"], "ddpsim-model/1")
        self.assertEqual(model["measured_batch_size"], 2)
        self.assertIn("measured_on", model)
        # only keys ddpsim's model reader knows (plus measured_batch_size, see the brief)
        self.assertLessEqual(set(model), {"format", "name", "source", "exported_with", "batch_size",
                                          "params", "buffers", "layers", "grad_ready_order",
                                          "unused_params", "description", "measured_on",
                                          "measured_batch_size", "kernel_scaling"})
        pc = step["profile_check"]
        for k in ("forward_whole_s", "forward_sum_layers_s", "backward_whole_s", "backward_sum_layers_s"):
            self.assertGreater(pc[k], 0.0, k)
        # the layers are scaled to the whole passes between the 2 step rounds (2 after each), each
        # round's after one untimed pass (--lead-in 1, the default), whose times are kept apart
        self.assertEqual(len(pc["scaled_forward_whole_iters_s"]), 2 * 2)
        for d in ("forward", "backward"):
            lead = pc["lead_in_%s_whole_iters_s" % d]
            self.assertEqual(len(lead), 2)
            self.assertTrue(all(t > 0.0 for t in lead), lead)
            self.assertNotIn(lead[0], pc["scaled_%s_whole_iters_s" % d])
        self.assertAlmostEqual(sum(l["fwd_time_s"] for l in model["layers"]), pc["scaled_forward_whole_s"],
                               delta=1e-9 * len(model["layers"]))
        for l in model["layers"]:
            self.assertGreater(l["fwd_time_s"], 0.0, l["name"])
            self.assertGreater(l["bwd_time_s"], 0.0, l["name"])
        self.assertEqual(step["caps"], ["default", 5.0])
        self.assertEqual(len(step["cases"]), 2)
        nparam_bytes = sum(4 * _prod(p["shape"]) for p in model["params"] if p["requires_grad"])
        for c, (cap, is_def) in zip(step["cases"], ((25.0, True), (5.0, False))):
            self.assertEqual(c["bucket_cap_mb"], cap)
            self.assertEqual(c["bucket_cap_is_default"], is_def)
            self.assertIn("1.13", c["bucket_rule"])
            self.assertEqual(c["limits_bytes"], [1 << 20, int(cap * (1 << 20))])
            for k in ("step_time_s", "compute_only_s", "comm_alone_s", "forward_s", "backward_end_s",
                      "step_time_max_over_ranks_s"):
                self.assertGreater(c[k], 0.0, k)
            self.assertAlmostEqual(c["exposed_comm_s"], c["step_time_s"] - c["compute_only_s"], places=12)
            self.assertAlmostEqual(c["overlap_ratio"], 1 - c["exposed_comm_s"] / c["comm_alone_s"], places=9)
            self.assertLessEqual(c["forward_s"], c["backward_end_s"])
            self.assertLessEqual(c["backward_end_s"], c["step_time_s"])
            self.assertEqual(len(c["step_times_s"]), 2)
            self.assertEqual(len(c["compute_only_times_s"]), 2)
            # --lead-in 1 (the default): an untimed comm step before each timed one, its time kept
            self.assertEqual(len(c["lead_in_step_times_s"]), 2)
            self.assertTrue(all(t > 0 for t in c["lead_in_step_times_s"]))
            # every rank's compute-only steps, rank 0's being the ones above (validate's rank jitter)
            per_rank = c["rank_compute_only_times_s"]
            self.assertEqual(len(per_rank), doc["hardware"]["ngpus"])
            self.assertEqual(per_rank[0], c["compute_only_times_s"])
            for times in per_rank:
                self.assertEqual(len(times), 2)
                self.assertTrue(all(t > 0 for t in times))
            # the same model without DDP, one step after each compute-only step
            self.assertEqual(len(c["no_ddp_step_times_s"]), 2)
            self.assertGreater(c["no_ddp_step_time_s"], 0.0)
            # the parts of a step: optimizer.step() + zero_grad() after the backward, and the no-DDP
            # step's forward and backward ends
            self.assertGreater(c["compute_only_optimizer_s"], 0.0)
            self.assertLess(c["compute_only_optimizer_s"], c["compute_only_s"])
            # right after each rank's backward (the default)
            self.assertIn("right after the backward", c["compute_only_optimizer_method"])
            opt_times = c["compute_only_optimizer_times_s"]
            self.assertEqual(len(opt_times), 2)
            self.assertAlmostEqual(c["compute_only_optimizer_s"], statistics.median(opt_times), places=12)
            for t_opt, t_step in zip(opt_times, c["compute_only_times_s"]):
                self.assertLess(t_opt, t_step)
            self.assertLess(0.0, c["no_ddp_forward_s"])
            self.assertLess(c["no_ddp_forward_s"], c["no_ddp_backward_end_s"])
            self.assertLess(c["no_ddp_backward_end_s"], max(c["no_ddp_step_times_s"]))
            self.assertGreater(c["no_ddp_optimizer_s"], 0.0)
            bs = c["buckets"]
            self.assertGreaterEqual(len(bs), 2)
            self.assertEqual([b["index"] for b in bs], list(range(len(bs))))
            self.assertEqual(sum(b["bytes"] for b in bs), nparam_bytes)
            self.assertLessEqual(bs[0]["bytes"], (1 << 20) + max(b["bytes"] for b in bs))
            for b in bs:
                for k in ("index", "bytes", "num_tensors", "ready_s", "start_s", "end_s"):
                    self.assertIn(k, b)
                self.assertLessEqual(0.0, b["ready_s"])
                self.assertLessEqual(b["ready_s"], b["start_s"])
                self.assertLessEqual(b["start_s"], b["end_s"])
                self.assertLessEqual(b["end_s"], c["backward_end_s"] + 1e-6)
                self.assertEqual(b["num_tensors"], len(b["params"]))
            starts = [b["start_s"] for b in bs]
            self.assertEqual(starts, sorted(starts))   # launched in index order


def _prod(xs):
    r = 1
    for x in xs:
        r *= int(x)
    return r


if __name__ == "__main__":
    unittest.main()
