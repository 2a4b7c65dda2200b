// ddp::host_seconds and ddp::HostExposure against sums worked out by hand.
#include <gtest/gtest.h>

#include "ddp/host_costs.hpp"

namespace ddpsim::ddp {
namespace {

TEST(HostCosts, HostSecondsIsForwardPlusPerGradientPlusPerBucket) {
  const HostCosts c{0.5, 2, 10, 0};
  EXPECT_DOUBLE_EQ(host_seconds(c, 4, 3), 10 + 4 * 0.5 + 3 * 2);
  EXPECT_DOUBLE_EQ(host_seconds(c, 0, 0), 10);
}

TEST(HostCosts, EachBroadcastBufferAddsItsSyncCost) {
  // _sync_buffers' per-buffer work (broadcast_buffers): 6 buffers at 0.25 each, by hand.
  const HostCosts c{0.5, 2, 10, 0.25};
  EXPECT_DOUBLE_EQ(host_seconds(c, 4, 3, 6), 10 + 4 * 0.5 + 3 * 2 + 6 * 0.25);
  EXPECT_DOUBLE_EQ(host_seconds(c, 4, 3), 10 + 4 * 0.5 + 3 * 2);
}

TEST(HostCosts, TheMeasuredCostsArePositiveAndBelowAMillisecond) {
  // Sanity of the table, not its values: each is a few microseconds of CPU work.
  const HostCosts c = measured_host_costs();
  for (double v : {c.per_gradient_hook_s, c.per_bucket_s, c.forward_s, c.per_buffer_s}) {
    EXPECT_GT(v, 0);
    EXPECT_LT(v, 1e-3);
  }
}

TEST(HostExposure, WithoutASplitEveryHostSecondIsExposedOnce) {
  HostExposure x(false);
  x.kernel(5, 1);  // ignored: nothing to hide behind
  x.ddp_host(1);
  x.ddp_host(2);
  x.ddp_kernel(1, 1);
  EXPECT_DOUBLE_EQ(x.take(), 3);
  EXPECT_DOUBLE_EQ(x.take(), 0);
}

TEST(HostExposure, TheGpuWaitsOnlyWhenTheHostFallsBehindIt) {
  HostExposure x(true);
  // A kernel of 2 launched after 1 of host work: both queues h 1, GPU 1..3 (waited 1).
  x.kernel(2, 1);
  // 0.5 of DDP host work: h 1.5 < GPU free at 3: hidden.
  x.ddp_host(0.5);
  EXPECT_DOUBLE_EQ(x.take(), 0);
  // 2 more: h 3.5 > 3: the GPU waits 0.5.
  x.ddp_host(2);
  EXPECT_DOUBLE_EQ(x.take(), 0.5);
  // The next model kernel (1, after 1 of host work): plain h 2, starts at 3; with DDP h 4.5,
  // starts at 4.5 instead of 3.5 (where the probe left the GPU): 1 more.
  x.kernel(1, 1);
  EXPECT_DOUBLE_EQ(x.take(), 1);
  // A DDP kernel launched with no host work starts when the GPU is free: no wait.
  x.ddp_kernel(0.25, 0);
  EXPECT_DOUBLE_EQ(x.take(), 0);
}

TEST(HostExposure, TheModelsHostWorkWithoutAKernelIsInBothQueues) {
  HostExposure x(true);
  // 3 of views and module calls, then a kernel of 2 after 1 of host work: h 4, GPU 4..6 in both
  // queues, so DDP has waited for nothing yet.
  x.model_host(3);
  x.kernel(2, 1);
  EXPECT_DOUBLE_EQ(x.take(), 0);
  // DDP's 1.5 of host work: h 5.5 < 6: hidden. Had model_host been DDP's, the probe would see
  // the GPU wait for it.
  x.ddp_host(1.5);
  EXPECT_DOUBLE_EQ(x.take(), 0);
  // 1 more of the model's (h 5 alone, 6.5 with DDP's), a DDP hook of 1 (7.5) and a kernel after 1
  // of host work: alone it launches at 6, when the GPU is free; with DDP's 2.5 at 8.5: a wait of
  // 2.5, all of it DDP's (the model's 4 count in both queues).
  x.model_host(1);
  x.ddp_host(1);
  x.kernel(1, 1);
  EXPECT_DOUBLE_EQ(x.take(), 2.5);
  // Without a split nothing of the model's is exposed.
  HostExposure y(false);
  y.model_host(5);
  EXPECT_DOUBLE_EQ(y.take(), 0);
}

}  // namespace
}  // namespace ddpsim::ddp
