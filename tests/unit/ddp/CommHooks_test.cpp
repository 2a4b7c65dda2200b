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

TEST(CommHooks, AllreduceHookDividesTheBucketInPlaceBeforeTheAllReduce) {
  // default_hooks.allreduce_hook: tensor.div_(world_size), then all_reduce of the whole bucket.
  auto m = model();
  config::DdpSettings ddp;
  ddp.comm_hook = config::CommHook::ALLREDUCE_HOOK;
  const Bucket b = all(m);
  auto c = plan_bucket_comm(b, m, ddp, true, costs());
  ASSERT_EQ(c.at_launch.size(), 1u);
  // float32: read 4 + write 4 bytes per element = 2 x the bucket, at 1 TB/s x the default
  // memory efficiency 0.8.
  EXPECT_NEAR(c.at_launch[0].kernel.shape.memory_s, 2 * b.bytes / (1e12 * 0.8), 1e-15);
  ASSERT_EQ(c.chain.size(), 1u);
  EXPECT_EQ(c.chain[0].bytes, b.bytes);
  // No hook registered: the Reducer divides while copying in; nothing at launch.
  ddp.comm_hook = config::CommHook::ALLREDUCE;
  EXPECT_TRUE(plan_bucket_comm(b, m, ddp, true, costs()).at_launch.empty());
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
  ddp.comm_hook = config::CommHook::POWERSGD;
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
  ddp.comm_hook = config::CommHook::POWERSGD;
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
  ddp.comm_hook = config::CommHook::FP16_COMPRESS;
  auto c = plan_bucket_comm(all(m), m, ddp, true, costs());
  EXPECT_EQ(c.wire_bytes(), all(m).bytes / 2);
  ASSERT_EQ(c.at_launch.size(), 1u);
  const double elems = all(m).bytes / 4;
  // to(float16).div_(world_size): 4 + 2 + 2 + 2 bytes per element; decompress 2 + 4.
  EXPECT_NEAR(c.at_launch[0].kernel.shape.memory_s, elems * 10 / 0.8e12, 1e-15);
  EXPECT_NEAR(c.chain.back().kernel.shape.memory_s, elems * 6 / 0.8e12, 1e-15);
}

// quantization_hooks.py: all-gathers of the scale/zero point and of the uint8 codes, not an
// all-reduce. The test model's bucket has n = 1024 x 512 + 1024 + 256 + 16 = 525 584 elements.
constexpr double kQuantElems = 1024 * 512 + 1024 + 256 + 16;

const HookOp* find(const BucketComm& c, const std::string& name) {
  for (const auto& op : c.chain)
    if (op.name == name) return &op;
  for (const auto& op : c.at_launch)
    if (op.name == name) return &op;
  return nullptr;
}

TEST(CommHooks, QuantizePerTensorAllGathersScaleZeroPointAndUint8Codes) {
  auto m = model();
  config::DdpSettings ddp;
  ddp.comm_hook = config::CommHook::QUANTIZE_PER_TENSOR;
  HookCosts hc = costs();
  hc.world_size = 4;
  auto c = plan_bucket_comm(all(m), m, ddp, true, hc);
  std::vector<double> gathered;
  for (const auto& op : c.chain) {
    EXPECT_NE(op.kind, HookOp::Kind::ALLREDUCE) << op.name;
    if (op.kind == HookOp::Kind::ALLGATHER) gathered.push_back(op.bytes);
  }
  ASSERT_EQ(gathered.size(), 2u);
  EXPECT_EQ(gathered[0], 8.0);          // torch.FloatTensor([s, z]): two float32
  EXPECT_EQ(gathered[1], kQuantElems);  // one uint8 per element
  EXPECT_EQ(c.wire_bytes(), 0.0);
  EXPECT_EQ(c.gathered_bytes(), 8.0 + kQuantElems);
  // A ring all-gather: each rank sends the other N-1 contributions once.
  EXPECT_EQ(c.ring_bytes_sent(4), 3 * (8.0 + kQuantElems));
  // Quantize: div, round, add, clamp (read 4, write 4 each), to(uint8) (read 4, write 1) = 37 B.
  const auto* q = find(c, "quantize (div, round, add, clamp, to uint8)");
  ASSERT_NE(q, nullptr);
  EXPECT_NEAR(q->kernel.shape.memory_s, kQuantElems * 37 / 0.8e12, 1e-15);
  EXPECT_NEAR(q->kernel.shape.overhead_s, 5 * hc.compute.kernel_overhead, 1e-18);
  // Dequantize and sum: zeros_like (4) + per rank 33 B + / N (8) per element, 2 + 4N kernels.
  const auto* dq = find(c, "dequantize and sum (loop over ranks)");
  ASSERT_NE(dq, nullptr);
  EXPECT_NEAR(dq->kernel.shape.memory_s, kQuantElems * (4 + 4 * 33 + 8) / 0.8e12, 1e-15);
  EXPECT_NEAR(dq->kernel.shape.overhead_s, (2 + 4 * 4) * hc.compute.kernel_overhead, 1e-18);
  // The observer's scalars go to the host: one sync of the launch latency.
  const auto* sync = find(c, "scale, zero point to host (sync)");
  ASSERT_NE(sync, nullptr);
  EXPECT_EQ(sync->kernel.seconds, hc.compute.launch_latency);
}

