// The Chrome trace with explicit ranks (docs/commands.md, outputs): a process per simulated rank, a
// "step N" span per rank and iteration, and one "iteration N" instant marker per iteration, all
// consistent with the report computed from the same Timeline.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "config/overrides.hpp"
#include "core/stats.hpp"
#include "engine/simulation.hpp"
#include "report/report.hpp"
#include "sim/sim_builders.hpp"

namespace ddpsim {
namespace {

using testing::Json;

// 2 nodes x 2 GPUs (4 ranks), 6 layers of 1 Mi float32 parameters, jitter on the compute: every
// rank is simulated explicitly. Contention off, so a kernel takes exactly its factor x its time.
config::Scenario jitter_4_ranks(int steps) {
  Json doc{{"model", testing::synthetic_model(6, 1 << 20, 1e-3, 2e-3)},
           {"cluster", testing::cluster(2, 2, testing::link("nv", "nvlink", "240GBps", "3.4us"),
                                        testing::link("ib", "infiniband", "100Gbps", "14us"), 1)},
           {"collective", {{"model", "ring"}}},
           {"ddp", {{"bucket_cap_mb", 8}}},
           {"training", {{"batch_size", 1}}},
           {"contention", {{"enabled", false}}},
           {"stragglers", {{"jitter_cv", 0.2}, {"steps", steps}}}};
  return testing::scenario(doc);
}

TEST(TraceRanks, JitterWithFourRanksHasFourTracksMarkersAndConsistentSteps) {
  const int steps = 3;
  const auto rep = engine::simulate(jitter_4_ranks(steps));
  ASSERT_TRUE(rep.explicit_ranks);
  ASSERT_EQ(rep.traced_ranks.size(), 4u);
  const Json t = report::to_chrome_trace(rep);

  std::set<int> named;  // pids with a process_name, but the link counters' own process
  std::map<int, std::vector<Json>> steps_of, kernels_of;
  std::vector<Json> markers;
  for (const auto& e : t["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name" &&
        e["args"]["name"].get<std::string>().rfind("network links", 0) != 0)
      named.insert(e["pid"].get<int>());
    if (e["ph"] == "i") markers.push_back(e);
    if (e["ph"] != "X" || e["tid"] != 0) continue;
    (e["cat"] == "step" ? steps_of : kernels_of)[e["pid"].get<int>()].push_back(e);
  }
  EXPECT_EQ(named, (std::set<int>{0, 1, 2, 3}));
  EXPECT_EQ(t["otherData"]["traced_ranks"].size(), 4u);

  // One marker per iteration simulated: iteration 1 and the `steps` steady steps.
  const int iterations = 1 + rep.steady.steps_simulated;
  ASSERT_EQ(rep.steady.steps_simulated, steps);
  ASSERT_EQ(static_cast<int>(markers.size()), iterations);
  EXPECT_EQ(markers[0]["name"], "iteration 1");
  for (const auto& m : markers) EXPECT_EQ(m["s"], "g");

  for (int r = 0; r < 4; ++r) {
    ASSERT_EQ(static_cast<int>(steps_of[r].size()), iterations) << "rank " << r;
    EXPECT_GT(kernels_of[r].size(), 10u) << "rank " << r;
    // Every kernel of the rank lies inside one of its step spans, and the kernels of a step take
    // no longer than the step.
    for (const auto& s : steps_of[r]) {
      const double a = s["ts"].get<double>(), b = a + s["dur"].get<double>();
      double busy = 0;
      for (const auto& k : kernels_of[r]) {
        const double ka = k["ts"].get<double>(), kb = ka + k["dur"].get<double>();
        if (ka >= a - 1e-6 && kb <= b + 1e-6) busy += k["dur"].get<double>();
      }
      EXPECT_LE(busy, s["dur"].get<double>() * (1 + 1e-9)) << "rank " << r;
      EXPECT_GT(busy, 0.0);
    }
    size_t inside = 0;
    for (const auto& k : kernels_of[r]) {
      const double ka = k["ts"].get<double>(), kb = ka + k["dur"].get<double>();
      for (const auto& s : steps_of[r])
        if (ka >= s["ts"].get<double>() - 1e-6 && kb <= s["ts"].get<double>() + s["dur"].get<double>() + 1e-6) {
          ++inside;
          break;
        }
    }
    EXPECT_EQ(inside, kernels_of[r].size()) << "rank " << r;
  }

  // Rank 0 is the reported rank: its step spans are the report's step times, its markers the
  // iteration starts, and its kernels add up to compute_only (contention off, no graph walk).
  auto& s0 = steps_of[0];
  std::sort(s0.begin(), s0.end(), [](const Json& x, const Json& y) { return x["ts"] < y["ts"]; });
  EXPECT_NEAR(s0[0]["dur"].get<double>() * 1e-6, rep.iteration1.step_time_s, 1e-9 * rep.iteration1.step_time_s);
  std::vector<double> steady;
  for (int i = 1; i < iterations; ++i) steady.push_back(s0[static_cast<size_t>(i)]["dur"].get<double>() * 1e-6);
  double mean = 0;
  for (double x : steady) mean += x / steady.size();
  EXPECT_NEAR(mean, rep.steady.step_time_s, 1e-9 * mean);
  EXPECT_NEAR(core::percentile(steady, 0.5), *rep.steady.step_time_p50_s, 1e-9 * mean);
  for (int i = 0; i < iterations; ++i) {
    EXPECT_NEAR(markers[static_cast<size_t>(i)]["ts"].get<double>(), s0[static_cast<size_t>(i)]["ts"].get<double>(),
                1e-9);
    EXPECT_EQ(markers[static_cast<size_t>(i)]["name"].get<std::string>(),
              "iteration " + std::to_string(rep.iteration1.iteration + i));
  }
  double compute0 = 0;
  for (const auto& k : kernels_of[0])
    if (k["ts"].get<double>() >= s0[1]["ts"].get<double>() - 1e-6) compute0 += k["dur"].get<double>() * 1e-6;
  // compute_only also holds the GPU's waits for DDP's own host work (no kernels: not in the trace).
  const double ddp_host = rep.steady.ddp_forward_host_s + rep.steady.ddp_hook_host_s + rep.steady.ddp_bucket_host_s;
  EXPECT_GT(ddp_host, 0.0);
  EXPECT_NEAR(compute0 / steps + ddp_host, rep.steady.compute_only_s, 1e-9 * compute0);

  // Jitter: the same layer takes a different time on different ranks in the same iteration
  // (lognormal factors with cv 0.2 are never equal).
  auto first_forward = [&](int r) {
    for (const auto& k : kernels_of[r])
      if (k["cat"] == "forward") return k["dur"].get<double>();
    return 0.0;
  };
  EXPECT_NE(first_forward(0), first_forward(1));
  // NCCL streams stay under rank 0 (a collective is one job for every rank).
  for (const auto& e : t["traceEvents"]) {
    if (e["ph"] == "X" && e["tid"] != 0) {
      EXPECT_EQ(e["pid"], 0);
    }
  }
}

TEST(TraceRanks, ManyRanksKeepRankZeroTheSlowestAndTheMedian) {
  // <= 64 ranks: every rank, no role.
  std::vector<std::vector<double>> f(2, std::vector<double>(64, 1.0));
  auto all = engine::select_traced_ranks(f, 64);
  ASSERT_EQ(all.size(), 64u);
  EXPECT_EQ(all[63].rank, 63);
  EXPECT_EQ(all[0].role, "");
  // 100 ranks: totals 2 x (1 + r/1000), rank 37 made the slowest; sorted by total the median
  // (index 49 of 100) is rank 50 (ranks 0..36 and 38..50 come first).
  f.assign(2, std::vector<double>(100, 1.0));
  for (int r = 0; r < 100; ++r)
    for (auto& step : f) step[static_cast<size_t>(r)] = 1.0 + r / 1000.0;
  f[0][37] = 3.0;
  auto sel = engine::select_traced_ranks(f, 100);
  ASSERT_EQ(sel.size(), 3u);
  EXPECT_EQ(sel[0].rank, 0);
  EXPECT_EQ(sel[0].role, "rank 0");
  EXPECT_EQ(sel[1].rank, 37);
  EXPECT_EQ(sel[1].role, "slowest");
  EXPECT_EQ(sel[2].rank, 50);
  EXPECT_EQ(sel[2].role, "median");
  // Equal factors: the slowest is the lowest rank among equals (0), the median the middle (49).
  f.assign(1, std::vector<double>(100, 1.0));
  sel = engine::select_traced_ranks(f, 100);
  ASSERT_EQ(sel.size(), 2u);
  EXPECT_EQ(sel[0].rank, 0);
  EXPECT_EQ(sel[0].role, "rank 0, slowest");
  EXPECT_EQ(sel[1].rank, 49);
  EXPECT_EQ(sel[1].role, "median");
}

TEST(TraceRanks, OneHundredTwentyEightRanksTraceRankZeroTheSlowestAndTheMedian) {
  // 16 nodes x 8 GPUs, rank 77 slowed by 1.5: every other rank has factor 1, so by total the
  // order is 0..76, 78..127, 77 and the median (index 63 of 128) is rank 63.
  Json doc{{"model", testing::synthetic_model(4, 1 << 18, 1e-3, 2e-3)},
           {"cluster", testing::cluster(16, 8, testing::link("nv", "nvlink", "240GBps", "3.4us"),
                                        testing::link("ib", "infiniband", "100Gbps", "14us"), 1)},
           {"collective", {{"model", "ring"}}},
           {"training", {{"batch_size", 1}}},
           {"simulation", {{"backend", "analytic"}}},
           {"contention", {{"enabled", false}}},
           {"stragglers", {{"slow_ranks", {{{"rank", 77}, {"factor", 1.5}}}}, {"steps", 2}}}};
  const auto rep = engine::simulate(testing::scenario(doc));
  const Json t = report::to_chrome_trace(rep);
  std::map<int, std::string> names;
  std::set<int> with_kernels;
  for (const auto& e : t["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name") names[e["pid"].get<int>()] = e["args"]["name"];
    if (e["ph"] == "X" && e["tid"] == 0) with_kernels.insert(e["pid"].get<int>());
  }
  EXPECT_EQ(with_kernels, (std::set<int>{0, 63, 77}));
  ASSERT_EQ(names.size(), 3u);
  EXPECT_NE(names[77].find("[slowest]"), std::string::npos) << names[77];
  EXPECT_NE(names[63].find("[median]"), std::string::npos) << names[63];
  EXPECT_EQ(names[0].find("["), std::string::npos) << names[0];
  // The slow rank's step spans are longer than rank 0's forward work by its factor: its first
  // forward kernel takes 1.5 x rank 0's.
  auto first_forward = [&](int r) {
    for (const auto& e : t["traceEvents"])
      if (e["ph"] == "X" && e["pid"] == r && e["cat"] == "forward") return e["dur"].get<double>();
    return 0.0;
  };
  EXPECT_NEAR(first_forward(77), 1.5 * first_forward(0), 1e-9 * first_forward(0));
}

}  // namespace
}  // namespace ddpsim
