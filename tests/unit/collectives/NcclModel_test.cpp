// Unit tests for the NCCL all-reduce cost model (sim/collectives/nccl_model.*).
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "collectives/nccl_model.hpp"

using namespace ddpsim::collectives;

namespace {

NcclTopology a100_nvswitch_1x8() {
  NcclTopology t;
  t.nranks = 8;
  t.arch = Arch::AMPERE;
  t.intra_bw = 240e9;  // 12 NVLinks x 20 GB/s (topo.h SM80_NVLINK_BW)
  t.nvswitch = true;
  return t;
}

// The same node twice, with `nics` NICs of `nic_bw` B/s per node.
NcclTopology two_nodes(NcclTopology t, double nic_bw, int nics) {
  t.nranks = 2 * t.nranks;
  t.nnodes = 2;
  t.nic_bw = nic_bw;
  t.nics_per_node = nics;
  return t;
}

NcclSettings only(Algo a, Proto p) {
  NcclSettings s;
  s.algos = {a};
  s.protos = {p};
  return s;
}

}  // namespace

TEST(NcclModel, GraphSearchA100NvSwitch) {
  // search.cc: 40 GB/s x 6 channels is "perfect" (240), DupChannels -> 12 x 20; postset doubles to 24.
  const auto t = tune_model(a100_nvswitch_1x8());
  EXPECT_EQ(t.ring.nchannels, 12);
  EXPECT_DOUBLE_EQ(t.ring.bw_intra, 20.0);
  EXPECT_EQ(t.comm_channels, 24);
}

TEST(NcclModel, RingLatencyHandComputed) {
  // docs/facts.md §2: Ring latency = base + (nsteps - nInter) * intraLat; 8 ranks, 1 node, NVLink.
  const auto t = tune_model(a100_nvswitch_1x8());
  const int ring = static_cast<int>(Algo::RING), tree = static_cast<int>(Algo::TREE);
  EXPECT_NEAR(t.latency[ring][static_cast<int>(Proto::SIMPLE)], (8.4 + 14 * 3.4) * 1e-6, 1e-12);
  EXPECT_NEAR(t.latency[ring][static_cast<int>(Proto::LL)], (6.6 + 14 * 0.6) * 1e-6, 1e-12);
  EXPECT_NEAR(t.latency[ring][static_cast<int>(Proto::LL128)], (14.0 + 14 * 1.9) * 1e-6, 1e-12);
  // Tree: base + 2 * ((ppn - 1) * intraLat + log2(nNodes) * interLat) = 8.4 + 2*7*4.0.
  EXPECT_NEAR(t.latency[tree][static_cast<int>(Proto::SIMPLE)], (8.4 + 2 * 7 * 4.0) * 1e-6, 1e-12);
}

TEST(NcclModel, MultiNodeRingLatencyHandComputed) {
  // 2 nodes x 8: nsteps 30, nInter 2; Simple: intraLat = max(3.4, 3 x netOverhead 1.0) = 3.4,
  // interLat = NET ring Simple 14.0.
  NcclTopology t = two_nodes(a100_nvswitch_1x8(), 25e9, 8);
  const auto tu = tune_model(t);
  EXPECT_NEAR(tu.latency[0][2], (8.4 + 28 * 3.4 + 2 * 14.0) * 1e-6, 1e-12);
  // LL: intraLat = max(0.6, 1.0) = 1.0, interLat 2.7.
  EXPECT_NEAR(tu.latency[0][0], (6.6 + 28 * 1.0 + 2 * 2.7) * 1e-6, 1e-12);
  // net_latency adds to interLat (twice for Simple: flush).
  t.net_latency = 2e-6;
  EXPECT_NEAR(tune_model(t).latency[0][2], (8.4 + 28 * 3.4 + 2 * (14.0 + 4.0)) * 1e-6, 1e-12);
}

TEST(NcclModel, RingSimpleNetworkLatencyPaidOncePerHopNotPerSlice) {
  // 2 nodes x 8, Ring/Simple forced. A chunk crosses nodes on nsteps x nNodes / nRanks = 30 x 2/16
  // = 3.75 of its 30 hops; net_latency enters a Simple NET hop twice (send + flush). The proxies
  // keep NCCL_STEPS slices in flight, so a larger network latency costs 3.75 x 2 x delta once,
  // whether the buffer is 64 MiB (few slices) or 1 GiB (many); per-slice costs stay the GPU's.
  NcclTopology t = two_nodes(a100_nvswitch_1x8(), 25e9, 8);
  const auto s = only(Algo::RING, Proto::SIMPLE);
  NcclTopology slow = t;
  slow.net_latency = 2e-6;
  for (double bytes : {64.0 * 1024 * 1024, 1024.0 * 1024 * 1024}) {
    SCOPED_TRACE(bytes);
    const double delta = predict_allreduce(slow, bytes, s).time - predict_allreduce(t, bytes, s).time;
    EXPECT_NEAR(delta, 3.75 * 2 * 2e-6, 1e-10);
  }
}

TEST(NcclModel, RingBandwidthHandComputed) {
  // busBw = 12 x 20 = 240 GB/s; algbw = busBw * n / nsteps = 240 * 8/14.
  const auto t = tune_model(a100_nvswitch_1x8());
  EXPECT_NEAR(t.bandwidth[0][2], 240e9 * 8 / 14, 1e3);
  EXPECT_NEAR(t.bandwidth[0][0], 87.7e9 * 8 / 14, 1e3);   // LL: min(llMaxBw 87.7, 0.5 x 240)
  EXPECT_NEAR(t.bandwidth[0][1], 220.8e9 * 8 / 14, 1e3);  // LL128: min(0.92 x 240, 12 x 20)
  EXPECT_NEAR(t.bandwidth[1][2], 220.8e9 * 0.5, 1e3);     // Tree: min(.92 x 240, 12 x 24) x .5
}

