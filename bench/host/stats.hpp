#pragma once
#include <algorithm>
#include <cmath>
#include <vector>

namespace ddpbench {

// Median of a sample (mean of the two middle values for an even count); 0 for an empty one.
inline double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Index of the sample closest to the median (for picking a representative iteration).
inline size_t median_index(const std::vector<double>& v) {
  const double m = median(v);
  size_t best = 0;
  for (size_t i = 1; i < v.size(); ++i)
    if (std::abs(v[i] - m) < std::abs(v[best] - m)) best = i;
  return best;
}

}  // namespace ddpbench
