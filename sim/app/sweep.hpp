#pragma once
// Runs independent jobs in forked child processes (one SimGrid Engine per process), at most
// `jobs` at a time, and collects each child's JSON result over a pipe.
#include <functional>
#include <string>
#include <vector>

#include "core/json_reader.hpp"

namespace ddpsim::app {

struct ChildResult {
  bool ok = false;
  core::Json value;   // the job's JSON when ok
  std::string error;  // the child's error message otherwise
  int exit_code = 0;
};

// Each job runs in its own child; results come back in job order. `jobs` <= 0 means all cores.
std::vector<ChildResult> run_in_children(const std::vector<std::function<core::Json()>>& work, int jobs);

// Splits "ddp.bucket_cap_mb=1,2,5" into the path and its values (each a JSON value or string).
struct SweepParam {
  std::string path;
  std::vector<std::string> values;
};
SweepParam parse_sweep_param(const std::string& text);
// The cartesian product of the parameters' values, as --set override lists, in row-major order.
std::vector<std::vector<std::pair<std::string, std::string>>> sweep_grid(const std::vector<SweepParam>& params);

}  // namespace ddpsim::app
