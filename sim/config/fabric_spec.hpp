#pragma once
// The fabric description's types live in fabric/spec.hpp (fabric is below config); the cluster and
// scenario specs name them as config:: types.
#include "fabric/spec.hpp"

namespace ddpsim::config {

using fabric::FabricPlacement;
using fabric::FabricRouting;
using fabric::FabricSpec;
using fabric::FabricTopology;
using fabric::to_string;

}  // namespace ddpsim::config
