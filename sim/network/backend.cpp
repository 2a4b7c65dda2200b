#include "network/backend.hpp"

namespace ddpsim::network {

HopClasses hop_classes(const collectives::RingPlan& ring) {
  HopClasses k;
  for (const auto& h : ring.hops) {
    const collectives::Hop*& first = h.inter_node ? k.inter : k.intra;
    if (!first) first = &h;
    ++(h.inter_node ? k.n_inter : k.n_intra);
  }
  return k;
}

std::string intra_port_class(const config::ClusterSpec& c, bool out) {
  return config::to_string(c.intra_link.kind) + (out ? " port out" : " port in");
}

}  // namespace ddpsim::network