TEST(NcclModel, HugeMessageTimeIsLatencyPlusBytesOverAlgbw) {
  const double bytes = 4294967296.0;
  const auto e = predict_allreduce(a100_nvswitch_1x8(), bytes);
  EXPECT_EQ(e.algo, Algo::RING);
  EXPECT_EQ(e.proto, Proto::SIMPLE);
  EXPECT_EQ(e.nchannels, 24);
  // NCCL's own (tuner) time: one hw latency per step.
  EXPECT_NEAR(e.nccl_model_time, (8.4 + 14 * 3.4) * 1e-6 + bytes / (240e9 * 8 / 14), 1e-9);
  // Achieved time: the hw latency is paid per slice. loopSize = 24 ch x 8 ranks x 2 MiB = 384 MiB:
  // 10 full loops (2 MiB chunks -> 2 slices of ~1 MiB) + a 256 MiB loop (chunk 1398102 B rounded
  // up to 3840 B = 1401600, slice max(700800, 32 KiB) -> 2 slices): 22 slices per step.
  EXPECT_NEAR(e.time, (8.4 + 14 * 22 * 3.4) * 1e-6 + bytes / (240e9 * 8 / 14), 1e-9);
  EXPECT_NEAR(e.reduce_scatter_time + e.all_gather_time, e.time, 1e-15);
}

TEST(NcclModel, SimpleSlicesPayTheStepLatencyEach) {
  NcclSettings simple;
  simple.protos = {Proto::SIMPLE};
  const auto topo = a100_nvswitch_1x8();
  const double algbw = 240e9 * 8 / 14;
  // 4 MiB: chunk = ceil(4 MiB / 192) = 21846 -> 23040 B; slice = max(11520, 32768) -> 1 slice:
  // exactly the tuner's affine formula.
  auto e = predict_allreduce(topo, 4194304.0, simple);
  EXPECT_NEAR(e.time, (8.4 + 14 * 3.4) * 1e-6 + 4194304.0 / algbw, 1e-12);
  EXPECT_NEAR(e.time, e.nccl_model_time, 1e-12);
  // 16 MiB: chunk 87382 -> 88320 B; slice = max(44160, 32768) -> 2 slices per step.
  e = predict_allreduce(topo, 16777216.0, simple);
  EXPECT_NEAR(e.time, (8.4 + 14 * 2 * 3.4) * 1e-6 + 16777216.0 / algbw, 1e-12);
  EXPECT_NEAR(e.latency + 16777216.0 / e.bandwidth, e.time, 1e-12);
}

TEST(NcclModel, LLKeepsTheTunersAffineTime) {
  NcclSettings ll;
  ll.protos = {Proto::LL};
  const auto e = predict_allreduce(a100_nvswitch_1x8(), 1 << 20, ll);
  EXPECT_NEAR(e.time, e.nccl_model_time, 1e-12);  // 24 channels: no shrink at 1 MiB
}

TEST(NcclModel, HostIssueRateBoundsSmallCollectives) {
  auto topo = a100_nvswitch_1x8();
  EXPECT_NEAR(predict_allreduce(topo, 8).time, (6.6 + 14 * 0.6) * 1e-6, 1e-8);  // GPU-bound: Ring LL (+8 B/bw)
  topo.gpus_per_process = 8;  // nccl-tests -g 8: one thread launches 8 kernels per call
  const auto e = predict_allreduce(topo, 8);
  EXPECT_NEAR(e.time, 8 * kHostLaunchSeconds, 1e-12);
  EXPECT_NEAR(e.reduce_scatter_time + e.all_gather_time, e.time, 1e-15);
  // Large messages stay GPU-bound.
  EXPECT_NEAR(predict_allreduce(topo, 1 << 30).time, predict_allreduce(a100_nvswitch_1x8(), 1 << 30).time, 1e-12);
  topo.gpus_per_process = 0;
  EXPECT_THROW(predict_allreduce(topo, 8), std::invalid_argument);
}

// nccl-tests -G (CUDA graph): on one node the host enqueues at capture only, so -g 8 runs at the
// GPU's time; across nodes enqueue.cc keeps a host function per GPU before each kernel.
TEST(NcclModel, CudaGraphDropsTheHostBoundOnOneNodeOnly) {
  auto topo = a100_nvswitch_1x8();
  topo.gpus_per_process = 8;
  topo.cuda_graph = true;
  const double gpu_floor = (6.6 + 14 * 0.6) * 1e-6;  // Ring LL, as HostIssueRateBoundsSmallCollectives
  const auto e = predict_allreduce(topo, 8);
  EXPECT_NEAR(e.time, gpu_floor, 1e-8);
  EXPECT_FALSE(e.why.host_bound);
  topo.nnodes = 2;
  topo.nranks = 16;
  topo.nics_per_node = 8;
  topo.nic_bw = 25e9;
  const auto across = predict_allreduce(topo, 8);
  EXPECT_NEAR(across.time, 8 * kHostLaunchSeconds, 1e-12);
  EXPECT_TRUE(across.why.host_bound);
  EXPECT_TRUE(host_steps(topo));
  topo.nnodes = 1;
  topo.nranks = 8;
  EXPECT_FALSE(host_steps(topo));
}

TEST(NcclModel, NcclVersionBeforeLL128DisablesIt) {
  auto topo = a100_nvswitch_1x8();
  EXPECT_GT(tune_model(topo).bandwidth[0][1], 0);
  topo.nccl_version = 20408;  // 2.4.8
  EXPECT_EQ(tune_model(topo).bandwidth[0][1], 0);
  topo.nccl_version = 20803;  // 2.8.3
  EXPECT_GT(tune_model(topo).bandwidth[0][1], 0);
}

