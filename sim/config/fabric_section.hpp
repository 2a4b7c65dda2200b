#pragma once
// The `fabric` object of a cluster file, and of a scenario, which overrides its cluster's key by
// key (so `--set fabric.oversubscription=2:1` works). Every field is validated like the rest:
// file, JSON path, value and what is allowed (README "Fabric").
#include <string>

#include "config/fabric_spec.hpp"
#include "core/json_reader.hpp"

namespace ddpsim::config {

// Reads `j` (an object at JSON path `path`) into a FabricSpec; absent keys keep the defaults.
FabricSpec parse_fabric(const core::Json& j, const std::string& path, core::Diagnostics& d);

// Checks that the fabric can be wired for `nodes` servers with `nics` NICs each (leaf radix,
// spine radix of two tiers, NICs per leaf a whole number of servers); problems go to `d` at `path`.
void check_fabric_wiring(const FabricSpec& f, int nodes, int nics, double nic_bandwidth, const std::string& path,
                         core::Diagnostics& d);

}  // namespace ddpsim::config
