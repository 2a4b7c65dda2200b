// Unit tests for per-layer compute times (sim/gpu/compute_model.*): roofline max(compute, memory) +
// overhead, measured times scaled by batch, DDP copy costs and the optimizer step. Expected values
// are worked out by hand from the inputs in each test.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "config/specs.hpp"
#include "gpu/compute_model.hpp"
#include "gpu/optimizer_model.hpp"
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
  // Element reads + writes of each op (torch/optim sgd.py, adam.py, adamw.py; see
  // gpu/optimizer_model.cpp). SGD momentum, any torch: buf.mul_ 1+1, buf.add_(grad) 2+1,
  // param.add_(buf) 2+1 = 8; without momentum param.add_(grad) = 3; fused: 3 read + 2 written = 5.
  EXPECT_DOUBLE_EQ(optimizer_bytes_per_element("sgd", 4), 32.0);
  EXPECT_DOUBLE_EQ(optimizer_bytes_per_element("sgd", 2), 16.0);
  EXPECT_DOUBLE_EQ(optimizer_bytes_per_element("sgd", 4, false), 12.0);
  EXPECT_DOUBLE_EQ(optimizer_bytes_per_element("sgd", 4, true, "for_loop", true), 32.0);
  EXPECT_DOUBLE_EQ(optimizer_bytes_per_element("sgd", 4, true, "fused"), 20.0);
  EXPECT_DOUBLE_EQ(optimizer_bytes_per_element("sgd", 4, false, "fused"), 12.0);
  // Adam 2.x: lerp_ 3, mul_ 2, addcmul_ 3 (grad read once), sqrt 2, div 2, add_ 2, addcdiv_ 4 = 18.
  EXPECT_DOUBLE_EQ(optimizer_bytes_per_element("adam", 4), 72.0);
  EXPECT_DOUBLE_EQ(optimizer_bytes_per_element("adam", 4, true, "for_loop"), 72.0);
  // 1.13: mul_ 2 + add_ 3 instead of lerp_ 3 -> 20.
  EXPECT_DOUBLE_EQ(optimizer_bytes_per_element("adam", 4, true, "foreach", true), 80.0);
  EXPECT_DOUBLE_EQ(optimizer_bytes_per_element("adam", 4, true, "for_loop", true), 80.0);
  // AdamW: param.mul_(1 - lr * wd) first, 2 more.
  EXPECT_DOUBLE_EQ(optimizer_bytes_per_element("adamw", 4), 80.0);
  EXPECT_DOUBLE_EQ(optimizer_bytes_per_element("adamw", 2), 40.0);
  EXPECT_DOUBLE_EQ(optimizer_bytes_per_element("adamw", 4, true, "foreach", true), 88.0);
  // Fused: param, grad, exp_avg, exp_avg_sq read, all but grad written = 7.
  EXPECT_DOUBLE_EQ(optimizer_bytes_per_element("adam", 4, true, "fused"), 28.0);
  EXPECT_DOUBLE_EQ(optimizer_bytes_per_element("adamw", 2, true, "fused"), 14.0);
}

TEST(ComputeModel, OptimizerSgdMomentumForLoopOnOneMebiElementTensor) {
  // One 1 Mi-element float32 tensor, SGD momentum, for_loop: 3 kernels, 8 x 4 MiB moved.
  Scenario s = scenario();
  s.model.params = {param("w", 1 << 20, DType::FLOAT32)};
  s.training.optimizer_impl = "for_loop";
  const auto k = ddpsim::gpu::optimizer_kernel(s, {0}, 0);
  EXPECT_NEAR(k.shape.memory_s, 8 * 4.0 * (1 << 20) / 8e11, 1e-18);
  EXPECT_NEAR(k.shape.overhead_s, 3 * 2e-6, kTol);
}