TEST(NcclModel, ProtocolShapeLLSmallSimpleHuge) {
  const auto topo = a100_nvswitch_1x8();
  EXPECT_EQ(predict_allreduce(topo, 8).proto, Proto::LL);
  EXPECT_EQ(predict_allreduce(topo, 1 << 30).proto, Proto::SIMPLE);
  // Once the pick leaves LL it never returns to it, and times grow with size.
  bool left_ll = false;
  double prev = 0;
  for (double b = 8; b <= 4294967296.0; b *= 2) {
    const auto e = predict_allreduce(topo, b);
    if (e.proto != Proto::LL) left_ll = true;
    if (left_ll) {
      EXPECT_NE(e.proto, Proto::LL) << b;
    }
    EXPECT_GE(e.time, prev) << b;
    prev = e.time;
  }
}

TEST(NcclModel, PicksMinimumOfCandidates) {
  const auto c = allreduce_candidates(a100_nvswitch_1x8(), 1 << 20);
  ASSERT_EQ(c.size(), 6u);  // Ring/Tree x LL/LL128/Simple; NVLS needs Hopper
  const auto p = predict_allreduce(a100_nvswitch_1x8(), 1 << 20);
  for (const auto& e : c) EXPECT_LE(p.nccl_model_time, e.nccl_model_time);
}

TEST(NcclModel, AlgoProtoRestriction) {
  const auto topo = a100_nvswitch_1x8();
  const auto e = predict_allreduce(topo, 8, only(Algo::TREE, Proto::SIMPLE));
  EXPECT_EQ(e.algo, Algo::TREE);
  EXPECT_EQ(e.proto, Proto::SIMPLE);
  NcclSettings s;
  s.protos = {Proto::SIMPLE};
  EXPECT_EQ(predict_allreduce(topo, 8, s).proto, Proto::SIMPLE);
  EXPECT_EQ(allreduce_candidates(topo, 8, s).size(), 2u);
  try {
    predict_allreduce(topo, 8, only(Algo::NVLS, Proto::LL));
    FAIL() << "expected invalid_argument";
  } catch (const std::invalid_argument& ex) {
    EXPECT_NE(std::string(ex.what()).find("NCCL_ALGO=NVLS, NCCL_PROTO=LL"), std::string::npos) << ex.what();
  }
}

TEST(NcclModel, LL128OffByDefaultOnPcieOnUnlessAsked) {
  NcclTopology t;
  t.nranks = 2;
  t.arch = Arch::VOLTA;
  t.intra_class = LinkClass::PCI;
  t.intra_bw = 12e9;
  for (const auto& e : allreduce_candidates(t, 1 << 20)) EXPECT_NE(e.proto, Proto::LL128);
  NcclSettings s;
  s.protos = {Proto::LL128};
  EXPECT_EQ(predict_allreduce(t, 1 << 20, s).proto, Proto::LL128);
}

TEST(NcclModel, ChannelOverrideAndSmallMessageShrink) {
  const auto topo = a100_nvswitch_1x8();
  NcclSettings s = only(Algo::RING, Proto::SIMPLE);
  const auto full = predict_allreduce(topo, 1 << 30, s);
  s.max_channels = 6;
  const auto capped = predict_allreduce(topo, 1 << 30, s);
  EXPECT_EQ(capped.nchannels, 6);
  EXPECT_NEAR(capped.bandwidth, full.bandwidth / 4, full.bandwidth * 1e-12);  // 6 of 24 channels
  // enqueue.cc: Simple ring, nt = 512, threshold 64 B -> one channel per 32 KiB.
  s.max_channels = 0;
  EXPECT_EQ(predict_allreduce(topo, 65536, s).nchannels, 2);
  EXPECT_EQ(predict_allreduce(topo, 1 << 10, s).nchannels, 1);
  s.min_channels = 32;
  EXPECT_EQ(tune_model(topo, s).comm_channels, 32);
}

TEST(NcclModel, BusBwDefinitions) {
  EXPECT_DOUBLE_EQ(algbw(1e9, 0.5), 2e9);
  EXPECT_DOUBLE_EQ(busbw_allreduce(100e9, 8), 175e9);
  EXPECT_DOUBLE_EQ(busbw_allreduce(10e9, 2), 10e9);
  EXPECT_DOUBLE_EQ(algbw(1, 0), 0.0);
}

TEST(NcclModel, SingleRankAndZeroBytesCostNothing) {
  NcclTopology t;
  EXPECT_EQ(predict_allreduce(t, 1 << 20).time, 0.0);
  EXPECT_EQ(predict_allreduce(a100_nvswitch_1x8(), 0).time, 0.0);
}

