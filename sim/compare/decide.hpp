#pragma once
// Decisions over simulated rows (sweep points, compare options), SimGrid-free: the metric to rank
// by, groups ranked only within themselves (2 nodes always step faster than 16; that says nothing
// about which 16-node configuration to run), and a tolerance under which a difference is "flat":
// the model's own error is larger than that, so naming one row best would be noise.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/json_reader.hpp"

namespace ddpsim::compare {

enum class Metric { STEP_TIME, SAMPLES_PER_S, COST };
// "step_time", "samples_per_s" or "cost"; throws core::ConfigError naming `flag` and the forms.
Metric parse_metric(const std::string& text, const std::string& flag = "--metric");
const char* metric_name(Metric m);   // as parsed
const char* metric_key(Metric m);    // the row's JSON key: step_time_s, samples_per_s, cost_per_million_samples
const char* metric_words(Metric m);  // "least step time", "most samples/s", "least $ per million samples"
bool larger_is_better(Metric m);
std::string metric_text(Metric m, double v);  // "1.23 ms", "4567 samples/s", "$1.23/M samples"

// A figure a decision needs. Throws core::SimulationError naming `what`, the key and what is
// there instead: a missing figure is an error, never 0.
double figure(const core::Json& row, const std::string& key, const std::string& what);

// Cost of a million samples in USD from a row's own figures (price per GPU-hour, GPUs, step time,
// samples per rank): price x world x step / 3600 / (samples_per_rank x world) x 1e6.
double cost_per_million(double price_per_gpu_hour, double step_time_s, double samples_per_rank);

struct DecideOptions {
  Metric metric = Metric::STEP_TIME;
  // Relative tolerance: differences within it are flat. Unset: the resolution of the best row's
  // prediction band (row "prediction": {"resolution": r}, report/prediction.hpp) when it has one,
  // else 1 %.
  std::optional<double> tolerance;
};

struct Decision {
  core::Json key = core::Json::object();  // the group's values ({} when not grouped)
  std::vector<size_t> members;            // candidate rows (ran, fit), in row order
  std::optional<size_t> best;             // the best (the first of equals); with flat: the reference
  std::vector<size_t> flat;               // rows within the tolerance of best, best first
  double tolerance = 0.01;                // relative
  std::string tolerance_source;           // "default", "--tolerance", "prediction band"
  bool is_flat() const { return flat.size() > 1; }
};

// Ranks `rows` group by group. `group_of` gives a row's group key (rows with equal keys compete);
// `candidate` says whether a row competes at all (ran, fits). Groups come in order of first
// appearance. Throws core::SimulationError when a candidate lacks the metric's figure.
std::vector<Decision> decide(const core::Json& rows, const DecideOptions& opt,
                             const std::function<core::Json(const core::Json&)>& group_of,
                             const std::function<bool(const core::Json&)>& candidate);

// "flat: any of A, B, C within 1 % (least step time: 1.234 ms .. 1.240 ms)".
std::string flat_text(const core::Json& rows, const Decision& d, Metric metric,
                      const std::function<std::string(const core::Json&)>& label);
std::string percent_text(double fraction);  // 0.01 -> "1 %", 0.0025 -> "0.25 %"

}  // namespace ddpsim::compare
