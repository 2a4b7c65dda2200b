#pragma once
// The network-backend seam (docs/design.md): a backend realises the phases of a collective whose time
// alone the collective model (collectives/collective_model) has already decided. Backends are
// chosen by name from one table (network/registry.hpp); the engine builds only the one it uses.
// This header is SimGrid-free: a backend that needs SimGrid (flow) lives in network/flow.
#include <cstdint>
#include <string>
#include <vector>

#include "collectives/ring.hpp"
#include "config/specs.hpp"
#include "network/link_stats.hpp"

namespace ddpsim::network {

// The simulated actor a backend blocks while a phase runs; the engine implements it.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual void sleep_for(double seconds) = 0;
};

// One phase of a ring collective (reduce-scatter, all-gather or a broadcast pass).
struct Phase {
  collectives::PhaseTiming timing;  // its latency and transfer time with nothing else running
  double start_latency = 0;         // paid first (the collective's launch latency)
  // Payload each ring hop carries in this phase, for the link statistics ((N-1)/N of the bytes
  // per all-reduce phase, all of them per broadcast); 0: the volume the flows carry.
  double hop_bytes = 0;
  bool counted = true;  // counts in the link statistics (the engine: phases of the steady steps)
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // Realises one phase from the calling actor and returns when it is over in simulated time.
  virtual void run_phase(Clock& clock, const Phase& phase) = 0;
  virtual uint64_t flows() const { return 0; }  // flows simulated so far (0: closed form)
  // SimGrid actors the backend starts per phase in flight (0: none); the engine checks the
  // process can hold them before it runs (engine/simulation.cpp).
  virtual size_t actors_per_round() const { return 0; }
  // Flows of rounds that reused an earlier round's solution instead (network/flow.hpp).
  virtual uint64_t flows_reused() const { return 0; }
  // Link statistics of the counted phases, per link class (LinkClassTotals), and what
  // they can say; none by default.
  virtual std::vector<LinkClassTotals> link_totals() const { return {}; }
  virtual std::string links_note() const { return ""; }
  // Utilisation per link class over time (recorded only when asked for at construction: the
  // flow backend's --trace counters).
  virtual std::vector<LinkCounterTrack> link_counters() const { return {}; }
  // A peer copy of `bytes` from GPU `src` to GPU `dst` of one node at most `rate` bytes/s (the
  // pair's path), from the calling actor; returns when it is over. torch.nn.DataParallel's copies
  // (plan/dp_builder). Closed form here (bytes / rate: nothing shared); the flow backend
  // shares the GPUs' ports with the other copies in flight when built with p2p endpoints.
  virtual void transfer(Clock& clock, int src, int dst, double bytes, double rate) {
    (void)src;
    (void)dst;
    if (bytes > 0 && rate > 0) clock.sleep_for(bytes / rate);
  }
};

// A ring's hops in two classes, intra-node and inter-node: the first hop of each (null: none)
// names the links it stands for; the counts are the class's hops. Both backends' representative
// links come from this one scan.
struct HopClasses {
  const collectives::Hop* intra = nullptr;
  const collectives::Hop* inter = nullptr;
  long long n_intra = 0, n_inter = 0;
};
HopClasses hop_classes(const collectives::RingPlan& ring);

// Link class names shared by the backends (the fabric's own are fabric::to_string(LinkClass)):
// a GPU's intra-node port out of and into the GPU, e.g. "nvlink port out".
std::string intra_port_class(const config::ClusterSpec& cluster, bool out);

}  // namespace ddpsim::network