TEST(NcclModel, HopperNvlsCandidate) {
  NcclTopology t = a100_nvswitch_1x8();
  t.arch = Arch::HOPPER;
  t.intra_bw = 18 * 20.6e9;
  t.nvls = true;
  bool has_nvls = false;
  for (const auto& e : allreduce_candidates(t, 1 << 30)) has_nvls |= e.algo == Algo::NVLS;
  EXPECT_TRUE(has_nvls);
  // One NVLS channel per GPU at the fastest sm90 speed the 370.8 GB/s port holds 8 times (40);
  // search.cc pass 2 raises bwInter to 60 (< 2 x 40). tuning.cc (2.28+): bw = min(40 x .85 x 7/8
  // x 2 = 59.5, 60) per channel, x 8 channels, x nRanks/nsteps = 8/14 to algorithm bandwidth.
  const auto tu = tune_model(t);
  EXPECT_EQ(tu.nvls.nchannels, 8);
  EXPECT_DOUBLE_EQ(tu.nvls.bw_inter, 60.0);
  EXPECT_NEAR(tu.bandwidth[static_cast<int>(Algo::NVLS)][static_cast<int>(Proto::SIMPLE)], 8 * 59.5 * 8 / 14 * 1e9,
              1e3);
  // NCCL 2.17-2.27: bw = min(bwIntra, bwInter) = 40, x 8, x 5/6.
  t.nccl_version = 22602;
  EXPECT_NEAR(tune_model(t).bandwidth[static_cast<int>(Algo::NVLS)][static_cast<int>(Proto::SIMPLE)],
              8 * 40.0 * 5 / 6 * 1e9, 1e3);
  // Older NCCL (before NVLS shipped in 2.17) has no NVLS.
  t.nccl_version = 21606;
  for (const auto& e : allreduce_candidates(t, 1 << 30)) EXPECT_NE(e.algo, Algo::NVLS);
  t.nccl_version = 0;
  t.nvls = false;
  for (const auto& e : allreduce_candidates(t, 1 << 30)) EXPECT_NE(e.algo, Algo::NVLS);
}

TEST(NcclModel, NvlsPipelineFillOnOneNode) {
  // H100 x 8 on NVSwitch: the node's NVLS rate (NCCL 2.28+'s one-node figure) is 8 heads x 40 GB/s
  // x .85 x 7/8 x 2 = 476 GB/s bus bandwidth, x 8/14 = 272 GB/s algorithm bandwidth; tuner latency
  // hwLat[NVLINK][NVLS][Simple] = 25 us. 16 NVLS channels x 8 heads = 128 concurrent ops.
  NcclTopology t = a100_nvswitch_1x8();
  t.arch = Arch::HOPPER;
  t.intra_bw = 18 * 20.6e9;
  t.nvls = true;
  const double bw = 272e9;
  const auto s = only(Algo::NVLS, Proto::SIMPLE);
  // 8 MiB: chunk 128 KiB -> 64 KiB (< 64 x 128 x 128 KiB) -> 32 KiB (< 8 x 128 x 64 KiB), not 16 KiB
  // (8 MiB is not < 2 x 128 x 32 KiB); a loop is 128 x 32 KiB = 4 MiB; two more stages behind it.
  const double mib8 = 8.0 * 1024 * 1024;
  EXPECT_NEAR(predict_allreduce(t, mib8, s).time, 25e-6 + mib8 / bw + 2 * (4.0 * 1024 * 1024) / bw, 1e-12);
  // 2 MiB: 16 KiB chunks, the loop (2 MiB) is the whole buffer: three passes of it.
  const double mib2 = 2.0 * 1024 * 1024;
  EXPECT_NEAR(predict_allreduce(t, mib2, s).time, 25e-6 + 3 * mib2 / bw, 1e-12);
  // 1 GiB: 128 KiB chunks (not < 64 x 128 x 128 KiB), loop 16 MiB.
  const double gib = 1024.0 * 1024 * 1024;
  EXPECT_NEAR(predict_allreduce(t, gib, s).time, 25e-6 + gib / bw + 2 * (16.0 * 1024 * 1024) / bw, 1e-12);
  // NCCL's own estimate (used for the pick) stays its affine formula, with its own bandwidth
  // (8 x 59.5 x 8/14, HopperNvlsCandidate), lower than what the node achieves.
  EXPECT_NEAR(predict_allreduce(t, gib, s).nccl_model_time, 25e-6 + gib / (8 * 59.5 * 8 / 14 * 1e9), 1e-12);
}

TEST(NcclModel, NvlsTreeBoundedByTheNodesNvlsRate) {
  // Two H100 x 8 nodes, 8 x 400 Gb/s NICs. NCCL's NVLS-tree figure: per channel min(40 x .85 x
  // 7/8 x 2 = 59.5, 2 x 40 (bwInter doubled on 2 nodes), perChMaxNvlsTreeBw 57.7) = 57.7, x 8
  // channels x .70 = 323.1 GB/s. The node's NVLS all-reduce rate is 8 x 40 x .85 x 7/8 x 2 x 8/14
  // = 272 GB/s, and every byte of the NVLS tree goes through it; the NICs (400 GB/s per direction)
  // are not the limit.
  NcclTopology t = a100_nvswitch_1x8();
  t.arch = Arch::HOPPER;
  t.intra_bw = 18 * 20.6e9;
  t.nvls = true;
  t = two_nodes(t, 50e9, 8);
  const auto tu = tune_model(t);
  const int tree = static_cast<int>(Algo::NVLS_TREE), simple = static_cast<int>(Proto::SIMPLE);
  // tuning.cc 2.28+: x nRanks/nsteps = 16/30 (bwInter 48 after search.cc's NVLS pass 2).
  EXPECT_NEAR(tu.bandwidth[tree][simple], 8 * 57.7 * 16 / 30 * 1e9, 1e3);
  const auto e = predict_allreduce(t, 8e9, only(Algo::NVLS_TREE, Proto::SIMPLE));
  EXPECT_NEAR(e.bandwidth, 272e9, 1e3);
  EXPECT_NEAR(e.nccl_model_time - tu.latency[tree][simple], 8e9 / (8 * 57.7 * 16 / 30 * 1e9), 1e-9);
  // Achieved: that bandwidth, plus the fill of NVLS tree's four-stage pipeline: 8 GB is not below
  // 4 x 128 ops x 128 KiB, so the chunk stays 128 KiB and a loop is 16 x 8 x 128 KiB = 16 MiB.
  const double bw = 272e9, loop = 16.0 * 1024 * 1024;
  EXPECT_NEAR(e.time - tu.latency[tree][simple], 8e9 / bw + 3 * loop / bw, 1e-9);
  // 4 MiB: 4 MiB < 1 x 128 x 64 KiB = 8 MiB, so 32 KiB chunks, a 4 MiB loop = the whole buffer.
  const double mib4 = 4.0 * 1024 * 1024;
  const auto small = predict_allreduce(t, mib4, only(Algo::NVLS_TREE, Proto::SIMPLE));
  EXPECT_NEAR(small.time - tu.latency[tree][simple], 4 * mib4 / bw, 1e-12);
}

