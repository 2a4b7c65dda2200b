// ddp::plan_steps and the straggler jitter (no SimGrid).
#include <gtest/gtest.h>

#include <cmath>

#include "ddp/step_plan.hpp"

namespace ddpsim::ddp {
namespace {

config::Scenario two_param_scenario() {
  config::Scenario sc;
  sc.model.params.resize(2);
  for (auto& p : sc.model.params) p.numel = 1000;
  sc.model.grad_ready_order = {1, 0};
  sc.cluster.nodes = 2;
  sc.cluster.gpus_per_node = 2;
  return sc;
}

TEST(StepPlan, GradientAccumulationSyncsOnlyTheLastMicroStep) {
  auto sc = two_param_scenario();
  sc.training.gradient_accumulation_steps = 3;
  StepPlan p;
  plan_steps(p, sc, {}, 1, true);
  ASSERT_EQ(p.steps.size(), 6u);  // iteration 1 and one steady step, 3 micro-steps each
  for (size_t i = 0; i < p.steps.size(); ++i) {
    EXPECT_EQ(p.steps[i].sync, i % 3 == 2) << i;
    EXPECT_EQ(p.steps[i].last, i % 3 == 2) << i;
    EXPECT_EQ(p.steps[i].report, static_cast<int>(i / 3));
  }
  EXPECT_EQ(p.report_iteration, std::vector<int>({1, 2}));
  EXPECT_EQ(p.steps[0].buckets, &p.buckets.iteration1);
  EXPECT_EQ(p.steps[5].buckets, &p.buckets.steady_state);
}

TEST(StepPlan, StaticGraphSteadyStateIsIterationThree) {
  auto sc = two_param_scenario();
  sc.ddp.static_graph = true;
  StepPlan p;
  plan_steps(p, sc, {}, 1, true);
  EXPECT_EQ(p.report_iteration, std::vector<int>({1, 3}));
}

TEST(StepPlan, ExplicitRanksSimulateTheConfiguredStepsWithSlowRanks) {
  auto sc = two_param_scenario();
  sc.stragglers.slow_ranks = {{2, 1.5}};
  sc.stragglers.steps = 4;
  StepPlan p;
  plan_steps(p, sc, {}, 4, false);
  EXPECT_EQ(p.steady_steps, 4);
  ASSERT_EQ(p.factor.size(), 4u);
  for (const auto& f : p.factor) EXPECT_EQ(f, std::vector<double>({1.0, 1.0, 1.5, 1.0}));
}

TEST(Jitter, LognormalHasMeanOneAndTheRequestedSpread) {
  Jitter j(7);
  const int n = 200000;
  double sum = 0, sum2 = 0;
  for (int i = 0; i < n; ++i) {
    const double x = j.lognormal_mean_one(0.1);
    sum += x;
    sum2 += x * x;
  }
  const double mean = sum / n, sd = std::sqrt(sum2 / n - mean * mean);
  EXPECT_NEAR(mean, 1.0, 0.002);
  EXPECT_NEAR(sd / mean, 0.1, 0.002);
  EXPECT_EQ(Jitter(3).lognormal_mean_one(0.0), 1.0);
  EXPECT_EQ(Jitter(3).lognormal_mean_one(0.2), Jitter(3).lognormal_mean_one(0.2));  // deterministic per seed
}

}  // namespace
}  // namespace ddpsim::ddp
