// Representative flow classes (simulation.ranks "representative", the default) against every
// rank's flows ("all"): on the single-switch fabric each link carries one hop of a collective, so
// both must give the same report to 1e-9, also with concurrent collectives (two NCCL streams),
// stepwise rounds, explicit ranks and contention. Only the number of flows differs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "sim_builders.hpp"

namespace ddpsim {
namespace {

using core::Json;

void expect_equal(const Json& a, const Json& b, const std::string& path, int& diffs) {
  if (a.is_object()) {
    for (const auto& [k, v] : a.items())
      if (k != "flows" && k != "ranks") expect_equal(v, b.at(k), path + "/" + k, diffs);
  } else if (a.is_array()) {
    ASSERT_EQ(a.size(), b.size()) << path;
    for (size_t i = 0; i < a.size(); ++i) expect_equal(a[i], b[i], path + "/" + std::to_string(i), diffs);
  } else if (a.is_number() && b.is_number()) {
    const double x = a.get<double>(), y = b.get<double>();
    if (std::abs(x - y) > 1e-9 * std::max(std::abs(x), std::abs(y)) + 1e-15) {
      ++diffs;
      ADD_FAILURE() << path << ": representative " << x << ", all " << y;
    }
  } else {
    EXPECT_EQ(a, b) << path;
  }
}

struct ModeCase {
  std::string scenario;
  std::vector<std::string> overrides;
};

void check(const ModeCase& c) {
  config::Catalog cat(config::Catalog::default_root());
  auto rep = cat.load_scenario("scenarios/" + c.scenario + ".json", c.overrides);
  auto all = rep;
  ASSERT_EQ(rep.simulation.ranks, config::RankMode::REPRESENTATIVE);
  all.simulation.ranks = config::RankMode::ALL;
  auto out = testing::simulate_in_children({rep, all});
  ASSERT_EQ(out.size(), 2u);
  int diffs = 0;
  expect_equal(out[0], out[1], "", diffs);
  EXPECT_EQ(diffs, 0);
  // Every hop is a flow in `all`: N per round instead of one per hop class.
  const int world = out[0]["world_size"].get<int>();
  if (world > 2) {
    EXPECT_GT(out[1]["flows"].get<double>(), out[0]["flows"].get<double>());
  }
}

TEST(RankModes, RepresentativeEqualsAllOnOneNode) { check({"bert-base-1x8-a100-contention", {}}); }
TEST(RankModes, RepresentativeEqualsAllAcrossNodes) { check({"resnet50-2x8-a100-hdr", {}}); }
TEST(RankModes, RepresentativeEqualsAllWithTwoConcurrentStreams) {
  check({"gpt2-4x8-h100-ndr", {"streams.comm_streams=2", "training.batch_size=2"}});
}
TEST(RankModes, RepresentativeEqualsAllWhenTwoStreamsRunPhasesAtOnce) {
  // EDR between the nodes, 5 MiB buckets, batch 1: the collectives queue up and the two NCCL streams
  // run phases at the same time (checked below), each on its own set of hop actors.
  check({"bert-base-2x8-v100-edr", {"streams.comm_streams=2", "ddp.bucket_cap_mb=5", "training.batch_size=1"}});
  config::Catalog cat(config::Catalog::default_root());
  auto sc = cat.load_scenario("scenarios/bert-base-2x8-v100-edr.json",
                              {"streams.comm_streams=2", "ddp.bucket_cap_mb=5", "training.batch_size=1"});
  sc.simulation.ranks = config::RankMode::ALL;
  auto out = testing::simulate_in_children({sc});
  ASSERT_EQ(out.size(), 1u);
  const auto& b = out[0]["buckets"];
  bool overlap = false;
  for (size_t i = 0; i + 1 < b.size(); ++i)
    if (b[i + 1]["start_s"].get<double>() < b[i]["end_s"].get<double>()) overlap = true;
  EXPECT_TRUE(overlap) << "no two consecutive buckets' collectives overlapped";
}
TEST(RankModes, RepresentativeEqualsAllStepwise) {
  check({"bert-base-2x8-v100-edr", {"simulation.fidelity=stepwise"}});
}
TEST(RankModes, RepresentativeEqualsAllWithExplicitRanks) {
  check({"resnet50-2x8-a100-hdr", {"stragglers.jitter_cv=0.1", "stragglers.steps=3"}});
}
TEST(RankModes, RepresentativeEqualsAllWithOneGpuPerNode) {
  check({"default", {"nodes=4", "gpus_per_node=1", "cluster=hgx-a100-1hdr"}});
}
TEST(RankModes, RepresentativeEqualsAllWithoutContention) {
  check({"bert-base-2x8-v100-edr", {"contention.enabled=false", "ddp.bucket_cap_mb=5"}});
}

// Explicit ranks give every rank a compute-stream actor, and SimGrid maps a stack and a guard page
// per actor: past vm.max_map_count SimGrid would abort ("Failed to protect stack"), so the run is
// refused before it starts, naming the setting (engine/simulation.cpp check_actor_mappings).
TEST(RankModes, ActorsPastTheMappingLimitAreRefusedBeforeTheRun) {
  long long max_maps = 0;
  if (std::FILE* f = std::fopen("/proc/sys/vm/max_map_count", "r")) {
    if (std::fscanf(f, "%lld", &max_maps) != 1) max_maps = 0;
    std::fclose(f);
  }
  if (max_maps <= 0 || max_maps > 1000000) GTEST_SKIP() << "vm.max_map_count " << max_maps;
  // 8 GPUs per node: more than max_maps / 2 compute streams.
  const long long nodes = max_maps / 16 + 1;
  config::Catalog cat(config::Catalog::default_root());
  const auto sc = cat.load_scenario(
      "scenarios/default.json",
      {"nodes=" + std::to_string(nodes), "stragglers.jitter_cv=0.1", "stragglers.steps=1", "limits.max_seconds=1e9"});
  ASSERT_EQ(sc.cluster.gpus_per_node, 8);
  std::vector<std::function<Json()>> work{[sc] {
    engine::RunOptions opt;
    opt.simulate_iteration1 = false;
    opt.collect_trace = false;
    return report::to_json(engine::simulate(sc, opt));
  }};
  const auto r = app::run_in_children(work, 1);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_FALSE(r[0].ok) << "ran";
  EXPECT_NE(r[0].error.find("vm.max_map_count"), std::string::npos) << r[0].error;
  EXPECT_NE(r[0].error.find("/simulation/ranks"), std::string::npos) << r[0].error;
}

}  // namespace
}  // namespace ddpsim
