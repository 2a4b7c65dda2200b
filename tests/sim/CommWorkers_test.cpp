// streams.comm_workers: a collective stream served by several workers, as ProcessGroupGloo's
// thread pool (torch/csrc/distributed/c10d/ProcessGroupGloo.cpp: every worker runs runLoop, which
// pops the front of the one workQueue_). Jobs start in queue order, each on whichever worker is
// free first; with one worker a job starts when the one before it ends.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "app/commands.hpp"
#include "config/overrides.hpp"
#include "engine/simulation.hpp"
#include "report/report.hpp"
#include "sim/sim_builders.hpp"

namespace ddpsim {
namespace {

using testing::Json;

// 3 layers of 4 Mi float32 (16 MiB) gradients, one bucket each (a tensor over the cap closes its
// bucket), computed in 1 us each: the three buckets are ready within microseconds of each other
// and each all-reduce takes milliseconds. One node of 4 GPUs, ring model, no contention.
Json three_buckets(int workers, const std::string& backend) {
  return Json{{"model", testing::synthetic_model(3, 4 << 20, 1e-6, 1e-6)},
              {"cluster", testing::cluster(1, 4, testing::link("pcie", "pcie", "16GBps", "5us"),
                                           testing::link("ib", "infiniband", "100Gbps", "14us"), 1)},
              {"collective", {{"model", "ring"}}},
              {"ddp", {{"bucket_cap_mb", 1}}},
              {"training", {{"batch_size", 1}}},
              {"contention", {{"enabled", false}}},
              {"streams", {{"comm_workers", workers}}},
              {"simulation", {{"backend", backend}}}};
}

const Json& buckets(const Json& report) { return report["buckets"]; }
double at(const Json& b, size_t i, const char* k) { return b[i][k].get<double>(); }

TEST(CommWorkers, TwoWorkersStartTheSecondBucketAtItsLaunchAndTheThirdWhenTheFirstEnds) {
  const auto r = testing::simulate_in_children(
      {testing::scenario(three_buckets(1, "analytic")), testing::scenario(three_buckets(2, "analytic"))});
  ASSERT_EQ(r.size(), 2u);
  const Json& one = buckets(r[0]);
  const Json& two = buckets(r[1]);
  ASSERT_EQ(one.size(), 3u);
  ASSERT_EQ(two.size(), 3u);
  const double t = at(one, 0, "alone_s");
  ASSERT_GT(t, 1e-3);  // bandwidth-bound: 2 x 3/4 x 16 MiB over 16 GB/s, about 1.6 ms
  for (size_t i = 0; i < 3; ++i) {
    // Analytic backend: a collective takes its time alone whatever else runs.
    EXPECT_NEAR(at(one, i, "end_s") - at(one, i, "start_s"), at(one, i, "alone_s"), 1e-12);
    EXPECT_NEAR(at(two, i, "end_s") - at(two, i, "start_s"), at(two, i, "alone_s"), 1e-12);
    EXPECT_NEAR(at(two, i, "alone_s"), t, 1e-12);
  }
  // One worker: each bucket waits for the one before it.
  EXPECT_NEAR(at(one, 1, "start_s"), at(one, 0, "end_s"), 1e-12);
  EXPECT_NEAR(at(one, 2, "start_s"), at(one, 1, "end_s"), 1e-12);
  // Two workers: the second bucket starts when it is launched (the second worker is free), the
  // third when the first worker is done with the first bucket.
  EXPECT_LT(at(two, 1, "launch_s"), at(two, 0, "end_s"));
  EXPECT_NEAR(at(two, 1, "start_s"), at(two, 1, "launch_s"), 1e-12);
  EXPECT_NEAR(at(two, 2, "start_s"), at(two, 0, "end_s"), 1e-12);
  // The last all-reduce ends at the first one's start + 3 t with one worker and + 2 t with two
  // (the second's, launched earlier, ends before): the step is one bucket's time shorter.
  const double saved = r[0]["step_time_s"].get<double>() - r[1]["step_time_s"].get<double>();
  EXPECT_NEAR(at(one, 0, "start_s"), at(two, 0, "start_s"), 1e-12);
  EXPECT_NEAR(saved, t, 1e-9);
}

TEST(CommWorkers, ConcurrentCollectivesShareTheLinksOnTheFlowBackend) {
  // Two bandwidth-bound all-reduces at once on the same ring: each gets about half the links, so
  // each takes nearly twice its time alone and the pair ends no earlier than one after the other.
  const auto r = testing::simulate_in_children(
      {testing::scenario(three_buckets(1, "flow")), testing::scenario(three_buckets(2, "flow"))});
  ASSERT_EQ(r.size(), 2u);
  const Json& two = buckets(r[1]);
  ASSERT_EQ(two.size(), 3u);
  const double t = at(two, 0, "alone_s");
  EXPECT_GT(at(two, 0, "end_s") - at(two, 0, "start_s"), 1.8 * t);
  EXPECT_LT(at(two, 0, "end_s") - at(two, 0, "start_s"), 2.0 * t + 1e-9);
  // Only the latencies overlap: the step is at most 3 ring latencies per bucket faster, never slower.
  const double one_step = r[0]["step_time_s"].get<double>();
  const double two_step = r[1]["step_time_s"].get<double>();
  EXPECT_LE(two_step, one_step + 1e-12);
  EXPECT_LT(one_step - two_step, 0.02 * one_step);
}

TEST(CommWorkers, TheTraceHasATrackPerWorkerAndNoWorkerRunsTwoJobsAtOnce) {
  engine::RunOptions opt;
  opt.collect_trace = true;
  const auto rep = engine::simulate(testing::scenario(three_buckets(2, "analytic")), opt);
  const Json t = report::to_chrome_trace(rep);
  std::map<int, std::string> names;
  std::map<int, std::vector<std::pair<double, double>>> jobs;  // tid -> all-reduce spans of rank 0
  for (const auto& e : t["traceEvents"]) {
    if (e["pid"] != 0) continue;
    if (e["ph"] == "M" && e["name"] == "thread_name") names[e["tid"].get<int>()] = e["args"]["name"];
    if (e["ph"] == "X" && e["cat"] == "allreduce")
      jobs[e["tid"].get<int>()].push_back({e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>()});
  }
  EXPECT_EQ(names[0], "compute stream");
  // The ring model (as validate's gloo runs) names its tracks "collective stream", not NCCL's.
  EXPECT_EQ(names[1], "collective stream 0 worker 0");
  EXPECT_EQ(names[2], "collective stream 0 worker 1");
  EXPECT_EQ(jobs.size(), 2u);  // both workers ran all-reduces
  for (auto& [tid, spans] : jobs) {
    std::sort(spans.begin(), spans.end());
    for (size_t i = 1; i < spans.size(); ++i) EXPECT_LE(spans[i - 1].second, spans[i].first + 1e-6) << "tid " << tid;
  }
}

TEST(CommWorkers, SeveralWorkersOnAnNcclModelAreWarnedAbout) {
  Json doc = three_buckets(2, "analytic");
  EXPECT_TRUE(app::scenario_warnings(testing::scenario(doc)).empty());  // ring: gloo's pool
  doc["collective"]["model"] = "nccl";
  bool warned = false;
  for (const auto& w : app::scenario_warnings(testing::scenario(doc)))
    warned = warned || w.find("streams.comm_workers 2") != std::string::npos;
  EXPECT_TRUE(warned);
  doc["streams"]["comm_workers"] = 1;
  EXPECT_TRUE(app::scenario_warnings(testing::scenario(doc)).empty());
}

}  // namespace
}  // namespace ddpsim
