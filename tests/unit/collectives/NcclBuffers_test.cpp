// NCCL_BUFFSIZE and NCCL_NTHREADS in the NCCL model, against closed forms from NCCL's own source:
// init.cc computeBuffSizes (buffSizes[SIMPLE] = NCCL_BUFFSIZE, default 4 MiB), enqueue.cc (step =
// buffsize / NCCL_STEPS, ring chunk = ALLREDUCE_CHUNKSTEPS = 4 steps, 2 slices per chunk;
// Ring/Tree channel shrink while bytes < nc x nt x threadThreshold), tuning.cc getNthreads.
#include <gtest/gtest.h>

#include "collectives/nccl_model.hpp"

using namespace ddpsim::collectives;

namespace {

NcclTopology a100_nvswitch_1x8() {
  NcclTopology t;
  t.nranks = 8;
  t.arch = Arch::AMPERE;
  t.intra_bw = 240e9;
  t.nvswitch = true;
  return t;
}

NcclSettings ring_simple(double buffsize = 0, int nthreads = 0) {
  NcclSettings s;
  s.algos = {Algo::RING};
  s.protos = {Proto::SIMPLE};
  s.buffsize = buffsize;
  s.nthreads = nthreads;
  return s;
}

constexpr double kMiB = 1024.0 * 1024;

}  // namespace

TEST(NcclBuffers, DefaultsAreNcclsAndUnsetChangesNothing) {
  const auto topo = a100_nvswitch_1x8();
  const auto t = tune_model(topo);
  EXPECT_EQ(t.simple_buffsize, 4 * kMiB);
  const auto e0 = predict_allreduce(topo, 1152 * kMiB, ring_simple());
  const auto e1 = predict_allreduce(topo, 1152 * kMiB, ring_simple(4 * kMiB, 512));
  EXPECT_EQ(e0.time, e1.time);  // 4 MiB and 512 threads are the defaults here
}

TEST(NcclBuffers, BuffsizeHalvesTheSlicesOfLargeRingsOnly) {
  // 8 A100, 24 channels: a ring loop moves chunk x 24 x 8 bytes, chunk = 4 steps of buffsize / 8.
  // 1152 MiB = 3 loops at 4 MiB (chunk 2 MiB): 6 slices per step and channel; at 8 MiB (chunk
  // 4 MiB) 1.5 loops: 2 + 2 slices; at 16 MiB one partial loop: 2 slices. Every slice pays the
  // Simple hop sync (tuning.cc hwLat NVLink Ring Simple, 3.4 us) on each of the 14 steps; the bytes
  // moved are the same. So T(4) - T(8) = 14 x 2 x 3.4 us = T(8) - T(16).
  const auto topo = a100_nvswitch_1x8();
  const double bytes = 1152 * kMiB;
  const auto b4 = predict_allreduce(topo, bytes, ring_simple(4 * kMiB));
  const auto b8 = predict_allreduce(topo, bytes, ring_simple(8 * kMiB));
  const auto b16 = predict_allreduce(topo, bytes, ring_simple(16 * kMiB));
  ASSERT_EQ(b4.nchannels, 24);
  EXPECT_NEAR(b4.time - b8.time, 14 * 2 * 3.4e-6, 1e-12);
  EXPECT_NEAR(b8.time - b16.time, 14 * 2 * 3.4e-6, 1e-12);
  EXPECT_EQ(b4.bandwidth, b8.bandwidth);
  // About 1 % of a 1.2 GB all-reduce.
  EXPECT_LT((b4.time - b8.time) / b4.time, 0.02);
  // A DDP bucket (25 MiB): 25 MiB / (24 x 8) = 133 KiB per channel and step, under one chunk at
  // either size: 2 slices per step both times, the same time to the last bit.
  EXPECT_EQ(predict_allreduce(topo, 25 * kMiB, ring_simple(4 * kMiB)).time,
            predict_allreduce(topo, 25 * kMiB, ring_simple(8 * kMiB)).time);
  // NCCL's own tuner time does not read it.
  EXPECT_EQ(b4.nccl_model_time, b8.nccl_model_time);
}

