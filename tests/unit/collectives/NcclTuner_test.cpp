// The NCCL model's two tables (collectives/nccl_tuner.hpp): tuner eras by release, and the
// algorithm traits' latency and bandwidth rules, each checked by hand against tuning.cc's
// formulas (ncclTopoTuneModel) for one topology. Graph figures come from search.cc as NOTES.md
// gives them (H100 NVLS graph: 8 heads, bwIntra 40, bwInter 60 on one node, 48 across nodes with
// 8 x 400 Gb/s NICs).
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "collectives/nccl_model.hpp"
#include "collectives/nccl_tuner.hpp"

using namespace ddpsim::collectives;

namespace {

// NcclTuning's [algo][proto] indices.
int idx(Algo a) { return static_cast<int>(a); }
int idx(Proto p) { return static_cast<int>(p); }

// DGX H100: 8 GPUs, 18 NVLink4 links = 360 GB/s per GPU into the NVSwitches, NVLS.
NcclTopology h100_node() {
  NcclTopology t;
  t.nranks = 8;
  t.arch = Arch::HOPPER;
  t.sm_count = 132;
  t.intra_bw = 360e9;
  t.nvswitch = true;
  t.nvls = true;
  return t;
}

NcclTopology h100_two_nodes() {
  NcclTopology t = h100_node();
  t.nranks = 16;
  t.nnodes = 2;
  t.nic_bw = 50e9;  // 400 Gb/s
  t.nics_per_node = 8;
  return t;
}

NcclTopology a100_node() {
  NcclTopology t;
  t.nranks = 8;
  t.arch = Arch::AMPERE;
  t.intra_bw = 240e9;  // 12 NVLinks x 20 GB/s
  t.nvswitch = true;
  return t;
}

}  // namespace

TEST(NcclTuner, ErasCoverEveryReleaseOnceInOrder) {
  const auto& eras = tuner_eras();
  ASSERT_FALSE(eras.empty());
  EXPECT_EQ(eras.front().first_version, 20000);
  EXPECT_EQ(eras.back().end_version, 0);  // open: the newest
  for (size_t i = 0; i + 1 < eras.size(); ++i) EXPECT_EQ(eras[i].end_version, eras[i + 1].first_version) << i;
  EXPECT_EQ(&tuner_era(0), &eras.back());
  EXPECT_THROW(tuner_era(19999), std::invalid_argument);
}

TEST(NcclTuner, EachEraSwitchesOnWhatItsReleaseShipped) {
  // Release notes: the tuner and LL128 in 2.5, NVLS in 2.17; CollNet tables read are 2.18+;
  // tuning.cc rewrote the NVLS rows in 2.28.3 and NVLS tree's NET hwLat in 2.28.9.
  EXPECT_FALSE(tuner_era(20408).tuner);
  EXPECT_FALSE(tuner_era(20408).ll128);
  EXPECT_TRUE(tuner_era(20500).tuner);
  EXPECT_STREQ(tuner_era(20803).releases, "2.5-2.8");
  EXPECT_TRUE(tuner_era(20803).tuner);
  EXPECT_FALSE(tuner_era(21605).nvls);
  EXPECT_TRUE(tuner_era(21700).nvls);
  EXPECT_FALSE(tuner_era(21700).collnet);
  EXPECT_TRUE(tuner_era(21805).collnet);
  EXPECT_FALSE(tuner_era(22802).nvls_bus_per_step);
  EXPECT_TRUE(tuner_era(22803).nvls_bus_per_step);
  EXPECT_DOUBLE_EQ(tuner_era(22807).net_hw_lat_override[idx(Algo::NVLS_TREE)], 14.0);
  EXPECT_DOUBLE_EQ(tuner_era(22809).net_hw_lat_override[idx(Algo::NVLS_TREE)], 0.0);
  EXPECT_FALSE(tuner_era(23002).nvls_sm100_tuning);
  EXPECT_TRUE(tuner_era(23003).nvls_sm100_tuning);
}

