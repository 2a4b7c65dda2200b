// validate::compare_steps on hand-made measured and predicted cases (no simulation).
#include <gtest/gtest.h>

#include "validate/bench_results.hpp"

namespace ddpsim::validate {
namespace {

using core::Json;

Json predicted(double step, double ddp_overhead) {
  return {{"step_time_s", step}, {"exposed_comm_s", 0.0},    {"overlap_ratio", nullptr},      {"compute_only_s", step},
          {"num_buckets", 0},    {"buckets", Json::array()}, {"ddp_overhead_s", ddp_overhead}};
}

TEST(BenchResults, OneRankComparesDdpOverNoDdpMeasuredAndPredicted) {
  Plan p;
  p.file = "r.json";
  p.mode = "step";
  p.ranks = 1;
  StepCase c;
  c.label = "default";
  c.measured = {{"step_time_s", 0.110}, {"no_ddp_step_time_s", 0.100}};
  p.steps.push_back(c);
  // Measured: 110 / 100 - 1 = 10 %. Predicted: 105 ms with 5 ms of DDP's own work: 105 / 100 - 1 = 5 %.
  const auto r = compare_steps(p, {predicted(0.105, 0.005)}, 0.10);
  const Json& o = r.doc["cases"][0]["ddp_overhead"];
  EXPECT_NEAR(o["measured"].get<double>(), 0.10, 1e-12);
  EXPECT_NEAR(o["predicted"].get<double>(), 0.05, 1e-12);
  EXPECT_NEAR(o["error_points"].get<double>(), -5.0, 1e-9);
  EXPECT_NEAR(r.doc["median_abs_ddp_overhead_error"].get<double>(), 0.05, 1e-12);
  EXPECT_NE(r.text.find("DDP over no DDP: measured 10.00 %, predicted 5.00 %"), std::string::npos) << r.text;
  // Step error (105 - 110) / 110 = -4.5 %: within 10 %.
  EXPECT_EQ(r.status, 0);
}

TEST(BenchResults, WithoutNoDdpStepsOrWithSeveralRanksThereIsNoOverheadRow) {
  Plan p;
  p.file = "r.json";
  p.mode = "step";
  p.ranks = 1;
  StepCase c;
  c.label = "1";
  c.measured = {{"step_time_s", 0.110}};
  p.steps.push_back(c);
  auto r = compare_steps(p, {predicted(0.105, 0.005)}, 0.10);
  EXPECT_TRUE(r.doc["cases"][0]["ddp_overhead"].is_null());
  EXPECT_FALSE(r.doc.contains("median_abs_ddp_overhead_error"));
  // Two ranks: communication separates the two steps as well; no overhead row.
  p.ranks = 2;
  p.steps[0].measured["no_ddp_step_time_s"] = 0.100;
  r = compare_steps(p, {predicted(0.105, 0.005)}, 0.10);
  EXPECT_TRUE(r.doc["cases"][0]["ddp_overhead"].is_null());
}

}  // namespace
}  // namespace ddpsim::validate
