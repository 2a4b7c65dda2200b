#pragma once
// The backends, as one table (the way SimGrid registers its models: a name, a description and a
// factory per entry): the engine asks for the one the scenario names and builds nothing else;
// `simulation.backend` takes these names (config::backend_names() parses them, and a unit test
// holds the two lists equal). Adding a backend is one entry here plus its class. An unknown name
// is a ConfigError that lists the valid ones.
#include <functional>
#include <memory>
#include <string>
#include <vector>

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

struct BackendEntry {
  std::string name;
  std::string description;
  std::function<std::unique_ptr<Backend>(const BackendContext&)> factory;
};

// Every backend, in a fixed order.
const std::vector<BackendEntry>& backends();
// "analytic, flow": for messages that list the valid names.
std::string backend_names();
// The backend `name` built for `context`; a ConfigError naming simulation.backend when unknown.
std::unique_ptr<Backend> make_backend(const std::string& name, const BackendContext& context);

}  // namespace ddpsim::network
