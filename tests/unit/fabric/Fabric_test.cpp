// The fabric graph without SimGrid: switch, port and cable counts against hand counts, and the
// route of every hop of a ring under each wiring.
#include "fabric/fabric.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.hpp"
#include "fabric/rings.hpp"

namespace ddpsim::fabric {
namespace {

FabricSpec spec(FabricTopology t, int nics_per_leaf = 32, double over = 1.0) {
  FabricSpec s;
  s.topology = t;
  s.nics_per_leaf = nics_per_leaf;
  s.leaf_oversubscription = over;
  return s;
}

constexpr double kNdr = 50e9;  // 400 Gb/s

TEST(Fabric, TorFatTreeCountsByHand) {
  // 16 servers x 8 NICs, 32 NICs a leaf: 4 servers a leaf, 4 leaves, 32 uplinks each; a 64-port
  // spine takes 16 lanes of 4 leaves: 2 spines. Ports: 4 x 64 on leaves + 2 x 64 on spines.
  Fabric f(spec(FabricTopology::FAT_TREE), 16, 8, kNdr);
  const Bom b = f.bom();
  EXPECT_EQ(b.servers, 16);
  EXPECT_EQ(b.nics, 128);
  EXPECT_EQ(b.leaves, 4);
  EXPECT_EQ(b.spines, 2);
  EXPECT_EQ(b.cores, 0);
  EXPECT_EQ(b.cables_nic_leaf, 128);
  EXPECT_EQ(b.cables_leaf_spine, 128);
  EXPECT_EQ(b.switch_ports_used, 4 * 64 + 2 * 64);
  // 2:1: half the uplinks, one spine.
  Fabric h(spec(FabricTopology::FAT_TREE, 32, 2.0), 16, 8, kNdr);
  EXPECT_EQ(h.bom().cables_leaf_spine, 64);
  EXPECT_EQ(h.bom().spines, 1);
  EXPECT_EQ(h.lanes(), 16);
  EXPECT_DOUBLE_EQ(h.links()[static_cast<size_t>(h.route(0, 0, 4, 0, 0)[0].links[1])].bandwidth, kNdr);
}

TEST(Fabric, SuperPodRailOptimizedCountsByHand) {
  // NVIDIA DGX SuperPOD (H100) reference architecture: 4 scalable units of 32 DGX, 8 rail leaves
  // per unit (32 leaves), 16 spines of 64 ports, every leaf 32 down and 32 up.
  Fabric f(spec(FabricTopology::RAIL_OPTIMIZED), 128, 8, kNdr);
  const Bom b = f.bom();
  EXPECT_EQ(b.leaves, 32);
  EXPECT_EQ(b.spines, 16);
  EXPECT_EQ(b.cables_nic_leaf, 1024);
  EXPECT_EQ(b.cables_leaf_spine, 1024);
  EXPECT_EQ(b.switches(), 48);
  EXPECT_EQ(b.switch_ports_used, 48 * 64);
}

TEST(Fabric, ThreeTierKAryCountsByHand) {
  // The k-ary fat-tree of radix k = 8: k^3/4 = 128 hosts, k pods of k/2 leaves and k/2 spines,
  // (k/2)^2 = 16 cores; 128 cables per tier.
  FabricSpec s = spec(FabricTopology::FAT_TREE, 4);
  s.tiers = 3;
  s.switch_radix = 8;
  s.leaves_per_pod = 4;
  Fabric f(s, 128, 1, kNdr);
  const Bom b = f.bom();
  EXPECT_EQ(f.pods(), 8);
  EXPECT_EQ(b.leaves, 32);
  EXPECT_EQ(b.spines, 32);
  EXPECT_EQ(b.cores, 16);
  EXPECT_EQ(b.cables_nic_leaf, 128);
  EXPECT_EQ(b.cables_leaf_spine, 128);
  EXPECT_EQ(b.cables_spine_core, 128);
  EXPECT_EQ(b.switch_ports_used, 80 * 8);
}

TEST(Fabric, DualTorCountsByHand) {
  // Every NIC has two half-bandwidth ports on the two leaves of a pair; dual-plane spines.
  FabricSpec s = spec(FabricTopology::DUAL_TOR);
  s.planes = 2;
  Fabric f(s, 16, 8, kNdr);
  const Bom b = f.bom();
  EXPECT_EQ(b.nics, 128);
  EXPECT_EQ(b.nic_ports, 256);
  EXPECT_EQ(b.leaves, 8);
  EXPECT_EQ(b.cables_leaf_spine, 8 * 32);
  EXPECT_EQ(b.spines, 4);  // per plane: 4 leaves, 16 lanes a 64-port spine, 32 lanes
  const auto r = f.route(0, 3, 1, 3, 0);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_DOUBLE_EQ(r[0].share, 0.5);
  EXPECT_DOUBLE_EQ(f.links()[static_cast<size_t>(r[0].links[0])].bandwidth, kNdr / 2);
  EXPECT_NE(r[0].links[0], r[1].links[0]);
}

TEST(Fabric, CapexFromUnitPrices) {
  FabricSpec s = spec(FabricTopology::RAIL_OPTIMIZED);
  s.price_per_switch = 30000;
  s.price_per_cable = 1000;
  s.price_per_nic = 2000;
  Fabric f(s, 128, 8, kNdr);
  EXPECT_DOUBLE_EQ(f.bom().capex, 48 * 30000.0 + 2048 * 1000.0 + 1024 * 2000.0);
}

TEST(Fabric, RefusesWiringBeyondRadix) {
  FabricSpec s = spec(FabricTopology::FAT_TREE);
  s.nics_per_leaf = 48;  // 48 down + 48 up > 64
  EXPECT_THROW(Fabric(s, 12, 8, kNdr), core::ConfigError);
  try {
    Fabric(spec(FabricTopology::FAT_TREE), 65 * 4, 8, kNdr);  // 65 leaves on a 2-tier tree of 64-port spines
    FAIL();
  } catch (const core::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("65 leaves exceed"), std::string::npos) << e.what();
  }
  try {
    Fabric(spec(FabricTopology::FAT_TREE, 30), 8, 8, kNdr);
    FAIL();
  } catch (const core::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("fabric.nics_per_leaf: 30"), std::string::npos) << e.what();
  }
}