TEST(ComputeModel, OptimizerLaunchesFollowMultiTensorApplyChunking) {
  using ddpsim::gpu::optimizer_launches;
  using ddpsim::gpu::optimizer_ops;
  const std::vector<DType> f32(100, DType::FLOAT32);
  const std::vector<double> ones(100, 1.0);
  // SGD momentum foreach, 100 one-element tensors: _foreach_mul_ (1 list, 110 tensors a launch)
  // 1 launch, two _foreach_add_ (2 lists, 64 a launch) 2 each = 5.
  const auto sgd = optimizer_ops("sgd", "foreach", true, false);
  EXPECT_DOUBLE_EQ(optimizer_launches(sgd, "foreach", ones, f32), 5.0);
  EXPECT_DOUBLE_EQ(optimizer_launches(sgd, "for_loop", ones, f32), 300.0);
  // 320 blocks of 65536 elements a launch: 320 * 65536 + 1 elements need 2 launches per op.
  const auto plain = optimizer_ops("sgd", "foreach", false, false);
  EXPECT_DOUBLE_EQ(optimizer_launches(plain, "foreach", {320.0 * 65536 + 1}, {DType::FLOAT32}), 2.0);
  EXPECT_DOUBLE_EQ(optimizer_launches(plain, "foreach", {320.0 * 65536}, {DType::FLOAT32}), 1.0);
  // One list per dtype: 2 float32 + 1 float16 tensors, 3 ops each.
  EXPECT_DOUBLE_EQ(optimizer_launches(sgd, "foreach", {1, 1, 1}, {DType::FLOAT32, DType::FLOAT16, DType::FLOAT32}),
                   6.0);
  // Adam 2.x foreach, 97 tensors: lerp_ (64) 2, mul_ (110) 1, addcmul_ (48) 3, sqrt (64) 2,
  // div_ by a scalar list (96) 2, add_ (110) 1, addcdiv_ with a scalar list (48) 3 = 14.
  const std::vector<DType> f97(97, DType::FLOAT32);
  const std::vector<double> ones97(97, 1.0);
  EXPECT_DOUBLE_EQ(optimizer_launches(optimizer_ops("adam", "foreach", true, false), "foreach", ones97, f97), 14.0);
  // Fused Adam: the step counters' _foreach_add_ (110 a launch) 1, _fused_adam_ (4 lists, 36) 3.
  EXPECT_DOUBLE_EQ(optimizer_launches(optimizer_ops("adam", "fused", true, false), "fused", ones97, f97), 4.0);
  // Empty tensors launch nothing.
  EXPECT_DOUBLE_EQ(optimizer_launches(sgd, "for_loop", {0, 4}, {DType::FLOAT32, DType::FLOAT32}), 3.0);
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
  // Trainable elements 1250 float32: 1250 * 32 B = 40000 B / 8e11 = 50 ns. Two tensors, foreach:
  // 3 ops of one launch each -> 3 * 2 us.
  const auto p = build_compute_profile(scenario());
  EXPECT_NEAR(p.optimizer.seconds, 40000 / 8e11 + 6e-6, kTol);
}

TEST(ComputeModel, OptimizerStepAdamAndImplementations) {
  Scenario s = scenario();
  s.training.optimizer = "adam";
  // 2.x (ddp.pytorch_version 2.4): 1250 * 72 B = 90000 B; foreach: 7 ops of one launch each.
  EXPECT_NEAR(build_compute_profile(s).optimizer.seconds, 90000 / 8e11 + 14e-6, kTol);
  s.training.optimizer_impl = "for_loop";  // 7 kernels per tensor, 2 tensors
  EXPECT_NEAR(build_compute_profile(s).optimizer.seconds, 90000 / 8e11 + 28e-6, kTol);
  s.training.optimizer_impl = "fused";  // 1250 * 28 B; the step counters' add, one fused launch
  EXPECT_NEAR(build_compute_profile(s).optimizer.seconds, 35000 / 8e11 + 4e-6, kTol);
  s.ddp.pytorch_version = "1.13";
  s.training.optimizer_impl = "foreach";  // 1250 * 80 B; 8 ops
  EXPECT_NEAR(build_compute_profile(s).optimizer.seconds, 100000 / 8e11 + 16e-6, kTol);
  s.ddp.pytorch_version = "2.4";
  s.training.optimizer = "sgd";
  s.training.optimizer_impl = "for_loop";  // 3 kernels per tensor, 2 tensors; 1250 * 32 B
  EXPECT_NEAR(build_compute_profile(s).optimizer.seconds, 40000 / 8e11 + 12e-6, kTol);
}

