#pragma once
// One parser per scenario section (scenarios/README and README.md's scenario table): each reads
// its JSON object, adds every problem to `d` with its JSON path, and returns the settings with the
// defaults of specs.hpp (the one place they are written) for keys that are absent.
#include <string>
#include <vector>

#include "config/specs.hpp"
#include "core/json_reader.hpp"

namespace ddpsim::config {

DdpSettings parse_ddp(const core::Json& j, core::Diagnostics& d);
TrainingSettings parse_training(const core::Json& j, core::Diagnostics& d);
ComputeSettings parse_compute(const core::Json& j, core::Diagnostics& d);
CollectiveSettings parse_collective(const core::Json& j, core::Diagnostics& d);
SimulationSettings parse_simulation(const core::Json& j, core::Diagnostics& d);
ContentionSettings parse_contention(const core::Json& j, core::Diagnostics& d);
StreamSettings parse_streams(const core::Json& j, core::Diagnostics& d);
// Ranks are checked against the cluster by the caller (the section does not know it).
StragglerSettings parse_stragglers(const core::Json& j, core::Diagnostics& d);

// ZeroRedundancyOptimizer settings that the model or other sections rule out.
void check_zero_redundancy_optimizer(const Scenario& s, core::Diagnostics& d);
// Likely mistakes in the FSDP and activation-checkpointing settings (stderr warnings, not errors).
std::vector<std::string> fsdp_warnings(const Scenario& s);

// The DDP pytorch_version whose first-bucket rule a measured run's torch release follows
// ("1.13.1" -> "1.13", anything else -> "2.4"); see DdpSettings::first_bucket_cap_bytes.
std::string pytorch_rule_version(const std::string& torch_version);

}  // namespace ddpsim::config