// Every hop of a packed ring on a ToR tree: inside a leaf NIC up + NIC down; across leaves also
// the D-mod-k lane of the destination port, up and down.
TEST(Fabric, TorRingRoutesEveryHop) {
  Fabric f(spec(FabricTopology::FAT_TREE), 16, 8, kNdr);
  const auto flows = ring_flows(f, f.place(16), 16, 2, 1);
  ASSERT_EQ(flows.size(), 16u * 8u);
  for (const auto& fl : flows) {
    ASSERT_EQ(fl.paths.size(), 1u);
    const auto& p = fl.paths[0].links;
    EXPECT_EQ(fl.dst_nic, fl.src_nic);
    const bool same_leaf = fl.src_node / 4 == fl.dst_node / 4;
    ASSERT_EQ(p.size(), same_leaf ? 2u : 4u) << fl.src_node;
    EXPECT_EQ(f.link_name(p.front()), "server" + std::to_string(fl.src_node) + ".nic" + std::to_string(fl.src_nic) +
                                          ">leaf" + std::to_string(fl.src_node / 4));
    if (!same_leaf) {
      const int lane = (fl.dst_node * 8 + fl.dst_nic) % 32;
      EXPECT_EQ(f.link_name(p[1]), "leaf" + std::to_string(fl.src_node / 4) + ">spine" + std::to_string(lane));
      EXPECT_EQ(f.link_name(p[2]), "spine" + std::to_string(lane) + ">leaf" + std::to_string(fl.dst_node / 4));
    }
    EXPECT_EQ(f.link_name(p.back()), "leaf" + std::to_string(fl.dst_node / 4) + ">server" +
                                         std::to_string(fl.dst_node) + ".nic" + std::to_string(fl.dst_nic));
  }
  // D-mod-k on a packed ring: no uplink carries two flows.
  const auto n = link_counts(f, flows);
  for (size_t l = 0; l < n.size(); ++l) EXPECT_LE(n[l], 1) << f.link_name(static_cast<int>(l));
}

