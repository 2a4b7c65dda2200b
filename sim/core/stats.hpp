#pragma once
// Order statistics used by the reports, calibration, validation and the benchmarks: one home
// (docs/design.md, "each fact lives in one place").
#include <cstddef>
#include <vector>

namespace ddpsim::core {

// Median: the middle value, the mean of the two middle values for an even count; 0 when empty.
double median(std::vector<double> v);

// Median of |x|; 0 when empty.
double median_abs(std::vector<double> v);

// Nearest-rank percentile, q in [0, 1]: the ceil(q * n)-th smallest value (at least the first).
// Throws std::invalid_argument on an empty sample.
double percentile(std::vector<double> v, double q);

// A distribution-free confidence interval for a sample's median (order statistics; any continuous
// distribution, independent draws): with the sample sorted, [x_(k), x_(n+1-k)] holds the true median
// with probability 1 - 2 P(B <= k - 1), B ~ Binomial(n, 1/2). The narrowest such interval whose
// coverage is at least `level`, or [min, max] with its (lower) coverage when none reaches it.
// `coverage` is the exact figure; `k` the order statistic taken (1-based). Throws
// std::invalid_argument below 2 values or for a level outside (0, 1).
struct MedianInterval {
  double low = 0, high = 0;
  double coverage = 0;
  size_t k = 0;
};
MedianInterval median_interval(std::vector<double> v, double level = 0.95);

}  // namespace ddpsim::core
