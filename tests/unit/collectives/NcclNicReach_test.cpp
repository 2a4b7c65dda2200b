// A node running fewer GPUs than NIC groups: the GPUs reach only their own NICs, each through its
// PCIe path (sim/collectives/nccl_model.cpp nic_reach; NOTES.md "Fewer GPUs than NICs"). Every
// expected figure is computed by hand below from NCCL's search rules (src/graph/search.cc at
// v2.30.7-1) and the hardware's link figures, not read off the model.
#include <gtest/gtest.h>

#include "collectives/nccl_model.hpp"
#include "collectives/topology.hpp"
#include "config/catalog.hpp"
#include "support/builders.hpp"

using namespace ddpsim::collectives;

namespace {

// A bundled preset run at `ppn` GPUs per node on `nodes` nodes (`run --gpus-per-node`): dgx-h100
// is 8 H100 (PCIe Gen5 x16, 48 GB/s) with 8 x 400 Gb/s NICs, one behind each GPU's PCIe switch;
// dgx-a100 8 A100 (Gen4 x16, 24 GB/s) with 8 x 200 Gb/s; aws-p5 8 H100 with 32 x 100 Gb/s EFA.
NcclTopology preset(const char* name, int ppn, int nodes) {
  static const auto cat = ddpsim::test_support::source_catalog();
  auto c = cat.load_cluster(cat.resolve(ddpsim::config::Kind::CLUSTER, name));
  c.gpus_per_node = ppn;
  c.nodes = nodes;
  return nccl_topology(c);
}

// dgx-h100 with nics_per_gpu as given (0: every NIC of the node shared by the ranks, as before).
NcclTopology dgx_h100(int ppn, int nodes, int nics_per_gpu) {
  NcclTopology t = preset("dgx-h100", ppn, nodes);
  t.nics_per_gpu = nics_per_gpu;
  return t;
}

constexpr double kGiB = 1024.0 * 1024 * 1024;

// One GPU per node on 2 nodes: NCCL's ring graph (channels x GB/s per channel), and a 1 GiB
// all-reduce's busbw (= algbw on 2 ranks: each rank sends 2(n-1)/n = 1 byte per byte through its
// NIC) at most the GPU's PCIe path `path_gbs`, at least half of it.
void expect_one_gpu_ring(const NcclTopology& t, int channels, double gbs, double path_gbs) {
  const NcclTuning tu = tune_model(t);
  EXPECT_EQ(tu.ring.nchannels, channels);
  EXPECT_DOUBLE_EQ(tu.ring.bw_inter, gbs);
  EXPECT_EQ(tu.comm_channels, 2 * channels);  // ncclTopoPostset doubles
  const double bus = busbw_allreduce(algbw(kGiB, predict_allreduce(t, kGiB).time), 2);
  EXPECT_LE(bus, path_gbs * 1e9 * (1 + 1e-9));
  EXPECT_GT(bus, 0.5 * path_gbs * 1e9);
}

}  // namespace

TEST(NcclNicReach, OneH100PerNodeUsesItsOwnNic) {
  // search.cc ncclTopoSearchInit: maxBw = the GPU->NET path's bandwidth, the narrowest link on it
  // (paths.cc): min(NIC 50, PCIe Gen5 x16 48) = 48 GB/s. Pass 1 (sm90 inter speeds 48, 45, ...):
  // 48 GB/s fits one channel on the one NIC in reach (PHB/SYS NICs are never searched once a
  // PIX graph exists: typeInter stops below PATH_PXN, and PXN needs a second GPU), 1 x 48;
  // 24 GB/s gives 2 x 24 = 48, not more; 22 / 48 < .49 ends the pass. ncclTopoDupChannels
  // (48 >= 25, one channel): 2 channels x 24. Pass 2: 2 x 30 = 60 > 48, so it stays.
  // busbw <= 48 GB/s: the one GPU's PCIe path, below the NIC's 50.
  expect_one_gpu_ring(dgx_h100(1, 2, 1), 2, 24.0, 48.0);
  // Before (every NIC of the node shared by the ranks, nics_per_gpu 0): 8 NICs x 1 channel at 48,
  // "perfect" (8 x 48 >= totalBw 50), not duplicated (sm90: more than 4 channels below 50 GB/s),
  // 16 after ncclTopoPostset: the 353 GB/s of NOTES.md.
  const NcclTuning all = tune_model(dgx_h100(1, 2, 0));
  EXPECT_EQ(all.ring.nchannels, 8);
  EXPECT_EQ(all.comm_channels, 16);
}