TEST(NcclBuffers, BuffsizeWidensTheNetCreditWindow) {
  // net.cc: NCCL_STEPS slots of buffsize / 8 each per channel, reusable a round trip later:
  // per-channel bw <= buffsize / (2 x hop). With a 1 ms WAN hop the window binds; doubling the
  // buffer doubles it (the test NetCreditWindowBoundsPerChannelBandwidth derives the 4 MiB case).
  NcclTopology t = a100_nvswitch_1x8();
  t.nranks = 16;
  t.nnodes = 2;
  t.nic_bw = 25e9;
  t.nics_per_node = 8;
  t.net_latency = 1e-3;
  const double bytes = 1024 * kMiB;
  const auto b4 = predict_allreduce(t, bytes, ring_simple(4 * kMiB));
  const auto b8 = predict_allreduce(t, bytes, ring_simple(8 * kMiB));
  const double hop = 14e-6 + 2e-3;
  const double cap4 = b4.nchannels * 4 * kMiB / (2 * hop) / (2.0 * 15 / 16);
  EXPECT_NEAR(b4.bandwidth, cap4, cap4 * 1e-9);
  EXPECT_NEAR(b8.bandwidth, 2 * cap4, cap4 * 1e-9);
  EXPECT_LT(b8.time, b4.time);
  // InfiniBand-class latency (NCCL's own 14 us NET hop): no cap at either size, no change.
  t.net_latency = 0;
  EXPECT_EQ(predict_allreduce(t, bytes, ring_simple(4 * kMiB)).bandwidth,
            predict_allreduce(t, bytes, ring_simple(8 * kMiB)).bandwidth);
}

TEST(NcclBuffers, NthreadsSetsRingAndTreeThreadsAndTheChannelShrink) {
  const auto topo = a100_nvswitch_1x8();
  const auto t = tune_model(topo, ring_simple(0, 256));
  const int ring = static_cast<int>(Algo::RING), tree = static_cast<int>(Algo::TREE);
  const int simple = static_cast<int>(Proto::SIMPLE), ll = static_cast<int>(Proto::LL),
            ll128 = static_cast<int>(Proto::LL128);
  EXPECT_EQ(t.max_threads[ring][simple], 256);
  EXPECT_EQ(t.max_threads[tree][simple], 256);
  EXPECT_EQ(t.max_threads[ring][ll], 256);
  EXPECT_EQ(t.max_threads[ring][ll128], 640);  // NCCL_LL128_NTHREADS, a different variable
  // enqueue.cc: nc shrinks while bytes < nc x nt x 64 (Simple): 64 KiB keeps 65536 / (256 x 64) = 4
  // channels with 256 threads, 2 with the default 512; 1 MiB keeps 64 / 32 -> capped at 24 / 24.
  EXPECT_EQ(predict_allreduce(topo, 65536, ring_simple(0, 256)).nchannels, 4);
  EXPECT_EQ(predict_allreduce(topo, 65536, ring_simple()).nchannels, 2);
  EXPECT_EQ(predict_allreduce(topo, 1 * kMiB, ring_simple(0, 256)).nchannels, 24);
  EXPECT_EQ(predict_allreduce(topo, 1 * kMiB, ring_simple()).nchannels, 24);
  // More channels at 64 KiB: NCCL's model gives them proportionally more bandwidth.
  EXPECT_LT(predict_allreduce(topo, 65536, ring_simple(0, 256)).time,
            predict_allreduce(topo, 65536, ring_simple()).time);
  // A DDP-sized bucket: every channel in use either way, and NCCL's model has no per-thread
  // bandwidth: the time moves only through the chunk alignment ((nt - 32) x 8 bytes), < 0.1 %.
  const double a = predict_allreduce(topo, 25 * kMiB, ring_simple(0, 256)).time;
  const double b = predict_allreduce(topo, 25 * kMiB, ring_simple()).time;
  EXPECT_NEAR(a / b, 1.0, 1e-3);
}

TEST(NcclBuffers, PcieRingDefaultsTo256ThreadsAndNthreadsRaisesIt) {
  // tuning.cc: Ring Simple gets 256 threads when bwIntra x nChannels <= PCI_BW (12 GB/s).
  NcclTopology t;
  t.nranks = 4;
  t.arch = Arch::VOLTA;
  t.intra_class = LinkClass::PCI;
  t.intra_bw = 12e9;
  const int ring = static_cast<int>(Algo::RING), simple = static_cast<int>(Proto::SIMPLE);
  ASSERT_EQ(tune_model(t).max_threads[ring][simple], 256);
  EXPECT_EQ(tune_model(t, ring_simple(0, 512)).max_threads[ring][simple], 512);
}

TEST(NcclBuffers, ChecksNameWhatIsAllowed) {
  EXPECT_EQ(check_buffsize(4 * kMiB), "");
  EXPECT_EQ(check_buffsize(65536), "");
  EXPECT_NE(check_buffsize(65535), "");
  EXPECT_NE(check_buffsize(4 * kMiB + 1), "");
  EXPECT_NE(check_buffsize(2048.0 * kMiB), "");
  EXPECT_EQ(check_nthreads(64), "");
  EXPECT_EQ(check_nthreads(512), "");
  EXPECT_NE(check_nthreads(100), "");
  EXPECT_NE(check_nthreads(32), "");
  EXPECT_NE(check_nthreads(544), "");
  EXPECT_NE(check_nthreads(100).find("multiple of 32"), std::string::npos);
}
