// Unit tests for per-layer compute times (sim/gpu/compute_model.*): roofline max(compute, memory) +
// overhead, measured times scaled by batch, DDP copy costs and the optimizer step. Expected values
// are worked out by hand from the inputs in each test.
#include <gtest/gtest.h>

#include <vector>

#include "config/specs.hpp"
#include "gpu/compute_model.hpp"
#include "support/builders.hpp"

using ddpsim::config::ComputeSettings;
using ddpsim::config::DType;
using ddpsim::config::LayerSpec;
using ddpsim::config::Scenario;
using ddpsim::gpu::build_compute_profile;
using ddpsim::gpu::optimizer_bytes_per_element;
using ddpsim::gpu::roofline_time;
using ddpsim::test_support::param;

namespace {

constexpr double kTol = 1e-15;

ComputeSettings settings(double flops_eff, double mem_eff, double overhead) {
  ComputeSettings s;
  s.flops_efficiency = flops_eff;
  s.flops_efficiency_set = true;
  s.memory_efficiency = mem_eff;
  s.kernel_overhead = overhead;
  return s;
}

// Model (profile batch 2): p0 float32 x1000 (4000 B), p1 float32 x250 (1000 B), p2 float16 x500
// (1000 B, frozen). Layer 0 owns p0, p1 and has only counts; layer 1 owns p2 and has measured times.
// GPU: float32 10 TFLOPS, bfloat16 100 TFLOPS, HBM 1e12 B/s. Efficiencies 0.5 (FLOPs), 0.8 (HBM),
// overhead 2 us. Training batch 8 -> scale 4.
Scenario scenario() {
  Scenario s;
  s.model.batch_size = 2;
  s.model.params = {param("w", 1000, DType::FLOAT32), param("b", 250, DType::FLOAT32),
                    param("frozen", 500, DType::FLOAT16, false)};
  LayerSpec l0;
  l0.name = "fc";
  l0.params = {0, 1};
  l0.fwd_flops = 2e9;
  l0.bwd_flops = 4e9;
  l0.fwd_bytes = 1e6;
  l0.bwd_bytes = 2e6;
  LayerSpec l1;
  l1.name = "measured";
  l1.params = {2};
  l1.fwd_flops = 1e9;
  l1.bwd_flops = 2e9;
  l1.fwd_time = 1e-3;
  l1.bwd_time = 2e-3;
  s.model.layers = {l0, l1};
  s.model.grad_ready_order = {1, 0};
  s.cluster.gpu.name = "testgpu";
  s.cluster.gpu.peak_flops = {{"float32", 10e12}, {"bfloat16", 100e12}};
  s.cluster.gpu.hbm_bandwidth = 1e12;
  s.compute = settings(0.5, 0.8, 2e-6);
  s.training.batch_size = 8;
  s.training.compute_dtype = ddpsim::config::ComputeDtype::FLOAT32;
  s.training.optimizer = "sgd";
  s.training.optimizer_impl = "foreach";
  return s;
}

}  // namespace

TEST(ComputeModel, RooflineComputeBound) {
  // compute 1e12 / (10e12 * 0.5) = 0.2 s; memory 1e9 / (1e12 * 0.5) = 2 ms.
  EXPECT_NEAR(roofline_time(1e12, 1e9, 10e12, 1e12, settings(0.5, 0.5, 2e-6)), 0.2 + 2e-6, kTol);
}

TEST(ComputeModel, RooflineMemoryBound) {
  // compute 1e9 / 5e12 = 0.2 ms; memory 1e9 / (1e12 * 0.8) = 1.25 ms.
  EXPECT_NEAR(roofline_time(1e9, 1e9, 10e12, 1e12, settings(0.5, 0.8, 3e-6)), 1.25e-3 + 3e-6, kTol);
}

