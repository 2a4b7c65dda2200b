// Unit tests for the NCCL model's all-gather and reduce-scatter (sim/collectives/nccl_model.*):
// every expected figure is computed by hand from NVIDIA/nccl src/graph/tuning.cc
// (ncclTopoTuneModel's per-function loop: nsteps = nRanks-1, nInterSteps = nNodes-1, Ring bus ->
// algorithm bandwidth x nRanks/nsteps, NVLS rows per release) and nccl-tests' *GetBw.
#include <gtest/gtest.h>

#include <stdexcept>

#include "collectives/collective_model.hpp"
#include "collectives/nccl_model.hpp"
#include "collectives/nccl_tuner.hpp"
#include "collectives/topology.hpp"
#include "config/catalog.hpp"
#include "support/builders.hpp"

using namespace ddpsim::collectives;

namespace {

constexpr int kRing = static_cast<int>(Algo::RING);
constexpr int kTree = static_cast<int>(Algo::TREE);
constexpr int kNvls = static_cast<int>(Algo::NVLS);
constexpr int kLL = static_cast<int>(Proto::LL);
constexpr int kLL128 = static_cast<int>(Proto::LL128);
constexpr int kSimple = static_cast<int>(Proto::SIMPLE);

// The ring graph here: search.cc finds 6 x 40 GB/s "perfect" (240), DupChannels -> 12 x 20 GB/s,
// 24 communicator channels (NcclModel_test GraphSearchA100NvSwitch).
NcclTopology a100_nvswitch_1x8() {
  NcclTopology t;
  t.nranks = 8;
  t.arch = Arch::AMPERE;
  t.intra_bw = 240e9;
  t.nvswitch = true;
  return t;
}

// H100 NVSwitch node, 18 NVLinks x 20 GB/s. NVLS graph (search.cc, nvls_graph): 8 heads at the
// fastest sm90 intra speed with 8 x speed <= 360: 40 GB/s; one node, bwInter raised while < 2 x 40
// through the sm90 intra array: 60 GB/s. Ring: 6 x 60 perfect, duplicated to 12 x 30 = 360.
NcclTopology h100_nvswitch_1x8() {
  NcclTopology t;
  t.nranks = 8;
  t.arch = Arch::HOPPER;
  t.sm_count = 132;
  t.intra_bw = 360e9;
  t.nvswitch = true;
  t.nvls = true;
  return t;
}

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

TEST(NcclCollectives, RingBandwidthAndLatencyHandComputed) {
  for (Func f : {Func::ALL_GATHER, Func::REDUCE_SCATTER}) {
    SCOPED_TRACE(to_string(f));
    const auto t = tune_model(a100_nvswitch_1x8(), {}, f);
    // busBw 12 x 20 = 240 GB/s; algorithm bw = busBw x nRanks / nsteps = 240 x 8 / 7.
    EXPECT_NEAR(t.bandwidth[kRing][kSimple], 240e9 * 8 / 7, 1e3);
    EXPECT_NEAR(t.bandwidth[kRing][kLL], 87.7e9 * 8 / 7, 1e3);      // min(llMaxBw 87.7, .5 x 240)
    EXPECT_NEAR(t.bandwidth[kRing][kLL128], 220.8e9 * 8 / 7, 1e3);  // min(.92 x 240, 12 x 20)
    EXPECT_EQ(t.bandwidth[kTree][kSimple], 0.0);                    // tuning.cc skips Tree for these functions
    // Ring latency = base + (nsteps - nInterSteps) x intraLat, nsteps = 7.
    EXPECT_NEAR(t.latency[kRing][kSimple], (8.4 + 7 * 3.4) * 1e-6, 1e-12);
    EXPECT_NEAR(t.latency[kRing][kLL], (6.6 + 7 * 0.6) * 1e-6, 1e-12);
    EXPECT_NEAR(t.latency[kRing][kLL128], (14.0 + 7 * 1.9) * 1e-6, 1e-12);
  }
}

TEST(NcclCollectives, MultiNodeRingLatencyHasOneInterStep) {
  // 2 x 8: nsteps 15, nInterSteps = nNodes - 1 = 1. Simple: intraLat max(3.4, 3 x netOverhead 1)
  // = 3.4, interLat NET Ring Simple 14.0; LL: max(0.6, 1.0) = 1.0 and 2.7.
  const auto t = tune_model(two_nodes(a100_nvswitch_1x8(), 25e9, 8), {}, Func::ALL_GATHER);
  EXPECT_NEAR(t.latency[kRing][kSimple], (8.4 + 14 * 3.4 + 1 * 14.0) * 1e-6, 1e-12);
  EXPECT_NEAR(t.latency[kRing][kLL], (6.6 + 14 * 1.0 + 1 * 2.7) * 1e-6, 1e-12);
}

TEST(NcclCollectives, Nccl28PerFunctionRingRows) {
  // tuning.cc at 2.8.3: compCap80 caps busBw at 235; one-node AllGather / ReduceScatter LL takes
  // busBw / 3 (all-reduce / 4); LL128 per-channel caps ll128MaxBwPerCh AllGather 18.3,
  // ReduceScatter 15.2 (x 12 channels).
  NcclTopology topo = a100_nvswitch_1x8();
  topo.nccl_version = 20803;
  const auto ag = tune_model(topo, {}, Func::ALL_GATHER);
  const auto rs = tune_model(topo, {}, Func::REDUCE_SCATTER);
  EXPECT_NEAR(ag.bandwidth[kRing][kSimple], 235e9 * 8 / 7, 1e3);
  EXPECT_NEAR(ag.bandwidth[kRing][kLL], 235e9 / 3 * 8 / 7, 1e3);
  EXPECT_NEAR(ag.bandwidth[kRing][kLL128], 235e9 * .92 * 8 / 7, 1e3);            // min(216.2, 219.6)
  EXPECT_NEAR(rs.bandwidth[kRing][kLL128], 15.2e9 * 12 * 8 / 7, 1e3);            // min(216.2, 182.4)
  EXPECT_NEAR(ag.latency[kRing][kSimple], (8.4 + 7 * 3.4) * 1e-6, 1e-12);        // 2.8 Ring Simple 8.4 + 3.4
  EXPECT_NEAR(tune_model(topo).bandwidth[kRing][kLL], 235e9 / 4 * 8 / 14, 1e3);  // all-reduce: / 4
}

TEST(NcclCollectives, NvlsRowsPerRelease) {
  NcclTopology topo = h100_nvswitch_1x8();
  auto nvls_bw = [&](int version) {
    topo.nccl_version = version;
    return tune_model(topo, {}, Func::ALL_GATHER).bandwidth[kNvls][kSimple];
  };
  // 2.28.3+: 8 heads x bwIntra 40 x nvlsEfficiency .85 x 7/8 (heads) x 7/8 (ppn), against bwInter
  // 60; no bus -> algorithm conversion for non-Ring AllGather.
  EXPECT_NEAR(nvls_bw(0), 8 * 40 * .85 * 7 / 8 * 7 / 8 * 1e9, 1e3);
  EXPECT_NEAR(nvls_bw(22803), 8 * 40 * .85 * 7 / 8 * 7 / 8 * 1e9, 1e3);
  EXPECT_NEAR(nvls_bw(22700), 8 * 40e9, 1e3);  // 2.23-2.28.2: 8 x min(40, 60), no ratio
  EXPECT_NEAR(nvls_bw(22300), 8 * 40e9, 1e3);
  EXPECT_NEAR(nvls_bw(21900), 8 * 40e9 * 5 / 6, 1e3);  // 2.19-2.22: x 5/6
  EXPECT_EQ(nvls_bw(21800), 0.0);                      // 2.18: Ring only
  EXPECT_NEAR(nvls_bw(21700), 8 * 40e9 * .75, 1e3);    // 2.17: x .75
  EXPECT_EQ(nvls_bw(21600), 0.0);                      // no NVLS before 2.17
  topo.nccl_version = 0;
  // NVLS latency: intraLat NVLINK NVLS Simple 25 us, nothing else on one node.
  EXPECT_NEAR(tune_model(topo, {}, Func::REDUCE_SCATTER).latency[kNvls][kSimple], 25e-6, 1e-12);
  // Across nodes NVLS needs a CollNet plugin with iallgather: not modelled, not offered.
  EXPECT_EQ(tune_model(two_nodes(topo, 50e9, 8), {}, Func::ALL_GATHER).bandwidth[kNvls][kSimple], 0.0);
  EXPECT_FALSE(modelled(Func::ALL_GATHER, Algo::TREE));
  EXPECT_TRUE(modelled(Func::REDUCE_SCATTER, Algo::NVLS));
}

TEST(NcclCollectives, LargeAllGatherTunerAndAchievedTime) {
  const double bytes = 4294967296.0;  // the whole output
  for (Func f : {Func::ALL_GATHER, Func::REDUCE_SCATTER}) {
    SCOPED_TRACE(to_string(f));
    const auto e = predict_collective(f, a100_nvswitch_1x8(), bytes);
    EXPECT_EQ(e.algo, Algo::RING);
    EXPECT_EQ(e.proto, Proto::SIMPLE);
    EXPECT_EQ(e.nchannels, 24);
    const double algbw = 240e9 * 8 / 7;
    EXPECT_NEAR(e.nccl_model_time, (8.4 + 7 * 3.4) * 1e-6 + bytes / algbw, 1e-9);
    // Achieved: the chunks are all-reduce's (ALLGATHER_/REDUCESCATTER_CHUNKSTEPS = NCCL_STEPS/2,
    // SLICESTEPS NCCL_STEPS/4): 22 slices per step on 24 channels x 8 ranks (NcclModel_test
    // HugeMessageTimeIsLatencyPlusBytesOverAlgbw), each paying the 3.4 us step latency, over 7 steps.
    EXPECT_NEAR(e.time, (8.4 + 7 * 22 * 3.4) * 1e-6 + bytes / algbw, 1e-9);
    EXPECT_NEAR(e.reduce_scatter_time + e.all_gather_time, e.time, 1e-15);
    EXPECT_EQ(f == Func::ALL_GATHER ? e.reduce_scatter_time : e.all_gather_time, 0.0);
  }
  // Half the steps of the all-reduce of the same buffer, at the same algorithm: the all-gather
  // moves (N-1)/N of it per rank, the all-reduce 2(N-1)/N.
  const auto ar = predict_allreduce(a100_nvswitch_1x8(), bytes, only(Algo::RING, Proto::SIMPLE));
  const auto ag = predict_collective(Func::ALL_GATHER, a100_nvswitch_1x8(), bytes, only(Algo::RING, Proto::SIMPLE));
  EXPECT_NEAR(ag.time - ar.time / 2, 8.4e-6 / 2, 1e-9);
}

TEST(NcclCollectives, SmallSizesPickLL) {
  // 64 KiB output: LL Ring 6.6 + 7 x .6 = 10.8 us + 65536 / 100.2 GB/s beats Simple's 32.2 us.
  const auto e = predict_collective(Func::ALL_GATHER, a100_nvswitch_1x8(), 65536);
  EXPECT_EQ(e.algo, Algo::RING);
  EXPECT_EQ(e.proto, Proto::LL);
  EXPECT_NEAR(e.nccl_model_time, (6.6 + 7 * 0.6) * 1e-6 + 65536 / (87.7e9 * 8 / 7), 1e-12);
  // enqueue.cc channel shrink: nBytes < nc x nt x threshold, LL threshold 8 x nRanks = 64 B per
  // thread, 512 threads: 65536 / (512 x 64) = 2 channels.
  EXPECT_EQ(e.nchannels, 2);
}

TEST(NcclCollectives, AllReduceListLeavesAllGatherAtDefaults) {
  // NCCL_ALGO=Tree names nothing AllGather runs: Ring stays (tuning.cc v2.17 "Never disable ring
  // for non-allreduce operations"); a list naming NVLS restricts it.
  NcclSettings tree;
  tree.algos = {Algo::TREE};
  EXPECT_EQ(predict_collective(Func::ALL_GATHER, h100_nvswitch_1x8(), 1 << 30, tree).algo, Algo::RING);
  NcclSettings nvls;
  nvls.algos = {Algo::NVLS};
  const auto e = predict_collective(Func::ALL_GATHER, h100_nvswitch_1x8(), 1 << 30, nvls);
  EXPECT_EQ(e.algo, Algo::NVLS);
  EXPECT_NEAR(e.nccl_model_time, 25e-6 + (1 << 30) / (8 * 40 * .85 * 7 / 8 * 7 / 8 * 1e9), 1e-9);
  // Ring on this node: 12 x 30 = 360 GB/s bus, x 8/7, beats NVLS's 208 GB/s by default.
  EXPECT_EQ(predict_collective(Func::ALL_GATHER, h100_nvswitch_1x8(), 1 << 30).algo, Algo::RING);
}

TEST(NcclCollectives, BusBandwidthAsNcclTests) {
  EXPECT_DOUBLE_EQ(busbw(Func::ALL_GATHER, 100, 8), 87.5);
  EXPECT_DOUBLE_EQ(busbw(Func::REDUCE_SCATTER, 100, 4), 75);
  EXPECT_DOUBLE_EQ(busbw(Func::ALL_REDUCE, 100, 8), 175);
}

TEST(NcclCollectives, BroadcastIsARingOfHops) {
  // 1 GiB on 8 A100s: Ring/Simple on 24 channels at 240 GB/s (busbw = algbw). Achieved: baseLat
  // 8.4 us + 7 hops x 3.4 us (NVLink Simple hwLat), the bytes at 240 GB/s, and a 3.4 us slice
  // sync for each further 512 KiB chunk of a channel's part (2^30 / 24 B: 86 chunks).
  const double bytes = 1 << 30;
  const auto e = predict_collective(Func::BROADCAST, a100_nvswitch_1x8(), bytes);
  EXPECT_EQ(e.algo, Algo::RING);
  EXPECT_EQ(e.proto, Proto::SIMPLE);
  EXPECT_EQ(e.nchannels, 24);
  EXPECT_NEAR(e.bandwidth, 240e9, 1e3);
  EXPECT_NEAR(e.time, (8.4 + 7 * 3.4 + 85 * 3.4) * 1e-6 + bytes / 240e9, 1e-12);
  EXPECT_NEAR(e.nccl_model_time, (8.4 + 3.4) * 1e-6 + bytes / 240e9, 1e-12);
  EXPECT_DOUBLE_EQ(e.why.fill, 0.0);
  EXPECT_DOUBLE_EQ(e.all_gather_time + e.reduce_scatter_time, e.time);
  // 4 KiB: LL, baseLat 6.6 us + 7 hops x 0.6 us (NVLink LL hwLat) + the bytes; the host step
  // (5 us) is below it.
  const auto small = predict_collective(Func::BROADCAST, a100_nvswitch_1x8(), 4096);
  EXPECT_EQ(small.proto, Proto::LL);
  EXPECT_NEAR(small.time, (6.6 + 7 * 0.6) * 1e-6 + 4096 / small.bandwidth, 1e-12);
  // busbw = algbw (nccl-tests src/broadcast.cu BroadcastGetBw).
  EXPECT_DOUBLE_EQ(busbw(Func::BROADCAST, 100, 8), 100);
}

TEST(NcclCollectives, RefusesWhatItDoesNotModel) {
  EXPECT_THROW(collective_candidates(Func::ALL_GATHER, a100_nvswitch_1x8(), -1), std::invalid_argument);
  // Nothing to move: NCCL returns at once.
  EXPECT_EQ(predict_collective(Func::REDUCE_SCATTER, a100_nvswitch_1x8(), 0).time, 0.0);
}

TEST(NcclCollectives, Nccl24AlwaysRings) {
  // 2.4 getPatternInfo: AllGather / ReduceScatter run ncclPatternRing whatever the tree threshold.
  NcclTopology topo = two_nodes(a100_nvswitch_1x8(), 12.5e9, 1);
  topo.nccl_version = 20408;
  for (double bytes : {4096.0, 1048576.0, 268435456.0})
    EXPECT_EQ(predict_collective(Func::ALL_GATHER, topo, bytes).algo, Algo::RING) << bytes;
}

TEST(NcclCollectives, CollectiveModelTakesNcclsAllGatherAndReduceScatter) {
  const auto cat = ddpsim::test_support::source_catalog();
  const auto cluster = cat.load_cluster(cat.resolve(ddpsim::config::Kind::CLUSTER, "dgx-a100"));
  ddpsim::config::CollectiveSettings nccl;  // the NCCL model, NCCL's defaults
  const CollectiveModel m(cluster, nccl);
  const NcclTopology topo = nccl_topology(cluster);
  const double bytes = 256.0 * 1048576;  // the all-gather's output = the reduce-scatter's input per rank
  const auto ag = m.allgather(bytes), rs = m.reduce_scatter(bytes);
  const auto want_ag = predict_collective(Func::ALL_GATHER, topo, bytes);
  const auto want_rs = predict_collective(Func::REDUCE_SCATTER, topo, bytes);
  // One phase, in reduce_scatter, at NCCL's pick and achieved time.
  EXPECT_NEAR(ag.total(), want_ag.time, 1e-15);
  EXPECT_NEAR(rs.total(), want_rs.time, 1e-15);
  EXPECT_EQ(ag.all_gather.total(), 0.0);
  EXPECT_EQ(rs.all_gather.total(), 0.0);
  EXPECT_EQ(ag.algorithm, to_string(want_ag.algo));
  EXPECT_EQ(rs.protocol, to_string(want_rs.proto));
  EXPECT_EQ(rs.channels, want_rs.nchannels);
  // The ring model keeps its closed forms: each the matching phase of its all-reduce.
  ddpsim::config::CollectiveSettings ring;
  ring.model = ddpsim::config::CollectiveModelKind::RING;
  const CollectiveModel r(cluster, ring);
  const auto ar = r.allreduce(bytes);
  EXPECT_NEAR(r.reduce_scatter(bytes).total(), ar.base_latency + ar.reduce_scatter.total(), 1e-15);
  EXPECT_NEAR(r.allgather(bytes).total(), ar.base_latency + ar.all_gather.total(), 1e-15);
  EXPECT_EQ(m.reduce_scatter(0).total(), 0.0);
}
