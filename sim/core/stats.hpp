#pragma once
// Order statistics used by reports and comparisons: one definition for the whole project.
#include <vector>

namespace ddpsim::core {

// Nearest-rank percentile, q in [0, 1]; 0 for an empty vector.
double percentile(std::vector<double> v, double q);

}  // namespace ddpsim::core
