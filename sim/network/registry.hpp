#pragma once
// Backends by name (network/backend.hpp lists them): the engine asks for the one the scenario
// names and builds nothing else. An unknown name is a ConfigError that lists the valid ones.
#include <memory>
#include <string>

#include "config/specs.hpp"
#include "network/backend.hpp"

namespace simgrid::s4u {
class NetZone;
}

namespace ddpsim::network {

struct BackendContext {
  simgrid::s4u::NetZone* zone = nullptr;  // the engine's platform zone, not yet sealed
  const config::ClusterSpec& cluster;
  const collectives::RingPlan& ring;
  const config::SimulationSettings& simulation;
  int cross_nic = 2;           // collective.NCCL_CROSS_NIC: how rings map to NICs on a fabric
  bool link_timeline = false;  // record link utilisation over time (--trace counters)
  int p2p_gpus = 0;            // flow: per-GPU port endpoints for Backend::transfer (DataParallel's peer copies)
  double p2p_bandwidth = 0;    // their links' bandwidth per direction
  // The caller runs one phase at a time and nothing else on the network (one NCCL stream, no
  // peer copies): the flow backend may then reuse an every-flow round's solution (FlowBackend).
  bool serial = false;
};

std::unique_ptr<Backend> make_backend(const std::string& name, const BackendContext& context);

}  // namespace ddpsim::network