// NCCL_ALGO / NCCL_PROTO values as NCCL's parseList reads them (src/graph/tuning.cc, 2.24+):
// what each value enables for all-reduce, worked out by hand from that function.
TEST(NcclModel, EnvListsAsNcclParsesThem) {
  using V = std::vector<std::string>;
  EXPECT_EQ(allreduce_protos("^LL128"), (V{"LL", "Simple"}));  // the common "LL128 off"
  EXPECT_EQ(allreduce_protos("simple"), (V{"Simple"}));        // case-insensitive, NCCL's spelling back
  EXPECT_EQ(allreduce_protos("^Simple"), (V{"LL", "LL128"}));  // explicit: LL128 forced on
  EXPECT_EQ(allreduce_algos("^NVLS,NVLSTree"), (V{"Ring", "Tree", "CollNetDirect", "CollNetChain"}));
  EXPECT_EQ(allreduce_algos("Tree,Ring"), (V{"Ring", "Tree"}));  // a set: NCCL's order
  // The last entry that applies to all-reduce wins; entries for other functions are checked, not used.
  EXPECT_EQ(allreduce_algos("Ring;allreduce:Tree;allgather:PAT"), (V{"Tree"}));
  EXPECT_EQ(allreduce_algos("AllReduce:^Ring"), (V{"Tree", "NVLS", "NVLSTree", "CollNetDirect", "CollNetChain"}));
  EXPECT_TRUE(allreduce_algos("allgather:Ring;reducescatter:PAT").empty());  // all-reduce keeps NCCL's defaults
  EXPECT_EQ(allreduce_algos("Ring,PAT"), (V{"Ring"}));                       // PAT: valid, not an all-reduce algorithm
  auto refused = [](auto f, const char* value, const char* says) {
    try {
      f(value);
      ADD_FAILURE() << value << " accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << value << ": " << e.what();
    }
  };
  auto algos = [](const char* v) { return allreduce_algos(v); };
  auto protos = [](const char* v) { return allreduce_protos(v); };
  refused(algos, "Ring;Tree", "needs a function prefix");
  refused(algos, "allgahter:Ring", "unknown NCCL function \"allgahter\"");
  refused(algos, "CollNet", "unknown NCCL algorithm \"CollNet\"");
  refused(algos, "PAT", "enables no algorithm for all-reduce");
  refused(algos, "allreduce:^Ring,Tree,NVLS,NVLSTree,CollNetDirect,CollNetChain", "enables no algorithm");
  refused(protos, "", "unknown NCCL protocol \"\"");
  refused(protos, "LL,", "unknown NCCL protocol \"\"");
  refused(protos, "^", "unknown NCCL protocol \"\"");
}

TEST(NcclModel, NamesRoundTripAndErrors) {
  for (Algo a : {Algo::RING, Algo::TREE, Algo::NVLS, Algo::NVLS_TREE}) EXPECT_EQ(parse_algo(to_string(a)), a);
  for (Proto p : {Proto::LL, Proto::LL128, Proto::SIMPLE}) EXPECT_EQ(parse_proto(to_string(p)), p);
  EXPECT_EQ(parse_algo("nvlstree"), Algo::NVLS_TREE);
  EXPECT_EQ(parse_proto("SIMPLE"), Proto::SIMPLE);
  try {
    parse_algo("ringg");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()),
              "unknown NCCL algorithm \"ringg\"; valid: Ring, Tree, NVLS, NVLSTree, CollNetDirect, CollNetChain");
  }
  try {
    parse_proto("LL64");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "unknown NCCL protocol \"LL64\"; valid: LL, LL128, Simple");
  }
}

TEST(NcclModel, ValidationNamesFieldAndValue) {
  NcclTopology t = a100_nvswitch_1x8();
  t.nnodes = 3;
  try {
    predict_allreduce(t, 1);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "NcclTopology.nranks: 8 is not a multiple of nnodes (3)");
  }
  t = a100_nvswitch_1x8();
  t.nranks = 16;
  t.nnodes = 2;
  try {
    predict_allreduce(t, 1);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "NcclTopology.nic_bw: 0 is not > 0 (needed with nnodes > 1)");
  }
  t = a100_nvswitch_1x8();
  t.intra_bw = 0;
  EXPECT_THROW(predict_allreduce(t, 1), std::invalid_argument);
  t = a100_nvswitch_1x8();
  t.latency_scale = 0;
  try {
    predict_allreduce(t, 1);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "NcclTopology.latency_scale: 0 is not > 0");
  }
}

