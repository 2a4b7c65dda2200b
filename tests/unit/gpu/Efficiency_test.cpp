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

}  // namespace
}  // namespace ddpsim::gpu