TEST(ComputeModel, OptimizerHostLaunchesPerImplementation) {
  using ddpsim::gpu::optimizer_host_launches;
  using ddpsim::gpu::optimizer_ops;
  const std::vector<double> numels = {1000, 250};
  const std::vector<DType> f32 = {DType::FLOAT32, DType::FLOAT32};
  // Host costs set by hand: 2.2 us per for_loop op, lists 0.5 / 1.4 us per tensor, 2 us per call,
  // zero_grad 0.48 / 0.26 us, 2 us per launch.
  const ddpsim::gpu::OptimizerHost h{2.2e-6, 0.5e-6, 1.4e-6, 2e-6, 0.48e-6, 0.26e-6, 2e-6};
  // for_loop: a kernel per tensor and op, each after 2.2 us of Python and dispatch + 2 us of
  // cudaLaunchKernel; SGD momentum's ops move 2, 3 and 3 elements per element (4 B each).
  const auto loop =
      optimizer_host_launches(optimizer_ops("sgd", "for_loop", true, false), "sgd", "for_loop", numels, f32, h);
  ASSERT_EQ(loop.size(), 6u);
  const double bytes[6] = {8000, 12000, 12000, 2000, 3000, 3000};
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_NEAR(loop[i].host_s, 4.2e-6, 1e-18);
    EXPECT_DOUBLE_EQ(loop[i].bytes, bytes[i]);
    EXPECT_TRUE(loop[i].kernel);
  }
  // foreach: the lists' Python first (0.5 us per tensor for SGD, 1.4 us for Adam's per-tensor bias
  // corrections), then per op one call (2 us) and its launches (one here: 2 tensors, 20 chunks).
  const auto fe =
      optimizer_host_launches(optimizer_ops("sgd", "foreach", true, false), "sgd", "foreach", numels, f32, h);
  ASSERT_EQ(fe.size(), 4u);
  EXPECT_FALSE(fe[0].kernel);
  EXPECT_NEAR(fe[0].host_s, 1e-6, 1e-18);
  for (size_t i = 1; i < 4; ++i) EXPECT_NEAR(fe[i].host_s, 4e-6, 1e-18);
  EXPECT_DOUBLE_EQ(fe[1].bytes, 1250.0 * 2 * 4);
  const auto adam =
      optimizer_host_launches(optimizer_ops("adam", "foreach", true, false), "adam", "foreach", numels, f32, h);
  EXPECT_NEAR(adam[0].host_s, 2.8e-6, 1e-18);
  EXPECT_EQ(adam.size(), 8u);  // 7 ops
  // More tensors than a launch holds (110 for a one-list op): the second launch has no call.
  const std::vector<double> many(111, 1.0);
  const std::vector<DType> f111(111, DType::FLOAT32);
  const auto cut = ddpsim::gpu::foreach_pass_launches(2, 1, many, f111, h);
  ASSERT_EQ(cut.size(), 3u);
  EXPECT_NEAR(cut[0].host_s, 111 * 0.5e-6, 1e-18);
  EXPECT_NEAR(cut[1].host_s, 4e-6, 1e-18);
  EXPECT_NEAR(cut[2].host_s, 2e-6, 1e-18);
}

