#pragma once
// CSV forms of the reports (`run --csv`, `sweep --csv`): one header row, then one row per bucket
// or per configuration; numbers as the stream prints them.
#include <string>
#include <utility>
#include <vector>

#include "core/json_reader.hpp"
#include "report/report.hpp"

namespace ddpsim::report {

// RFC 4180 quoting when the field holds a comma, a quote or a newline.
std::string csv_escape(const std::string& s);

// Per-bucket rows of iteration 1 (when simulated) and the steady state.
std::string bucket_csv(const StepReport& r);

// One configuration of a sweep: (parameter path, value text) per swept parameter.
using SweepPoint = std::vector<std::pair<std::string, std::string>>;

// `rows` are the sweep's summary rows (report::summary_json plus "params"); `best` marks one.
std::string sweep_csv(const std::vector<std::string>& param_paths, const std::vector<SweepPoint>& grid,
                      const core::Json& rows, size_t best);

}  // namespace ddpsim::report
