#include "network/registry.hpp"

#include "core/error.hpp"
#include "network/analytic.hpp"
#include "network/flow.hpp"

namespace ddpsim::network {

const std::vector<BackendEntry>& backends() {
  static const std::vector<BackendEntry> table = {
      {"analytic", "closed form: each phase takes its modelled time; collectives do not share links",
       [](const BackendContext& c) { return std::make_unique<AnalyticBackend>(c.cluster, c.ring); }},
      {"flow", "SimGrid flows on the cluster's links with max-min sharing: concurrent collectives contend",
       [](const BackendContext& c) {
         return std::make_unique<FlowBackend>(c.zone, c.cluster, c.ring, c.simulation.fidelity, c.simulation.ranks,
                                              c.cross_nic, c.link_timeline, c.p2p_gpus, c.p2p_bandwidth,
                                              c.serial && c.simulation.reuse_rounds);
       }},
  };
  return table;
}

std::string backend_names() {
  std::string s;
  for (const auto& b : backends()) s += (s.empty() ? "" : ", ") + b.name;
  return s;
}

std::unique_ptr<Backend> make_backend(const std::string& name, const BackendContext& ctx) {
  for (const auto& b : backends())
    if (b.name == name) return b.factory(ctx);
  throw core::ConfigError("simulation.backend: \"" + name + "\" is not a network backend; expected one of " +
                          backend_names());
}

}  // namespace ddpsim::network
