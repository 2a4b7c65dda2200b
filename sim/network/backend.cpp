#include "network/backend.hpp"

namespace ddpsim::network {

const std::vector<BackendInfo>& backend_infos() {
  static const std::vector<BackendInfo> infos = {
      {"analytic", "closed form: each phase takes its modelled time; collectives do not share links"},
      {"flow", "SimGrid flows on the cluster's links with max-min sharing: concurrent collectives contend"},
  };
  return infos;
}

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

std::string backend_names() {
  std::string s;
  for (const auto& b : backend_infos()) s += (s.empty() ? "" : ", ") + b.name;
  return s;
}

}  // namespace ddpsim::network