TEST(NcclTuner, FunctionsAreADimensionOfTheTraits) {
  for (Algo a : {Algo::RING, Algo::TREE, Algo::NVLS, Algo::NVLS_TREE, Algo::COLLNET_DIRECT, Algo::COLLNET_CHAIN})
    EXPECT_TRUE(modelled(Func::ALL_REDUCE, a)) << to_string(a);
  // tuning.cc runs AllGather / ReduceScatter on Ring, NVLS, CollNetDirect and PAT only; the model
  // has Ring and NVLS (NOTES.md).
  for (Func f : {Func::ALL_GATHER, Func::REDUCE_SCATTER}) {
    EXPECT_TRUE(modelled(f, Algo::RING)) << to_string(f);
    EXPECT_TRUE(modelled(f, Algo::NVLS)) << to_string(f);
    for (Algo a : {Algo::TREE, Algo::NVLS_TREE, Algo::COLLNET_DIRECT, Algo::COLLNET_CHAIN})
      EXPECT_FALSE(modelled(f, a)) << to_string(f) << " " << to_string(a);
  }
  // Broadcast: Ring only (tuning.cc skips every other algorithm for Broadcast and Reduce).
  EXPECT_TRUE(modelled(Func::BROADCAST, Algo::RING));
  for (Algo a : {Algo::TREE, Algo::NVLS, Algo::NVLS_TREE, Algo::COLLNET_DIRECT, Algo::COLLNET_CHAIN})
    EXPECT_FALSE(modelled(Func::BROADCAST, a)) << to_string(a);
  // src/include/device.h: NCCL_ALGO_TREE 0, RING 1, COLLNET_DIRECT 2, COLLNET_CHAIN 3, NVLS 4, NVLS_TREE 5.
  EXPECT_EQ(nccl_algo_index(Algo::TREE), 0);
  EXPECT_EQ(nccl_algo_index(Algo::RING), 1);
  EXPECT_EQ(nccl_algo_index(Algo::COLLNET_DIRECT), 2);
  EXPECT_EQ(nccl_algo_index(Algo::COLLNET_CHAIN), 3);
  EXPECT_EQ(nccl_algo_index(Algo::NVLS), 4);
  EXPECT_EQ(nccl_algo_index(Algo::NVLS_TREE), 5);
}

TEST(NcclTuner, NvlsOneNodeRuleByHand) {
  // 2.28.3+: bw = min(bwIntra x nvlsEfficiency(.85) x (8-1)/8 x 2, bwInter) = min(59.5, 60) per
  // head; bus 8 x 59.5 = 476; algorithm bw = bus x nRanks / (2 (nRanks - 1)) = 476 x 8/14 = 272.
  // Latency: hwLat[NVLINK][NVLS][Simple] = 25 us, one node (no NET term).
  const auto t = tune_model(h100_node());
  EXPECT_EQ(t.nvls.nchannels, 8);
  EXPECT_DOUBLE_EQ(t.nvls.bw_intra, 40.0);
  EXPECT_DOUBLE_EQ(t.nvls.bw_inter, 60.0);
  EXPECT_NEAR(t.bandwidth[idx(Algo::NVLS)][idx(Proto::SIMPLE)], 272e9, 1e-3);
  EXPECT_NEAR(t.latency[idx(Algo::NVLS)][idx(Proto::SIMPLE)], 25e-6, 1e-15);
  // 2.17-2.27: bw = min(bwIntra, bwInter) = 40 per head, bus 320, x 5/6 = 266.67 GB/s.
  NcclTopology old = h100_node();
  old.nccl_version = 21903;
  EXPECT_NEAR(tune_model(old).bandwidth[idx(Algo::NVLS)][idx(Proto::SIMPLE)], 320e9 * 5 / 6, 1e-3);
}

TEST(NcclTuner, NvlsTreeTwoNodeRuleByHand) {
  // 2 nodes: bwInter 48 x 2 (NVLS tree on <= 2 nodes) = 96; min(59.5, 96) = 59.5, capped by
  // perChMaxNVLSTreeBw[Hopper][2 nodes] = 57.7; bus 8 x 57.7 = 461.6; x 16/30 = 246.19 GB/s.
  // Latency: hwLat[NVLINK][NVLSTree] 25 + 2 x log2(2) x hwLat[NET][NVLSTree] 20.9 = 66.8 us;
  // before 2.28.9 the NET term was 14: 25 + 28 = 53 us.
  const NcclTopology topo = h100_two_nodes();
  const auto t = tune_model(topo);
  EXPECT_DOUBLE_EQ(t.nvls.bw_inter, 48.0);
  EXPECT_NEAR(t.bandwidth[idx(Algo::NVLS_TREE)][idx(Proto::SIMPLE)], 8 * 57.7 * 16 / 30 * 1e9, 1e-3);
  EXPECT_NEAR(t.latency[idx(Algo::NVLS_TREE)][idx(Proto::SIMPLE)], 66.8e-6, 1e-15);
  EXPECT_EQ(t.bandwidth[idx(Algo::NVLS)][idx(Proto::SIMPLE)], 0);  // multi-node NVLS needs CollNet
  NcclTopology old = topo;
  old.nccl_version = 22807;
  EXPECT_NEAR(tune_model(old).latency[idx(Algo::NVLS_TREE)][idx(Proto::SIMPLE)], 53e-6, 1e-15);
}

