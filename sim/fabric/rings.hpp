#pragma once
// NCCL's rings over the fabric (docs/facts.md §6): each channel's ring leaves a node through one
// NIC and enters the next node through one NIC. NCCL_CROSS_NIC 0 and 2 (the default, which
// prefers it) keep a ring on the same NIC index on every node (its rail); 1 lets it change NIC
// between nodes, which this model takes as entering on the NIC after the one it left on (NCCL
// src/graph/search.cc: with crossNic the search may pair a net-in GPU with another net-out GPU).
// Ring order is node-major (collectives/ring.hpp), so the inter-node hops are job node n to n+1.
#include <cstdint>
#include <vector>

#include "fabric/fabric.hpp"

namespace ddpsim::fabric {

struct NicFlow {
  int src_node = 0, dst_node = 0;  // job nodes
  int src_nic = 0, dst_nic = 0;
  int connection = 0;  // flows_per_nic index
  double share = 1.0;  // of the node-to-node hop's bytes
  std::vector<Path> paths;
};

// Every inter-node ring flow of a `job_nodes`-node job placed on `servers` (Fabric::place):
// job_nodes hops (none for one node) x NICs x flows_per_nic.
std::vector<NicFlow> ring_flows(const Fabric& fabric, const std::vector<int>& servers, int job_nodes, int cross_nic,
                                int flows_per_nic);

// Flows on each link (index = link id), weighted by nothing: a count.
std::vector<int> link_counts(const Fabric& fabric, const std::vector<NicFlow>& flows);

}  // namespace ddpsim::fabric
