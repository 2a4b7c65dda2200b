#include "network/registry.hpp"

#include <functional>
#include <map>

#include "core/error.hpp"
#include "network/analytic.hpp"
#include "network/flow.hpp"

namespace ddpsim::network {

std::unique_ptr<Backend> make_backend(const std::string& name, const BackendContext& ctx) {
  using Factory = std::function<std::unique_ptr<Backend>(const BackendContext&)>;
  static const std::map<std::string, Factory> factories = {
      {"analytic", [](const BackendContext& c) { return std::make_unique<AnalyticBackend>(c.cluster, c.ring); }},
      {"flow",
       [](const BackendContext& c) {
         return std::make_unique<FlowBackend>(c.zone, c.cluster, c.ring, c.simulation.fidelity, c.simulation.ranks,
                                              c.cross_nic, c.link_timeline, c.p2p_gpus, c.p2p_bandwidth,
                                              c.serial && c.simulation.reuse_rounds);
       }},
  };
  auto it = factories.find(name);
  if (it == factories.end())
    throw core::ConfigError("simulation.backend: \"" + name + "\" is not a network backend; expected one of " +
                            backend_names());
  return it->second(ctx);
}

}  // namespace ddpsim::network