TEST(NcclTuner, CollNetRulesByHand) {
  NcclTopology topo = h100_two_nodes();
  topo.sharp = true;
  NcclSettings s;
  s.collnet_enable = true;
  const auto t = tune_model(topo, s);
  // CollNetDirect graph: 8 heads; speed: the first sm90 inter speed <= the NIC (50) whose 8
  // channels fit the 360 GB/s NVLink port: 45. Bus 8 x 45 = 360, GPU:NIC factor 8/8 = 1, x .85
  // (sm_90) = 306; x .5 = 153 GB/s. Latency: 2 x (1 x hwLat NVLINK 3.7 + 7 x 0.4) + NET 31 = 44 us.
  EXPECT_EQ(t.collnet_direct.nchannels, 8);
  EXPECT_DOUBLE_EQ(t.collnet_direct.bw_intra, 45.0);
  EXPECT_NEAR(t.bandwidth[idx(Algo::COLLNET_DIRECT)][idx(Proto::SIMPLE)], 153e9, 1e-3);
  EXPECT_NEAR(t.latency[idx(Algo::COLLNET_DIRECT)][idx(Proto::SIMPLE)], 44e-6, 1e-15);
  // CollNetChain (the tree graph): bus = nChannels x bwIntra, x .5; latency 2 x 7 x 2.8 + 30 = 69.2 us.
  EXPECT_NEAR(t.bandwidth[idx(Algo::COLLNET_CHAIN)][idx(Proto::SIMPLE)],
              t.collnet_chain.nchannels * t.collnet_chain.bw_intra * 0.5 * 1e9, 1e-3);
  EXPECT_NEAR(t.latency[idx(Algo::COLLNET_CHAIN)][idx(Proto::SIMPLE)], 69.2e-6, 1e-15);
  // Without NCCL_COLLNET_ENABLE neither exists.
  const auto off = tune_model(topo);
  EXPECT_EQ(off.bandwidth[idx(Algo::COLLNET_DIRECT)][idx(Proto::SIMPLE)], 0);
  EXPECT_EQ(off.bandwidth[idx(Algo::COLLNET_CHAIN)][idx(Proto::SIMPLE)], 0);
}

TEST(NcclTuner, RingLLRuleDiffersBetweenEras) {
  // A100 1 x 8: 12 channels x 20 GB/s (search.cc), bus 240 GB/s.
  // Current: min(llMaxBw[Ampere][1 node] 87.7, 240 x .5) = 87.7; x 8/14 = 50.11 GB/s.
  // 2.8.3: compCap80 cap 235, then min(87.7, 235 / 4) = 58.75; x 8/14 = 33.57 GB/s.
  // Latency Ring LL 2.8.3: baseLat 3.6 + 14 x hwLat[NVLINK] .47 = 10.18 us.
  const auto now = tune_model(a100_node());
  EXPECT_NEAR(now.bandwidth[idx(Algo::RING)][idx(Proto::LL)], 87.7e9 * 8 / 14, 1e-3);
  NcclTopology v28 = a100_node();
  v28.nccl_version = 20803;
  const auto old = tune_model(v28);
  EXPECT_NEAR(old.bandwidth[idx(Algo::RING)][idx(Proto::LL)], 235e9 / 4 * 8 / 14, 1e-3);
  EXPECT_NEAR(old.latency[idx(Algo::RING)][idx(Proto::LL)], (3.6 + 14 * 0.47) * 1e-6, 1e-15);
}

TEST(NcclTuner, BroadcastRulesByHand) {
  // tuning.cc, Broadcast: busBw as every ring (12 x 20 = 240 GB/s on 8 A100s; LL min(llMaxBw 87.7,
  // .5 x 240); LL128 min(.92 x 240, 12 x 20)), bus -> algorithm ratio nRanks / nsteps with nsteps =
  // nRanks (1); latency baseLat + one hwLat of the ring's hardware (sameChannels).
  constexpr int kRing = 0, kTree = 1, kLL = 0, kLL128 = 1, kSimple = 2;
  const NcclTuning t = tune_model(a100_node(), {}, Func::BROADCAST);
  EXPECT_NEAR(t.bandwidth[kRing][kSimple], 240e9, 1e3);
  EXPECT_NEAR(t.bandwidth[kRing][kLL], 87.7e9, 1e3);
  EXPECT_NEAR(t.bandwidth[kRing][kLL128], 220.8e9, 1e3);
  EXPECT_EQ(t.bandwidth[kTree][kSimple], 0.0);
  // baseLat Ring {6.6, 14.0, 8.4}, NVLink hwLat Ring {0.6, 1.9, 3.4} (us).
  EXPECT_NEAR(t.latency[kRing][kLL], (6.6 + 0.6) * 1e-6, 1e-12);
  EXPECT_NEAR(t.latency[kRing][kLL128], (14.0 + 1.9) * 1e-6, 1e-12);
  EXPECT_NEAR(t.latency[kRing][kSimple], (8.4 + 3.4) * 1e-6, 1e-12);
  // Across nodes the hwLat is the NET row's (Simple 14), without the graph's latencyInter: a
  // topology latency of 10 us changes the all-reduce's latency, not the broadcast's.
  NcclTopology two = h100_two_nodes();
  two.net_latency = 10e-6;
  const NcclTuning b2 = tune_model(two, {}, Func::BROADCAST);
  EXPECT_NEAR(b2.latency[kRing][kSimple], (8.4 + 14.0) * 1e-6, 1e-12);
  EXPECT_NEAR(b2.latency[kRing][kLL], (6.6 + 2.7) * 1e-6, 1e-12);
  EXPECT_GT(tune_model(two, {}, Func::ALL_REDUCE).latency[kRing][kSimple],
            tune_model(h100_two_nodes(), {}, Func::ALL_REDUCE).latency[kRing][kSimple]);
}