TEST(NcclModel, CalibrateRecoversKnownKnobs) {
  // Synthetic "measurements" from a topology whose hardware achieves 0.8x the model's bandwidth
  // with 10 us more latency, and whose Simple ring is 0.7x on top of that.
  NcclTopology truth = a100_nvswitch_1x8();
  truth.achieved_all.bw_factor = 0.8;
  truth.achieved_all.latency_offset = 10e-6;
  truth.achieved[static_cast<int>(Algo::RING)][static_cast<int>(Proto::SIMPLE)].bw_factor = 0.7;
  std::vector<std::pair<double, double>> pts;
  for (double b = 8; b <= 4294967296.0; b *= 2) pts.push_back({b, predict_allreduce(truth, b).time});
  NcclFit fit;
  const NcclTopology got = calibrate(a100_nvswitch_1x8(), pts, &fit);
  EXPECT_LT(fit.rms_relative_error, 2e-3);
  EXPECT_EQ(fit.relative_errors.size(), pts.size());
  // Large Simple sizes pin the product of the shared and Simple factors; small LL sizes the offset.
  const auto& simple = got.achieved[static_cast<int>(Algo::RING)][static_cast<int>(Proto::SIMPLE)];
  EXPECT_NEAR(got.achieved_all.bw_factor * simple.bw_factor, 0.8 * 0.7, 0.01);
  const auto& ll = got.achieved[static_cast<int>(Algo::RING)][static_cast<int>(Proto::LL)];
  EXPECT_NEAR(got.achieved_all.latency_offset + ll.latency_offset, 10e-6, 0.3e-6);
  // The pick is NCCL's, untouched by the fit.
  for (const auto& [b, t] : pts) EXPECT_EQ(predict_allreduce(got, b).proto, predict_allreduce(truth, b).proto);
  // Deterministic.
  NcclFit again;
  calibrate(a100_nvswitch_1x8(), pts, &again);
  EXPECT_EQ(fit.relative_errors, again.relative_errors);
}

TEST(NcclModel, CalibrateRejectsBadInput) {
  try {
    calibrate(a100_nvswitch_1x8(), std::vector<CalibrationPoint>{});
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "calibrate: no (bytes, seconds) points given");
  }
  try {
    calibrate(a100_nvswitch_1x8(), std::vector<std::pair<double, double>>{{1024, 1e-5}, {2048, -1}});
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "calibrate: point 1 (2048 B, -1 s) is not positive");
  }
}

TEST(NcclModel, NetCreditWindowBoundsPerChannelBandwidth) {
  // net.cc: NCCL_STEPS slots per NET connection, each reusable one round trip (data + completion)
  // after it was sent: per channel bw <= 8 x 512 KiB / (2 x NET hop latency) for Simple.
  NcclTopology t = two_nodes(a100_nvswitch_1x8(), 25e9, 8);
  const double bytes = 1073741824.0;
  const auto fast = predict_allreduce(t, bytes, only(Algo::RING, Proto::SIMPLE));
  // With NCCL's own NET latencies (14 us Simple) the window allows ~150 GB/s per channel: no cap.
  const auto tu = tune_model(t);
  EXPECT_NEAR(fast.bandwidth, tu.bandwidth[0][2], 1e3);
  // A WAN-like 1 ms extra per hop (TCP sockets): hop = 14 us + 2 x 1 ms (flush counted twice).
  t.net_latency = 1e-3;
  const auto slow = predict_allreduce(t, bytes, only(Algo::RING, Proto::SIMPLE));
  const double hop = 14e-6 + 2e-3;
  const double cap = slow.nchannels * 8 * 524288.0 / (2 * hop) / (2.0 * 15 / 16);
  EXPECT_NEAR(slow.bandwidth, cap, cap * 1e-9);
  EXPECT_LT(slow.bandwidth, tu.bandwidth[0][2]);
  // Tree edges carry each byte once per direction.
  const auto tree = predict_allreduce(t, bytes, only(Algo::TREE, Proto::SIMPLE));
  const double tree_hop = 14e-6 + 2e-3;
  EXPECT_LE(tree.bandwidth, tree.nchannels * 8 * 524288.0 / (2 * tree_hop) * (1 + 1e-9));
  // Single node: no NET connection, no cap.
  EXPECT_NEAR(predict_allreduce(a100_nvswitch_1x8(), bytes).bandwidth, tune_model(a100_nvswitch_1x8()).bandwidth[0][2],
              1e3);
}

namespace {
// 2 x p4d.24xlarge as NCCL sees it: 8 A100 on NVSwitch per node, 4 x 100 Gb/s NICs per node.
NcclTopology p4d_2nodes(int nccl_version) {
  NcclTopology t = two_nodes(a100_nvswitch_1x8(), 12.5e9, 4);
  t.nccl_version = nccl_version;
  return t;
}
}  // namespace

