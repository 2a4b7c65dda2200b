#include "network/backend.hpp"

namespace ddpsim::network {

const std::vector<BackendInfo>& backend_infos() {
  static const std::vector<BackendInfo> infos = {
      {"analytic", "closed form: each phase takes its modelled time; collectives do not share links"},
      {"flow", "SimGrid flows on the cluster's links with max-min sharing: concurrent collectives contend"},
  };
  return infos;
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
