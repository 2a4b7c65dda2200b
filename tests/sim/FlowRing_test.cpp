// The SimGrid flow backend on an uncontended ring equals the closed form
// 2(N-1)*alpha + 2(N-1)/N * S/B (docs/facts.md §5) to 1e-9 relative, fused and stepwise.
#include <gtest/gtest.h>

#include "collectives/ring.hpp"
#include "engine/simulation.hpp"
#include "sim/sim_builders.hpp"

namespace ddpsim {
namespace {

using testing::Json;

struct RingCase {
  int nodes, gpn;
  const char* fidelity;
};

// One bucket holding all of a single layer's gradient; the bucket's start..end is the all-reduce.
double simulated_allreduce(const RingCase& c, long long numel, double bw_Bps, double alpha_s) {
  char bw[64], lat[64];
  std::snprintf(bw, sizeof bw, "%.17gBps", bw_Bps);
  std::snprintf(lat, sizeof lat, "%.17gs", alpha_s);
  Json l = testing::link("l", "nvlink", bw, lat);
  Json n = testing::link("n", "infiniband", bw, lat);
  Json doc{{"model", testing::synthetic_model(1, numel, 1e-3, 2e-3)},
           {"cluster", testing::cluster(c.nodes, c.gpn, l, c.nodes > 1 ? n : Json(nullptr))},
           {"collective", {{"model", "ring"}, {"base_latency", "0s"}}},
           {"simulation", {{"backend", "flow"}, {"fidelity", c.fidelity}}}};
  auto sc = testing::scenario(doc);
  engine::RunOptions opt;
  opt.simulate_iteration1 = false;
  auto rep = engine::simulate(sc, opt);
  EXPECT_EQ(rep.steady.buckets.size(), 1u);
  const auto& b = rep.steady.buckets.at(0);
  return b.end_s - b.start_s;
}

double closed_form(int n, double bytes, double bw, double alpha) {
  return 2.0 * (n - 1) * alpha + 2.0 * (n - 1) / n * bytes / bw;
}

void check(const RingCase& c) {
  const int n = c.nodes * c.gpn;
  const long long numel = 1LL << 22;  // 16 MiB of float32, divisible by every N here
  const double bytes = 4.0 * numel, bw = 25e9, alpha = 3.4e-6;
  const double sim = simulated_allreduce(c, numel, bw, alpha);
  const double expect = closed_form(n, bytes, bw, alpha);
  EXPECT_NEAR(sim / expect, 1.0, 1e-9) << "N=" << n << " fidelity=" << c.fidelity << " sim=" << sim
                                       << " closed form=" << expect;
}

TEST(FlowRing, FusedEightRanksOneNodeMatchesClosedForm) { check({1, 8, "fused"}); }
TEST(FlowRing, StepwiseEightRanksOneNodeMatchesClosedForm) { check({1, 8, "stepwise"}); }
TEST(FlowRing, FusedTwoRanksMatchesClosedForm) { check({1, 2, "fused"}); }
TEST(FlowRing, FusedSixteenRanksTwoNodesMatchesClosedForm) { check({2, 8, "fused"}); }
TEST(FlowRing, StepwiseSixteenRanksTwoNodesMatchesClosedForm) { check({2, 8, "stepwise"}); }
TEST(FlowRing, FusedOneGpuPerNodeMatchesClosedForm) { check({4, 1, "fused"}); }

TEST(FlowRing, AnalyticBackendAgreesWithFlowOnHierarchicalRing) {
  // Different intra and inter figures: the flow result must equal the analytic ring's.
  Json doc{{"model", testing::synthetic_model(1, 1 << 22, 1e-3, 2e-3)},
           {"cluster", testing::cluster(2, 4, testing::link("nv", "nvlink", "240GBps", "3.4us"),
                                        testing::link("ib", "infiniband", "200Gbps", "14us"), 2)},
           {"collective", {{"model", "ring"}}},
           {"simulation", {{"backend", "flow"}}}};
  auto sc = testing::scenario(doc);
  engine::RunOptions opt;
  opt.simulate_iteration1 = false;
  auto rep = engine::simulate(sc, opt);
  const auto& b = rep.steady.buckets.at(0);
  auto ring = collectives::build_ring(sc.cluster);
  const double expect = collectives::ring_allreduce_time(ring, b.bytes, sc.collective.base_latency).total();
  // Bottleneck: 2 NICs x 25 GB/s = 50 GB/s between nodes; latency 6 intra + 1 inter step per phase.
  const double hand = 8.4e-6 + 2 * (6 * 3.4e-6 + 14e-6) + 2.0 * 7 / 8 * (4.0 * (1 << 22)) / 50e9;
  EXPECT_NEAR(expect / hand, 1.0, 1e-12);
  EXPECT_NEAR((b.end_s - b.start_s) / expect, 1.0, 1e-9);
}

}  // namespace
}  // namespace ddpsim

namespace ddpsim {
namespace {

TEST(FlowRing, FlowBackendCarriesTheNcclModelExactly) {
  // The default collective model is NCCL's; uncontended, the flow backend must reproduce the
  // analytic NCCL time of every bucket.
  Json doc{{"model", testing::synthetic_model(6, 1 << 20, 1e-4, 2e-4)},
           {"cluster", testing::cluster(2, 8, testing::link("nv", "nvlink", "20GBps", "3.4us"),
                                        testing::link("ib", "infiniband", "200Gbps", "14us"), 8)},
           {"ddp", {{"bucket_cap_mb", 4}}},
           {"contention", {{"enabled", false}}},
           {"simulation", {{"backend", "flow"}, {"fidelity", "stepwise"}}}};
  auto sc = testing::scenario(doc);
  sc.cluster.links_per_gpu = 12;
  engine::RunOptions opt;
  opt.simulate_iteration1 = false;
  auto rep = engine::simulate(sc, opt);
  ASSERT_GT(rep.steady.buckets.size(), 1u);
  for (const auto& b : rep.steady.buckets)
    EXPECT_NEAR((b.end_s - b.start_s) / b.alone_s, 1.0, 1e-9) << "bucket " << b.index;
}

}  // namespace
}  // namespace ddpsim