TEST(NcclModel, Nccl28TunerTablesHandComputed) {
  // NCCL 2.8.3 tuning.cc (NOTES.md): graph 4 channels (one per NIC at 12 GB/s), the tree's intra
  // speed raised to 2 x 12 = 24 GB/s (nNodes <= 2 uses speedIntra): busBw = 4 x 24 = 96.
  const auto t = tune_model(p4d_2nodes(20803));
  const int tree = static_cast<int>(Algo::TREE), ring = static_cast<int>(Algo::RING);
  const int ll = static_cast<int>(Proto::LL), ll128 = static_cast<int>(Proto::LL128),
            simple = static_cast<int>(Proto::SIMPLE);
  ASSERT_EQ(t.tree.nchannels, 4);
  EXPECT_DOUBLE_EQ(t.tree.bw_intra, 24.0);
  // Tree: min(96 x .92, 4 x perChMaxTreeBw 22.5) = 88.32; LL min(88.32/3.8, llMaxBw Intel-N2 39);
  // LL128 min(88.32 x .915, 4 x 16.9); algorithm bw = bus x .5.
  EXPECT_NEAR(t.bandwidth[tree][simple], 88.32 * .5 * 1e9, 1e3);
  EXPECT_NEAR(t.bandwidth[tree][ll], 88.32 / 3.8 * .5 * 1e9, 1e3);
  EXPECT_NEAR(t.bandwidth[tree][ll128], 67.6 * .5 * 1e9, 1e3);
  // Latency: baseLat Tree 4.4 + 2 x ((8-1) x intraLat + log2(2) x interLat), LL intraLat x 1.8
  // across nodes: NVLink Tree LL .52, NET Tree LL 5.0; Simple 28 / 28.
  EXPECT_NEAR(t.latency[tree][ll], (4.4 + 2 * (7 * .52 * 1.8 + 5.0)) * 1e-6, 1e-12);
  EXPECT_NEAR(t.latency[tree][simple], (0.0 + 2 * (7 * 28 + 28)) * 1e-6, 1e-12);
  // Ring LL: min(llMaxBw 39, busBw / 4) with busBw = 4 x 12 = 48 -> 12; algbw = 12 x 16/30.
  EXPECT_NEAR(t.bandwidth[ring][ll], 12.0 * 16.0 / 30.0 * 1e9, 1e3);
  // The current tables differ (Tree LL128 per channel 20 GB/s, Tree Simple NET hwLat 14 us).
  const auto now = tune_model(p4d_2nodes(0));
  EXPECT_NE(now.latency[tree][simple], t.latency[tree][simple]);
  EXPECT_NE(now.bandwidth[tree][ll128], t.bandwidth[tree][ll128]);
}

TEST(NcclModel, Nccl24FixedThresholdPick) {
  // NCCL 2.4 enqueue.cc getKernelInfo on 1 node x 8 (DGX-1-like, 12 channels): LL while
  // bytes <= nc x nt x nRanks x 64 with nt = 256, nc = 12 -> 1,572,864 B; Ring only on one node.
  NcclTopology t;
  t.nranks = 8;
  t.arch = Arch::VOLTA;
  t.sm_count = 80;
  t.intra_bw = 6 * 20e9;
  t.intra_peer_bw = 2 * 20e9;
  t.nccl_version = 20408;
  ASSERT_EQ(tune_model(t).comm_channels, 12);
  EXPECT_EQ(predict_allreduce(t, 1572864).proto, Proto::LL);
  EXPECT_EQ(predict_allreduce(t, 1572864 + 4).proto, Proto::SIMPLE);
  EXPECT_EQ(predict_allreduce(t, 1572864 + 4).algo, Algo::RING);
  // Small sizes use fewer LL channels: nt = 64 while bytes/(nt x 8) <= 8, nc = ceil(bytes/(nt x 8 x 8)).
  EXPECT_EQ(predict_allreduce(t, 4096).nchannels, 1);
  EXPECT_EQ(predict_allreduce(t, 65536).nchannels, 4);  // nt 256: ceil(65536 / (256 x 8 x 8)) = 4
  // Across nodes, NVLink: tree bw 3/4 x 2 (2 nodes) > ring bw, so the threshold is "always tree".
  t.nranks = 16;
  t.nnodes = 2;
  t.nic_bw = 12.5e9;
  t.nics_per_node = 4;
  EXPECT_EQ(predict_allreduce(t, 1e9).algo, Algo::TREE);
}

TEST(NcclModel, BlackwellTablesAndNicLineRateCap) {
  // DGX B200-like: 8 GPUs, 18 NVLink5 x 40.1 GB/s (topo.h SM100_NVLINK_BW), NVSwitch, NVLS.
  NcclTopology t = a100_nvswitch_1x8();
  t.arch = Arch::BLACKWELL;
  t.intra_bw = 18 * 40.1e9;
  t.nvls = true;
  const auto tu = tune_model(t);
  const int nvls = static_cast<int>(Algo::NVLS), simple = static_cast<int>(Proto::SIMPLE);
  // sm100 intra speeds {90, 80, ...}: 8 x 90 = 720 <= 721.8; bw = min(90 x .74 x 7/8 x 2, 90) = 90.
  EXPECT_EQ(tu.nvls.nchannels, 8);
  EXPECT_DOUBLE_EQ(tu.nvls.bw_intra, 90.0);
  EXPECT_NEAR(tu.bandwidth[nvls][simple], 8 * 90.0 * 8 / 14 * 1e9, 1e3);  // x nRanks/nsteps (2.28+)
  // Blackwell llMaxBw single node = 2 x 141 GB/s (ring LL: min(282, busBw / 2)).
  EXPECT_NEAR(tu.bandwidth[static_cast<int>(Algo::RING)][static_cast<int>(Proto::LL)],
              std::min(282.0, tu.ring.nchannels * tu.ring.bw_intra * .5) * 8 / 14 * 1e9, 1e3);
  // Two nodes, 8 x 400 Gb/s: NCCL's NVLS-tree figure (8 x min(.., 2 x 48, 96) x .7 = 537.6 GB/s)
  // exceeds what 8 NICs carry (a tree sends each byte once per direction): time >= bytes / 400 GB/s.
  t.nranks = 16;
  t.nnodes = 2;
  t.nic_bw = 50e9;
  t.nics_per_node = 8;
  const auto tu2 = tune_model(t);
  EXPECT_NEAR(tu2.bandwidth[static_cast<int>(Algo::NVLS_TREE)][simple], 8 * 96.0 * 16 / 30 * 1e9, 1e3);
  const auto e = predict_allreduce(t, 8e9);
  EXPECT_EQ(e.algo, Algo::NVLS_TREE);
  EXPECT_NEAR(e.bandwidth, 400e9, 1e3);
  EXPECT_GE(e.time, 8e9 / 400e9);
}

