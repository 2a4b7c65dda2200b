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

MedianInterval median_interval(std::vector<double> v, double level) {
  if (v.size() < 2) throw std::invalid_argument("median interval of fewer than 2 values");
  if (!(level > 0 && level < 1)) throw std::invalid_argument("median interval: level not in (0, 1)");
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  // P(B <= i) for B ~ Binomial(n, 1/2), term by term: C(n, i) / 2^n in logs (n may be large).
  const auto pmf = [n](size_t i) {
    return std::exp(std::lgamma(n + 1.0) - std::lgamma(i + 1.0) - std::lgamma(n - i + 1.0) -
                    static_cast<double>(n) * std::log(2.0));
  };
  MedianInterval r;
  double tail = 0;  // P(B <= k - 1)
  for (size_t k = 1; 2 * k <= n + 1; ++k) {
    tail += pmf(k - 1);
    const double coverage = 1 - 2 * tail;
    if (k > 1 && coverage < level) break;
    r = {v[k - 1], v[n - k], coverage, k};
  }
  return r;
}

}  // namespace ddpsim::core