// Rail-optimized: on rails (NCCL_CROSS_NIC 0) a hop inside a unit crosses only rail leaf r;
// NCCL_CROSS_NIC=1 moves it to another rail, through a spine.
TEST(Fabric, RailRingRoutesEveryHop) {
  Fabric f(spec(FabricTopology::RAIL_OPTIMIZED), 64, 8, kNdr);  // 2 units of 32 servers
  for (int cross : {0, 1}) {
    const auto flows = ring_flows(f, f.place(64), 64, cross, 1);
    for (const auto& fl : flows) {
      const auto& p = fl.paths[0].links;
      const bool same_unit = fl.src_node / 32 == fl.dst_node / 32;
      const bool on_rail = cross == 0;
      EXPECT_EQ(f.leaf_of(fl.src_node, fl.src_nic, 0), fl.src_node / 32 * 8 + fl.src_nic);
      ASSERT_EQ(p.size(), same_unit && on_rail ? 2u : 4u) << cross << " " << fl.src_node;
      EXPECT_EQ(fl.paths[0].switches, same_unit && on_rail ? 1 : 3);
    }
  }
}

TEST(Fabric, ThreeTierCrossPodRoute) {
  FabricSpec s = spec(FabricTopology::FAT_TREE, 4);
  s.tiers = 3;
  s.switch_radix = 8;
  s.leaves_per_pod = 4;
  Fabric f(s, 128, 1, kNdr);
  const auto r = f.route(0, 0, 127, 0, 0)[0];  // pod 0 leaf 0 -> pod 7 leaf 31
  ASSERT_EQ(r.links.size(), 6u);
  EXPECT_EQ(r.switches, 5);
  const int lane = 127 % 4, m = 127 / 4 % 4;
  EXPECT_EQ(f.link_name(r.links[2]),
            "pod0.spine" + std::to_string(lane) + ">core" + std::to_string(lane) + "." + std::to_string(m));
  EXPECT_EQ(f.link_name(r.links[3]),
            "core" + std::to_string(lane) + "." + std::to_string(m) + ">pod7.spine" + std::to_string(lane));
  EXPECT_EQ(f.route(0, 0, 5, 0, 0)[0].links.size(), 4u);  // same pod, other leaf
}

TEST(Fabric, AdaptiveAggregatesLanes) {
  FabricSpec s = spec(FabricTopology::FAT_TREE, 32, 4.0);
  s.routing = FabricRouting::ADAPTIVE;
  Fabric f(s, 16, 8, kNdr);
  EXPECT_EQ(f.lanes(), 1);
  const auto r = f.route(0, 0, 4, 0, 0)[0];
  EXPECT_DOUBLE_EQ(f.links()[static_cast<size_t>(r.links[1])].bandwidth, 32 * kNdr / 4);
  EXPECT_EQ(f.link_name(r.links[1]), "leaf0>spines");
  EXPECT_EQ(f.bom().cables_leaf_spine, 4 * 8);  // the cables stay physical
}

TEST(Fabric, PlacementPackedSpreadRandom) {
  FabricSpec s = spec(FabricTopology::FAT_TREE);
  s.placement = FabricPlacement::SPREAD;
  Fabric f(s, 16, 8, kNdr);
  EXPECT_EQ(f.place(6), (std::vector<int>{0, 4, 8, 12, 1, 5}));
  s.placement = FabricPlacement::RANDOM;
  s.placement_seed = 7;
  const auto a = Fabric(s, 16, 8, kNdr).place(16);
  std::vector<int> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < 16; ++i) EXPECT_EQ(sorted[static_cast<size_t>(i)], i);
  EXPECT_EQ(a, Fabric(s, 16, 8, kNdr).place(16));  // deterministic per seed
  s.placement_seed = 8;
  EXPECT_NE(a, Fabric(s, 16, 8, kNdr).place(16));
  EXPECT_EQ(Fabric::servers_for(spec(FabricTopology::FAT_TREE), 9, 8), 12);
  EXPECT_EQ(Fabric::servers_for(spec(FabricTopology::RAIL_OPTIMIZED), 9, 8), 32);
}

