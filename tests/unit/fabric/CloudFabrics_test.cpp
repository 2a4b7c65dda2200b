// The clouds' fabrics as the cluster presets describe them (configs/clusters/*.json "fabric",
// sources in each file): switch and cable counts against hand counts of the documented structure
// plus the chosen undocumented sizes, the scattered bound of a placement the provider does not
// guarantee, and the new field's error path.
#include <gtest/gtest.h>

#include "config/catalog.hpp"
#include "config/overrides.hpp"
#include "fabric/fabric.hpp"
#include "support/builders.hpp"

namespace ddpsim {
namespace {

using test_support::contains_all;
using test_support::expect_config_error;
using test_support::Json;

config::Scenario load(const std::string& cluster, int nodes, const std::vector<std::string>& overrides = {}) {
  Json doc = test_support::scenario_json();
  doc["cluster"] = cluster;
  doc["nodes"] = nodes;
  config::apply_overrides(doc, overrides);
  return test_support::source_catalog().scenario_from_json(doc, "cloud.json", DDPSIM_SOURCE_DIR);
}

fabric::Bom bom(const config::ClusterSpec& c) {
  const auto& f = c.inter_fabric;
  return fabric::Fabric(f, fabric::Fabric::servers_for(f, c.nodes, c.nics_per_node), c.nics_per_node,
                        c.inter_link->bandwidth)
      .bom();
}

TEST(CloudFabrics, EveryRentedPresetHasAFabricWhosePlacementIsNotGuaranteed) {
  for (const char* name :
       {"aws-p5", "aws-p5en", "aws-p6-b200", "p4d", "azure-nd-h100-v5", "gcp-a3-mega", "oci-bm-gpu4"}) {
    const auto s = load(name, 2);
    EXPECT_FALSE(s.cluster.inter_fabric.is_single_switch()) << name;
    EXPECT_FALSE(s.cluster.inter_fabric.placement_guaranteed) << name;
    EXPECT_EQ(s.cluster.inter_fabric.placement, config::FabricPlacement::PACKED) << name;
    EXPECT_DOUBLE_EQ(s.cluster.inter_fabric.leaf_oversubscription, 1.0) << name;  // all document non-blocking
    EXPECT_EQ(s.cluster.inter_fabric.tiers, 3) << name;
  }
  // Bought clusters keep their own (guaranteed) placement.
  EXPECT_TRUE(load("dgx-h100-superpod", 32).cluster.inter_fabric.placement_guaranteed);
}

TEST(CloudFabrics, AwsP5UltraClusterCountsByHand) {
  // 32 x 100G EFA a p5, 64 NIC ports down and 64 up a 128-port leaf: 2 instances a leaf.
  // 64 nodes: 32 leaves in one pod (64 leaves a pod); 64 lanes of 32 leaves, 128 / 32 = 4 lanes a
  // spine: 16 spines; no cores. Cables: 2048 NIC-leaf, 32 x 64 = 2048 leaf-spine.
  auto b = bom(load("aws-p5", 64).cluster);
  EXPECT_EQ(b.nics, 2048);
  EXPECT_EQ(b.leaves, 32);
  EXPECT_EQ(b.spines, 16);
  EXPECT_EQ(b.cores, 0);
  EXPECT_EQ(b.cables_leaf_spine, 2048);
  EXPECT_EQ(b.switch_ports_used, 2048 + 2 * 2048);
  // 256 nodes: 128 leaves in 2 pods. A pod's spine of lane j has 64 leaves down and 64 core
  // uplinks (non-blocking): one 128-port switch per lane, 64 a pod, 128 in all. Cores: 64 x 64
  // lane uplinks per pod, a core takes 128 / 2 pods = 64 of them: 64 cores. 8192 cables a tier;
  // every port of the 320 switches used.
  b = bom(load("aws-p5", 256).cluster);
  EXPECT_EQ(b.leaves, 128);
  EXPECT_EQ(b.spines, 128);
  EXPECT_EQ(b.cores, 64);
  EXPECT_EQ(b.cables_nic_leaf, 8192);
  EXPECT_EQ(b.cables_leaf_spine, 8192);
  EXPECT_EQ(b.cables_spine_core, 8192);
  EXPECT_EQ(b.switches(), 320);
  EXPECT_EQ(b.switch_ports_used, 320 * 128);
}

TEST(CloudFabrics, AwsP5enUltraClusterCountsByHand) {
  // 16 x 200G EFA a p5en, 64 NIC ports down a 128-port leaf: 4 instances a leaf. 64 nodes: 1024
  // NICs, 16 leaves in one pod; 64 lanes of 16 leaves, 128 / 16 = 8 lanes a spine: 8 spines; no
  // cores. Cables: 1024 NIC-leaf, 16 x 64 = 1024 leaf-spine; ports 1024 + 2 x 1024.
  const auto b = bom(load("aws-p5en", 64).cluster);
  EXPECT_EQ(b.nics, 1024);
  EXPECT_EQ(b.leaves, 16);
  EXPECT_EQ(b.spines, 8);
  EXPECT_EQ(b.cores, 0);
  EXPECT_EQ(b.cables_leaf_spine, 1024);
  EXPECT_EQ(b.switch_ports_used, 1024 + 2 * 1024);
}

TEST(CloudFabrics, AwsP6B200UltraClusterCountsByHand) {
  // 8 x 400G EFA a p6-b200, 64 NIC ports down a 128-port leaf: 8 instances a leaf. 64 nodes: 512
  // NICs, 8 leaves in one pod; 64 lanes of 8 leaves, 128 / 8 = 16 lanes a spine: 4 spines; no
  // cores. Cables: 512 NIC-leaf, 8 x 64 = 512 leaf-spine; ports 512 + 2 x 512.
  const auto b = bom(load("aws-p6-b200", 64).cluster);
  EXPECT_EQ(b.nics, 512);
  EXPECT_EQ(b.leaves, 8);
  EXPECT_EQ(b.spines, 4);
  EXPECT_EQ(b.cores, 0);
  EXPECT_EQ(b.cables_leaf_spine, 512);
  EXPECT_EQ(b.switch_ports_used, 512 + 2 * 512);
}

TEST(CloudFabrics, P4dUltraClusterCountsByHand) {
  // 4 x 100G EFA a p4d: 16 instances a 64-port-down leaf. 64 nodes: 4 leaves; 64 lanes of 4 leaves,
  // 32 lanes a spine: 2 spines. Ports: 4 x 128 + 2 x 128.
  const auto b = bom(load("p4d", 64).cluster);
  EXPECT_EQ(b.nics, 256);
  EXPECT_EQ(b.leaves, 4);
  EXPECT_EQ(b.spines, 2);
  EXPECT_EQ(b.cables_leaf_spine, 256);
  EXPECT_EQ(b.switch_ports_used, 6 * 128);
}

TEST(CloudFabrics, AzureNdH100V5RailOptimizedCountsByHand) {
  // Rail-optimized units of 32 VMs, 8 rail leaves a unit, each 32 NDR down and 32 up (64-port
  // Quantum-2). 64 nodes: 2 units, 16 leaves, one pod (32 leaves); 32 lanes of 16 leaves, 4 a
  // spine: 8 spines (24 switches, every port used).
  auto b = bom(load("azure-nd-h100-v5", 64).cluster);
  EXPECT_EQ(b.leaves, 16);
  EXPECT_EQ(b.spines, 8);
  EXPECT_EQ(b.cores, 0);
  EXPECT_EQ(b.cables_nic_leaf, 512);
  EXPECT_EQ(b.cables_leaf_spine, 512);
  EXPECT_EQ(b.switch_ports_used, 24 * 64);
  // 256 nodes: 8 units, 64 leaves in 2 pods; a lane's spine 32 down + 32 up: 32 spines a pod;
  // cores: 32 x 32 uplinks a pod, 64 / 2 = 32 a core: 32 cores. 2048 cables a tier.
  b = bom(load("azure-nd-h100-v5", 256).cluster);
  EXPECT_EQ(b.leaves, 64);
  EXPECT_EQ(b.spines, 64);
  EXPECT_EQ(b.cores, 32);
  EXPECT_EQ(b.cables_spine_core, 2048);
  EXPECT_EQ(b.switch_ports_used, 160 * 64);
}

TEST(CloudFabrics, GcpA3MegaAndOciCountsByHand) {
  // A3 Mega: 8 x 200G a VM, 32 ports down a 64-port ToR: 4 VMs a leaf. 64 nodes: 16 leaves,
  // 32 lanes, 4 a spine: 8 spines. 256 nodes: 64 leaves in 2 pods: 64 spines and 32 cores.
  auto b = bom(load("gcp-a3-mega", 64).cluster);
  EXPECT_EQ(b.leaves, 16);
  EXPECT_EQ(b.spines, 8);
  EXPECT_EQ(b.cables_leaf_spine, 512);
  b = bom(load("gcp-a3-mega", 256).cluster);
  EXPECT_EQ(b.spines, 64);
  EXPECT_EQ(b.cores, 32);
  // OCI BM.GPU4.8: 16 x 100G a node, 64 ports down a 128-port leaf: 4 nodes a leaf. 64 nodes:
  // 16 leaves, 64 lanes, 128 / 16 = 8 lanes a spine: 8 spines; 1024 cables a tier.
  b = bom(load("oci-bm-gpu4", 64).cluster);
  EXPECT_EQ(b.leaves, 16);
  EXPECT_EQ(b.spines, 8);
  EXPECT_EQ(b.cables_nic_leaf, 1024);
  EXPECT_EQ(b.cables_leaf_spine, 1024);
  EXPECT_EQ(b.switch_ports_used, 24 * 128);
}

TEST(CloudFabrics, ScatteredBoundPutsEveryNodeUnderItsOwnLeafDomain) {
  // aws-p5 at 64 nodes: 2 servers a leaf, so 128 servers are wired and node i runs on server 2i
  // (leaf i); Azure's rail units hold 32 servers: 64 x 32 wired, node i alone in unit i.
  const auto c = load("aws-p5", 64).cluster;
  const auto s = fabric::scattered_spec(c.inter_fabric, 64, c.nics_per_node);
  EXPECT_EQ(s.servers, 128);
  EXPECT_EQ(s.placement, fabric::FabricPlacement::SPREAD);
  EXPECT_EQ(fabric::scattered_overrides(c.inter_fabric, 64, c.nics_per_node),
            (std::vector<std::string>{"fabric.placement=spread", "fabric.servers=128"}));
  fabric::Fabric f(s, s.servers, c.nics_per_node, c.inter_link->bandwidth);
  const auto at = f.place(64);
  for (int i = 0; i < 64; ++i) EXPECT_EQ(f.leaf_of(at[static_cast<size_t>(i)], 0, 0), i);
  const auto a = load("azure-nd-h100-v5", 64).cluster;
  const auto sa = fabric::scattered_spec(a.inter_fabric, 64, a.nics_per_node);
  EXPECT_EQ(sa.servers, 64 * 32);
  fabric::Fabric fa(sa, sa.servers, a.nics_per_node, a.inter_link->bandwidth);
  EXPECT_EQ(fa.pods(), 16);  // 512 rail leaves, 32 a pod
  const auto ata = fa.place(64);
  for (int i = 0; i < 64; ++i) EXPECT_EQ(ata[static_cast<size_t>(i)] / 32, i);
  // The scattered run's overrides load as a valid scenario.
  const auto sc = load("aws-p5", 64, {"fabric.placement=spread", "fabric.servers=128"});
  EXPECT_EQ(sc.cluster.inter_fabric.servers, 128);
}

TEST(CloudFabrics, PlacementGuaranteedMustBeABoolean) {
  auto e = expect_config_error([] { load("aws-p5", 2, {"fabric.placement_guaranteed=\"no\""}); });
  EXPECT_TRUE(contains_all(e.what(), {"cloud.json", "/fabric/placement_guaranteed", "\"no\"", "true or false"}));
  e = expect_config_error([] { load("aws-p5", 2, {"fabric.placement_guaranteed=1"}); });
  EXPECT_TRUE(contains_all(e.what(), {"/fabric/placement_guaranteed: 1", "true or false"}));
  EXPECT_TRUE(load("aws-p5", 2, {"fabric.placement_guaranteed=true"}).cluster.inter_fabric.placement_guaranteed);
}

}  // namespace
}  // namespace ddpsim
