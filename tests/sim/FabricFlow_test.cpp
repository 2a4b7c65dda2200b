// Flows on a fabric (sim/fabric + network/flow): closed forms to 1e-9 for one ring phase, and
// whole-step properties (1:1 fat-tree = single switch, monotonicity, placement, representative
// classes = every flow).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <simgrid/s4u.hpp>
#include <string>
#include <vector>

#include "collectives/ring.hpp"
#include "config/overrides.hpp"
#include "engine/executor.hpp"
#include "fabric/fabric.hpp"
#include "fabric/rings.hpp"
#include "network/flow.hpp"
#include "sim_builders.hpp"

namespace ddpsim {
namespace {

using core::Json;
namespace sg4 = simgrid::s4u;

constexpr double kNic = 50e9;  // 400 Gb/s NDR
constexpr double kT = 1e-3;    // the phase's modelled transfer time

// An 8-GPU node with 8 NICs: the ring's bottleneck is the node's 8 x 50 GB/s (NVSwitch is faster).
config::ClusterSpec cluster(int nodes, const std::vector<std::string>& fabric) {
  return testing::cluster_on_fabric(nodes, testing::link("nv", "nvlink", "4000Gbps", "1us"),
                                    testing::link("ndr", "infiniband", "400Gbps", "5us"), fabric);
}

struct PhaseResult {
  double seconds = 0;
  bool representative = false;
  double flows = 0;
  double actors = 0;  // the flow pool's actors per round in flight
};

// One fused ring phase of transfer kT realised by the flow backend, in a child process.
PhaseResult phase(const config::ClusterSpec& c, config::RankMode ranks = config::RankMode::REPRESENTATIVE,
                  int cross_nic = 2, int concurrent = 1) {
  std::function<Json()> work = [c, ranks, cross_nic, concurrent] {
    const auto engine = engine::create_engine();
    sg4::Engine& e = *engine;
    auto* zone = sg4::create_star_zone("z");
    sg4::Host* h = zone->create_host("h", 1.0)->seal();
    const auto ring = collectives::build_ring(c);
    network::FlowBackend fb(zone, c, ring, config::Fidelity::FUSED, ranks, cross_nic);
    zone->seal();
    double end = 0;
    struct Clock final : network::Clock {
      void sleep_for(double s) override { sg4::this_actor::sleep_for(s); }
    };
    const std::vector<std::string> names{"a0", "a1", "a2", "a3"};
    for (int i = 0; i < concurrent; ++i)
      sg4::Actor::create(names.at(static_cast<size_t>(i)), h, [&] {
        Clock clk;
        network::Phase p;
        p.timing.transfer = kT;
        fb.run_phase(clk, p);
        end = std::max(end, sg4::Engine::get_clock());
      });
    e.run();
    return Json{{"t", end},
                {"rep", fb.representative_fabric()},
                {"flows", static_cast<double>(fb.flows())},
                {"actors", static_cast<double>(fb.actors_per_round())}};
  };
  auto r = app::run_in_children({work}, 1);
  EXPECT_TRUE(r[0].ok) << r[0].error;
  return {r[0].value["t"].get<double>(), r[0].value["rep"].get<bool>(), r[0].value["flows"].get<double>(),
          r[0].value["actors"].get<double>()};
}

void expect_rel(double got, double want) { EXPECT_NEAR(got / want, 1.0, 1e-9) << got << " vs " << want; }

TEST(FabricFlow, NonBlockingFatTreeIsTheSingleSwitch) {
  const double single = phase(cluster(16, {})).seconds;
  expect_rel(single, kT);
  for (const char* routing : {"dmodk", "adaptive"}) {
    const auto c = cluster(16, {"topology=fat_tree", std::string("routing=") + routing});
    expect_rel(phase(c).seconds, single);
    expect_rel(phase(c, config::RankMode::ALL).seconds, single);
  }
}

// Every flow simulated: a round's N flows are sent by a pool of about 8 sqrt(N) senders (each a
// SimGrid actor: a stack and a guard page, two of vm.max_map_count's mappings), not an actor per
// flow (61,441 of them at 32,768 GPUs passed the limit), and the non-blocking fat-tree still
// gives the closed form.
TEST(FabricFlow, EveryFlowPoolHasAboutEightSqrtFlowsSenders) {
  const auto r = phase(cluster(32, {"topology=fat_tree", "routing=adaptive"}), config::RankMode::ALL);
  EXPECT_GE(r.flows, 256.0);  // one fused round: 32 nodes x 8 GPUs, 224 intra-node hops and the NICs' flows
  EXPECT_GE(r.actors, 2.0);
  EXPECT_LE(r.actors, 8 * std::ceil(std::sqrt(r.flows)) + 2);
  expect_rel(r.seconds, kT);
}

// Spread placement: every node's ring successor is on another leaf, so every NIC of a leaf sends
// up at once: 32 flows on 32 x 400G / o of uplink -> each flow gets 1/o of its NIC.
TEST(FabricFlow, OversubscribedUplinksGiveCrossLeafHopsOneOverO) {
  for (double o : {2.0, 4.0}) {
    const auto c = cluster(16, {"topology=fat_tree", "routing=adaptive", "placement=spread",
                                "oversubscription=\"" + std::to_string(static_cast<int>(o)) + ":1\""});
    const auto rep = phase(c);
    EXPECT_TRUE(rep.representative);
    expect_rel(rep.seconds, o * kT);
    expect_rel(phase(c, config::RankMode::ALL).seconds, o * kT);
    // Two concurrent collectives share the uplinks as well: 2 o T.
    expect_rel(phase(c, config::RankMode::REPRESENTATIVE, 2, 2).seconds, 2 * o * kT);
    expect_rel(phase(c, config::RankMode::ALL, 2, 2).seconds, 2 * o * kT);
  }
  // Packed: only the last server of a leaf sends up (8 flows on 16 or 8 uplinks): unchanged.
  expect_rel(phase(cluster(16, {"topology=fat_tree", "oversubscription=\"4:1\""})).seconds, kT);
}

TEST(FabricFlow, JobInsideOneLeafIsUnchanged) {
  for (const char* place : {"packed", "spread", "random"}) {
    const auto c = cluster(4, {"topology=fat_tree", "oversubscription=\"4:1\"", std::string("placement=") + place});
    expect_rel(phase(c).seconds, kT);
  }
}

TEST(FabricFlow, BackgroundLoadTakesItsShareOfTheUpperTiers) {
  const auto c = cluster(16, {"topology=fat_tree", "routing=adaptive", "placement=spread", "background_load=0.5"});
  expect_rel(phase(c).seconds, 2 * kT);
  // Packed: only the boundary hops of a leaf go up, but they get half an uplink each: 2 kT.
  expect_rel(phase(cluster(16, {"topology=fat_tree", "background_load=0.5"})).seconds, 2 * kT);
  // The NICs are not an upper tier: a job inside one leaf keeps kT.
  expect_rel(phase(cluster(4, {"topology=fat_tree", "background_load=0.5"})).seconds, kT);
}

// Rail-optimized vs ToR: on rails (NCCL_CROSS_NIC=0) the 16 nodes of one scalable unit talk through
// rail leaves only, as ToR leaves do; crossing rails (1) sends every hop through the spine: a rail
// leaf's 16 job NICs share 32 x 400G / 4 uplinks (1/2 each), while ToR only sends the 8 boundary
// flows of a leaf up (full rate).
TEST(FabricFlow, RailOptimizedEqualsTorOnRailsAndDiffersAcross) {
  const auto rail = cluster(16, {"topology=rail_optimized", "routing=adaptive", "oversubscription=\"4:1\""});
  const auto tor = cluster(16, {"topology=fat_tree", "routing=adaptive", "oversubscription=\"4:1\""});
  expect_rel(phase(rail, config::RankMode::REPRESENTATIVE, 0).seconds, kT);
  expect_rel(phase(tor, config::RankMode::REPRESENTATIVE, 0).seconds, kT);
  expect_rel(phase(rail, config::RankMode::ALL, 1).seconds, 2 * kT);
  expect_rel(phase(tor, config::RankMode::ALL, 1).seconds, kT);
}

// ECMP: the slowest flow shares the busiest link, so the phase takes kT x its flow count.
TEST(FabricFlow, EcmpPhaseIsSetByTheBusiestLink) {
  for (int seed : {1, 2, 3}) {
    const auto c =
        cluster(16, {"topology=fat_tree", "routing=ecmp", "placement=spread", "routing_seed=" + std::to_string(seed)});
    const auto& fs = c.inter_fabric;
    fabric::Fabric f(fs, fabric::Fabric::servers_for(fs, 16, 8), 8, kNic);
    const auto n = fabric::link_counts(f, fabric::ring_flows(f, f.place(16), 16, 2, 1));
    const int busiest = *std::max_element(n.begin(), n.end());
    EXPECT_GE(busiest, 2);  // 32 flows on 32 lanes collide
    expect_rel(phase(c).seconds, busiest * kT);
    expect_rel(phase(c, config::RankMode::ALL).seconds, busiest * kT);
  }
}

// ------------------------------------------------------------------ whole steps

std::vector<Json> steps(const std::vector<std::vector<std::string>>& sets) {
  config::Catalog cat(config::Catalog::default_root());
  std::vector<config::Scenario> scs;
  for (auto s : sets) {
    s.push_back("nodes=16");
    scs.push_back(cat.load_scenario("scenarios/gpt2-4x8-h100-ndr.json", s));
  }
  return testing::simulate_in_children(scs);
}

double step(const Json& r) { return r["step_time_s"].get<double>(); }

TEST(FabricFlow, StepOnNonBlockingFatTreeEqualsSingleSwitch) {
  const auto r = steps({{},
                        {"fabric.topology=fat_tree"},
                        {"fabric.topology=fat_tree", "fabric.routing=adaptive"},
                        {"fabric.topology=rail_optimized", "collective.NCCL_CROSS_NIC=0"}});
  for (size_t i = 1; i < r.size(); ++i) expect_rel(step(r[i]), step(r[0]));
  config::Catalog cat(config::Catalog::default_root());
  auto one = testing::simulate_in_children(
      {cat.load_scenario("scenarios/gpt2-4x8-h100-ndr.json", {"nodes=1"}),
       cat.load_scenario("scenarios/gpt2-4x8-h100-ndr.json",
                         {"nodes=1", "fabric.topology=fat_tree", "fabric.oversubscription=4:1"})});
  expect_rel(step(one[1]), step(one[0]));
}

TEST(FabricFlow, MoreOversubscriptionOrBackgroundNeverFaster) {
  const std::vector<std::string> base{"fabric.topology=fat_tree", "fabric.placement=spread", "training.batch_size=2"};
  auto with = [&](std::vector<std::string> extra) {
    extra.insert(extra.begin(), base.begin(), base.end());
    return extra;
  };
  const auto r = steps({with({"fabric.oversubscription=1:1"}), with({"fabric.oversubscription=2:1"}),
                        with({"fabric.oversubscription=4:1"}), with({"fabric.background_load=0.3"}),
                        with({"fabric.background_load=0.6"}),
                        with({"fabric.oversubscription=4:1", "fabric.background_load=0.6"})});
  EXPECT_LE(step(r[0]), step(r[1]));
  EXPECT_LE(step(r[1]), step(r[2]));
  EXPECT_LT(step(r[0]), step(r[2]));  // the step is communication-bound enough to notice
  EXPECT_LE(step(r[0]), step(r[3]));
  EXPECT_LE(step(r[3]), step(r[4]));
  EXPECT_LE(step(r[2]), step(r[5]));
}

TEST(FabricFlow, PlacementMattersOnlyAcrossLeaves) {
  const auto r = steps(
      {{"fabric.topology=fat_tree", "fabric.oversubscription=4:1", "training.batch_size=2"},
       {"fabric.topology=fat_tree", "fabric.oversubscription=4:1", "training.batch_size=2", "fabric.placement=spread"},
       {"fabric.topology=fat_tree", "fabric.oversubscription=4:1", "training.batch_size=2", "fabric.nics_per_leaf=128",
        "fabric.switch_radix=256", "fabric.placement=spread"},
       {"fabric.topology=fat_tree", "fabric.oversubscription=4:1", "training.batch_size=2", "fabric.nics_per_leaf=128",
        "fabric.switch_radix=256", "fabric.placement=random"}});
  EXPECT_LT(step(r[0]), step(r[1]));   // 4 leaves: spreading the ring makes every hop cross them
  expect_rel(step(r[2]), step(r[0]));  // one leaf of 16 servers: placement cannot matter
  expect_rel(step(r[3]), step(r[0]));
}

TEST(FabricFlow, RepresentativeEqualsEveryFlowOnAFabric) {
  config::Catalog cat(config::Catalog::default_root());
  for (const auto& set : std::vector<std::vector<std::string>>{
           {"fabric.topology=rail_optimized", "collective.NCCL_CROSS_NIC=0", "fabric.oversubscription=2:1"},
           {"fabric.topology=fat_tree", "fabric.routing=adaptive", "fabric.placement=spread",
            "fabric.oversubscription=2:1", "streams.comm_streams=2"}}) {
    auto s = set;
    s.push_back("nodes=16");
    s.push_back("training.batch_size=2");
    auto rep = cat.load_scenario("scenarios/gpt2-4x8-h100-ndr.json", s);
    auto all = rep;
    all.simulation.ranks = config::RankMode::ALL;
    const auto r = testing::simulate_in_children({rep, all});
    expect_rel(step(r[0]), step(r[1]));
    expect_rel(r[0]["comm_busy_s"].get<double>(), r[1]["comm_busy_s"].get<double>());
    EXPECT_LT(r[0]["flows"].get<double>(), r[1]["flows"].get<double>());
  }
}

}  // namespace
}  // namespace ddpsim
