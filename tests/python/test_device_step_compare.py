"""scripts/device_step_compare.py: ddpsim's one-GPU predictions against device_step.py's steps.

The measured figures are made from ddpsim's own report for the scenario the script should build
(bert-base, bfloat16, batch 4, sequence 64, one h200, SGD foreach, caps 25 and 1 MB, no input copy,
no loss), scaled by known factors, so each error the script prints is known in advance: a wrong
scenario (batch, sequence, dtype, cap, optimizer) or a wrong formula moves it.
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DDPSIM = os.path.join(REPO, "build", "ddpsim")
SCRIPT = os.path.join(REPO, "scripts", "device_step_compare.py")


def ddpsim_report(tmp, cap):
    scen = {"name": "t", "model": "bert-base",
            "cluster": {"name": "one", "gpu": "h200", "nodes": 1, "gpus_per_node": 1},
            "ddp": {"bucket_cap_mb": cap, "pytorch_version": "2.4"},
            "training": {"batch_size": 4, "seq_len": 64, "compute_dtype": "bfloat16", "optimizer": "sgd",
                         "optimizer_impl": "foreach", "zero_grad_set_to_none": True,
                         "input_bytes_per_sample": "0B", "loss": "none"},
            "compute": {"use_measured": False}}
    sp, rp = os.path.join(tmp, "s.json"), os.path.join(tmp, "r.json")
    with open(sp, "w") as f:
        json.dump(scen, f)
    subprocess.run([DDPSIM, "run", sp, "-q", "--json", rp], check=True, timeout=120)
    with open(rp) as f:
        return json.load(f)


@unittest.skipUnless(os.path.isfile(DDPSIM), "build/ddpsim not built")
class DeviceStepCompareTest(unittest.TestCase):
    def test_errors_against_known_measurements(self):
        with tempfile.TemporaryDirectory() as tmp:
            p25, p1 = ddpsim_report(tmp, 25), ddpsim_report(tmp, 1)
            no_ddp_pred = p25["step_time_s"] - p25["ddp_overhead_s"]
            # measured: the DDP steps 25 % slower than predicted, the no-DDP step 10 % slower
            med = {"no_ddp": no_ddp_pred * 1.1, "ddp_cap_25": p25["step_time_s"] * 1.25,
                   "ddp_cap_1": p1["step_time_s"] * 1.25}
            phases = {"forward": p25["forward_s"] * 2.0, "backward": p25["backward_compute_s"] * 0.5,
                      "optimizer": p25["optimizer_s"] * 4.0}
            step = {"format": "ddpsim-device-step/1", "device": "NVIDIA H200", "torch": "2.11", "date_utc": "x",
                    "rows": [{"model": "bert-base", "dtype": "bfloat16", "batch": 4, "seq_len": 64,
                              "median_step_s": med, "no_ddp_phases_s": phases}]}
            sj, oj = os.path.join(tmp, "step.json"), os.path.join(tmp, "cmp.json")
            with open(sj, "w") as f:
                json.dump(step, f)
            r = subprocess.run([sys.executable, SCRIPT, sj, "-o", oj], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, universal_newlines=True, timeout=300)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("| bert-base | bfloat16 | 4 | 25 |", r.stdout)
            with open(oj) as f:
                row = json.load(f)["rows"][0]
            caps = {c["cap_mb"]: c for c in row["caps"]}
            self.assertEqual(sorted(caps), [1.0, 25.0])
            for c in caps.values():
                self.assertAlmostEqual(c["step_error"], 1 / 1.25 - 1, places=9)
            self.assertAlmostEqual(caps[25.0]["no_ddp_error"], 1 / 1.1 - 1, places=9)
            self.assertAlmostEqual(caps[25.0]["measured_ddp_cost"],
                                   p25["step_time_s"] * 1.25 / (no_ddp_pred * 1.1) - 1, places=9)
            self.assertAlmostEqual(caps[25.0]["predicted_ddp_cost"], p25["ddp_overhead_s"] / no_ddp_pred, places=9)
            # both caps scaled alike: the measured and predicted 25 -> 1 MB slowdowns are equal
            c = row["cap_25_to_1"]
            self.assertAlmostEqual(c["measured"], p1["step_time_s"] / p25["step_time_s"] - 1, places=9)
            self.assertAlmostEqual(c["error_points"], 0.0, places=7)
            ph = row["no_ddp_phases"]
            self.assertAlmostEqual(ph["forward"]["error"], -0.5, places=9)
            self.assertAlmostEqual(ph["backward"]["error"], 1.0, places=9)
            self.assertAlmostEqual(ph["optimizer"]["error"], -0.75, places=9)
            # from a synced start: the larger of the host walk and optimizer_s, against the same measurement
            synced = max(p25["optimizer_host"]["host_s"], p25["optimizer_s"])
            self.assertAlmostEqual(ph["optimizer_synced"]["predicted_s"], synced, places=12)
            self.assertAlmostEqual(ph["optimizer_synced"]["error"], synced / (p25["optimizer_s"] * 4.0) - 1, places=9)

    def test_attention_backend_is_what_the_kernels_name(self):
        sys.path.insert(0, os.path.join(REPO, "scripts"))
        import device_step_compare as dsc
        row = lambda *names: {"kernels": {"rows": [{"name": n} for n in names]}}  # noqa: E731
        self.assertEqual(dsc.attention_backend({}), "eager")
        self.assertEqual(dsc.attention_backend(row("void softmax_warp_forward<float>", "ampere_sgemm")), "eager")
        self.assertEqual(dsc.attention_backend(row(
            "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7")), "sdpa_flash")
        self.assertEqual(dsc.attention_backend(row(
            "fmha_cutlassF_f32_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<float>)")),
            "sdpa_mem_efficient")

    def test_bad_input_is_exit_2(self):
        with tempfile.TemporaryDirectory() as tmp:
            sj = os.path.join(tmp, "step.json")
            with open(sj, "w") as f:
                json.dump({"format": "something-else/1"}, f)
            r = subprocess.run([sys.executable, SCRIPT, sj], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               universal_newlines=True, timeout=60)
            self.assertEqual(r.returncode, 2)
            self.assertIn("/format", r.stderr)
            self.assertEqual(r.stdout, "")


if __name__ == "__main__":
    unittest.main()
