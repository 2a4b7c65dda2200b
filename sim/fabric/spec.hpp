#pragma once
// The inter-node fabric a cluster's NICs plug into (a cluster file's `fabric` object, overridden
// per scenario): typed and in SI units; parsed by config/fabric_section (config depends on fabric,
// never the reverse), built into a graph by fabric/fabric. The default is a single ideal switch.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/names.hpp"

namespace ddpsim::fabric {

enum class FabricTopology { SINGLE_SWITCH, FAT_TREE, RAIL_OPTIMIZED, DUAL_TOR };
// DMODK: destination-based deterministic up-port choice (InfiniBand subnet managers, OpenSM
// ftree/updn); ECMP: per-flow hash (Ethernet/RoCE); ADAPTIVE: ideal per-packet spreading.
enum class FabricRouting { DMODK, ECMP, ADAPTIVE };
enum class FabricPlacement { PACKED, SPREAD, RANDOM };
const core::Names<FabricTopology>& topology_names();
const core::Names<FabricRouting>& routing_names();
const core::Names<FabricPlacement>& placement_names();
std::string to_string(FabricTopology t);
std::string to_string(FabricRouting r);
std::string to_string(FabricPlacement p);

struct FabricSpec {
  FabricTopology topology = FabricTopology::SINGLE_SWITCH;
  int tiers = 2;  // switch tiers of a fat-tree: 2 (leaf, spine) or 3 (leaf, spine, core)
  // NIC ports under one leaf (SimAI's nics_per_aswitch). ToR and dual-ToR: servers per leaf =
  // nics_per_leaf / NICs per server; rail-optimized: servers per scalable unit = nics_per_leaf.
  int nics_per_leaf = 32;
  int leaves_per_pod = 0;  // 3 tiers: leaves under one spine group (SimAI asw_per_psw); 0 = 2 tiers: all
  int switch_radix = 64;   // ports per switch (bill of materials, and how many spines a tier needs)
  int planes = 1;          // dual_tor: 1 = both ToRs of a pair on the same spines, 2 = dual-plane
  // Downlink / uplink bandwidth per tier above the NICs: [leaf, spine]; 2.0 = "2:1".
  double leaf_oversubscription = 1.0, spine_oversubscription = 1.0;
  std::optional<double> uplink_bandwidth;     // bytes/s of one leaf-spine link (default: the NIC's)
  std::optional<double> core_link_bandwidth;  // bytes/s of one spine-core link (default: the uplink's)
  double switch_latency = 0;                  // seconds per switch crossed beyond the first
  FabricRouting routing = FabricRouting::DMODK;
  uint64_t routing_seed = 1;
  FabricPlacement placement = FabricPlacement::PACKED;
  uint64_t placement_seed = 1;
  // false: the provider does not promise where a job's nodes land (rented capacity: EC2 cluster
  // placement groups and Capacity Blocks place "close together", not under one leaf). `placement`
  // is then what the runs assume, and compare also runs the scattered bound (scattered_spec).
  bool placement_guaranteed = true;
  int servers = 0;             // servers wired to the fabric (0: the job's nodes, rounded up to whole leaves/units)
  double background_load = 0;  // share [0, 1) of every upper-tier link another job keeps busy
  int flows_per_nic = 1;       // NCCL connections (QPs) per NIC per ring hop that routing sees separately
  // Unit prices for the bill of materials (USD; 0: not given).
  double price_per_switch = 0, price_per_cable = 0, price_per_nic = 0;
  bool is_single_switch() const { return topology == FabricTopology::SINGLE_SWITCH; }
};

// The scattered bound of a placement the provider does not guarantee: no two of the job's nodes
// share a leaf domain (a ToR leaf, a dual-ToR pair, a rail-optimized scalable unit). The fabric is
// wired with `job_nodes` x servers-per-domain servers and `spread` placement puts job node i in
// domain i, so every inter-node ring hop crosses the leaves' uplinks (and, beyond a pod, the
// cores). The fabric's own sizes, oversubscription and routing are kept.
FabricSpec scattered_spec(const FabricSpec& spec, int job_nodes, int nics_per_node);
// The placement a run assumed (issue 24 item 3; `run`'s report and `collective --explain`):
// "" on the single switch or at one node (no inter-node placement to assume); else the fabric's
// `placement` and whether the provider guarantees it (`placement_guaranteed`), e.g. "packed
// (assumed; aws-p5 does not guarantee it: compare shows the scattered range)".
std::string placement_line(const FabricSpec& spec, const std::string& cluster, int nodes);
// The --set overrides that turn a scenario's fabric into scattered_spec (for a child run).
std::vector<std::string> scattered_overrides(const FabricSpec& spec, int job_nodes, int nics_per_node);

}  // namespace ddpsim::fabric
