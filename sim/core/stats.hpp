#pragma once
// Order statistics used by the reports, calibration, validation and the benchmarks: one home
// (docs/design.md, "each fact lives in one place").
#include <vector>

namespace ddpsim::core {

// Median: the middle value, the mean of the two middle values for an even count; 0 when empty.
double median(std::vector<double> v);

// Median of |x|; 0 when empty.
double median_abs(std::vector<double> v);

// Nearest-rank percentile, q in [0, 1]: the ceil(q * n)-th smallest value (at least the first).
// Throws std::invalid_argument on an empty sample.
double percentile(std::vector<double> v, double q);

}  // namespace ddpsim::core
