#pragma once
// The flow backend: a ring collective realised as SimGrid communications on the cluster's links,
// so that collectives sharing links (or anything else on them) slow each other down. Links have
// zero latency and SimGrid runs pure max-min sharing (REFERENCE.md §5); per-step latency is added
// here with sleeps, which keeps the uncontended result equal to the closed form.
#include <cstdint>
#include <vector>

#include "collectives/ring.hpp"
#include "config/specs.hpp"

namespace simgrid::s4u {
class Host;
class Link;
class Engine;
}  // namespace simgrid::s4u

namespace ddpsim::network {

class FlowNetwork {
 public:
  // Builds the platform in the (already configured) engine: one host per GPU, per-GPU intra-node
  // transmit/receive links, per-node NIC transmit/receive links, and routes for the ring's hops.
  FlowNetwork(simgrid::s4u::Engine& engine, const config::ClusterSpec& cluster, const collectives::RingPlan& ring,
              double gpu_speed);
  simgrid::s4u::Host* host(int rank) const { return hosts_[static_cast<size_t>(rank)]; }
  // Runs one phase (reduce-scatter or all-gather) from the calling actor, blocking it in simulated
  // time: its latency as a sleep, its transfer as flows on every ring hop, each hop carrying
  // transfer x bottleneck bandwidth bytes, so that uncontended the phase takes exactly the model's
  // time (for the ring model that volume is (N-1)/N of the bytes; other algorithms and protocols
  // are carried as the wire volume that gives their bandwidth). Fused: one flow per hop for the
  // whole phase; stepwise: N-1 rounds of one flow per hop, each after 1/(N-1) of the latency.
  void ring_phase(const collectives::PhaseTiming& phase, config::Fidelity fidelity);
  uint64_t flows() const { return flows_; }

  // Applies the pure max-min settings; call on a fresh engine before building anything.
  static void configure(simgrid::s4u::Engine& engine);

 private:
  collectives::RingPlan ring_;
  std::vector<simgrid::s4u::Host*> hosts_;
  uint64_t flows_ = 0;
};

}  // namespace ddpsim::network