TEST(ComputeModel, RooflineIsOverheadForEmptyKernelAndZeroRates) {
  EXPECT_DOUBLE_EQ(roofline_time(0, 0, 10e12, 1e12, settings(0.5, 0.8, 5e-6)), 5e-6);
  // A zero peak or bandwidth drops that term instead of dividing by zero.
  EXPECT_NEAR(roofline_time(1e9, 1e9, 0, 1e12, settings(0.5, 0.8, 0)), 1.25e-3, kTol);
  EXPECT_NEAR(roofline_time(1e9, 1e9, 10e12, 0, settings(0.5, 0.8, 0)), 2e-4, kTol);
}

TEST(ComputeModel, OptimizerBytesPerElement) {
  // SGD with momentum: 5 tensors of the element size; Adam/AdamW: 7.
  EXPECT_DOUBLE_EQ(optimizer_bytes_per_element("sgd", 4), 20.0);
  EXPECT_DOUBLE_EQ(optimizer_bytes_per_element("sgd", 2), 10.0);
  EXPECT_DOUBLE_EQ(optimizer_bytes_per_element("adam", 4), 28.0);
  EXPECT_DOUBLE_EQ(optimizer_bytes_per_element("adamw", 4), 28.0);
  EXPECT_DOUBLE_EQ(optimizer_bytes_per_element("adamw", 2), 14.0);
}

TEST(ComputeModel, RooflineLayersScaleWithBatchAndAddParameterTraffic) {
  const auto p = build_compute_profile(scenario());
  ASSERT_EQ(p.forward.size(), 2u);
  ASSERT_EQ(p.backward.size(), 2u);
  EXPECT_DOUBLE_EQ(p.peak_flops, 10e12);
  EXPECT_EQ(p.compute_dtype, "float32");
  // Layer 0 forward: 4 * 2e9 FLOPs / 5e12 = 1.6 ms vs (4e6 + 5000 param bytes) / 8e11 = 5.006 us.
  EXPECT_NEAR(p.forward[0].seconds, 1.6e-3 + 2e-6, kTol);
  // Backward: 4 * 4e9 / 5e12 = 3.2 ms vs (8e6 + 2 * 5000) / 8e11 = 10.0125 us.
  EXPECT_NEAR(p.backward[0].seconds, 3.2e-3 + 2e-6, kTol);
}

TEST(ComputeModel, ParameterTrafficCountsOnceForwardTwiceBackward) {
  Scenario s = scenario();
  s.model.layers[0].fwd_flops = s.model.layers[0].bwd_flops = 0;
  s.model.layers[0].fwd_bytes = s.model.layers[0].bwd_bytes = 0;
  const auto p = build_compute_profile(s);
  // Parameters of layer 0: 5000 B; HBM at 0.8 -> 8e11 B/s.
  EXPECT_NEAR(p.forward[0].seconds, 5000 / 8e11 + 2e-6, kTol);
  EXPECT_NEAR(p.backward[0].seconds, 10000 / 8e11 + 2e-6, kTol);
}

TEST(ComputeModel, MeasuredTimesPreferredAndScaledByBatch) {
  const auto p = build_compute_profile(scenario());
  EXPECT_EQ(p.measured_layers, 1);
  // 1 ms and 2 ms measured at batch 2, run at batch 8: x4, no overhead added.
  EXPECT_NEAR(p.forward[1].seconds, 4e-3, kTol);
  EXPECT_NEAR(p.backward[1].seconds, 8e-3, kTol);
  EXPECT_NEAR(p.forward_total, 1.602e-3 + 4e-3, 1e-14);
  EXPECT_NEAR(p.backward_total, 3.202e-3 + 8e-3, 1e-14);
}

TEST(ComputeModel, UseMeasuredFalseFallsBackToRoofline) {
  Scenario s = scenario();
  s.compute.use_measured = false;
  const auto p = build_compute_profile(s);
  EXPECT_EQ(p.measured_layers, 0);
  // Layer 1: 4 * 1e9 / 5e12 = 0.8 ms (frozen fp16 param: 1000 B, negligible).
  EXPECT_NEAR(p.forward[1].seconds, 0.8e-3 + 2e-6, kTol);
  EXPECT_NEAR(p.backward[1].seconds, 1.6e-3 + 2e-6, kTol);
}

