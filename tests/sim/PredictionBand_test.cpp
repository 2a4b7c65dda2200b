// The prediction band's ends that rest on this project's own CPU runs (report/prediction.cpp;
// docs/accuracy.md, "The prediction band") recomputed from the files they were derived from, with
// this build: the band's constants and the validation tables cannot drift apart unnoticed. A model
// change that moves these errors fails here; then the band (code, docs/accuracy.md) is re-derived.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/json_reader.hpp"
#include "report/prediction.hpp"
#include "sim/cli_support.hpp"
#include "sim/timm_table.hpp"
#include "support/files.hpp"

namespace ddpsim {
namespace {

namespace fs = std::filesystem;
using core::Json;

// The three runs of the seven CPU DDP files of 2026-12-02 16:00-16:33 UTC (bench/results/README.md).
std::vector<std::string> spread_files(bool two_ranks_only) {
  std::vector<std::string> files;
  for (const char* run : {"run1", "run2", "run3"})
    for (const auto& e : fs::directory_iterator(fs::path("bench/results/spread-2026-12-02") / run)) {
      const std::string name = e.path().filename().string();
      if (e.path().extension() != ".json" || name.rfind("cpu-", 0) != 0) continue;
      if (two_ranks_only && name.rfind("cpu-2rank-", 0) != 0) continue;
      files.push_back(e.path().string());
    }
  std::sort(files.begin(), files.end());
  return files;
}

Json validate(const std::string& file, const std::string& flags) {
  const auto r = testing::run_cli("validate " + file + " --tolerance 100 --json -" + flags);
  EXPECT_EQ(r.code, 0) << file << ": " << r.err;
  return Json::parse(r.out);
}

// Step error = (predicted - measured) / measured; the band's e = measured / predicted - 1.
double e_of(double step_error) { return 1.0 / (1.0 + step_error) - 1.0; }

TEST(PredictionBand, BucketsBelowOneMibReachTheBandThroughWhatTheirHookAllReduces) {
  // ResNet-50 on one dgx1-v100 (its table: 10.2 % at >= 1 MiB, 22.8 % below) at bucket_cap_mb 0.25:
  // the plain hook's small buckets widen the collectives part; fp16 compression halves what each
  // bucket all-reduces, so more of them fall below 1 MiB; the quantization hook all-gathers, and
  // dgx1-v100 has no all_gather_perf table: per size class the larger of the V100 all-reduce
  // table's (22.8 % below 1 MiB) and the worst one-node all-gather table's (87.8 % at 1-64 MiB)
  // stand in.
  const auto part = [](const std::string& hook) {
    const auto r = testing::run_cli(
        "run --model resnet50 --cluster dgx1-v100 --set ddp.bucket_cap_mb=0.25 --set "
        "ddp.comm_hook=" +
        hook + " -q --json -");
    EXPECT_EQ(r.code, 0) << r.out;
    return Json::parse(r.out)["prediction"]["parts"][2];
  };
  const Json plain = part("allreduce"), fp16 = part("fp16_compress"), quant = part("quantize_per_tensor");
  const double hp = plain["relative_error_range"][1].get<double>(), hf = fp16["relative_error_range"][1].get<double>();
  EXPECT_GT(hp, 0.102);
  EXPECT_LT(hp, 0.228);
  EXPECT_GT(hf, hp);
  const double hq = quant["relative_error_range"][1].get<double>();
  EXPECT_GT(hq, 0.228);
  EXPECT_LT(hq, 0.878);
  EXPECT_EQ(quant["kind"], "extrapolated");
  EXPECT_NE(quant["validation"].get<std::string>().find("no validated all_gather_perf table"), std::string::npos)
      << quant.dump();
  EXPECT_NE(plain["validation"].get<std::string>().find("of its all-reduce time in calls below 1 MiB, 22.8 % there"),
            std::string::npos)
      << plain.dump();
}

TEST(PredictionBand, DataParallelsBroadcastsAndReducesTakeTheBroadcastTable) {
  // torch.nn.DataParallel on one dgx-a100 (ResNet-50, 8 GPUs in one process): its NCCL broadcasts
  // (replicate) and reduces (reduce_add, tuned in NCCL's Broadcast branch) are classed as
  // broadcasts, so the band rests on the preset's broadcast_perf table (the superbenchmark
  // fixture: 12.8 % below 1 MiB, 54.0 % at 1-64 MiB, 3.2 % above), not the all-reduce's.
  const auto r = testing::run_cli(
      "run --model resnet50 --cluster dgx-a100 --nodes 1 --set training.wrapper=data_parallel -q --json -");
  ASSERT_EQ(r.code, 0) << r.out;
  const Json k = Json::parse(r.out)["prediction"]["parts"][2];
  EXPECT_EQ(k["part"], "collectives");
  const std::string v = k["validation"].get<std::string>();
  EXPECT_NE(v.find("broadcast 100 % of the collective time: closest validated broadcast_perf table"), std::string::npos)
      << v;
  const double x = k["relative_error_range"][1].get<double>();
  EXPECT_GE(x, 0.032 - 1e-12);
  EXPECT_LE(x, 0.540 + 1e-12);
}

TEST(PredictionBand, TheTrustLineSaysWhereTheStepsCallsFall) {
  // The default scenario's buckets all-reduce 1-64 MiB each: the A100 NVSwitch table's 22.4 % there
  // (its >= 1 MiB headline is 8.8 %).
  auto r = testing::run_cli("run -q --json -");
  ASSERT_EQ(r.code, 0) << r.out;
  std::string line = Json::parse(r.out)["nccl_trust"].get<std::string>();
  EXPECT_NE(line.find("8.8 % at >= 1 MiB"), std::string::npos) << line;
  EXPECT_NE(line.find("; this step's calls: 100 % at 1-64 MiB (22.4 %)"), std::string::npos) << line;
  // FSDP on one dgx-h100: a line per collective; the all-gathers of LLaMA-3-8B's units are >= 64 MiB,
  // where the (A100) all_gather_perf table that stands in is 10.2 %.
  r = testing::run_cli("run scenarios/llama3-8b-fsdp-8x-h100.json -q --json -");
  ASSERT_EQ(r.code, 0) << r.out;
  line = Json::parse(r.out)["nccl_trust"].get<std::string>();
  EXPECT_EQ(line.rfind("all_gather_perf: no validated all_gather_perf table", 0), 0u) << line;
  EXPECT_NE(line.find("at >= 64 MiB (10.2 %) | reduce_scatter_perf: "), std::string::npos) << line;
}

TEST(PredictionBand, TwoRankDdpEndRestsOnTheCpuRunsWithTheNoDdpStepGiven) {
  const auto files = spread_files(true);
  ASSERT_EQ(files.size(), 15u);  // five two-rank files per run
  std::vector<double> errs;
  for (const auto& f : files) {
    const Json r = validate(f, " --given-no-ddp-step");
    for (const auto& c : r["cases"]) errs.push_back(c["step_time_error"].get<double>());
  }
  ASSERT_EQ(errs.size(), 63u);
  const double lo = *std::min_element(errs.begin(), errs.end()), hi = *std::max_element(errs.begin(), errs.end());
  // The band: from the CPU's too-slow end (+6.9 %) to 7.6 % too fast (V100's 1.4-7.5 %, published);
  // the CPU's too-fast end (-5.0 %) must lie inside it.
  const report::BandPart p = report::ddp_part(2);
  EXPECT_NEAR(hi, 0.069, 0.0005) << "the CPU's too-slow end moved: re-derive ddp_part's low end";
  EXPECT_NEAR(p.low, e_of(0.069), 1e-12);
  EXPECT_NEAR(lo, -0.050, 0.0005);
  EXPECT_GE(e_of(lo), p.low);
  EXPECT_LE(e_of(lo), p.high);
}

TEST(PredictionBand, MeasuredComputeEndsRestOnTheComputeOnlySteps) {
  const auto files = spread_files(false);
  ASSERT_EQ(files.size(), 21u);
  std::vector<double> errs;  // compute-only steps: predicted / measured - 1
  for (const auto& f : files) {
    const Json r = validate(f, "");
    for (const auto& c : r["cases"]) {
      const Json& parts = c["compute_only_parts"];
      ASSERT_TRUE(parts.is_object()) << f;
      errs.push_back(parts["compute_only_predicted_s"].get<double>() / parts["compute_only_measured_s"].get<double>() -
                     1.0);
    }
  }
  ASSERT_EQ(errs.size(), 81u);
  const double lo = *std::min_element(errs.begin(), errs.end()), hi = *std::max_element(errs.begin(), errs.end());
  EXPECT_NEAR(lo, -0.078, 0.0005);
  EXPECT_NEAR(hi, 0.073, 0.0005);
  const report::BandPart p = report::compute_part("measured on this CPU", 1.0);
  EXPECT_EQ(p.kind, "measured");
  EXPECT_NEAR(p.low, e_of(0.073), 1e-12);
  EXPECT_NEAR(p.high, e_of(-0.078), 1e-12);
}

// The estimated compute's ends (report/prediction.cpp compute_part): the uncalibrated one-GPU
// estimate against measured steps, e = measured / predicted - 1, split by the report's host share
// (report::host_share: the modelled host dispatch over the compute it launches).
struct EstimateCheck {
  std::string what;
  double e = 0, host = 0;
};

// The report's own host share (prediction.host_share, report::host_share).
double host_share_of(const Json& rep) { return rep["prediction"]["host_share"].get<double>(); }

// timm's training benchmark on one RTX 3090 (tests/data/cnn-throughput; the settings of
// PublishedCnnThroughput_test.cpp): the truth is the measured throughput, so e = predicted
// samples/s / measured - 1.
std::vector<EstimateCheck> timm_checks() {
  std::vector<EstimateCheck> out;
  for (const auto& row : testing::timm_rows()) {
    const auto r = testing::run_cli(testing::timm_run_args(row) + " -q --json -");
    EXPECT_EQ(r.code, 0) << row.name << ": " << r.err;
    const Json rep = Json::parse(r.out);
    out.push_back({"rtx3090 " + row.name, rep["samples_per_s"].get<double>() / row.measured - 1.0, host_share_of(rep)});
  }
  return out;
}

// The one-GPU steps without DDP measured on an H200 (bench/results/device-h200-2026-12-04, step.json
// and step-2.json), predicted as scripts/device_step_compare.py does at cap 25 MB: the no-DDP step
// is step_time_s - ddp_overhead_s.
std::vector<EstimateCheck> h200_checks() {
  std::vector<EstimateCheck> out;
  const fs::path dir = "bench/results/device-h200-2026-12-04";
  const fs::path tmp = testing::temp_dir("band");
  for (const char* file : {"step.json", "step-2.json"}) {
    const Json doc = Json::parse(testing::slurp(dir / file));
    for (const Json& row : doc["rows"]) {
      std::string attention = "eager";
      for (const Json& k : row["kernels"]["rows"]) {
        std::string n = k["name"].get<std::string>(), low = n;
        std::transform(low.begin(), low.end(), low.begin(), ::tolower);
        if (low.find("flash") != std::string::npos) attention = "sdpa_flash";
        if (attention == "eager" &&
            (n.find("fmha_cutlass") != std::string::npos || n.find("MemEffAttention") != std::string::npos))
          attention = "sdpa_mem_efficient";
      }
      Json training = {{"batch_size", row["batch"]},
                       {"compute_dtype", row["dtype"]},
                       {"optimizer", "sgd"},
                       {"optimizer_impl", "foreach"},
                       {"zero_grad_set_to_none", true},
                       {"input_bytes_per_sample", "0B"},
                       {"loss", "none"},
                       {"attention", attention}};
      if (row.contains("seq_len") && !row["seq_len"].is_null()) training["seq_len"] = row["seq_len"];
      const Json scen = {{"name", "device-step"},
                         {"model", row["model"]},
                         {"cluster", {{"name", "one-gpu"}, {"gpu", "h200"}, {"nodes", 1}, {"gpus_per_node", 1}}},
                         {"ddp", {{"bucket_cap_mb", 25}, {"pytorch_version", "2.4"}}},
                         {"training", training},
                         {"compute", {{"use_measured", false}}}};
      const fs::path sp = tmp / "s.json";
      std::ofstream(sp) << scen.dump();
      const auto r = testing::run_cli("run " + sp.string() + " -q --json -");
      EXPECT_EQ(r.code, 0) << row["model"] << ": " << r.err;
      const Json rep = Json::parse(r.out);
      const double no_ddp = rep["step_time_s"].get<double>() - rep["ddp_overhead_s"].get<double>();
      out.push_back({"h200 " + row["model"].get<std::string>() + " " + row["dtype"].get<std::string>(),
                     row["median_step_s"]["no_ddp"].get<double>() / no_ddp - 1.0, host_share_of(rep)});
    }
  }
  fs::remove_all(tmp);
  return out;
}

TEST(PredictionBand, EstimatedComputeEndsRestOnTimmAndTheH200Steps) {
  auto rows = timm_checks();
  ASSERT_EQ(rows.size(), 22u);
  const auto h200 = h200_checks();
  ASSERT_EQ(h200.size(), 12u);
  rows.insert(rows.end(), h200.begin(), h200.end());
  double lo = 1e9, hi = -1e9, heavy_lo = 1e9, heavy_hi = -1e9;
  int heavy = 0;
  for (const auto& r : rows) {
    std::printf("%-44s e %+7.1f %%  host share %.2f\n", r.what.c_str(), 100 * r.e, r.host);
    if (r.host >= report::kHostHeavyShare) {
      ++heavy;
      heavy_lo = std::min(heavy_lo, r.e);
      heavy_hi = std::max(heavy_hi, r.e);
    } else {
      lo = std::min(lo, r.e);
      hi = std::max(hi, r.e);
    }
  }
  std::printf("GPU-bound: %+.1f .. %+.1f %%; host-heavy (%d): %+.1f .. %+.1f %%\n", 100 * lo, 100 * hi, heavy,
              100 * heavy_lo, 100 * heavy_hi);
  // The ends the band states (a change of the estimate that moves them fails here: re-derive the
  // constants, report/prediction.cpp's comment and docs/accuracy.md's table).
  EXPECT_NEAR(lo, report::kEstimatedLow, 0.0005) << "the estimate's too-slow end moved";
  EXPECT_NEAR(hi, report::kEstimatedHigh, 0.0005) << "the estimate's too-fast end (GPU-bound) moved";
  EXPECT_EQ(heavy, 3) << "the host-heavy rows are BERT-base, BERT-large and ViT-B/16 in bfloat16 on the H200";
  EXPECT_NEAR(heavy_hi, report::kEstimatedHostHeavyHigh, 0.0005) << "the host-heavy end moved";
  EXPECT_GE(heavy_lo, report::kEstimatedLow);
  // The held-out figure the issue quotes (32 published V100/A100 configurations: -14 .. +29.3 %) lies
  // inside the range, so the band holds it too.
  EXPECT_LE(report::kEstimatedLow, -0.14);
  EXPECT_GE(report::kEstimatedHigh, 0.293);
  const report::BandPart gpu = report::compute_part("estimated (per-kernel model)", 1.0, 0.2);
  EXPECT_EQ(gpu.low, report::kEstimatedLow);
  EXPECT_EQ(gpu.high, report::kEstimatedHigh);
  const report::BandPart host = report::compute_part("estimated (per-kernel model)", 1.0, 0.9);
  EXPECT_EQ(host.high, report::kEstimatedHostHeavyHigh);
}

}  // namespace
}  // namespace ddpsim