TEST(CommHooks, QuantizeWithFewerBitsPacksTheCodes) {
  auto m = model();
  config::DdpSettings ddp;
  ddp.comm_hook = config::CommHook::QUANTIZE_PER_TENSOR;
  ddp.quantization.bits = 1;
  HookCosts hc = costs();
  hc.world_size = 8;
  auto c = plan_bucket_comm(all(m), m, ddp, true, hc);
  // ceil(525 584 / 8) = 65 698 bytes of codes + 8 bytes of scale and zero point.
  EXPECT_EQ(c.gathered_bytes(), 65698.0 + 8);
  EXPECT_NE(find(c, "pack codes to 1 bits"), nullptr);
  EXPECT_NE(find(c, "unpack codes"), nullptr);
  // The payload is 1/32 of the float32 bucket (3.1 %); on a ring each rank sends N-1 payloads
  // against 2(N-1)/N buckets for the all-reduce: N/64 of the all-reduce's bytes (12.5 % at N = 8).
  const double bucket = all(m).bytes;
  EXPECT_NEAR(65698.0 / bucket, 1.0 / 32, 1e-5);
  const double allreduce_sent = 2.0 * 7 / 8 * bucket;
  EXPECT_NEAR(c.ring_bytes_sent(8) / allreduce_sent, 8.0 / 64, 1e-4);
}

TEST(CommHooks, QuantizePerChannelPadsAndLoopsOverChannels) {
  auto m = model();
  config::DdpSettings ddp;
  ddp.comm_hook = config::CommHook::QUANTIZE_PER_CHANNEL;
  HookCosts hc = costs();
  hc.world_size = 2;
  auto c = plan_bucket_comm(all(m), m, ddp, true, hc);
  // pad=(0, 512 - n % 512): 525 584 = 1026 x 512 + 272 -> 1027 channels, 525 824 padded elements.
  EXPECT_EQ(quantization_channels(kQuantElems, 512), 1027.0);
  EXPECT_EQ(quantization_channels(1024, 512), 3.0);  // a multiple still gets a whole channel of padding
  std::vector<double> gathered;
  for (const auto& op : c.chain)
    if (op.kind == HookOp::Kind::ALLGATHER) gathered.push_back(op.bytes);
  ASSERT_EQ(gathered.size(), 2u);
  EXPECT_EQ(gathered[0], 2 * 1027 * 4.0);  // torch.stack((scales, zero points)) as float32
  EXPECT_EQ(gathered[1], 1027 * 512.0);
  // The Python loops launch 4 ops per channel (quantize) and 3 per channel and rank (dequantize).
  const auto* q = find(c, "quantize per channel (loop over channels)");
  ASSERT_NE(q, nullptr);
  EXPECT_NEAR(q->kernel.shape.overhead_s, (4 * 1027 + 1) * hc.compute.kernel_overhead, 1e-15);
  const auto* dq = find(c, "dequantize per channel and sum (loop over ranks and channels)");
  ASSERT_NE(dq, nullptr);
  EXPECT_NEAR(dq->kernel.shape.overhead_s, (1 + 2 * (3 + 3 * 1027)) * hc.compute.kernel_overhead, 1e-15);
}

}  // namespace
}  // namespace ddpsim::ddp
