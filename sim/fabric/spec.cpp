#include "fabric/spec.hpp"

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

}  // namespace ddpsim::fabric
