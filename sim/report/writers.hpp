#pragma once
// Output files are written whole or not at all: every path of a command is checked first, each
// file goes to a temporary file beside its target, and only when all of them are written are they
// renamed into place. A symlink is written through to its target; an existing directory, device,
// fifo or socket at a path is refused and left alone (never replaced).
#include <string>
#include <vector>

#include "core/json_reader.hpp"

namespace ddpsim::report {

struct Output {
  std::string path;  // "-": standard output (written after every file is in place)
  std::string content;
};

// Throws core::ConfigError (exit 2) naming the path when a path cannot be an output (its folder
// does not exist, it is a directory or a non-regular file, or two outputs name the same file);
// commands call it before they compute, write_outputs again before it writes.
void check_output_paths(const std::vector<std::string>& paths);

// Writes all of `outputs` or none of them (core::SimulationError on an I/O failure, after every
// temporary file is removed).
void write_outputs(const std::vector<Output>& outputs);
void write_output(const std::string& path, const std::string& content);

// `value` as JSON text; a NaN or infinity anywhere in it is a core::SimulationError naming its
// JSON path and `what`, because nlohmann would write it as null.
std::string json_text(const core::Json& value, int indent, const std::string& what);

}  // namespace ddpsim::report
