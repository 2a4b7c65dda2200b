// Communication hooks as kernels and collectives (ddp_comm_hooks/default_hooks.py, powerSGD_hook.py).
#include <gtest/gtest.h>

#include <cmath>

#include "ddp/comm_hooks.hpp"
#include "support/builders.hpp"

namespace ddpsim::ddp {
namespace {

using test_support::param;

config::ModelSpec model() {
  auto w = param("w", 1024 * 512);  // matrix 1024 x 512 once reshaped
  w.shape = {1024, 512};
  auto b = param("b", 1024);     // 1-D: never compressed
  auto s = param("s", 16 * 16);  // 16 x 16: (16 + 16) * 1 * 2 = 64 < 256, compressed
  s.shape = {16, 16};
  auto t = param("t", 4 * 4);  // 4 x 4: (4 + 4) * 1 * 2 = 16, not < 16: uncompressed
  t.shape = {4, 4};
  return test_support::synthetic_model({w, b, s, t});
}

Bucket all(const config::ModelSpec& m) {
  Bucket b;
  for (size_t i = 0; i < m.params.size(); ++i) {
    b.param_indices.push_back(static_cast<int>(i));
    b.bytes += m.params[i].bytes();
  }
  return b;
}

HookCosts costs() {
  HookCosts c;
  c.peak_flops = 100e12;
  c.hbm_bandwidth = 1e12;
  return c;
}

TEST(CommHooks, PowerSgdSplitFollowsShouldCompress) {
  auto m = model();
  auto s = powersgd_split(all(m), m, 1, 2.0);
  EXPECT_EQ(s.uncompressed_elems, 1024 + 16);
  EXPECT_EQ(s.compressed_elems, 1024 * 512 + 256);
  EXPECT_EQ(s.p_elems, 1024 + 16);  // n * r
  EXPECT_EQ(s.q_elems, 512 + 16);   // m * r
  EXPECT_EQ(s.matmul_flops, 2.0 * 1024 * 512 + 2.0 * 16 * 16);
}

TEST(CommHooks, PowerSgdSendsThreeAllReducesOfTheFactors) {
  auto m = model();
  config::DdpSettings ddp;
  ddp.comm_hook = "powersgd";
  auto c = plan_bucket_comm(all(m), m, ddp, true, costs());
  std::vector<double> sent;
  for (const auto& op : c.chain)
    if (op.kind == HookOp::Kind::ALLREDUCE) sent.push_back(op.bytes);
  ASSERT_EQ(sent.size(), 3u);
  EXPECT_EQ(sent[0], (1024 + 16) * 4.0);  // uncompressed tensors
  EXPECT_EQ(sent[1], (1024 + 16) * 4.0);  // P
  EXPECT_EQ(sent[2], (512 + 16) * 4.0);   // Q
  EXPECT_FALSE(c.at_launch.empty());
  // Before start_powerSGD_iter the hook is a plain all-reduce.
  auto before = plan_bucket_comm(all(m), m, ddp, false, costs());
  ASSERT_EQ(before.chain.size(), 1u);
  EXPECT_EQ(before.wire_bytes(), all(m).bytes);
}

TEST(CommHooks, BatchedPowerSgdPadsToASquare) {
  auto m = model();
  config::DdpSettings ddp;
  ddp.comm_hook = "powersgd";
  ddp.powersgd.batched = true;
  ddp.powersgd.matrix_approximation_rank = 2;
  auto c = plan_bucket_comm(all(m), m, ddp, true, costs());
  const double n = 1024 * 512 + 1024 + 256 + 16;
  const double s = std::ceil(std::sqrt(n));
  EXPECT_EQ(c.wire_bytes(), 2 * s * 2 * 4.0);
}

TEST(CommHooks, Fp16CompressionSendsHalfAndCastsBothWays) {
  auto m = model();
  config::DdpSettings ddp;
  ddp.comm_hook = "fp16_compress";
  auto c = plan_bucket_comm(all(m), m, ddp, true, costs());
  EXPECT_EQ(c.wire_bytes(), all(m).bytes / 2);
  ASSERT_EQ(c.at_launch.size(), 1u);
  const double elems = all(m).bytes / 4;
  // to(float16).div_(world_size): 4 + 2 + 2 + 2 bytes per element; decompress 2 + 4.
  EXPECT_NEAR(c.at_launch[0].kernel.shape.memory_s, elems * 10 / 0.8e12, 1e-15);
  EXPECT_NEAR(c.chain.back().kernel.shape.memory_s, elems * 6 / 0.8e12, 1e-15);
}

}  // namespace
}  // namespace ddpsim::ddp