TEST(NcclNicReach, TwoH100PerNodeReachTwoNics) {
  // 2 GPUs, 2 NICs in reach (one each): the network part of the search holds 2 x floor(48 / s)
  // channels; at 48 GB/s 2 channels, "perfect" only against totalBw (the GPU's NVLink, 370.8), so
  // the pass goes on: 24 GB/s gives 4 x 24 = 96, no better; DupChannels -> 4 x 24.
  const NcclTuning t = tune_model(dgx_h100(2, 2, 1));
  EXPECT_EQ(t.ring.nchannels * t.ring.bw_inter, 96.0);
  // A ring over 4 ranks on 2 nodes leaves each node once per channel: each node sends 2(n-1)/n
  // = 1.5 bytes per byte through its NICs, at most 2 GPUs x min(50, 48) = 96 GB/s (item 7), so
  // algbw <= 64 GB/s and busbw (algbw x 1.5) <= 96 GB/s.
  NcclSettings ring;
  ring.algos = {Algo::RING};
  ring.protos = {Proto::SIMPLE};
  const AllReduceEstimate r = predict_allreduce(dgx_h100(2, 2, 1), kGiB, ring);
  EXPECT_LE(busbw_allreduce(algbw(kGiB, r.time), 4), 96e9 * (1 + 1e-9));
  // NCCL's pick (a tree on two nodes sends 1 byte per byte through a node's NICs): algbw <= 96.
  const AllReduceEstimate e = predict_allreduce(dgx_h100(2, 2, 1), kGiB);
  EXPECT_LE(algbw(kGiB, e.time), 96e9 * (1 + 1e-9));
}

TEST(NcclNicReach, PresetsAtTheirOwnGpusPerNodeDoNotChange) {
  // 8 GPUs, 8 NICs: every NIC group has its GPU, nothing is limited.
  for (int nodes : {2, 4, 16}) {
    const auto with = predict_allreduce(dgx_h100(8, nodes, 1), kGiB);
    const auto without = predict_allreduce(dgx_h100(8, nodes, 0), kGiB);
    EXPECT_EQ(with.time, without.time);
    EXPECT_EQ(with.algo, without.algo);
    EXPECT_EQ(with.nchannels, without.nchannels);
  }
}

TEST(NcclNicReach, AwsP5GroupsRailsByGpu) {
  // aws-ofi-nccl's RDMA protocol shows one device per 4 EFA rails beside an H100 (4 x 100 Gb/s =
  // 50 GB/s): one GPU per instance reaches its own group, as one NIC on DGX H100, through its
  // PCIe Gen5 x16 path (48): the same 2 x 24 ring as above.
  const NcclTopology t = preset("aws-p5", 1, 2);
  EXPECT_EQ(t.nics_per_gpu, 4);
  // 1 GiB: at most its 48 GB/s PCIe path (was 360 GB/s busbw over the instance's 32 rails).
  expect_one_gpu_ring(t, 2, 24.0, 48.0);
}

TEST(NcclNicReach, OneA100PerNode) {
  // DGX A100: 8 x 200 Gb/s HDR (25 GB/s), PCIe Gen4 x16 (24 GB/s). maxBw = min(25, 24) = 24; the
  // Ampere inter speeds (48, 30, 28, 24, 20, ...): 24 fits one channel (1 x 24, not >= totalBw
  // 25), 12 gives 2 x 12, no better, 10 / 24 < .49 ends it; no duplication below 25 GB/s; pass 2:
  // 28 does not fit. One channel at 24 GB/s.
  const NcclTopology t = preset("dgx-a100", 1, 2);
  EXPECT_DOUBLE_EQ(t.nic_bw, 25e9);
  EXPECT_DOUBLE_EQ(t.gpu_nic_pcie_bw, 24e9);
  expect_one_gpu_ring(t, 1, 24.0, 24.0);
}

TEST(NcclNicReach, ClusterPresetsCarryNicsPerGpu) {
  const auto cat = ddpsim::test_support::source_catalog();
  auto load = [&](const char* n) { return cat.load_cluster(cat.resolve(ddpsim::config::Kind::CLUSTER, n)); };
  auto h100 = load("dgx-h100");
  EXPECT_EQ(h100.nics_per_gpu, 1);            // 8 NICs / 8 GPUs
  EXPECT_EQ(load("aws-p5").nics_per_gpu, 4);  // 32 EFA rails / 8 GPUs
  // A job's GPUs per node does not change the hardware's figure.
  h100.gpus_per_node = 1;
  h100.nodes = 2;
  const NcclTopology t = nccl_topology(h100);
  EXPECT_EQ(t.nics_per_gpu, 1);
  EXPECT_DOUBLE_EQ(t.gpu_nic_pcie_bw, 48e9);  // h100-sxm host_bandwidth default, Gen5 x16
  EXPECT_EQ(tune_model(t).ring.nchannels, 2);
}