// optimizer_host_costs' shares are the files' ratios: torch 1.13's the medians of the three runs
// in bench/results/optimizer-host-shares-2026-12-04 (each over the reference op timed in its run),
// torch 2.x's torch 2.11's costs on the H200 machine's CPU over its mul chain (7.97 us, dispatch.txt).
TEST(ComputeModel, OptimizerHostSharesAreTheMeasuredRatios) {
  namespace fs = std::filesystem;
  const fs::path res = fs::path(DDPSIM_SOURCE_DIR) / "bench" / "results";
  auto read = [](const fs::path& p) {
    std::ifstream in(p);
    EXPECT_TRUE(in.good()) << p;
    return nlohmann::json::parse(in);
  };
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  };
  std::vector<nlohmann::json> runs;
  for (int i = 1; i <= 3; ++i)
    runs.push_back(read(res / "optimizer-host-shares-2026-12-04" / ("optimizer_host_" + std::to_string(i) + ".json"))
                       .at("ratio_to_op"));
  auto med = [&](const std::vector<std::string>& keys) {
    std::vector<double> v;
    for (const auto& r : runs)
      for (const auto& k : keys) v.push_back(r.at(k).get<double>());
    return median(v);
  };
  const auto a = ddpsim::gpu::optimizer_host_costs(1.0, 0.0, true);
  EXPECT_NEAR(a.loop_per_op,
              med({"sgd/for_loop/per_tensor_op_s", "adam/for_loop/per_tensor_op_s", "adamw/for_loop/per_tensor_op_s"}),
              5e-4);
  EXPECT_NEAR(a.list_per_tensor, med({"sgd/foreach_python_only/per_tensor_s"}), 5e-4);
  EXPECT_NEAR(a.adam_list_per_tensor,
              median({med({"adam/foreach_python_only/per_tensor_s"}), med({"adamw/foreach_python_only/per_tensor_s"})}),
              5e-4);
  EXPECT_NEAR(a.call, med({"foreach_call_one_tensor_s"}), 5e-4);
  EXPECT_NEAR(a.zero_per_tensor, med({"zero_grad/zero_/per_tensor_s"}), 5e-4);
  EXPECT_NEAR(a.none_per_tensor, med({"zero_grad/set_to_none/per_tensor_s"}), 5e-4);
  const auto h = read(res / "device-h200-2026-12-04" / "optimizer_host-torch2.11.json");
  const double op = 7.9749230000008e-06;  // dispatch.txt: mul, cpu, no autocast, fwd_per_op_s
  const auto& st = h.at("step");
  auto get = [&](const char* k, const char* f) { return st.at(k).at(f).get<double>() / op; };
  const auto b = ddpsim::gpu::optimizer_host_costs(1.0, 0.0, false);
  EXPECT_NEAR(b.loop_per_op,
              median({get("sgd/for_loop", "per_tensor_op_s"), get("adam/for_loop", "per_tensor_op_s"),
                      get("adamw/for_loop", "per_tensor_op_s")}),
              5e-4);
  EXPECT_NEAR(b.list_per_tensor, get("sgd/foreach_python_only", "per_tensor_s"), 5e-4);
  EXPECT_NEAR(
      b.adam_list_per_tensor,
      median({get("adam/foreach_python_only", "per_tensor_s"), get("adamw/foreach_python_only", "per_tensor_s")}),
      5e-4);
  std::vector<double> calls;
  for (const auto& [k, v] : h.at("foreach_call_one_tensor_s").items()) calls.push_back(v.get<double>() / op);
  EXPECT_NEAR(b.call, median(calls), 5e-4);
  EXPECT_NEAR(b.zero_per_tensor, h.at("zero_grad").at("zero_").at("per_tensor_s").get<double>() / op, 5e-4);
  EXPECT_NEAR(b.none_per_tensor, h.at("zero_grad").at("set_to_none").at("per_tensor_s").get<double>() / op, 5e-4);
}

TEST(ComputeModel, GradScalerSyncExposesTheOptimizersHostDispatch) {
  Scenario s = scenario();
  s.training.compute_dtype = ddpsim::config::ComputeDtype::FLOAT16;
  s.training.grad_scaler = true;
  s.training.optimizer_impl = "for_loop";
  // torch 2.x's host shares of the per-kernel model's 6.9 us op (optimizer_model.cpp): a for_loop
  // op 0.559 (3.8571 us, + 2 us launch = 5.8571 us), the lists 0.261 per tensor (1.8009 us), a
  // foreach call 0.724 (4.9956 us), zero_grad to None 0.151 per tensor (1.0419 us).
  // The roofline profile gives no host lead, so before the sync nothing is exposed. GradScaler's
  // found_inf.item() makes the host wait for the GPU and a launch latency (5 us); then six kernels
  // (2 tensors x 3 ops) each launched 5.8571 us after the previous one, none longer than that
  // (their 12.05 us = 40000 B / 8e11 + 6 x 2 us, shared by bytes 8000, 12000, 12000, 2000, 3000,
  // 3000 of 40000): the GPU finishes at 5 + 6 x 5.8571 + 12.05 x 3000 / 40000 us, and waited that
  // minus its 12.05 us of work.
  const auto p = build_compute_profile(s);
  EXPECT_TRUE(p.optimizer_sync);
  const double work = 40000 / 8e11 + 12e-6;
  EXPECT_NEAR(p.optimizer.seconds, work, kTol);
  EXPECT_NEAR(p.optimizer_host_wait.seconds, 5e-6 + 6 * 5.8571e-6 + work * 3000 / 40000 - work, 1e-13);
  // Host: unscale_'s lists (2 x 1.8009 us) and one call + launch (6.9956 us), the loop
  // (6 x 5.8571 us), zero_grad(set_to_none) over 2 gradients (2 x 1.0419 us).
  EXPECT_NEAR(p.optimizer_host_s, 2 * 1.8009e-6 + 6.9956e-6 + 6 * 5.8571e-6 + 2 * 1.0419e-6, 1e-13);
  // The one-GPU step holds the wait.
  EXPECT_NEAR(ddpsim::gpu::single_gpu_step(p),
              p.h2d.seconds + p.forward_total + p.backward_total + p.grad_unscale.seconds + p.optimizer.seconds +
                  p.optimizer_host_wait.seconds,
              1e-15);
  // No sync: a fused optimizer takes the scale as a tensor (_step_supports_amp_scaling); without a
  // GradScaler or with bfloat16 there is none either. The host then stays ahead: nothing exposed.
  for (auto change : {0, 1, 2}) {
    Scenario t = s;
    if (change == 0) t.training.optimizer_impl = "fused";
    if (change == 1) t.training.grad_scaler = false;
    if (change == 2) t.training.compute_dtype = ddpsim::config::ComputeDtype::BFLOAT16;
    const auto q = build_compute_profile(t);
    EXPECT_FALSE(q.optimizer_sync) << change;
    EXPECT_EQ(q.optimizer_host_wait.seconds, 0.0) << change;
  }
  // CUDA graphs replay the step without the host.
  s.training.cuda_graphs = true;
  EXPECT_EQ(build_compute_profile(s).optimizer_host_s, 0.0);
}

