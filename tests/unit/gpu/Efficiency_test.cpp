// Roofline efficiency by layer type and dtype, and calibration to a measured single-GPU step.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "gpu/compute_model.hpp"
#include "support/builders.hpp"

namespace ddpsim::gpu {
namespace {

using config::LayerType;

config::Scenario scenario() {
  config::Scenario s;
  s.model = test_support::synthetic_model({test_support::param("w", 1000)});
  s.model.layers[0].type = LayerType::LINEAR;
  s.model.layers[0].fwd_flops = 1e12;  // compute-bound: 1e12 / (100e12 * eff)
  s.model.layers[0].bwd_flops = 2e12;
  s.cluster.gpu.peak_flops = {{"float32", 100e12}, {"bfloat16", 400e12}};
  s.cluster.gpu.hbm_bandwidth = 1e12;
  s.compute.kernel_overhead = 0;
  s.training.batch_size = 1;
  return s;
}

TEST(Efficiency, DefaultsDependOnTheLayerType) {
  auto s = scenario();
  EXPECT_EQ(flops_efficiency_for(s, LayerType::LINEAR), 0.7);
  EXPECT_EQ(flops_efficiency_for(s, LayerType::MATMUL), 0.7);
  EXPECT_EQ(flops_efficiency_for(s, LayerType::CONV2D), 0.55);
  EXPECT_EQ(flops_efficiency_for(s, LayerType::BATCHNORM), 0.6);
  EXPECT_NEAR(build_compute_profile(s).forward[0].seconds, 1e12 / (100e12 * 0.7), 1e-15);
}

TEST(Efficiency, GpuFileThenScenarioGlobalThenScenarioPerTypeWin) {
  auto s = scenario();
  s.cluster.gpu.efficiency["float32"]["linear"] = 0.8;
  s.cluster.gpu.efficiency["bfloat16"]["linear"] = 0.5;
  EXPECT_EQ(flops_efficiency_for(s, LayerType::LINEAR), 0.8);
  s.training.compute_dtype = config::ComputeDtype::BFLOAT16;
  EXPECT_EQ(flops_efficiency_for(s, LayerType::LINEAR), 0.5);
  EXPECT_NEAR(build_compute_profile(s).forward[0].seconds, 1e12 / (400e12 * 0.5), 1e-15);
  s.compute.flops_efficiency = 0.3;
  s.compute.flops_efficiency_set = true;
  EXPECT_EQ(flops_efficiency_for(s, LayerType::LINEAR), 0.3);
  s.compute.flops_efficiency_by_type["linear"] = 0.9;
  EXPECT_EQ(flops_efficiency_for(s, LayerType::LINEAR), 0.9);
  EXPECT_EQ(flops_efficiency_for(s, LayerType::CONV2D), 0.3);
}

TEST(Efficiency, MeasuredSingleGpuStepScalesComputeToMatch) {
  auto s = scenario();
  const auto plain = build_compute_profile(s);
  const double sum = plain.forward_total + plain.backward_total + plain.optimizer.seconds;
  s.training.measured_single_gpu_step_s = 2 * sum;  // no input copy here (unknown input size)
  const auto cal = build_compute_profile(s);
  EXPECT_NEAR(cal.compute_scale, 2.0, 1e-12);
  EXPECT_NEAR(cal.forward_total + cal.backward_total + cal.optimizer.seconds, 2 * sum, 1e-15);
  EXPECT_NEAR(cal.forward[0].shape.compute_s, 2 * plain.forward[0].shape.compute_s, 1e-15);
}

TEST(Efficiency, MeasuredStepShorterThanTheInputCopyIsRefused) {
  auto s = scenario();
  s.file = "scn.json";
  s.training.input_bytes_per_sample = 1e9;  // 1 GB at 24 GB/s: 41.7 ms
  s.cluster.gpu.host_bandwidth = 24e9;
  s.training.measured_single_gpu_step_s = 1e-3;
  try {
    build_compute_profile(s);
    FAIL() << "expected ConfigError";
  } catch (const core::ConfigError& e) {
    EXPECT_TRUE(test_support::contains_all(e.what(), {"scn.json", "/training/measured_single_gpu_step", "0.001"}))
        << e.what();
  }
}

TEST(Efficiency, MeasuredOptimizerStepReplacesBothEstimatesAndIsNotRescaled) {
  auto s = scenario();
  s.training.zero_grad_set_to_none = false;
  const auto est = build_compute_profile(s);
  // Estimates: SGD with momentum moves 8 x 4 B per element (mul_, add_, add_), 1000 elements at
  // 1 TB/s x 0.8 (the default memory_efficiency): 40 ns; the zeroing writes 4 kB: 5 ns.
  EXPECT_NEAR(est.optimizer.seconds, 40e-9, 1e-15);
  EXPECT_NEAR(est.zero_grad.seconds, 5e-9, 1e-15);
  s.training.measured_optimizer_step_s = 3e-3;
  const auto m = build_compute_profile(s);
  EXPECT_EQ(m.optimizer.seconds, 3e-3);
  EXPECT_EQ(m.zero_grad.seconds, 0.0);
  // Forward 1e12 / (100e12 x 0.7) = 1/70 s, backward 2/70 s. A measured one-GPU step of
  // 6/70 s + 3 ms doubles the forward and backward and leaves the measured optimizer step as it is.
  s.training.measured_single_gpu_step_s = 6.0 / 70 + 3e-3;
  const auto cal = build_compute_profile(s);
  EXPECT_NEAR(cal.compute_scale, 2.0, 1e-12);
  EXPECT_EQ(cal.optimizer.seconds, 3e-3);
  EXPECT_NEAR(single_gpu_step(cal), 6.0 / 70 + 3e-3, 1e-15);
}

}  // namespace
}  // namespace ddpsim::gpu