namespace {
// DGX H100 x nodes (18 x 20.6 GB/s NVLink4, 8 x 400 Gb/s NICs) on a SHARP fabric.
NcclTopology h100_sharp(int nodes) {
  NcclTopology t = a100_nvswitch_1x8();
  t.arch = Arch::HOPPER;
  t.intra_bw = 18 * 20.6e9;
  t.nvls = true;
  t.nranks = 8 * nodes;
  t.nnodes = nodes;
  t.nic_bw = 50e9;
  t.nics_per_node = 8;
  t.sharp = true;
  return t;
}
}  // namespace

TEST(NcclModel, CollNetTunerRowsAsInTuningCc) {
  NcclSettings on;
  on.collnet_enable = true;
  const int direct = static_cast<int>(Algo::COLLNET_DIRECT), chain = static_cast<int>(Algo::COLLNET_CHAIN);
  const int nvls = static_cast<int>(Algo::NVLS), simple = static_cast<int>(Proto::SIMPLE);
  const auto tu = tune_model(h100_sharp(4), on);
  // CollNetDirect graph: 8 heads (one per GPU and NIC); fastest sm90 inter speed with 8 x s within
  // the 370.8 GB/s NVLink port and s within the 50 GB/s NIC: 45. tuning.cc: busBw = 8 x 45, GPU:NIC
  // ratio 1 (factor 1), x .85 on sm90, x .5 to algorithm bandwidth.
  EXPECT_EQ(tu.collnet_direct.nchannels, 8);
  EXPECT_DOUBLE_EQ(tu.collnet_direct.bw_intra, 45.0);
  EXPECT_NEAR(tu.bandwidth[direct][simple], 8 * 45.0 * .85 * .5 * 1e9, 1e3);
  // Latency: 2 x (min(1, 7) x 3.7 + 7 x 0.4) + NET 31 = 44 us; CollNetChain 2 x 7 x 2.8 + 30 = 69.2 us.
  EXPECT_NEAR(tu.latency[direct][simple], 44e-6, 1e-12);
  EXPECT_NEAR(tu.latency[chain][simple], 69.2e-6, 1e-12);
  // CollNetChain: the tree graph, busBw = nChannels x bwIntra, x .5.
  EXPECT_NEAR(tu.bandwidth[chain][simple], tu.tree.nchannels * tu.tree.bw_intra * .5 * 1e9, 1e3);
  // Multi-node NVLS exists only with CollNet: latency NVLink 25 + NET 18 us.
  EXPECT_NEAR(tu.latency[nvls][simple], 43e-6, 1e-12);
  EXPECT_GT(tu.bandwidth[nvls][simple], 0);
  // LL / LL128 rows are unused for CollNet ("Not used").
  EXPECT_EQ(tu.bandwidth[direct][static_cast<int>(Proto::LL)], 0);
  EXPECT_EQ(tu.bandwidth[chain][static_cast<int>(Proto::LL128)], 0);
  // NCCL_COLLNET_ENABLE=0 (default), or a fabric without SHARP: no CollNet and no multi-node NVLS.
  for (const auto& [topo, s] : {std::pair{h100_sharp(4), NcclSettings{}}, std::pair{[] {
                                                                                      auto t = h100_sharp(4);
                                                                                      t.sharp = false;
                                                                                      return t;
                                                                                    }(),
                                                                                    on}}) {
    const auto off = tune_model(topo, s);
    EXPECT_EQ(off.bandwidth[direct][simple], 0);
    EXPECT_EQ(off.bandwidth[chain][simple], 0);
    EXPECT_EQ(off.bandwidth[nvls][simple], 0);
  }
  // One node: no network to reduce in.
  EXPECT_EQ(tune_model(h100_sharp(1), on).bandwidth[direct][simple], 0);
  // More than NCCL_MAX_DIRECT_ARITY + 1 = 8 local GPUs: both CollNet algorithms off (enqueue.cc).
  NcclTopology wide = h100_sharp(2);
  wide.nranks = 2 * 16;
  EXPECT_EQ(tune_model(wide, on).bandwidth[direct][simple], 0);
  EXPECT_EQ(tune_model(wide, on).bandwidth[chain][simple], 0);
  EXPECT_EQ(parse_algo("CollNetDirect"), Algo::COLLNET_DIRECT);
  EXPECT_EQ(parse_algo(to_string(Algo::COLLNET_CHAIN)), Algo::COLLNET_CHAIN);
}

TEST(NcclModel, InNetworkReductionDoesNotSlowWithNodes) {
  // With SHARP each node sends its part once and receives the result once: the NIC bound is the
  // NICs' line rate whatever the node count (x1, not a tree's 2 bytes per byte beyond two nodes).
  NcclSettings on;
  on.collnet_enable = true;
  on.algos = {Algo::NVLS};
  const double bytes = 1e9;
  const auto e4 = predict_allreduce(h100_sharp(4), bytes, on), e64 = predict_allreduce(h100_sharp(64), bytes, on);
  EXPECT_EQ(e4.algo, Algo::NVLS);
  // The node's NVLS rate (8 x 40 x .85 x 7/8 x 2 x 8/14 = 272 GB/s) is below the 400 GB/s of the NICs.
  EXPECT_NEAR(e4.bandwidth, 272e9, 1e3);
  EXPECT_NEAR(e64.bandwidth, e4.bandwidth, 1e3);
  EXPECT_NEAR(e64.time, e4.time, 1e-12);  // same tuner latency (25 + 18 us) at any node count
  // A node with 4 NICs: NIC-bound at 4 x 50 = 200 GB/s.
  NcclTopology t = h100_sharp(16);
  t.nics_per_node = 4;
  EXPECT_NEAR(predict_allreduce(t, bytes, on).bandwidth, 200e9, 1e3);
}
