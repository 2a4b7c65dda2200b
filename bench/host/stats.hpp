#pragma once
#include <cmath>
#include <vector>

#include "core/stats.hpp"

namespace ddpbench {

// The simulator's median (mean of the two middle values for an even count; 0 for an empty sample).
using ddpsim::core::median;

// Index of the sample closest to the median (for picking a representative iteration).
inline size_t median_index(const std::vector<double>& v) {
  const double m = median(v);
  size_t best = 0;
  for (size_t i = 1; i < v.size(); ++i)
    if (std::abs(v[i] - m) < std::abs(v[best] - m)) best = i;
  return best;
}

}  // namespace ddpbench
