#pragma once
// The ddpbench-results/1 file `ddpsim validate` reads (bench/ddpbench, scripts/ddp_cpu_bench.py):
// every field the command uses, checked for its type and range before any is used, so that a
// results file with a wrong type is an input error naming the JSON path, not a library exception.
#include <string>

#include "core/json_reader.hpp"

namespace ddpsim::validate {

// Throws core::ConfigError listing every problem ("file: /step/cases/3/buckets/0: ... expected ...").
void check_results(const core::Json& doc, const std::string& file);

}  // namespace ddpsim::validate
