// The contention model's defaults against the published slowdowns of docs/facts.md §4.
#include "gpu/contention.hpp"

#include <gtest/gtest.h>

namespace ddpsim::gpu {
namespace {

config::GpuSpec a100() {
  config::GpuSpec g;
  g.name = "a100-sxm4-80gb";
  g.sm_count = 108;
  g.hbm_bandwidth = 2039e9;
  return g;
}

// An NVSwitch all-gather / all-reduce among 8 A100s at NCCL's full speed: 24 channels, each GPU
// sending and receiving at the ~230 GB/s bus bandwidth nccl-tests reports for 8x A100.
CommLoad nvlink_collective() { return CommLoad{24, 2 * 230e9}; }

TEST(Contention, ComputeBoundGemmSlowsWithinThePublishedRange) {
  KernelShape gemm{1e-3, 0.2e-3, 0};
  const double f = compute_slowdown(gemm, nvlink_collective(), a100(), 0.8, ContentionParams{});
  // SM share: 108 / (108 - 24) = 1.286. Published: +18.9 % on average, up to +40 %
  // (arXiv 2507.03114); a GEMM beside an all-gather 1.18 -> 2.08 ms (NVIDIA/nccl#1428).
  EXPECT_NEAR(f, 108.0 / 84.0, 1e-12);
  EXPECT_GT(f, 1.189);
  EXPECT_LT(f, 2.08 / 1.18);
}

TEST(Contention, MemoryBoundKernelsSlowMost) {
  KernelShape elementwise{0.01e-3, 0.02e-3, 0};
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
  KernelShape elementwise{0, 1e-3, 0};
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
  EXPECT_EQ(compute_slowdown(KernelShape{1, 1, 0}, nvlink_collective(), a100(), 0.8, off), 1.0);
  EXPECT_EQ(comm_slowdown(off), 1.0);
}

TEST(Contention, SlowdownIsCappedAndOverheadDilutesIt) {
  ContentionParams p;
  KernelShape tiny{0, 1e-6, 1e-5};  // launch-overhead dominated
  const double f = compute_slowdown(tiny, CommLoad{24, 1e13}, a100(), 0.8, p);
  EXPECT_NEAR(f, (4.0e-6 + 1e-5) / 1.1e-5, 1e-9);  // memory part at the 4x cap, overhead unchanged
}

}  // namespace
}  // namespace ddpsim::gpu