// E[max load] of m balls thrown uniformly into n bins, exactly: P(max <= t) =
// m!/n^m [x^m] (sum_{i<=t} x^i/i!)^n.
double expected_max_load(int m, int n) {
  double e = 0;
  for (int t = 0; t < m; ++t) {
    std::vector<double> poly(static_cast<size_t>(m + 1), 0.0), term(static_cast<size_t>(m + 1), 0.0);
    poly[0] = 1;
    double fact = 1;
    for (int i = 0; i <= std::min(t, m); ++i) {
      if (i > 0) fact *= i;
      term[static_cast<size_t>(i)] = 1.0 / fact;
    }
    for (int b = 0; b < n; ++b) {
      std::vector<double> next(static_cast<size_t>(m + 1), 0.0);
      for (int i = 0; i <= m; ++i)
        if (poly[static_cast<size_t>(i)] != 0)
          for (int j = 0; j <= t && i + j <= m; ++j)
            next[static_cast<size_t>(i + j)] += poly[static_cast<size_t>(i)] * term[static_cast<size_t>(j)];
      poly = std::move(next);
    }
    double p = poly[static_cast<size_t>(m)];
    for (int i = 1; i <= m; ++i) p *= static_cast<double>(i) / n;
    e += 1.0 - p;  // E[max] = sum_t P(max > t)
  }
  return e;
}

TEST(Fabric, EcmpBusiestUplinkIsBallsIntoBins) {
  // Spread placement: every server's ring successor is on another leaf, so each leaf sends its
  // 32 NIC flows up onto 32 lanes (1:1). ECMP hashes them independently: the busiest lane of a
  // leaf carries the balls-into-bins maximum, not 1.
  FabricSpec s = spec(FabricTopology::FAT_TREE);
  s.placement = FabricPlacement::SPREAD;
  s.routing = FabricRouting::ECMP;
  const double expected = expected_max_load(32, 32);
  double sum = 0;
  int samples = 0;
  for (uint64_t seed = 1; seed <= 100; ++seed) {
    s.routing_seed = seed;
    Fabric f(s, 64, 8, kNdr);
    const auto n = link_counts(f, ring_flows(f, f.place(64), 64, 2, 1));
    for (int leaf = 0; leaf < f.leaves(); ++leaf) {
      int busiest = 0, total = 0;
      for (int j = 0; j < f.lanes(); ++j) {
        busiest = std::max(busiest, n[static_cast<size_t>(f.uplink(leaf, j))]);
        total += n[static_cast<size_t>(f.uplink(leaf, j))];
      }
      EXPECT_EQ(total, 32);
      sum += busiest;
      ++samples;
    }
  }
  EXPECT_NEAR(sum / samples / expected, 1.0, 0.05) << sum / samples << " vs " << expected;
  // D-mod-k on the same permutation is deterministic: its busiest lane is what the destination
  // ports mod 32 give (here the 4 successors of a leaf have distinct server indices mod 4).
  s.routing = FabricRouting::DMODK;
  Fabric f(s, 64, 8, kNdr);
  const auto n = link_counts(f, ring_flows(f, f.place(64), 64, 2, 1));
  int busiest = 0;
  for (size_t l = 0; l < n.size(); ++l)
    if (f.links()[l].cls == LinkClass::LEAF_UP) busiest = std::max(busiest, n[l]);
  EXPECT_EQ(busiest, 1);
}

}  // namespace
}  // namespace ddpsim::fabric
