#pragma once
// CSV forms of the reports (`run --csv`, `sweep --csv`): one header row, then one row per bucket
// or per configuration; numbers as the stream prints them.
#include <optional>
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

// A number as CSV text: integral values as integers (bytes, counts), others in the shortest form
// that reads back to the same double.
std::string csv_number(double v);
// A JSON value as CSV text: numbers by csv_number, strings quoted when needed, null empty.
std::string csv_value(const core::Json& v);
// A swept value as text (strings bare, other JSON as written).
std::string param_text(const core::Json& v);

// `rows`: the sweep's rows in point order ("point", "params", report::summary_json's fields, or
// "error" and "exit_code" for a point that failed); `best` indexes `rows` (none: no row succeeded).
std::string sweep_csv(const std::vector<std::string>& param_paths, const core::Json& rows, std::optional<size_t> best);

}  // namespace ddpsim::report