TEST(ComputeModel, CalibrationMatchesTheMeasuredStepWithZeroGradAndTheHostWait) {
  Scenario s = scenario();
  s.training.compute_dtype = ddpsim::config::ComputeDtype::FLOAT16;
  s.training.optimizer_impl = "for_loop";
  s.training.zero_grad_set_to_none = false;  // a zero_grad kernel
  s.training.measured_single_gpu_step_s = 0.05;
  const auto p = build_compute_profile(s);
  EXPECT_GT(p.zero_grad.seconds, 0.0);
  EXPECT_GT(p.optimizer_host_wait.seconds, 0.0);
  EXPECT_NEAR(ddpsim::gpu::single_gpu_step(p), 0.05, 1e-15);
}

// multi_tensor_apply's launch loop, chunk by chunk as aten/src/ATen/native/cuda/MultiTensorApply.cuh
// runs it (the reference the model's closed form must equal).
static double reference_launches(const std::vector<double>& numels, int max_tensors) {
  double launches = 0;
  int tensors = 0, blocks = 0;
  for (double n : numels) {
    if (n <= 0) continue;
    ++tensors;
    const long chunks = static_cast<long>(std::ceil(n / 65536));
    for (long c = 0; c < chunks; ++c) {
      ++blocks;
      const bool last = c == chunks - 1;
      if ((tensors == max_tensors && last) || blocks == 320) {
        ++launches;
        blocks = 0;
        tensors = last ? 0 : 1;
      }
    }
  }
  return launches + (blocks != 0 ? 1 : 0);
}

TEST(ComputeModel, MultiTensorLaunchesEqualTheChunkLoopOnRandomLists) {
  using ddpsim::gpu::optimizer_launches;
  using ddpsim::gpu::OptimizerOp;
  std::mt19937_64 rng(20261203);
  for (int trial = 0; trial < 300; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 400);
    std::vector<double> numels(static_cast<size_t>(n));
    // Every third list is mostly one-chunk tensors with a rare one spanning launches, so that long
    // runs of tensors follow a tensor carried into the next launch (the tensor limit then binds).
    const bool runs = trial % 3 == 0;
    for (auto& v : numels) {
      const int kind = runs ? (rng() % 50 == 0 ? 3 : static_cast<int>(rng() % 2))
                            : static_cast<int>(rng() % 4);  // tiny, one chunk, many chunks, over a launch
      v = kind == 0   ? static_cast<double>(rng() % 100)
          : kind == 1 ? 1.0 + static_cast<double>(rng() % 65536)
          : kind == 2 ? 1.0 + static_cast<double>(rng() % (65536L * 40))
                      : 1.0 + static_cast<double>(rng() % (65536L * 900));
    }
    const std::vector<DType> f32(numels.size(), DType::FLOAT32);
    for (int depth = 1; depth <= 4; ++depth) {
      const OptimizerOp op{"op", 2, depth};
      const int max_tensors[4] = {110, 64, 48, 36};
      ASSERT_EQ(optimizer_launches({op}, "foreach", numels, f32), reference_launches(numels, max_tensors[depth - 1]))
          << "trial " << trial << " depth " << depth;
    }
  }
}
