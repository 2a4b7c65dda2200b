// ddp::host_seconds and ddp::HostExposure against sums worked out by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

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

nlohmann::json read_json(const std::filesystem::path& p) {
  std::ifstream in(p);
  EXPECT_TRUE(in.good()) << p;
  return nlohmann::json::parse(in);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The shares eager_host_costs prices DDP's host work with are the measurements in bench/results:
// recomputed here from the files (forward op 1 s, backward node 10 s, so that a share taken
// against the wrong op shows).
TEST(HostCosts, TheEagerSharesAreTheMeasuredRatiosToTheEagerOp) {
  const std::filesystem::path res = std::filesystem::path(DDPSIM_SOURCE_DIR) / "bench" / "results";
  std::vector<double> hook, buffer, forward, copies;
  for (int i = 1; i <= 3; ++i) {
    const auto d = read_json(res / "ddp-host-shares-2026-12-04" / ("ddp_host_" + std::to_string(i) + ".json"));
    const auto& r = d.at("ratio_to_op");
    hook.push_back(r.at("per_gradient_hook_s").get<double>());
    buffer.push_back(r.at("per_buffer_s").get<double>());
    forward.push_back(r.at("forward_s").get<double>());
    copies.push_back(r.at("per_gradient_copies_s").get<double>());
  }
  const HostCosts v113 = eager_host_costs(1.0, 10.0, true);
  EXPECT_NEAR(v113.per_gradient_hook_s / 10, median(hook), 5e-4);
  EXPECT_NEAR(v113.per_buffer_s, median(buffer), 5e-4);
  EXPECT_NEAR(v113.forward_s, median(forward), 0.05);
  EXPECT_NEAR(2 * v113.per_copy_s / 10, median(copies), 5e-4);
  // torch 2.11 on the H200 machine's CPU: DDP's costs over the mul chain measured there.
  const auto h = read_json(res / "device-h200-2026-12-04" / "ddp_host-torch2.11.json");
  std::ifstream in(res / "device-h200-2026-12-04" / "dispatch.txt");
  std::stringstream all;
  all << in.rdbuf();
  const std::string text = all.str();
  double fwd = 0, bwd = 0;
  for (size_t at = text.find("\n{"); at != std::string::npos; at = text.find("\n{", at + 1)) {
    const size_t end = text.find("\n}", at);
    const auto d = nlohmann::json::parse(text.substr(at + 1, end + 1 - at));
    if (d.at("op") == "mul" && d.at("device") == "cpu" && d.at("autocast").is_null()) {
      fwd = d.at("fwd_per_op_s").get<double>();
      bwd = d.at("bwd_per_op_s").get<double>();
      break;
    }
  }
  ASSERT_GT(fwd, 0);
  const HostCosts v2 = eager_host_costs(1.0, 10.0, false);
  EXPECT_NEAR(v2.per_gradient_hook_s / 10, h.at("per_gradient_hook_s").get<double>() / bwd, 5e-4);
  EXPECT_NEAR(v2.per_buffer_s, h.at("per_buffer_s").get<double>() / fwd, 5e-4);
  EXPECT_NEAR(v2.forward_s, h.at("forward_s").get<double>() / fwd, 0.05);
  EXPECT_NEAR(2 * v2.per_copy_s / 10, h.at("per_gradient_copies_s").get<double>() / bwd, 5e-4);
  // The Reducer's per-bucket share is not scaled (not resolved as a share).
  EXPECT_DOUBLE_EQ(v2.per_bucket_s, measured_host_costs().per_bucket_s);
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