TEST(ComputeModel, PartialMeasurementFallsBackToRoofline) {
  Scenario s = scenario();
  s.model.layers[1].bwd_time.reset();
  const auto p = build_compute_profile(s);
  EXPECT_EQ(p.measured_layers, 0);
  EXPECT_NEAR(p.forward[1].seconds, 0.8e-3 + 2e-6, kTol);
}

TEST(ComputeModel, ComputeDtypeSelectsPeakWithFloat32Fallback) {
  Scenario s = scenario();
  s.training.compute_dtype = ddpsim::config::ComputeDtype::BFLOAT16;
  auto p = build_compute_profile(s);
  EXPECT_DOUBLE_EQ(p.peak_flops, 100e12);
  // 8e9 / (100e12 * 0.5) = 0.16 ms, still above the 5.006 us memory time.
  EXPECT_NEAR(p.forward[0].seconds, 1.6e-4 + 2e-6, kTol);

  s.training.compute_dtype = ddpsim::config::ComputeDtype::TF32;  // not in this GPU's table
  p = build_compute_profile(s);
  EXPECT_DOUBLE_EQ(p.peak_flops, 10e12);
}

TEST(ComputeModel, CopyCostIsTwiceBytesOverHbm) {
  const auto p = build_compute_profile(scenario());
  ASSERT_EQ(p.copy_in.size(), 3u);
  ASSERT_EQ(p.copy_out.size(), 3u);
  // Read and write the gradient once: 2 * bytes / (1e12 * 0.8) + 2 us.
  EXPECT_NEAR(p.copy_in[0].seconds, 2 * 4000 / 8e11 + 2e-6, kTol);
  EXPECT_NEAR(p.copy_in[1].seconds, 2 * 1000 / 8e11 + 2e-6, kTol);
  EXPECT_DOUBLE_EQ(p.copy_in[2].seconds, 0.0);  // frozen: no hook, no copy
  EXPECT_DOUBLE_EQ(p.copy_out[0].seconds, p.copy_in[0].seconds);
  EXPECT_DOUBLE_EQ(p.copy_out[1].seconds, p.copy_in[1].seconds);
  EXPECT_DOUBLE_EQ(p.copy_out[2].seconds, 0.0);
}

TEST(ComputeModel, OptimizerStepSgdForeach) {
  // Trainable elements 1250 float32: 1250 * 20 B = 25000 B / 8e11 = 31.25 ns. Two tensors, foreach:
  // 2 kernels per chunk, one chunk -> 2 * 2 us.
  const auto p = build_compute_profile(scenario());
  EXPECT_NEAR(p.optimizer.seconds, 25000 / 8e11 + 4e-6, kTol);
}

TEST(ComputeModel, OptimizerStepAdamAndImplementations) {
  Scenario s = scenario();
  s.training.optimizer = "adam";
  // 1250 * 28 B = 35000 B; foreach: 5 kernels per chunk, one chunk.
  EXPECT_NEAR(build_compute_profile(s).optimizer.seconds, 35000 / 8e11 + 10e-6, kTol);
  s.training.optimizer_impl = "for_loop";  // 5 kernels per tensor, 2 tensors
  EXPECT_NEAR(build_compute_profile(s).optimizer.seconds, 35000 / 8e11 + 20e-6, kTol);
  s.training.optimizer_impl = "fused";  // one launch per chunk
  EXPECT_NEAR(build_compute_profile(s).optimizer.seconds, 35000 / 8e11 + 2e-6, kTol);
  s.training.optimizer = "sgd";
  s.training.optimizer_impl = "for_loop";  // 2 kernels per tensor, 2 tensors
  EXPECT_NEAR(build_compute_profile(s).optimizer.seconds, 25000 / 8e11 + 8e-6, kTol);
}
