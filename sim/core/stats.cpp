#include "core/stats.hpp"

#include <algorithm>
#include <cmath>

namespace ddpsim::core {

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t idx = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  idx = std::clamp<size_t>(idx, 1, v.size()) - 1;
  return v[idx];
}

}  // namespace ddpsim::core
