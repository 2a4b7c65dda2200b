#pragma once
// Output files are written whole or not at all: to a temporary file beside the target, then renamed.
#include <string>

namespace ddpsim::report {

// `path` "-" writes to standard output. Throws core::SimulationError on I/O failure.
void write_output(const std::string& path, const std::string& content);

}  // namespace ddpsim::report
