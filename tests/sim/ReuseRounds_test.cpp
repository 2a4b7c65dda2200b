// Reused rounds (network/flow.hpp): with one NCCL stream an every-flow round starts on an idle
// network, so a later round is the kept round's max-min solution scaled by its bytes. Each case
// runs the same scenario with simulation.reuse_rounds on and off (every round simulated flow by
// flow): the reports must agree to 1e-9 in every figure (step times, bucket times, link bytes and
// busy times), the flows simulated plus the flows reused must equal the flows of the run that
// reused nothing, and reuse must have happened. Where phases may overlap (two NCCL streams) or the
// trace needs SimGrid's time steps, nothing may be reused.
#include <gtest/gtest.h>

#include <cmath>
#include <initializer_list>
#include <string>
#include <vector>

#include "app/sweep.hpp"
#include "engine/simulation.hpp"
#include "report/report.hpp"
#include "sim_builders.hpp"

namespace ddpsim {
namespace {

using core::Json;

int compare(const Json& a, const Json& b, const std::string& path) {
  int diffs = 0;
  if (a.is_object()) {
    for (const auto& [k, v] : a.items())
      if (k != "flows" && k != "flows_reused") {
        if (!b.contains(k)) {
          ADD_FAILURE() << path << "/" << k << " missing";
          ++diffs;
          continue;
        }
        diffs += compare(v, b.at(k), path + "/" + k);
      }
  } else if (a.is_array()) {
    if (a.size() != b.size()) {
      ADD_FAILURE() << path << ": " << a.size() << " vs " << b.size() << " elements";
      return 1;
    }
    for (size_t i = 0; i < a.size(); ++i) diffs += compare(a[i], b[i], path + "/" + std::to_string(i));
  } else if (a.is_number() && b.is_number()) {
    const double x = a.get<double>(), y = b.get<double>();
    if (std::abs(x - y) > 1e-9 * std::max(std::abs(x), std::abs(y)) + 1e-12) {
      ADD_FAILURE() << path << ": reused " << x << ", every round simulated " << y;
      ++diffs;
    }
  } else if (a != b) {
    ADD_FAILURE() << path << ": " << a.dump() << " vs " << b.dump();
    ++diffs;
  }
  return diffs;
}

// {reuse on, reuse off} reports of the scenario with the overrides (ranks "all" added).
std::vector<Json> both(const std::string& scenario, std::vector<std::string> ov, bool trace = false,
                       bool iteration1 = true) {
  config::Catalog cat(config::Catalog::default_root());
  ov.push_back("simulation.ranks=all");
  auto on = cat.load_scenario("scenarios/" + scenario + ".json", ov);
  auto off = on;
  EXPECT_TRUE(on.simulation.reuse_rounds);  // the default
  off.simulation.reuse_rounds = false;
  std::vector<std::function<Json()>> work;
  for (const auto& sc : {on, off})
    work.push_back([sc, trace, iteration1] {
      engine::RunOptions opt;
      opt.collect_trace = trace;
      opt.simulate_iteration1 = iteration1;
      return report::to_json(engine::simulate(sc, opt));
    });
  std::vector<Json> out;
  for (auto& r : app::run_in_children(work, 2)) {
    EXPECT_TRUE(r.ok) << r.error;
    out.push_back(r.value);
  }
  return out;
}

void expect_reused_and_equal(const std::string& scenario, const std::vector<std::string>& ov, bool iteration1 = true) {
  const auto r = both(scenario, ov, false, iteration1);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(compare(r[0], r[1], ""), 0);
  const double flows = r[0]["flows"].get<double>(), reused = r[0]["flows_reused"].get<double>();
  EXPECT_GT(reused, 0.0) << "no round was reused";
  EXPECT_GT(flows, 0.0) << "the kept round was never simulated";
  EXPECT_EQ(flows + reused, r[1]["flows"].get<double>());
  EXPECT_EQ(r[1]["flows_reused"].get<double>(), 0.0);
  EXPECT_GT(r[0]["step_time_s"].get<double>(), 0.0);
}

// An ECMP fat-tree (2 servers per leaf, 2:1 leaf uplinks) with `more` settings.
std::vector<std::string> ecmp(std::initializer_list<const char*> more = {}) {
  std::vector<std::string> ov = {"fabric.topology=fat_tree", "fabric.nics_per_leaf=16", "fabric.oversubscription=2:1",
                                 "fabric.routing=ecmp", "fabric.routing_seed=7"};
  ov.insert(ov.end(), more.begin(), more.end());
  return ov;
}

TEST(ReuseRounds, SingleSwitchEveryHopEqualsEveryRoundSimulated) { expect_reused_and_equal("gpt2-4x8-h100-ndr", {}); }

TEST(ReuseRounds, StepwiseRoundsEqual) {
  expect_reused_and_equal("resnet50-2x8-a100-hdr", {"simulation.fidelity=stepwise"});
}

TEST(ReuseRounds, EcmpFatTreeEveryFlowEqual) {
  // 8 nodes over 4 leaves, ECMP collisions: flows of unequal rates.
  expect_reused_and_equal("gpt2-4x8-h100-ndr", ecmp({"nodes=8"}));
}

TEST(ReuseRounds, SmallerKeptRoundScaledUpEqual) {
  // Without iteration 1 (as `ddpsim bench` runs) GPT-2's first bucket (9 MiB; its phases over
  // 100 us on 8 nodes) is kept, and the later 27 MiB buckets and the 168 MiB embedding bucket
  // are it scaled up 3x and 18.7x.
  expect_reused_and_equal("gpt2-4x8-h100-ndr", ecmp({"nodes=8"}), false);
  expect_reused_and_equal("gpt2-4x8-h100-ndr", {}, false);
}

TEST(ReuseRounds, BackgroundLoadAndRandomPlacementEqual) {
  expect_reused_and_equal("bert-base-2x8-v100-edr",
                          ecmp({"nodes=6", "fabric.background_load=0.4", "fabric.placement=random",
                                "fabric.placement_seed=3", "collective.NCCL_CROSS_NIC=1"}));
}

TEST(ReuseRounds, ExplicitRanksAndContentionEqual) {
  // Jitter: every rank's compute simulated, collectives still one at a time on one stream.
  expect_reused_and_equal("gpt2-4x8-h100-ndr", ecmp({"nodes=4", "stragglers.jitter_cv=0.1", "stragglers.steps=3",
                                                     "contention.enabled=true"}));
}

TEST(ReuseRounds, ZeroBroadcastsEqual) {
  expect_reused_and_equal("gpt2-4x8-h100-ndr", ecmp({"training.zero_redundancy_optimizer=true"}));
}

TEST(ReuseRounds, NothingReusedWithTwoStreams) {
  // Two NCCL streams may run phases at once: a round no longer starts on an idle network.
  const auto r =
      both("bert-base-2x8-v100-edr", ecmp({"streams.comm_streams=2", "ddp.bucket_cap_mb=5", "training.batch_size=1"}));
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0]["flows_reused"].get<double>(), 0.0);
  EXPECT_EQ(compare(r[0], r[1], ""), 0);
}

TEST(ReuseRounds, NothingReusedWithTheTrace) {
  // The utilisation counters are fed by SimGrid's time steps of flows in flight.
  const auto r = both("gpt2-4x8-h100-ndr", ecmp(), true);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0]["flows_reused"].get<double>(), 0.0);
  EXPECT_EQ(r[0]["flows"].get<double>(), r[1]["flows"].get<double>());
}

}  // namespace
}  // namespace ddpsim
