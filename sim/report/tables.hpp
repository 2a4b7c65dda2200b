#pragma once
// Text tables of the commands that compare several runs (sweep, bench). The run summary itself is
// report::to_table (report.hpp).
#include <string>
#include <vector>

#include "core/json_reader.hpp"
#include "report/csv.hpp"

namespace ddpsim::report {

std::string sweep_table(const std::string& scenario_file, const std::vector<std::string>& param_paths,
                        const std::vector<SweepPoint>& grid, const core::Json& rows, size_t best);

// `cases`: objects with world_size, num_params, num_buckets, flows, wall_s_per_step, peak_rss_mib.
std::string bench_table(const std::string& scenario_file, int repeat, const core::Json& cases);
// `bench --scaling`: GPUs, flows, wall s per step and peak RSS per size.
std::string scaling_table(const std::string& scenario_file, int repeat, const core::Json& cases);

}  // namespace ddpsim::report
