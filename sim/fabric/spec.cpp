#include "fabric/spec.hpp"

#include <algorithm>

namespace ddpsim::fabric {

const core::Names<FabricTopology>& topology_names() {
  static const core::Names<FabricTopology> t{{"single_switch", FabricTopology::SINGLE_SWITCH},
                                             {"fat_tree", FabricTopology::FAT_TREE},
                                             {"rail_optimized", FabricTopology::RAIL_OPTIMIZED},
                                             {"dual_tor", FabricTopology::DUAL_TOR}};
  return t;
}
const core::Names<FabricRouting>& routing_names() {
  static const core::Names<FabricRouting> t{
      {"dmodk", FabricRouting::DMODK}, {"ecmp", FabricRouting::ECMP}, {"adaptive", FabricRouting::ADAPTIVE}};
  return t;
}
const core::Names<FabricPlacement>& placement_names() {
  static const core::Names<FabricPlacement> t{
      {"packed", FabricPlacement::PACKED}, {"spread", FabricPlacement::SPREAD}, {"random", FabricPlacement::RANDOM}};
  return t;
}

std::string to_string(FabricTopology t) { return topology_names().name(t); }
std::string to_string(FabricRouting r) { return routing_names().name(r); }
std::string to_string(FabricPlacement p) { return placement_names().name(p); }

namespace {
// Servers under one leaf domain (as Fabric wires them): ToR and dual-ToR nics_per_leaf / NICs per
// server, rail-optimized nics_per_leaf servers a scalable unit; 0 on the single switch.
int domain_servers(const FabricSpec& s, int nics) {
  switch (s.topology) {
    case FabricTopology::SINGLE_SWITCH: return 0;
    case FabricTopology::RAIL_OPTIMIZED: return s.nics_per_leaf;
    case FabricTopology::FAT_TREE:
    case FabricTopology::DUAL_TOR: return nics > 0 ? s.nics_per_leaf / nics : 0;
  }
  return 0;
}
}  // namespace

std::string placement_line(const FabricSpec& spec, const std::string& cluster, int nodes) {
  if (spec.is_single_switch() || nodes <= 1) return "";
  const std::string p = to_string(spec.placement);
  if (spec.placement_guaranteed) return p + " (the cluster file's placement, guaranteed: fabric.placement_guaranteed)";
  return p + " (assumed; " + cluster + " does not guarantee it: compare shows the scattered range)";
}

FabricSpec scattered_spec(const FabricSpec& spec, int job_nodes, int nics_per_node) {
  FabricSpec s = spec;
  const int g = std::max(1, domain_servers(spec, std::max(nics_per_node, 1)));
  s.placement = FabricPlacement::SPREAD;
  if (!spec.is_single_switch()) s.servers = std::max(job_nodes, 1) * g;
  return s;
}

std::vector<std::string> scattered_overrides(const FabricSpec& spec, int job_nodes, int nics_per_node) {
  const FabricSpec s = scattered_spec(spec, job_nodes, nics_per_node);
  return {"fabric.placement=spread", "fabric.servers=" + std::to_string(s.servers)};
}

}  // namespace ddpsim::fabric
