// report::explain_iteration1: names why iteration 1 is faster than the steady state, term by term
// (step = compute_only + contention + straggler_wait + comm_exposed + data_wait), hand-built reports.
#include <gtest/gtest.h>

#include "report/metrics.hpp"

namespace ddpsim::report {
namespace {

StepReport base() {
  StepReport r;
  r.has_iteration1 = true;
  r.iteration1.compute_only_s = r.steady.compute_only_s = 0.100;
  r.iteration1.comm_exposed_s = 0.010;  // one bucket after the backward: all of it exposed
  r.iteration1.comm_alone_s = 0.010;
  r.iteration1.buckets.resize(1);
  r.steady.buckets.resize(20);
  return r;
}

void sum(IterationReport& it) {
  it.step_time_s = it.compute_only_s + it.contention_s + it.straggler_wait_s + it.comm_exposed_s + it.data_wait_s;
}

TEST(ExplainIteration1, SlowerIterationOneNeedsNoReason) {
  StepReport r = base();
  r.steady.comm_alone_s = 0.012;
  r.steady.comm_exposed_s = 0.002;  // overlap hides most of it
  sum(r.iteration1);
  sum(r.steady);
  explain_iteration1(r);
  EXPECT_TRUE(r.iteration1_faster_because.empty());
}

TEST(ExplainIteration1, DdpHostWorkPerBucketIsNamed) {
  // One GPU: no communication; 20 buckets cost 20 x 8.67 us of host work the GPU waits for, one
  // bucket 8.67 us (part of compute_only): iteration 1 is 19 x 8.67 us faster.
  StepReport r = base();
  r.iteration1.comm_exposed_s = r.iteration1.comm_alone_s = 0;
  r.iteration1.ddp_bucket_host_s = 8.67e-6;
  r.steady.ddp_bucket_host_s = 20 * 8.67e-6;
  r.steady.compute_only_s += 19 * 8.67e-6;
  sum(r.iteration1);
  sum(r.steady);
  explain_iteration1(r);
  EXPECT_NE(r.iteration1_faster_because.find("DDP's host work for the steady state's 20 bucket(s)"), std::string::npos)
      << r.iteration1_faster_because;
  // Less host work than the difference: not explained.
  r.steady.ddp_bucket_host_s = 10 * 8.67e-6;
  explain_iteration1(r);
  EXPECT_TRUE(r.iteration1_faster_because.empty());
}

TEST(ExplainIteration1, LatencyDominatedBucketsAreNamed) {
  StepReport r = base();
  r.steady.comm_alone_s = 0.040;  // 20 buckets pay the per-call latency
  r.steady.comm_exposed_s = 0.015;
  sum(r.iteration1);
  sum(r.steady);
  explain_iteration1(r);
  EXPECT_NE(r.iteration1_faster_because.find("20 bucket(s)"), std::string::npos) << r.iteration1_faster_because;
  EXPECT_NE(r.iteration1_faster_because.find("latency"), std::string::npos);
}

TEST(ExplainIteration1, ContentionIsNamed) {
  StepReport r = base();
  r.steady.comm_alone_s = 0.010;
  r.steady.comm_exposed_s = 0.001;
  r.steady.contention_s = 0.020;  // overlapped NCCL kernels slow the backward
  sum(r.iteration1);
  sum(r.steady);
  explain_iteration1(r);
  EXPECT_NE(r.iteration1_faster_because.find("slows compute kernels"), std::string::npos);
}

TEST(ExplainIteration1, UnnamedCauseLeavesItEmpty) {
  // Faster because of less compute in iteration 1: not a named mechanism, so no explanation (the
  // property test in tests/sim/Iteration1_test.cpp would then fail).
  StepReport r = base();
  r.iteration1.compute_only_s = 0.050;
  r.steady.comm_alone_s = 0.012;
  r.steady.comm_exposed_s = 0.002;
  sum(r.iteration1);
  sum(r.steady);
  explain_iteration1(r);
  EXPECT_TRUE(r.iteration1_faster_because.empty());
}

TEST(ExplainIteration1, NamedMechanismMustCoverTheWholeDifference) {
  // Contention covers 5 ms of a 30 ms difference; the rest is compute: no explanation.
  StepReport r = base();
  r.iteration1.compute_only_s = 0.065;
  r.steady.comm_alone_s = 0.010;
  r.steady.comm_exposed_s = 0.0;
  r.steady.contention_s = 0.005;
  sum(r.iteration1);
  sum(r.steady);
  ASSERT_LT(r.iteration1.step_time_s, r.steady.step_time_s);
  explain_iteration1(r);
  EXPECT_TRUE(r.iteration1_faster_because.empty());
}

}  // namespace
}  // namespace ddpsim::report
