// The results writer: output parses, has format/mode/hardware, and embeds the full configuration.
#include "results.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "args.hpp"

using namespace ddpbench;

namespace {
HardwareInfo fake_hw() {
  HardwareInfo h;
  h.gpu_name = "NVIDIA H100 80GB HBM3";
  h.sm_count = 132;
  h.memory_bytes = 80ULL << 30;
  h.hbm_bandwidth_Bps_peak = peak_memory_bandwidth(2619000, 5120);
  h.driver_version = "13.0";
  h.cuda_runtime_version = "13.0";
  h.nccl_version = "2.28.9";
  h.ngpus = 2;
  h.gpus_per_node = 2;
  h.peer_access = {{1, 1}, {1, 1}};
  return h;
}
}  // namespace

TEST(Results, PeakBandwidthFromClockAndBusWidth) {
  EXPECT_NEAR(peak_memory_bandwidth(2619000, 5120), 3.352e12, 1e9);  // H100 SXM: ~3.35 TB/s
  EXPECT_EQ(peak_memory_bandwidth(0, 5120), 0.0);
}

TEST(Results, StepDocumentParsesAndEmbedsConfig) {
  const Command cmd =
      parse_command({"step", "--synthetic", "mlp:2:64", "--caps", "default,5", "-g", "2", "--dtype", "bfloat16"});
  ResultsWriter w("step", fake_hw(), config_json(cmd));
  w.set_step_model({{"format", "ddpsim-model/1"}, {"name", "mlp"}});
  StepCase c;
  c.cap = {5, false};
  c.limits = {5 << 20, 5 << 20};
  c.step_time_s = 0.012;
  c.compute_only_s = 0.010;
  c.comm_alone_s = 0.004;
  StepBucketTiming b;
  b.bucket.params = {3, 2};
  b.bucket.bytes = 1000;
  b.ready_s = 0.001;
  b.start_s = 0.0012;
  b.end_s = 0.003;
  c.buckets.push_back(b);
  c.rank_compute_only_times_s = {{0.010, 0.011}, {0.0105, 0.0101}};
  w.add_step_case(c);

  const auto j = nlohmann::json::parse(w.dump());
  // Every rank's compute-only iterations, one array per rank (validate's rank jitter reads them).
  EXPECT_EQ(j["step"]["cases"][0]["rank_compute_only_times_s"],
            nlohmann::json::parse("[[0.010, 0.011], [0.0105, 0.0101]]"));
  EXPECT_EQ(j["format"], "ddpbench-results/1");
  EXPECT_EQ(j["mode"], "step");
  EXPECT_EQ(j["hardware"]["gpu_name"], "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(j["hardware"]["sm_count"], 132);
  EXPECT_EQ(j["hardware"]["nvlink"]["all_pairs_peer_capable"], true);
  for (const char* k : {"memory_bytes", "hbm_bandwidth_Bps_peak", "driver_version", "cuda_runtime_version",
                        "nccl_version", "ngpus", "nnodes", "gpus_per_node"})
    EXPECT_TRUE(j["hardware"].contains(k)) << k;
  // The full configuration: every flag of the command with its effective value.
  const auto& cfg = j["config"];
  EXPECT_EQ(cfg, config_json(cmd));
  EXPECT_EQ(cfg["caps"], nlohmann::json::parse(R"(["default", 5.0])"));
  EXPECT_EQ(cfg["dtype"], "bfloat16");
  EXPECT_EQ(cfg["ngpus"], 2);
  EXPECT_EQ(cfg["synthetic"], "mlp:2:64");
  for (const char* k : {"batch", "iters", "warmup", "first_bucket_mb", "bucket_view", "optimizer", "conv", "tf32"})
    EXPECT_TRUE(cfg.contains(k)) << k;
  // The case.
  const auto& k = j["step"]["cases"][0];
  EXPECT_EQ(j["step"]["caps"], nlohmann::json::parse("[5.0]"));
  EXPECT_DOUBLE_EQ(k["exposed_comm_s"].get<double>(), 0.002);
  EXPECT_DOUBLE_EQ(k["overlap_ratio"].get<double>(), 0.5);
  EXPECT_EQ(k["buckets"][0]["index"], 0);
  EXPECT_EQ(k["buckets"][0]["num_tensors"], 2);
  EXPECT_EQ(k["buckets"][0]["bytes"], 1000);
  EXPECT_DOUBLE_EQ(k["buckets"][0]["end_s"].get<double>(), 0.003);
  EXPECT_EQ(j["step"]["model"]["format"], "ddpsim-model/1");
}

TEST(Results, AllreduceRowsAndFileRoundTrip) {
  const Command cmd = parse_command({"allreduce", "-b", "8", "-e", "1M"});
  ResultsWriter w("allreduce", fake_hw(), config_json(cmd));
  AllreduceRow r;
  r.bytes = 8;
  r.count = 2;
  r.out_of_place = {20e-6, 0.0004, 0.0004, 0};
  r.in_place = {19e-6, 0.0004, 0.0004, -1};
  w.add_allreduce_row(r);
  const std::string path = testing::TempDir() + "ddpbench_results_test.json";
  w.write(path);
  std::ifstream in(path);
  const auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["config"]["maxbytes"], 1u << 20);
  EXPECT_EQ(j["config"]["minbytes"], 8);
  EXPECT_EQ(j["allreduce"][0]["size_bytes"], 8);
  EXPECT_TRUE(j["allreduce"][0]["in_place"]["wrong"].is_null());
  EXPECT_EQ(j["allreduce"][0]["out_of_place"]["wrong"], 0);
  std::remove(path.c_str());
}

TEST(Results, ContentionSlowdownFactors) {
  ContentionRow r;
  r.kind = "gemm";
  r.fg_alone_s = 1.0;
  r.fg_beside_s = 1.5;
  r.bg_alone_s = 2.0;
  r.bg_beside_s = 3.0;
  const auto j = contention_json(r);
  EXPECT_DOUBLE_EQ(j["compute_slowdown"].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(j["comm_slowdown"].get<double>(), 1.5);
}

TEST(Results, UnwritablePathIsNamed) {
  ResultsWriter w("layers", fake_hw(), nlohmann::json::object());
  try {
    w.write("/nonexistent-dir/x.json");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/x.json"), std::string::npos);
  }
}
