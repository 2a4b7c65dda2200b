#pragma once
// From the hardware catalog to NCCL's view of it: the cluster spec summarised the way NCCL's
// topology search and tuner see the machine (sim/collectives/nccl_model.hpp).
#include "collectives/nccl_model.hpp"
#include "config/specs.hpp"

namespace ddpsim::collectives {

NcclTopology nccl_topology(const config::ClusterSpec& cluster);
NcclSettings nccl_settings(const config::CollectiveSettings& settings);

}  // namespace ddpsim::collectives
