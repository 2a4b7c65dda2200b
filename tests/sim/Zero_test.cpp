// ZeroRedundancyOptimizer (training.zero_redundancy_optimizer) in the engine: the optimizer steps a
// shard, the parameter broadcasts run through the collective path and are counted in the step.
// Expected values come from the closed forms: the collective model's broadcast time for the
// bytes of each broadcast, the optimizer kernel of the shard, PyTorch's partition.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli_support.hpp"
#include "collectives/collective_model.hpp"
#include "gpu/compute_model.hpp"
#include "memory/memory_model.hpp"
#include "sim_builders.hpp"

namespace ddpsim {
namespace {

using core::Json;

// `sizes` float32 parameters (one layer each, 1 ms forward, 2 ms backward at batch 1) on
// `nodes` x `gpn` GPUs (NVSwitch 100 GB/s, one 25 GB/s NIC), analytic backend, no contention.
Json doc(const std::vector<long long>& sizes, int nodes, int gpn, const Json& zero) {
  Json m = testing::synthetic_model(static_cast<int>(sizes.size()), 1, 1e-3, 2e-3);
  for (size_t i = 0; i < sizes.size(); ++i) m["params"][i]["shape"] = {sizes[i]};
  Json d{{"model", m},
         {"cluster", testing::cluster(nodes, gpn, testing::link("nv", "nvlink", "100GBps", "1us"),
                                      testing::link("ib", "infiniband", "25GBps", "5us"))},
         {"training", {{"batch_size", 1}, {"optimizer", "adam"}}},
         {"simulation", {{"backend", "analytic"}}},
         {"contention", {{"enabled", false}}}};
  if (!zero.is_null()) d["training"]["zero_redundancy_optimizer"] = zero;
  return d;
}

double near(double a) { return 1e-9 * std::abs(a) + 1e-15; }

void expect_step_identity(const Json& r) {
  const double sum = r["compute_only_s"].get<double>() + r["contention_s"].get<double>() +
                     r["straggler_wait_s"].get<double>() + r["comm_exposed_s"].get<double>() +
                     r["data_wait_s"].get<double>();
  EXPECT_NEAR(r["step_time_s"].get<double>(), sum, near(sum));
}

TEST(Zero, BroadcastsTakeTheCollectiveModelsTimeAndTheStepAShard) {
  // 8 tensors of 1e6 over 8 GPUs (2 nodes x 4): one per rank, 8 broadcasts of 4 MB.
  const std::vector<long long> sizes(8, 1000000);
  auto off = testing::scenario(doc(sizes, 2, 4, nullptr));
  auto on = testing::scenario(doc(sizes, 2, 4, true));
  auto out = testing::simulate_in_children({off, on});
  ASSERT_EQ(out.size(), 2u);
  const Json& r = out[1];
  collectives::CollectiveModel model(on.cluster, on.collective);
  const double bcast = model.broadcast(4e6).total();
  ASSERT_GT(bcast, 0);
  EXPECT_EQ(r["zero_broadcasts"].get<int>(), 8);
  EXPECT_DOUBLE_EQ(r["zero_broadcast_bytes"].get<double>(), 32e6);
  EXPECT_NEAR(r["zero_broadcast_s"].get<double>(), 8 * bcast, near(8 * bcast));
  // Every shard is one tensor: nothing to wait for but the broadcasts themselves, in a row.
  EXPECT_NEAR(r["zero_broadcast_wait_s"].get<double>(), 8 * bcast, near(8 * bcast));
  // Counted in the communication totals and the step.
  EXPECT_NEAR(r["comm_alone_s"].get<double>() - out[0]["comm_alone_s"].get<double>(), 8 * bcast, near(8 * bcast));
  const double shard = gpu::optimizer_kernel(on, {0}, 0).seconds;
  const double full = gpu::optimizer_kernel(off, {0, 1, 2, 3, 4, 5, 6, 7}, 0).seconds;
  EXPECT_NEAR(r["optimizer_s"].get<double>(), shard, near(shard));
  EXPECT_NEAR(out[0]["optimizer_s"].get<double>(), full, near(full));
  EXPECT_NEAR(r["step_time_s"].get<double>() - out[0]["step_time_s"].get<double>(), 8 * bcast - (full - shard),
              1e-9 * r["step_time_s"].get<double>());
  expect_step_identity(r);
  EXPECT_EQ(r["zero_redundancy_optimizer"], "on");
  // ZeRO works from the first step on.
  EXPECT_EQ(r["iteration1"]["zero_broadcasts"].get<int>(), 8);
  EXPECT_EQ(out[0]["zero_broadcasts"].get<int>(), 0);
  // Memory: the state of one 1e6 tensor instead of eight.
  EXPECT_DOUBLE_EQ(r["memory"]["optimizer_state"].get<double>(), 8e6);
  EXPECT_DOUBLE_EQ(out[0]["memory"]["optimizer_state"].get<double>(), 64e6);
}

TEST(Zero, ParametersAsBucketViewBroadcastOneBucketPerRank) {
  // 8 tensors over 4 GPUs: two per rank; one 8 MB broadcast per rank instead of 8 of 4 MB.
  const std::vector<long long> sizes(8, 1000000);
  auto per_param = testing::scenario(doc(sizes, 1, 4, true));
  auto bucketed = testing::scenario(doc(sizes, 1, 4, {{"parameters_as_bucket_view", true}}));
  auto out = testing::simulate_in_children({per_param, bucketed});
  ASSERT_EQ(out.size(), 2u);
  collectives::CollectiveModel model(per_param.cluster, per_param.collective);
  EXPECT_EQ(out[0]["zero_broadcasts"].get<int>(), 8);
  EXPECT_NEAR(out[0]["zero_broadcast_s"].get<double>(), 8 * model.broadcast(4e6).total(), 1e-15);
  EXPECT_EQ(out[1]["zero_broadcasts"].get<int>(), 4);
  EXPECT_NEAR(out[1]["zero_broadcast_s"].get<double>(), 4 * model.broadcast(8e6).total(), 1e-15);
}

TEST(Zero, RepresentativeRankWaitsForTheLargestShard) {
  // Sizes 1.2e6, 1e6, 1e6 over 2 GPUs: rank 0 steps 1.2e6 elements, rank 1 2e6 (PyTorch's greedy
  // partition), so the broadcasts start when rank 1 is done. Every rank explicit (slow rank 1 at
  // factor 1) must give the same report.
  const std::vector<long long> sizes{1200000, 1000000, 1000000};
  auto rep = testing::scenario(doc(sizes, 1, 2, true));
  auto all = rep;
  all.stragglers.slow_ranks = {{1, 1.0}};
  all.stragglers.steps = 2;
  auto out = testing::simulate_in_children({rep, all});
  ASSERT_EQ(out.size(), 2u);
  const auto parts = memory::zero_partition(rep.model, 2);
  ASSERT_EQ(parts[1], (std::vector<int>{1, 2}));
  const double s0 = gpu::optimizer_kernel(rep, parts[0], 0).seconds,
               s1 = gpu::optimizer_kernel(rep, parts[1], 0).seconds;
  ASSERT_GT(s1, s0);
  const double b = out[0]["zero_broadcast_s"].get<double>();
  EXPECT_NEAR(out[0]["zero_broadcast_wait_s"].get<double>(), (s1 - s0) + b, near(b));
  for (const char* k : {"step_time_s", "zero_broadcast_s", "zero_broadcast_wait_s", "comm_exposed_s", "optimizer_s"})
    EXPECT_NEAR(out[0][k].get<double>(), out[1][k].get<double>(), near(out[0][k].get<double>())) << k;
}

TEST(Zero, OverlapWithDdpStepsEachBucketInTheHookAfterWarmUp) {
  // 8 tensors of 1e6 (4 MB), bucket cap 1 MiB: one bucket per tensor, owners bucket % 4.
  const std::vector<long long> sizes(8, 1000000);
  Json d = doc(sizes, 1, 4, {{"overlap_with_ddp", true}});
  d["ddp"] = {{"bucket_cap_mb", 1}};
  auto sc = testing::scenario(d);
  auto all = sc;
  all.stragglers.slow_ranks = {{1, 1.0}};
  all.stragglers.steps = 2;
  auto out = testing::simulate_in_children({sc, all});
  ASSERT_EQ(out.size(), 2u);
  const Json& r = out[0];
  EXPECT_EQ(r["zero_redundancy_optimizer"], "overlap_with_ddp");
  EXPECT_EQ(r["iteration"].get<int>(), 3);  // DDP rebuilds at 2, ZeRO initializes at 3
  EXPECT_EQ(r["num_buckets"].get<int>(), 8);
  collectives::CollectiveModel model(sc.cluster, sc.collective);
  EXPECT_EQ(r["zero_broadcasts"].get<int>(), 8);
  EXPECT_DOUBLE_EQ(r["zero_broadcast_bytes"].get<double>(), 32e6);
  EXPECT_NEAR(r["zero_broadcast_s"].get<double>(), 8 * model.broadcast(4e6).total(), 1e-15);
  // Warm-up: iteration 1 steps nothing and broadcasts nothing.
  EXPECT_EQ(r["iteration1"]["zero_broadcasts"].get<int>(), 0);
  EXPECT_DOUBLE_EQ(r["iteration1"]["optimizer_s"].get<double>(), 0);
  // Rank 0 steps buckets 0 and 4.
  const double steps = gpu::optimizer_kernel(sc, {7}, 0).seconds * 2;
  EXPECT_NEAR(r["optimizer_s"].get<double>(), steps, near(steps));
  expect_step_identity(r);
  for (const char* k : {"step_time_s", "zero_broadcast_s", "zero_broadcast_wait_s", "comm_exposed_s", "optimizer_s"})
    EXPECT_NEAR(out[0][k].get<double>(), out[1][k].get<double>(), near(out[0][k].get<double>())) << k;
}

// With every rank simulated and ranks reaching the hook at different times (rank 1 twice as
// slow), rank 0's optimizer time is still its own two bucket steps: each rank measures the hook
// from its own arrival (the engine once kept one shared hook time, so the last rank to arrive
// set rank 0's start and optimizer_s came out negative).
TEST(Zero, OverlapWithDdpOptimizerTimeIsEachRanksOwnWithStragglers) {
  const std::vector<long long> sizes(8, 1000000);
  Json d = doc(sizes, 1, 4, {{"overlap_with_ddp", true}});
  d["ddp"] = {{"bucket_cap_mb", 1}};
  auto sc = testing::scenario(d);
  sc.stragglers.slow_ranks = {{1, 2.0}};
  sc.stragglers.steps = 2;
  auto out = testing::simulate_in_children({sc});
  ASSERT_EQ(out.size(), 1u);
  const double steps = gpu::optimizer_kernel(sc, {7}, 0).seconds * 2;  // buckets 0 and 4, factor 1
  EXPECT_NEAR(out[0]["optimizer_s"].get<double>(), steps, near(steps));
}

// `ddpsim run`: LLaMA-7B with AdamW under plain DDP on one DGX H100 does not fit; the summary says
// so, stderr carries one warning line (total, the GPU's memory, the largest term), the exit code
// stays 0, and the JSON has the fields `ddpsim compare` reads.
TEST(Zero, RunWarnsOnStderrWhenTheJobDoesNotFit) {
  const auto file = std::filesystem::temp_directory_path() / ("ddpsim-zero-" + std::to_string(::getpid()) + ".json");
  std::ofstream(file) << R"({"model": "llama-7b", "cluster": "dgx-h100", "simulation": {"backend": "analytic"},
      "training": {"batch_size": 1, "compute_dtype": "bfloat16", "optimizer": "adamw"}})";
  const auto r = testing::run_cli("run " + file.string() + " --json -");
  const auto text = testing::run_cli("run " + file.string());
  std::filesystem::remove(file);
  ASSERT_EQ(r.code, 0) << r.out;
  const Json j = Json::parse(r.out.substr(0, r.out.size() - r.err.size()));
  EXPECT_FALSE(j["fits"].get<bool>());
  EXPECT_GT(j["memory_per_gpu_bytes"].get<double>(), j["gpu_memory_bytes"].get<double>());
  EXPECT_DOUBLE_EQ(j["gpu_memory_bytes"].get<double>(), 80.0 * 1024 * 1024 * 1024);
  for (const char* k : {"parameters", "gradients", "buckets", "optimizer_state", "activations", "allowance"})
    EXPECT_TRUE(j["memory"][k].is_number()) << k;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  for (const char* part : {"warning", "per GPU", "80.00 GiB", "h100-sxm", "largest term"})
    EXPECT_NE(r.err.find(part), std::string::npos) << part << "\n" << r.err;
  EXPECT_EQ(text.code, 0);
  EXPECT_NE(text.out.find("does NOT fit"), std::string::npos) << text.out;
}

}  // namespace
}  // namespace ddpsim
