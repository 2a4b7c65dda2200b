#pragma once
// The flow backend: a ring phase realised as SimGrid communications on the cluster's links, so
// that collectives sharing links slow each other down. Links have zero latency and SimGrid runs
// pure max-min sharing (REFERENCE.md §5); a phase's latency is added here with sleeps, which keeps
// the uncontended result equal to the closed form.
//
// Platform (linear in GPUs, REFERENCE.md §6): one star zone. Every flow endpoint has its own up
// link (transmit) and down link (receive), so a route is the sender's transmit link plus the
// receiver's receive link and no N x N table exists. Intra-node hops run between per-GPU
// endpoints (the GPU's NVLink/PCIe ports), inter-node hops between per-node NIC endpoints.
//
// Ranks: `representative` puts one flow per hop class (intra-node, inter-node) on one endpoint
// pair per class. On this fabric each link carries exactly one hop of a collective, so every hop
// of a class moves at the same rate as its representative, and concurrent collectives share the
// representative links as they share every real one: the result equals the every-flow simulation
// (tested to 1e-9). `all` simulates every hop; each hop's flow is issued by its own actor, since
// SimGrid removes a finished activity from its issuer's list linearly (CommImpl::finish), so one
// actor holding N flows would pay O(N^2) per phase.
//
// Fabric (cluster `fabric` other than single_switch, network/fabric_flows below): the inter-node
// hops become one flow per NIC (and connection) routed through the fabric graph (sim/fabric), so
// oversubscribed uplinks, routing collisions and background load slow exactly the hops that cross
// them. A flow's path is its source endpoint's up list (NIC tx, leaf up, spine down, ..., NIC
// rx) towards one shared sink with an empty down list; memory is O(flows x path length).
// Representative classes: flows whose paths have the same per-link shares (capacity / flows on
// the link) form a class when no link carries flows of two classes; a class is then simulated as
// one flow on one link of that share, which is exact under max-min (every flow of a class runs at
// the class's rate, and concurrent collectives scale every link's flow count alike). Otherwise
// (ECMP collisions, placement, NCCL_CROSS_NIC=1 mixing classes) every flow is simulated.
#include <cstdint>
#include <memory>
#include <vector>

#include "config/specs.hpp"
#include "network/backend.hpp"

namespace simgrid::s4u {
class Host;
class NetZone;
class Engine;
}  // namespace simgrid::s4u

namespace ddpsim::network {

class FlowBackend final : public Backend {
 public:
  // Builds its endpoints and links in `zone` (a star zone, not yet sealed).
  FlowBackend(simgrid::s4u::NetZone* zone, const config::ClusterSpec& cluster, const collectives::RingPlan& ring,
              config::Fidelity fidelity, config::RankMode ranks, int cross_nic = 2, int p2p_gpus = 0,
              double p2p_bandwidth = 0);
  ~FlowBackend() override;
  std::string name() const override { return "flow"; }
  // Each hop carries transfer x bottleneck bandwidth bytes, so that uncontended the phase takes
  // exactly its modelled time (for the ring model that volume is (N-1)/N of the bytes; other
  // algorithms and protocols are carried as the wire volume that gives their bandwidth). Fused:
  // one flow per hop for the whole phase; stepwise: N-1 rounds of one flow per hop, each after
  // 1/(N-1) of the latency.
  void run_phase(Clock& clock, const Phase& phase) override;
  uint64_t flows() const override { return flows_; }
  // One flow from GPU src's port to GPU dst's, each port a transmit and a receive link of
  // p2p_bandwidth (the engine passes the GPU pair's bandwidth; `rate` is not applied: SimGrid
  // 3.32 has no rate cap for host-to-host flows); needs p2p_gpus > src, dst at construction.
  void transfer(Clock& clock, int src, int dst, double bytes, double rate) override;
  struct FabricState;

  // Fabric mode: the bytes each fabric link carried so far (index = fabric link id) and the
  // fabric; empty / null on the single switch.
  struct LinkLoad {
    std::string name, cls;
    double capacity = 0;  // bytes/s (after background load)
    double bytes = 0;
  };
  std::vector<LinkLoad> link_loads() const;
  bool representative_fabric() const { return fabric_rep_; }
  size_t fabric_flows() const { return ffl_.size(); }

  // Applies the pure max-min settings; call on a fresh engine before building anything.
  static void configure(simgrid::s4u::Engine& engine);

 private:
  struct Route {
    simgrid::s4u::Host* src = nullptr;
    simgrid::s4u::Host* dst = nullptr;
  };
  struct HopActors;  // the per-hop actors of `all`
  void round(double bytes);
  void build_fabric(simgrid::s4u::NetZone* zone, const config::ClusterSpec& cluster, config::RankMode ranks,
                    int cross_nic);
  void round_fabric(double bytes);

  // A fabric-mode flow: its source endpoint (whose up list is the path), its share of the hop
  // volume, and the fabric links it stands for with how many flows each (for link statistics).
  struct FabricFlow {
    simgrid::s4u::Host* src = nullptr;
    simgrid::s4u::Host* dst = nullptr;
    double share = 1.0;
    double weight = 1.0;  // flows it stands for (representative)
    int first_link = 0;   // into FabricState::path_links
    int nlinks = 0;
  };
  std::vector<FabricFlow> ffl_;
  std::unique_ptr<FabricState> fab_;
  bool fabric_rep_ = false;
  double extra_phase_latency_ = 0;

  collectives::RingPlan ring_;
  config::Fidelity fidelity_;
  std::vector<Route> routes_;             // one per flow a round starts
  std::vector<simgrid::s4u::Host*> p2p_;  // per-GPU port endpoints for transfer()
  HopActors& free_hop_actors();           // a set not running a phase (created on first need)
  std::vector<std::unique_ptr<HopActors>> actor_sets_;
  bool every_hop_ = false;  // `all` on the single switch: flows issued by per-hop actors
  uint64_t flows_ = 0;
};

}  // namespace ddpsim::network
