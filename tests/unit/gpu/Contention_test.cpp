// The contention model's defaults against the published slowdowns of docs/facts.md §4.
#include "gpu/contention.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace ddpsim::gpu {
namespace {

config::GpuSpec gpu(const char* name, int sms, double hbm) {
  config::GpuSpec g;
  g.name = name;
  g.sm_count = sms;
  g.hbm_bandwidth = hbm;
  return g;
}

config::GpuSpec a100() { return gpu("a100-sxm4-80gb", 108, 2039e9); }
config::GpuSpec h100() { return gpu("h100-sxm", 132, 3.35e12); }

// An NVSwitch all-gather / all-reduce among 8 A100s at NCCL's full speed: 24 channels, each GPU
// sending and receiving at the ~230 GB/s bus bandwidth nccl-tests reports for 8x A100.
CommLoad nvlink_collective() { return CommLoad{24, 2 * 230e9}; }

TEST(Contention, ComputeBoundGemmSlowsWithinThePublishedRange) {
  KernelShape gemm{1e-3, 0.2e-3, 0, nullptr};
  const double f = compute_slowdown(gemm, nvlink_collective(), a100(), 0.8, ContentionParams{});
  // SM share: 108 / (108 - 24) = 1.286. Published: +18.9 % on average, up to +40 %
  // (arXiv 2507.03114); a GEMM beside an all-gather 1.18 -> 2.08 ms (NVIDIA/nccl#1428).
  EXPECT_NEAR(f, 108.0 / 84.0, 1e-12);
  EXPECT_GT(f, 1.189);
  EXPECT_LT(f, 2.08 / 1.18);
}

KernelShape tiled(double compute_s, std::vector<WaveGroup> groups) {
  KernelShape s{compute_s, 0.1 * compute_s, 0, nullptr};
  s.waves = intern_waves(std::move(groups));
  return s;
}

TEST(Contention, AOneWaveGemmBesideAnAllGatherTakesTwoWaves) {
  // docs/facts.md section 4: on an H100 (132 SMs) a 132-CTA GEMM beside a 24-CTA all-gather takes
  // about 2x. One CTA per SM: 132 CTAs are one wave alone, ceil(132 / 108) = 2 beside it.
  const double f = compute_slowdown(tiled(1e-3, {{132, 1.0}}), CommLoad{24, 0}, h100(), 0.8, ContentionParams{});
  EXPECT_NEAR(f, 2.0, 1e-12);
  // Without its tiles the same kernel keeps its SM share only: 132 / 108.
  KernelShape untiled{1e-3, 0.1e-3, 0, nullptr};
  EXPECT_NEAR(compute_slowdown(untiled, CommLoad{24, 0}, h100(), 0.8, ContentionParams{}), 132.0 / 108.0, 1e-12);
}

TEST(Contention, APartialLastWaveCanAbsorbTheLostSms) {
  // 162 CTAs on 108 SMs: 2 waves alone (the second half full); 84 SMs left still run them in 2.
  EXPECT_NEAR(compute_slowdown(tiled(1e-3, {{162, 1.0}}), nvlink_collective(), a100(), 0.8, ContentionParams{}), 1.0,
              1e-12);
  // 864 CTAs = 8 full waves on 108 SMs; on 84: ceil(10.29) = 11 waves.
  EXPECT_NEAR(compute_slowdown(tiled(1e-3, {{864, 1.0}}), nvlink_collective(), a100(), 0.8, ContentionParams{}),
              11.0 / 8.0, 1e-12);
}

TEST(Contention, ALayerWeighsItsGemmsWavesAndItsOtherCompute) {
  // A layer: a 108-CTA GEMM of 3 ms (1 wave -> 2 beside 24 channels) plus 1 ms of compute without
  // tiles (108 / 84), summed as the compute model sums a layer's kernels.
  KernelShape layer = tiled(3e-3, {{108, 1.0}});
  KernelShape other{1e-3, 0.2e-3, 0, nullptr};
  add_shape(layer, other);
  EXPECT_NEAR(layer.compute_s, 4e-3, 1e-15);
  EXPECT_NEAR(layer.memory_s, 0.5e-3, 1e-15);
  ASSERT_TRUE(layer.waves);
  ASSERT_EQ(layer.waves->size(), 1u);
  EXPECT_NEAR((*layer.waves)[0].share, 0.75, 1e-12);
  const double f = compute_slowdown(layer, nvlink_collective(), a100(), 0.8, ContentionParams{});
  EXPECT_NEAR(f, (3e-3 * 2.0 + 1e-3 * 108.0 / 84.0) / 4e-3, 1e-12);
  // Adding untiled compute keeps the GEMM's seconds: 3 of 6 ms.
  add_shape(layer, KernelShape{2e-3, 0, 0, nullptr});
  EXPECT_NEAR((*layer.waves)[0].share, 0.5, 1e-12);
  // Equal lists are stored once, different ones apart.
  EXPECT_EQ(intern_waves({{108, 0.5}, {64, 0.25}}), intern_waves({{108, 0.5}, {64, 0.25}}));
  EXPECT_NE(intern_waves({{108, 0.5}}), intern_waves({{108, 0.25}}));
  // Kernels of one CTA count are one group.
  ShapeSum same;
  same.add(tiled(1e-3, {{108, 1.0}}));
  same.add(tiled(3e-3, {{108, 1.0}}));
  const KernelShape one = same.shape();
  ASSERT_EQ(one.waves->size(), 1u);
  EXPECT_NEAR((*one.waves)[0].share, 1.0, 1e-12);
  // Two tiled kernels merge by their seconds.
  KernelShape two = tiled(1e-3, {{108, 1.0}});
  add_shape(two, tiled(3e-3, {{162, 1.0}}));
  ASSERT_EQ(two.waves->size(), 2u);
  EXPECT_NEAR((*two.waves)[0].share, 0.25, 1e-12);
  EXPECT_NEAR((*two.waves)[1].share, 0.75, 1e-12);
  EXPECT_NEAR(compute_slowdown(two, nvlink_collective(), a100(), 0.8, ContentionParams{}), 0.25 * 2.0 + 0.75 * 1.0,
              1e-12);
}

TEST(Contention, TheFactorDoesNotChangeWhenTheWholeShapeScales) {
  // The engine prices a rank's scaled kernel by its task's unscaled shape (engine/compute_stream).
  KernelShape a = tiled(3e-3, {{162, 0.6}});
  a.memory_s = 2.9e-3;
  a.overhead_s = 4e-6;
  KernelShape b = a;
  b.compute_s *= 1.37;
  b.memory_s *= 1.37;
  b.overhead_s *= 1.37;
  for (const CommLoad& load : {nvlink_collective(), CommLoad{2, 25e9}, CommLoad{24, 1e13}})
    EXPECT_NEAR(compute_slowdown(a, load, a100(), 0.8, ContentionParams{}),
                compute_slowdown(b, load, a100(), 0.8, ContentionParams{}), 1e-12);
}

TEST(Contention, MemoryBoundKernelsSlowMost) {
  KernelShape elementwise{0.01e-3, 0.02e-3, 0, nullptr};
  const double f = compute_slowdown(elementwise, nvlink_collective(), a100(), 0.8, ContentionParams{});
  // HBM left: 1631 GB/s achievable minus 2.5 x 460 GB/s of NCCL traffic = 481 GB/s -> 3.39x.
  EXPECT_NEAR(f, 1631.2 / (1631.2 - 2.5 * 460), 1e-9);
  // Published: element-wise 0.02 -> 0.05 ms (2.5x, nccl#1428); batch-norm backward 2 -> 4-8 ms
  // (2-4x, nccl#338).
  EXPECT_GE(f, 2.0);
  EXPECT_LE(f, 4.0);
}

TEST(Contention, SlowNetworkCollectiveBarelyDisturbsMemoryBoundKernels) {
  // Two channels and 2 x 12.5 GB/s on one 100 Gb/s NIC: almost no HBM taken.
  KernelShape elementwise{0, 1e-3, 0, nullptr};
  const double f = compute_slowdown(elementwise, CommLoad{2, 25e9}, a100(), 0.8, ContentionParams{});
  EXPECT_LT(f, 1.05);
  EXPECT_GT(f, 1.0);
}

TEST(Contention, CollectiveSlowdownBesideComputeIsNccl205) {
  // NVIDIA/nccl#205: 4.7 ms alone, 5.5 ms beside one GEMM.
  EXPECT_NEAR(comm_slowdown(ContentionParams{}), 5.5 / 4.7, 1e-12);
  ContentionParams high;
  high.nccl_high_priority = true;
  EXPECT_EQ(comm_slowdown(high), 1.0);
}

TEST(Contention, DisabledMeansNoSlowdown) {
  ContentionParams off;
  off.enabled = false;
  EXPECT_EQ(compute_slowdown(KernelShape{1, 1, 0, nullptr}, nvlink_collective(), a100(), 0.8, off), 1.0);
  EXPECT_EQ(comm_slowdown(off), 1.0);
}

TEST(Contention, SlowdownIsCappedAndOverheadDilutesIt) {
  ContentionParams p;
  KernelShape tiny{0, 1e-6, 1e-5, nullptr};  // launch-overhead dominated
  const double f = compute_slowdown(tiny, CommLoad{24, 1e13}, a100(), 0.8, p);
  EXPECT_NEAR(f, (4.0e-6 + 1e-5) / 1.1e-5, 1e-9);  // memory part at the 4x cap, overhead unchanged
}

}  // namespace
}  // namespace ddpsim::gpu
