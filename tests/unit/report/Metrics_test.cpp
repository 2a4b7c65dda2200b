// report::metrics on hand-made timelines: each quantity against its definition (docs/design.md).
#include "report/metrics.hpp"

#include <gtest/gtest.h>

namespace ddpsim::report {
namespace {

// One rank, one synced micro-step from t = 10 s: compute-only 6 s, backward done at 15 s,
// bucket 0 runs 12-14 s, bucket 1 15-18 s (alone 2 and 2.5 s), finalize waits 3 s, step ends at 19 s.
Timeline one_step() {
  Timeline t;
  t.world_size = 8;
  t.batch_size = 4;
  t.report_iteration = {2};
  t.has_iteration1 = false;
  MicroStepInfo info;
  info.bucket_bytes = {100, 200};
  info.bucket_tensors = {1, 2};
  t.steps = {info};
  RankStepRecord rs;
  rs.start = 10;
  rs.end = 19;
  rs.fwd = 2;
  rs.bwd = 3;
  rs.opt = 1;
  rs.finalize_wait = 3;
  rs.compute_only = 6;
  rs.backward_done = 15;
  rs.ready = {11.5, 14.5};
  rs.launch = {12, 15};
  t.ranks = {{rs}};
  CollectiveRecord b0{true, 0, 12, 13, 14, 2, "Ring", "LL128", 8};
  CollectiveRecord b1{true, 1, 15, 16.5, 18, 2.5, "Tree", "Simple", 4};
  t.jobs = {{CollectiveRecord{}, b0, b1, CollectiveRecord{}}};
  return t;
}

TEST(Metrics, StepIsFromStartToEndAndExposedIsStepMinusComputeOnly) {
  const auto it = iteration_report(one_step(), 0);
  EXPECT_EQ(it.iteration, 2);
  EXPECT_DOUBLE_EQ(it.step_time_s, 9.0);
  EXPECT_DOUBLE_EQ(it.compute_only_s, 6.0);
  EXPECT_DOUBLE_EQ(it.exposed_comm_s, 3.0);
  EXPECT_DOUBLE_EQ(it.comm_alone_s, 4.5);
  EXPECT_DOUBLE_EQ(it.comm_busy_s, 5.0);
  ASSERT_TRUE(it.overlap_ratio.has_value());
  EXPECT_DOUBLE_EQ(*it.overlap_ratio, 1.0 - 3.0 / 4.5);
  EXPECT_DOUBLE_EQ(it.comm_exposed_s, 3.0);
  EXPECT_DOUBLE_EQ(it.comm_hidden_s, 2.0);
  EXPECT_DOUBLE_EQ(it.comm_alone_per_sample_s, 4.5 / 4);
  EXPECT_EQ(it.samples, 4);
}

TEST(Metrics, BucketRowsAreRelativeToTheIterationAndExposedAfterBackwardAndPredecessors) {
  const auto it = iteration_report(one_step(), 0);
  ASSERT_EQ(it.buckets.size(), 2u);
  EXPECT_DOUBLE_EQ(it.buckets[0].start_s, 2.0);
  EXPECT_DOUBLE_EQ(it.buckets[0].end_s, 4.0);
  EXPECT_DOUBLE_EQ(it.buckets[0].exposed_s, 0.0);  // ended before the backward did
  EXPECT_DOUBLE_EQ(it.buckets[1].rs_end_s, 6.5);
  EXPECT_DOUBLE_EQ(it.buckets[1].exposed_s, 3.0);  // 18 - max(15, 14)
  EXPECT_EQ(it.buckets[1].algorithm, "Tree");
  EXPECT_EQ(it.buckets[1].num_tensors, 2);
}

TEST(Metrics, NoCommunicationLeavesOverlapUndefined) {
  auto t = one_step();
  t.jobs = {{CollectiveRecord{}, CollectiveRecord{}, CollectiveRecord{}, CollectiveRecord{}}};
  t.steps[0].bucket_bytes.clear();
  t.steps[0].bucket_tensors.clear();
  EXPECT_FALSE(iteration_report(t, 0).overlap_ratio.has_value());
}

TEST(Metrics, ASlowLoaderSetsThePace) {
  auto t = one_step();
  t.loader_samples_per_s = 0.25;  // 4 samples need 16 s > 9 s
  const auto it = iteration_report(t, 0);
  EXPECT_DOUBLE_EQ(it.step_time_s, 16.0);
  EXPECT_DOUBLE_EQ(it.data_wait_s, 7.0);
  // The loader's 7 s are not communication: exposed comm stays the 16 - 7 - 6 = 3 s of the 9 s step
  // without the loader, and so does the overlap.
  EXPECT_DOUBLE_EQ(it.exposed_comm_s, 3.0);
  EXPECT_DOUBLE_EQ(*it.overlap_ratio, 1.0 - 3.0 / 4.5);
}

TEST(Metrics, StragglerWaitIsTheFinalizeWaitForTheSlowestBackward) {
  auto t = one_step();
  RankStepRecord slow = t.ranks[0][0];
  slow.backward_done = 16.2;  // rank 0 waits 1.2 s of its 3 s finalize for it
  t.ranks.push_back({slow});
  const auto it = iteration_report(t, 0);
  EXPECT_NEAR(it.straggler_wait_s, 1.2, 1e-12);
  EXPECT_NEAR(it.comm_exposed_s, 3.0 - 1.2, 1e-12);
}

TEST(Metrics, ManySteadyStepsReportTheirMeanAndNearestRankPercentiles) {
  Timeline t = one_step();
  t.steady_steps = 4;
  t.report_iteration = {2, 3, 4, 5};
  const auto base = t.steps[0];
  const auto rank = t.ranks[0][0];
  const auto jobs = t.jobs[0];
  t.steps.clear();
  t.ranks[0].clear();
  t.jobs.clear();
  const double lengths[] = {9, 11, 10, 14};
  double start = 10;
  for (int s = 0; s < 4; ++s) {
    auto info = base;
    info.report = s;
    t.steps.push_back(info);
    auto rs = rank;
    rs.start = start;
    rs.end = start + lengths[s];
    rs.ready = {start + 1.5, start + 4.5};
    rs.launch = {start + 2, start + 5};
    rs.backward_done = start + 5;
    t.ranks[0].push_back(rs);
    auto j = jobs;
    for (auto& c : j) {
      c.start += start - 10;
      c.rs_end += start - 10;
      c.end += start - 10;
    }
    t.jobs.push_back(j);
    start += lengths[s];
  }
  StepReport r;
  fill_iterations(t, r);
  EXPECT_DOUBLE_EQ(r.steady.step_time_s, 11.0);
  EXPECT_DOUBLE_EQ(*r.steady.step_time_p50_s, 10.0);
  EXPECT_DOUBLE_EQ(*r.steady.step_time_p95_s, 14.0);
  EXPECT_EQ(r.steady.steps_simulated, 4);
  EXPECT_EQ(r.steady_iteration, 5);
  EXPECT_DOUBLE_EQ(*r.steady.overlap_ratio, 1.0 - (11.0 - 6.0) / 4.5);
  EXPECT_FALSE(r.has_iteration1);
}

}  // namespace
}  // namespace ddpsim::report
