#pragma once
// The inter-node fabric as a plain graph (docs/design.md "fabric/"): servers' NIC ports, leaf, spine
// and core switches, directed links with capacities, routes for every NIC-to-NIC flow, placement
// of a job's nodes onto servers, and the bill of materials. SimGrid-free; network/flow turns
// routes into flows.
//
// Wiring (docs/facts.md §6; SimAI astra-sim-alibabacloud/inputs/topo/gen_Topo_Template.py):
// - fat_tree (ToR): all NICs of a server on one leaf; nics_per_leaf / nics_per_node servers a leaf.
// - rail_optimized: a scalable unit of nics_per_leaf servers has one leaf per rail; NIC r of every
//   server of the unit is on rail leaf r (NVIDIA DGX SuperPOD, SimAI Rail_Opti_SingleToR).
// - dual_tor: every NIC has two ports of half its bandwidth on the two leaves of a pair
//   (AlibabaHPN); `planes` 2 keeps each port's traffic in its own plane of spines.
// Leaves have U = ceil(down / oversubscription) uplinks ("lanes"); lane j of every leaf of a pod
// reaches the same spine plane, so a flow between leaves picks one lane (and, with 3 tiers, one
// core uplink m of that lane). Switch counts pack the lanes onto switches of `switch_radix` ports.
// Under `adaptive` routing a leaf's lanes form one aggregate link per direction (ideal spreading
// over them is the same max-min problem as one link of their summed capacity).
#include <cstdint>
#include <string>
#include <vector>

#include "fabric/spec.hpp"

namespace ddpsim::fabric {

enum class LinkClass { NIC_UP, NIC_DOWN, LEAF_UP, SPINE_DOWN, SPINE_UP, CORE_DOWN };
constexpr int kLinkClasses = 6;
std::string to_string(LinkClass c);  // "nic up", "leaf up", ...

struct Link {
  LinkClass cls = LinkClass::NIC_UP;
  double bandwidth = 0;  // bytes/s, one direction
};

// One path of a route and the share of the flow's bytes it carries (dual-ToR splits over ports).
struct Path {
  std::vector<int> links;  // link ids in order
  double share = 1.0;
  int switches = 0;  // switches crossed
};

struct Bom {
  int servers = 0, nics = 0, nic_ports = 0;
  int leaves = 0, spines = 0, cores = 0;
  int cables_nic_leaf = 0, cables_leaf_spine = 0, cables_spine_core = 0;
  int switch_ports_used = 0;
  double capex = 0;  // when unit prices are given
  int switches() const { return leaves + spines + cores; }
  int cables() const { return cables_nic_leaf + cables_leaf_spine + cables_spine_core; }
};

class Fabric {
 public:
  // `servers` wired (>= the job's nodes), `nics` per server of `nic_bandwidth` bytes/s each.
  // Throws core::ConfigError when the wiring cannot be built (e.g. 2 tiers beyond a spine's radix).
  Fabric(const FabricSpec& spec, int servers, int nics, double nic_bandwidth);
  // Servers a job of `job_nodes` nodes needs wired: rounded up to whole leaves / scalable units.
  static int servers_for(const FabricSpec& spec, int job_nodes, int nics);

  const FabricSpec& spec() const { return spec_; }
  int servers() const { return servers_; }
  int nics() const { return nics_; }
  int ports() const { return ports_; }  // ports per NIC (2 on dual_tor)
  int leaves() const { return leaves_; }
  int pods() const { return pods_; }
  int lanes() const { return lanes_; }            // uplinks per leaf in the graph (1 under adaptive)
  int core_lanes() const { return core_lanes_; }  // spine-core uplinks per lane and pod in the graph
  int leaf_of(int server, int nic, int port) const;
  // Servers sharing one leaf domain (ToR: a leaf or leaf pair; rail: a scalable unit).
  int group_size() const { return group_; }

  const std::vector<Link>& links() const { return links_; }
  int uplink(int leaf, int lane) const { return leaf_up(leaf, lane); }  // leaf to spine lane
  int downlink(int leaf, int lane) const { return spine_down(leaf, lane); }
  std::string link_name(int id) const;

  // Routes of one flow from (server, nic) to (server, nic); `flow` numbers the connection (ECMP
  // hashes it with the endpoints and the seed). One path per NIC port.
  std::vector<Path> route(int src_server, int src_nic, int dst_server, int dst_nic, uint64_t flow) const;

  // Job node i runs on server placement()[i] (packed, spread round-robin over leaf domains, or a
  // seeded random choice).
  std::vector<int> place(int job_nodes) const;

  Bom bom() const;

 private:
  int nic_up(int s, int r, int p) const { return (s * nics_ + r) * ports_ + p; }
  int nic_down(int s, int r, int p) const { return nic_ports_ + nic_up(s, r, p); }
  int leaf_up(int leaf, int j) const { return 2 * nic_ports_ + leaf * lanes_ + j; }
  int spine_down(int leaf, int j) const { return 2 * nic_ports_ + leaves_ * lanes_ + leaf * lanes_ + j; }
  int spine_up(int pod, int j, int m) const { return core_base_ + (pod * lanes_ + j) * core_lanes_ + m; }
  int core_down(int pod, int j, int m) const {
    return core_base_ + pods_ * lanes_ * core_lanes_ + (pod * lanes_ + j) * core_lanes_ + m;
  }
  int pod_of(int leaf) const { return leaf / leaves_per_pod_; }
  int choose(uint64_t key, int dst_port, int n, int tier) const;

  FabricSpec spec_;
  int servers_ = 0, nics_ = 0, ports_ = 1, group_ = 1;
  int leaves_ = 0, leaves_per_pod_ = 1, pods_ = 1;
  int lanes_ = 0, core_lanes_ = 0;            // in the graph
  int phys_lanes_ = 0, phys_core_lanes_ = 0;  // cables
  int nic_ports_ = 0, core_base_ = 0;
  std::vector<Link> links_;
};

}  // namespace ddpsim::fabric
