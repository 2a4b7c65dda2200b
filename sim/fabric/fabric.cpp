#include "fabric/fabric.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.hpp"

namespace ddpsim::fabric {

std::string to_string(LinkClass c) {
  switch (c) {
    case LinkClass::NIC_UP: return "nic up";
    case LinkClass::NIC_DOWN: return "nic down";
    case LinkClass::LEAF_UP: return "leaf up";
    case LinkClass::SPINE_DOWN: return "spine down";
    case LinkClass::SPINE_UP: return "spine up";
    case LinkClass::CORE_DOWN: return "core down";
  }
  return "?";
}

namespace {

uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

int ceil_div(double a, double b) { return std::max(1, static_cast<int>(std::ceil(a / b - 1e-9))); }

int leaf_domain(const FabricSpec& s, int nics) {
  switch (s.topology) {
    case FabricTopology::SINGLE_SWITCH: return 0;
    case FabricTopology::RAIL_OPTIMIZED: return s.nics_per_leaf;
    case FabricTopology::FAT_TREE:
    case FabricTopology::DUAL_TOR: return s.nics_per_leaf / nics;
  }
  return 1;
}

}  // namespace

int Fabric::servers_for(const FabricSpec& spec, int job_nodes, int nics) {
  if (spec.servers > 0) return std::max(spec.servers, job_nodes);
  const int g = leaf_domain(spec, std::max(nics, 1));
  if (g <= 0) return job_nodes;
  return (job_nodes + g - 1) / g * g;
}

Fabric::Fabric(const FabricSpec& spec, int servers, int nics, double nic_bw)
    : spec_(spec), servers_(servers), nics_(std::max(nics, 1)) {
  const bool single = spec.topology == FabricTopology::SINGLE_SWITCH;
  ports_ = spec.topology == FabricTopology::DUAL_TOR ? 2 : 1;
  const double port_bw = nic_bw / ports_;
  if (single) {
    group_ = servers_;
    leaves_ = 1;
  } else {
    group_ = leaf_domain(spec, nics_);
    if (group_ < 1 || (spec.topology != FabricTopology::RAIL_OPTIMIZED && spec.nics_per_leaf % nics_ != 0))
      throw core::ConfigError("fabric.nics_per_leaf: " + std::to_string(spec.nics_per_leaf) +
                              " is not a whole number of servers with " + std::to_string(nics_) +
                              " NICs each; expected a multiple of " + std::to_string(nics_));
    const int groups = (servers_ + group_ - 1) / group_;
    const int per_group = spec.topology == FabricTopology::RAIL_OPTIMIZED ? nics_
                          : spec.topology == FabricTopology::DUAL_TOR     ? 2
                                                                          : 1;
    leaves_ = groups * per_group;
  }
  nic_ports_ = servers_ * nics_ * ports_;
  links_.reserve(static_cast<size_t>(2 * nic_ports_));
  for (int i = 0; i < nic_ports_; ++i) links_.push_back({LinkClass::NIC_UP, port_bw});
  for (int i = 0; i < nic_ports_; ++i) links_.push_back({LinkClass::NIC_DOWN, port_bw});
  core_base_ = 2 * nic_ports_;
  if (single) return;

  // Leaf uplinks: the leaf's down bandwidth over its oversubscription, in links of the uplink
  // speed; their sum is exact (each lane gets the aggregate / count).
  const double down = spec.nics_per_leaf * port_bw;
  const double up = down / spec.leaf_oversubscription;
  const double ub = spec.uplink_bandwidth.value_or(port_bw);
  phys_lanes_ = ceil_div(up, ub);
  if (spec.nics_per_leaf + phys_lanes_ > spec.switch_radix)
    throw core::ConfigError("fabric: a leaf needs " + std::to_string(spec.nics_per_leaf) + " down + " +
                            std::to_string(phys_lanes_) + " up ports, more than switch_radix " +
                            std::to_string(spec.switch_radix) + "; expected nics_per_leaf + uplinks <= switch_radix");
  const double lane_bw = up / phys_lanes_;
  leaves_per_pod_ = leaves_;
  if (spec.tiers == 3 && spec.leaves_per_pod > 0) leaves_per_pod_ = std::min(spec.leaves_per_pod, leaves_);
  pods_ = (leaves_ + leaves_per_pod_ - 1) / leaves_per_pod_;
  const int plane_leaves =
      spec.topology == FabricTopology::DUAL_TOR && spec.planes == 2 ? leaves_per_pod_ / 2 : leaves_per_pod_;
  if (spec.tiers == 2 && plane_leaves > spec.switch_radix)
    throw core::ConfigError("fabric: " + std::to_string(plane_leaves) + " leaves exceed a spine's switch_radix " +
                            std::to_string(spec.switch_radix) +
                            " in a two-tier fat-tree; expected tiers 3 with leaves_per_pod <= switch_radix");
  double core_lane_bw = 0;
  if (pods_ > 1) {
    const double pod_up = leaves_per_pod_ * lane_bw / spec.spine_oversubscription;
    phys_core_lanes_ = ceil_div(pod_up, spec.core_link_bandwidth.value_or(lane_bw));
    core_lane_bw = pod_up / phys_core_lanes_;
  }
  const bool adaptive = spec.routing == FabricRouting::ADAPTIVE;
  lanes_ = adaptive ? 1 : phys_lanes_;
  core_lanes_ = pods_ > 1 ? (adaptive ? 1 : phys_core_lanes_) : 0;
  const double lane_cap = adaptive ? lane_bw * phys_lanes_ : lane_bw;
  const double core_cap = adaptive ? core_lane_bw * phys_core_lanes_ * phys_lanes_ : core_lane_bw;
  for (int i = 0; i < leaves_ * lanes_; ++i) links_.push_back({LinkClass::LEAF_UP, lane_cap});
  for (int i = 0; i < leaves_ * lanes_; ++i) links_.push_back({LinkClass::SPINE_DOWN, lane_cap});
  core_base_ = static_cast<int>(links_.size());
  for (int i = 0; i < pods_ * lanes_ * core_lanes_; ++i) links_.push_back({LinkClass::SPINE_UP, core_cap});
  for (int i = 0; i < pods_ * lanes_ * core_lanes_; ++i) links_.push_back({LinkClass::CORE_DOWN, core_cap});
}

int Fabric::leaf_of(int server, int nic, int port) const {
  switch (spec_.topology) {
    case FabricTopology::SINGLE_SWITCH: return 0;
    case FabricTopology::FAT_TREE: return server / group_;
    case FabricTopology::DUAL_TOR: return server / group_ * 2 + port;
    case FabricTopology::RAIL_OPTIMIZED: return server / group_ * nics_ + nic;
  }
  return 0;
}

int Fabric::choose(uint64_t key, int dst_port, int n, int tier) const {
  if (n <= 1) return 0;
  if (spec_.routing == FabricRouting::ECMP)
    return static_cast<int>(splitmix(splitmix(key ^ spec_.routing_seed) + static_cast<uint64_t>(tier)) %
                            static_cast<uint64_t>(n));
  return dst_port % n;  // D-mod-k
}

std::vector<Path> Fabric::route(int s, int rs, int d, int rd, uint64_t flow) const {
  std::vector<Path> out;
  out.reserve(static_cast<size_t>(ports_));
  for (int p = 0; p < ports_; ++p) {
    Path path;
    path.share = 1.0 / ports_;
    path.links.push_back(nic_up(s, rs, p));
    path.switches = 1;
    const int a = leaf_of(s, rs, p), b = leaf_of(d, rd, p);
    if (a != b) {
      const int dst_port = (d * nics_ + rd) * ports_ + p;
      const uint64_t key = splitmix(splitmix(static_cast<uint64_t>(nic_up(s, rs, p))) ^
                                    (static_cast<uint64_t>(dst_port) << 20) ^ (flow << 42));
      const int j = choose(key, dst_port, lanes_, 0);
      path.links.push_back(leaf_up(a, j));
      if (pod_of(a) != pod_of(b)) {
        const int m = choose(key, dst_port / std::max(lanes_, 1), core_lanes_, 1);
        path.links.push_back(spine_up(pod_of(a), j, m));
        path.links.push_back(core_down(pod_of(b), j, m));
        path.switches += 2;
      }
      path.links.push_back(spine_down(b, j));
      path.switches += 2;
    }
    path.links.push_back(nic_down(d, rd, p));
    out.push_back(std::move(path));
  }
  return out;
}

std::vector<int> Fabric::place(int job_nodes) const {
  std::vector<int> order;
  order.reserve(static_cast<size_t>(servers_));
  const int g = std::max(group_, 1);
  const int groups = (servers_ + g - 1) / g;
  switch (spec_.placement) {
    case FabricPlacement::PACKED:
      for (int i = 0; i < servers_; ++i) order.push_back(i);
      break;
    case FabricPlacement::SPREAD:
      // Round-robin over leaf domains: consecutive job nodes (ring neighbours) on different leaves.
      for (int t = 0; t < groups * g; ++t) {
        const int s = (t % groups) * g + t / groups;
        if (s < servers_) order.push_back(s);
      }
      break;
    case FabricPlacement::RANDOM: {
      order.resize(static_cast<size_t>(servers_));
      std::iota(order.begin(), order.end(), 0);
      uint64_t state = spec_.placement_seed;
      for (int i = servers_ - 1; i > 0; --i) {  // Fisher-Yates with a portable generator
        state = splitmix(state);
        std::swap(order[static_cast<size_t>(i)], order[state % static_cast<uint64_t>(i + 1)]);
      }
      break;
    }
  }
  order.resize(static_cast<size_t>(std::min(job_nodes, servers_)));
  return order;
}

std::string Fabric::link_name(int id) const {
  auto nic = [&](int i) {
    const int p = i % ports_, r = i / ports_ % nics_, s = i / ports_ / nics_;
    return "server" + std::to_string(s) + ".nic" + std::to_string(r) + (ports_ > 1 ? ".p" + std::to_string(p) : "");
  };
  const bool adaptive = lanes_ == 1 && spec_.routing == FabricRouting::ADAPTIVE;
  auto spine = [&](int j) { return adaptive ? std::string("spines") : "spine" + std::to_string(j); };
  if (id < nic_ports_)
    return nic(id) + ">leaf" + std::to_string(leaf_of(id / ports_ / nics_, id / ports_ % nics_, id % ports_));
  if (id < 2 * nic_ports_) {
    const int i = id - nic_ports_;
    return "leaf" + std::to_string(leaf_of(i / ports_ / nics_, i / ports_ % nics_, i % ports_)) + ">" + nic(i);
  }
  int i = id - 2 * nic_ports_;
  const int leaf_links = leaves_ * lanes_;
  if (i < leaf_links) return "leaf" + std::to_string(i / lanes_) + ">" + spine(i % lanes_);
  if (i < 2 * leaf_links) {
    i -= leaf_links;
    return spine(i % lanes_) + ">leaf" + std::to_string(i / lanes_);
  }
  i = id - core_base_;
  const int core_links = pods_ * lanes_ * core_lanes_;
  const bool down = i >= core_links;
  if (down) i -= core_links;
  const int m = i % core_lanes_, j = i / core_lanes_ % lanes_, q = i / core_lanes_ / lanes_;
  const std::string pod_spine = "pod" + std::to_string(q) + "." + spine(j);
  const std::string core = adaptive ? std::string("cores") : "core" + std::to_string(j) + "." + std::to_string(m);
  return down ? core + ">" + pod_spine : pod_spine + ">" + core;
}

Bom Fabric::bom() const {
  Bom b;
  b.servers = servers_;
  b.nics = servers_ * nics_;
  b.nic_ports = nic_ports_;
  b.cables_nic_leaf = nic_ports_;
  b.leaves = leaves_;
  const int radix = spec_.switch_radix;
  if (spec_.topology != FabricTopology::SINGLE_SWITCH && leaves_ > 1) {
    b.cables_leaf_spine = leaves_ * phys_lanes_;
    if (pods_ > 1) {
      // Spine lanes of a pod: leaves_per_pod down + core lanes up ports each, packed onto switches.
      const int lane_ports = leaves_per_pod_ + phys_core_lanes_;
      b.spines = pods_ * ceil_div(phys_lanes_, std::max(1, radix / lane_ports));
      b.cables_spine_core = pods_ * phys_lanes_ * phys_core_lanes_;
      b.cores = ceil_div(phys_lanes_ * phys_core_lanes_, std::max(1, radix / pods_));
    } else {
      const bool dual_plane = spec_.topology == FabricTopology::DUAL_TOR && spec_.planes == 2;
      const int plane_leaves = dual_plane ? leaves_ / 2 : leaves_;
      b.spines = (dual_plane ? 2 : 1) * ceil_div(phys_lanes_, std::max(1, radix / plane_leaves));
    }
  }
  b.switch_ports_used = b.cables_nic_leaf + 2 * b.cables_leaf_spine + 2 * b.cables_spine_core;
  b.capex = b.switches() * spec_.price_per_switch + b.cables() * spec_.price_per_cable + b.nics * spec_.price_per_nic;
  return b;
}

}  // namespace ddpsim::fabric
