#include "fabric/rings.hpp"

namespace ddpsim::fabric {

std::vector<NicFlow> ring_flows(const Fabric& f, const std::vector<int>& servers, int job_nodes, int cross_nic,
                                int flows_per_nic) {
  std::vector<NicFlow> out;
  if (job_nodes <= 1) return out;
  const int k = f.nics();
  const int q = std::max(flows_per_nic, 1);
  out.reserve(static_cast<size_t>(job_nodes) * static_cast<size_t>(k * q));
  for (int n = 0; n < job_nodes; ++n) {
    const int m = (n + 1) % job_nodes;
    for (int r = 0; r < k; ++r)
      for (int c = 0; c < q; ++c) {
        NicFlow fl;
        fl.src_node = n;
        fl.dst_node = m;
        fl.src_nic = r;
        fl.dst_nic = cross_nic == 1 ? (r + 1) % k : r;
        fl.connection = c;
        fl.share = 1.0 / (k * q);
        fl.paths = f.route(servers[static_cast<size_t>(n)], fl.src_nic, servers[static_cast<size_t>(m)], fl.dst_nic,
                           static_cast<uint64_t>(c));
        out.push_back(std::move(fl));
      }
  }
  return out;
}

std::vector<int> link_counts(const Fabric& f, const std::vector<NicFlow>& flows) {
  std::vector<int> n(f.links().size(), 0);
  for (const auto& fl : flows)
    for (const auto& p : fl.paths)
      for (int l : p.links) ++n[static_cast<size_t>(l)];
  return n;
}

}  // namespace ddpsim::fabric
