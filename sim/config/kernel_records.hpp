#pragma once
// Reading the optional per-layer `kernels` records and the top-level `kernel_scaling` of a
// ddpsim-model/1 file (models/README.md, "Kernel records").
#include <vector>

#include "config/specs.hpp"
#include "core/json_reader.hpp"

namespace ddpsim::config {

std::vector<KernelRecord> read_kernel_records(const core::Json& j, const std::string& path, core::Diagnostics& d);
void read_kernel_scaling(const core::Json& j, ModelSpec& m, core::Diagnostics& d);

}  // namespace ddpsim::config
