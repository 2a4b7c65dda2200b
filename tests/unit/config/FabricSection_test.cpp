// The `fabric` object: parsed into FabricSpec, a scenario's keys override its cluster's, and every
// bad value is refused with file, JSON path, value and what is allowed.
#include <gtest/gtest.h>

#include "config/catalog.hpp"
#include "config/overrides.hpp"
#include "support/builders.hpp"

namespace ddpsim {
namespace {

using test_support::contains_all;
using test_support::expect_config_error;
using test_support::Json;

config::Scenario load(const std::vector<std::string>& overrides, Json doc = test_support::scenario_json()) {
  doc["cluster"] = "dgx-h100";
  doc["nodes"] = 16;
  config::apply_overrides(doc, overrides);
  return test_support::source_catalog().scenario_from_json(doc, "fabric.json", DDPSIM_SOURCE_DIR);
}

TEST(FabricSection, DefaultIsTheSingleSwitch) {
  const auto s = load({});
  EXPECT_TRUE(s.cluster.inter_fabric.is_single_switch());
  EXPECT_EQ(s.collective.nccl_cross_nic, 2);
}

TEST(FabricSection, SetOverridesEveryField) {
  const auto s = load({"fabric.topology=rail_optimized", "fabric.oversubscription=2:1", "fabric.routing=ecmp",
                       "fabric.routing_seed=9", "fabric.placement=random", "fabric.placement_seed=3",
                       "fabric.background_load=0.25", "fabric.uplink_bandwidth=800Gbps", "fabric.switch_latency=300ns",
                       "fabric.servers=64", "fabric.flows_per_nic=2", "collective.NCCL_CROSS_NIC=0"});
  const auto& f = s.cluster.inter_fabric;
  EXPECT_EQ(f.topology, config::FabricTopology::RAIL_OPTIMIZED);
  EXPECT_DOUBLE_EQ(f.leaf_oversubscription, 2.0);
  EXPECT_EQ(f.routing, config::FabricRouting::ECMP);
  EXPECT_EQ(f.routing_seed, 9u);
  EXPECT_EQ(f.placement, config::FabricPlacement::RANDOM);
  EXPECT_EQ(f.placement_seed, 3u);
  EXPECT_DOUBLE_EQ(f.background_load, 0.25);
  EXPECT_DOUBLE_EQ(*f.uplink_bandwidth, 100e9);
  EXPECT_DOUBLE_EQ(f.switch_latency, 300e-9);
  EXPECT_EQ(f.servers, 64);
  EXPECT_EQ(f.flows_per_nic, 2);
  EXPECT_EQ(s.collective.nccl_cross_nic, 0);
  const auto t = load({"fabric.topology=fat_tree", "fabric.tiers=3", "fabric.leaves_per_pod=4",
                       "fabric.oversubscription={\"leaf\": \"1:1\", \"spine\": \"4:1\"}"});
  EXPECT_DOUBLE_EQ(t.cluster.inter_fabric.leaf_oversubscription, 1.0);
  EXPECT_DOUBLE_EQ(t.cluster.inter_fabric.spine_oversubscription, 4.0);
  EXPECT_EQ(t.cluster.inter_fabric.tiers, 3);
}

TEST(FabricSection, ScenarioOverridesItsClustersFabricKeyByKey) {
  Json doc = test_support::scenario_json();
  doc["cluster"] = Json::parse(R"({"name": "c", "gpu": "h100-sxm", "nodes": 16, "gpus_per_node": 8,
    "intra_node": {"fabric": "nvswitch", "link": "nvlink4", "links_per_gpu": 18},
    "inter_node": {"link": "ib-ndr", "nics_per_node": 8},
    "fabric": {"topology": "fat_tree", "oversubscription": "2:1", "routing": "adaptive"}})");
  Json copy = doc;
  const auto base = test_support::source_catalog().scenario_from_json(doc, "c.json", DDPSIM_SOURCE_DIR);
  EXPECT_DOUBLE_EQ(base.cluster.inter_fabric.leaf_oversubscription, 2.0);
  config::apply_overrides(copy, {"fabric.oversubscription=4:1"});
  const auto s = test_support::source_catalog().scenario_from_json(copy, "c.json", DDPSIM_SOURCE_DIR);
  EXPECT_EQ(s.cluster.inter_fabric.topology, config::FabricTopology::FAT_TREE);  // kept from the cluster
  EXPECT_EQ(s.cluster.inter_fabric.routing, config::FabricRouting::ADAPTIVE);
  EXPECT_DOUBLE_EQ(s.cluster.inter_fabric.leaf_oversubscription, 4.0);
}

TEST(FabricSection, EveryBadValueIsListed) {
  const auto e = expect_config_error([] {
    load({"fabric.topology=torus", "fabric.oversubscription=1:2", "fabric.routing=ospf", "fabric.placement=tight",
          "fabric.background_load=1.5", "fabric.uplink_bandwidth=fast", "fabric.tiers=4", "fabric.colour=red",
          "collective.NCCL_CROSS_NIC=3"});
  });
  EXPECT_TRUE(contains_all(
      e.what(), {"fabric.json", "/fabric/topology: \"torus\"", "rail_optimized", "/fabric/oversubscription: \"1:2\"",
                 "\"D:U\" with D >= U", "/fabric/routing: \"ospf\"", "adaptive", "/fabric/placement: \"tight\"",
                 "/fabric/background_load: 1.5", "/fabric/uplink_bandwidth", "/fabric/tiers: 4", "/fabric/colour",
                 "/collective/NCCL_CROSS_NIC: 3"}));
}

TEST(FabricSection, WiringProblemsNameTheFabric) {
  auto e = expect_config_error([] { load({"fabric.topology=fat_tree", "fabric.nics_per_leaf=12"}); });
  EXPECT_TRUE(contains_all(e.what(), {"fabric.json", "/fabric", "nics_per_leaf: 12", "multiple of 8"}));
  e = expect_config_error([] { load({"fabric.topology=fat_tree", "fabric.tiers=3"}); });
  EXPECT_TRUE(contains_all(e.what(), {"/fabric/leaves_per_pod: missing"}));
  e = expect_config_error([] { load({"fabric.topology=fat_tree", "fabric.servers=8"}); });
  EXPECT_TRUE(contains_all(e.what(), {"/fabric/servers: 8 is fewer than the job's 16 nodes"}));
}

}  // namespace
}  // namespace ddpsim
