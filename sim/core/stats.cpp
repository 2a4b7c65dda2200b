#include "core/stats.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace ddpsim::core {

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double median_abs(std::vector<double> v) {
  for (auto& x : v) x = std::fabs(x);
  return median(std::move(v));
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) throw std::invalid_argument("percentile of an empty sample");
  std::sort(v.begin(), v.end());
  size_t idx = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  idx = std::clamp<size_t>(idx, 1, v.size()) - 1;
  return v[idx];
}

}  // namespace ddpsim::core
