// Invariants of a simulated DDP step (docs/design.md definitions), on bundled and synthetic scenarios.
#include "engine/simulation.hpp"

#include <gtest/gtest.h>

#include "app/sweep.hpp"
#include "config/catalog.hpp"
#include "report/report.hpp"
#include "sim/sim_builders.hpp"

namespace ddpsim {
namespace {

using testing::Json;

config::Scenario bundled_with_contention(const std::string& name, const std::vector<std::string>& overrides = {}) {
  config::Catalog cat(config::Catalog::default_root());
  return cat.load_scenario(cat.resolve(config::Kind::SCENARIO, name), overrides);
}

// The core invariants (docs/design.md) are stated for a GPU without contention.
config::Scenario bundled(const std::string& name, std::vector<std::string> overrides = {}) {
  overrides.insert(overrides.begin(), "contention.enabled=false");
  return bundled_with_contention(name, overrides);
}

using testing::simulate_in_children;

void check_invariants(const Json& it, const std::string& what) {
  const double step = it["step_time_s"], compute = it["compute_only_s"], alone = it["comm_alone_s"];
  const double tol = 1e-12 * step;
  EXPECT_LE(compute, step + tol) << what;
  EXPECT_LE(step, compute + alone + tol) << what;
  EXPECT_NEAR(it["exposed_comm_s"].get<double>(), step - compute, tol) << what;
  ASSERT_FALSE(it["overlap_ratio"].is_null()) << what;
  const double ov = it["overlap_ratio"];
  EXPECT_GE(ov, -1e-9) << what;
  EXPECT_LE(ov, 1.0 + 1e-9) << what;
  // Buckets: launched in index order, FIFO on the NCCL stream, never before they are ready.
  double prev_end = 0, prev_launch = 0;
  for (const auto& b : it["buckets"]) {
    EXPECT_GE(b["launch_s"].get<double>(), b["ready_s"].get<double>() - tol) << what;
    EXPECT_GE(b["launch_s"].get<double>(), prev_launch - tol) << what;
    EXPECT_GE(b["start_s"].get<double>(), std::max(prev_end, b["launch_s"].get<double>()) - tol) << what;
    EXPECT_GE(b["end_s"].get<double>(), b["start_s"].get<double>()) << what;
    prev_end = b["end_s"];
    prev_launch = b["launch_s"];
  }
}

TEST(Simulation, InvariantsHoldOnBundledScenarios) {
  auto results = simulate_in_children({bundled("default"), bundled("resnet50-2x8-a100-hdr"),
                                       bundled("resnet50-2x8-a100-hdr", {"ddp.bucket_cap_mb=1"}),
                                       bundled("resnet50-2x8-a100-hdr", {"ddp.gradient_as_bucket_view=true"})});
  for (size_t i = 0; i < results.size(); ++i) {
    check_invariants(results[i], "scenario " + std::to_string(i) + " steady");
    check_invariants(results[i]["iteration1"], "scenario " + std::to_string(i) + " iteration1");
  }
}

TEST(Simulation, OneGpuHasNoCommunication) {
  auto r = simulate_in_children({bundled("default", {"nodes=1", "gpus_per_node=1"})}).at(0);
  EXPECT_EQ(r["world_size"], 1);
  EXPECT_EQ(r["comm_alone_s"].get<double>(), 0.0);
  EXPECT_EQ(r["comm_busy_s"].get<double>(), 0.0);
  EXPECT_EQ(r["exposed_comm_s"].get<double>(), 0.0);
  EXPECT_NEAR(r["step_time_s"].get<double>(), r["compute_only_s"].get<double>(),
              1e-12 * r["step_time_s"].get<double>());
  EXPECT_TRUE(r["overlap_ratio"].is_null());
}

TEST(Simulation, MoreBandwidthIsNeverSlower) {
  // Doubling either link's bandwidth cannot lengthen the step, on a comm-heavy synthetic model.
  auto make = [](const char* intra_bw, const char* inter_bw) {
    Json doc{{"model", testing::synthetic_model(12, 4 << 20, 2e-4, 4e-4)},
             {"cluster", testing::cluster(2, 4, testing::link("nv", "nvlink", intra_bw, "3.4us"),
                                          testing::link("ib", "infiniband", inter_bw, "14us"))},
             {"ddp", {{"bucket_cap_mb", 25}}},
             {"contention", {{"enabled", false}}}};
    return testing::scenario(doc);
  };
  auto r = simulate_in_children(
      {make("100GBps", "100Gbps"), make("200GBps", "100Gbps"), make("100GBps", "200Gbps"), make("200GBps", "400Gbps")});
  const double base = r[0]["step_time_s"];
  EXPECT_LE(r[1]["step_time_s"].get<double>(), base);
  EXPECT_LT(r[2]["step_time_s"].get<double>(), base);  // the NIC is the bottleneck: strictly faster
  EXPECT_LE(r[3]["step_time_s"].get<double>(), r[2]["step_time_s"].get<double>());
}

TEST(Simulation, DeterministicJson) {
  auto sc = bundled("resnet50-2x8-a100-hdr");
  auto r = simulate_in_children({sc, sc});
  EXPECT_EQ(r[0].dump(), r[1].dump());
}

TEST(Simulation, GradientAsBucketViewRemovesCopyOut) {
  auto r = simulate_in_children({bundled("default"), bundled("default", {"ddp.gradient_as_bucket_view=true"})});
  const double copy_plain = r[0]["ddp_copy_s"], copy_view = r[1]["ddp_copy_s"];
  // Copy-in and copy-out move the same bytes: the view saves half of the copy time.
  EXPECT_NEAR(copy_view / copy_plain, 0.5, 1e-9);
  EXPECT_LT(r[1]["step_time_s"].get<double>(), r[0]["step_time_s"].get<double>());
}

TEST(Simulation, IterationOneReducesOneBucketAtTheEnd) {
  // Without find_unused_parameters, iteration 1 has one bucket (docs/facts.md §1), launched only
  // when the last gradient is ready: nothing overlaps, so exposed comm equals comm alone.
  auto r = simulate_in_children({bundled("default")}).at(0);
  const auto& it1 = r["iteration1"];
  EXPECT_EQ(it1["num_buckets"], 1);
  EXPECT_NEAR(it1["exposed_comm_s"].get<double>(), it1["comm_alone_s"].get<double>(),
              1e-9 * it1["step_time_s"].get<double>());
  EXPECT_GT(r["num_buckets"].get<int>(), 1);
  EXPECT_GT(r["overlap_ratio"].get<double>(), 0.5);
}

TEST(Simulation, BucketSweepShowsTradeOff) {
  // scenarios/resnet50-2x8-a100-hdr.json: tiny buckets pay a latency per bucket, huge buckets
  // lose overlap; the best cap lies strictly between.
  const std::vector<std::string> caps{"0.5", "1", "2", "5", "10", "25", "50", "100"};
  std::vector<config::Scenario> scs;
  for (const auto& c : caps) scs.push_back(bundled("resnet50-2x8-a100-hdr", {"ddp.bucket_cap_mb=" + c}));
  auto r = simulate_in_children(scs);
  size_t best = 0;
  for (size_t i = 0; i < r.size(); ++i)
    if (r[i]["step_time_s"].get<double>() < r[best]["step_time_s"].get<double>()) best = i;
  EXPECT_GT(best, 0u) << "smallest cap should not be best";
  EXPECT_LT(best, caps.size() - 1) << "largest cap should not be best";
  // The largest cap is clearly worse than the best (by more than 1 %: its one bucket's all-reduce
  // is all exposed). The smallest is worse, by less: finalize_backward copies each bucket out as
  // soon as its all-reduce is done, so only the last buckets' latencies stay beyond the backward.
  const double b = r[best]["step_time_s"];
  EXPECT_GT(r.front()["step_time_s"].get<double>(), b);
  EXPECT_GT(r.back()["step_time_s"].get<double>(), 1.01 * b);
  // Latency side: more buckets -> more comm alone; overlap side: the largest cap hides nothing.
  EXPECT_GT(r.front()["comm_alone_s"].get<double>(), r[best]["comm_alone_s"].get<double>());
  EXPECT_LT(r.back()["overlap_ratio"].get<double>(), 0.05);
}

}  // namespace
}  // namespace ddpsim
