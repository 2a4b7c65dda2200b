#include "compare/decide.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/error.hpp"
#include "core/units.hpp"

namespace ddpsim::compare {

using core::Json;

Metric parse_metric(const std::string& text, const std::string& flag) {
  if (text == "step_time") return Metric::STEP_TIME;
  if (text == "samples_per_s") return Metric::SAMPLES_PER_S;
  if (text == "cost") return Metric::COST;
  throw core::ConfigError(flag + " " + text +
                          ": not a metric; expected step_time (least step time), samples_per_s (most samples per "
                          "second) or cost (least USD per million samples, from the cluster's price)");
}

const char* metric_name(Metric m) {
  switch (m) {
    case Metric::SAMPLES_PER_S: return "samples_per_s";
    case Metric::COST: return "cost";
    default: return "step_time";
  }
}

const char* metric_key(Metric m) {
  switch (m) {
    case Metric::SAMPLES_PER_S: return "samples_per_s";
    case Metric::COST: return "cost_per_million_samples";
    default: return "step_time_s";
  }
}

const char* metric_words(Metric m) {
  switch (m) {
    case Metric::SAMPLES_PER_S: return "most samples/s";
    case Metric::COST: return "least $ per million samples";
    default: return "least step time";
  }
}

bool larger_is_better(Metric m) { return m == Metric::SAMPLES_PER_S; }

std::string metric_text(Metric m, double v) {
  char b[64];
  switch (m) {
    case Metric::SAMPLES_PER_S: std::snprintf(b, sizeof b, v >= 100 ? "%.0f samples/s" : "%.3g samples/s", v); return b;
    case Metric::COST: std::snprintf(b, sizeof b, v >= 100 ? "$%.0f/M samples" : "$%.3g/M samples", v); return b;
    default: return core::format_time(v);
  }
}

std::string percent_text(double fraction) {
  char b[32];
  std::snprintf(b, sizeof b, "%g %%", fraction * 100.0);
  return b;
}

double figure(const Json& row, const std::string& key, const std::string& what) {
  if (!row.is_object() || !row.contains(key))
    throw core::SimulationError(what + ": the run report has no \"" + key + "\"; a missing figure is not taken as 0");
  const Json& v = row[key];
  if (!v.is_number()) throw core::SimulationError(what + ": \"" + key + "\" is " + v.dump() + ", not a number");
  const double d = v.get<double>();
  if (!std::isfinite(d)) throw core::SimulationError(what + ": \"" + key + "\" is not finite");
  return d;
}

double cost_per_million(double price_per_gpu_hour, double step_time_s, double samples_per_rank) {
  return price_per_gpu_hour * step_time_s / 3600.0 / samples_per_rank * 1e6;
}

std::vector<Decision> decide(const Json& rows, const DecideOptions& opt,
                             const std::function<Json(const Json&)>& group_of,
                             const std::function<bool(const Json&)>& candidate) {
  std::vector<Decision> out;
  const char* key = metric_key(opt.metric);
  const bool larger = larger_is_better(opt.metric);
  for (size_t i = 0; i < rows.size(); ++i) {
    if (!candidate(rows[i])) continue;
    Json k = group_of(rows[i]);
    auto it = std::find_if(out.begin(), out.end(), [&](const Decision& d) { return d.key == k; });
    if (it == out.end()) {
      out.push_back({});
      out.back().key = k;
      it = out.end() - 1;
    }
    it->members.push_back(i);
  }
  for (auto& d : out) {
    std::vector<double> v;
    for (size_t i : d.members)
      v.push_back(figure(rows[i], key, "row " + std::to_string(i) + " (" + metric_name(opt.metric) + ")"));
    size_t b = 0;
    for (size_t k = 1; k < v.size(); ++k)
      // Equal to 1e-9 (relative) is equal: the first row stays the reference (a 1:1 fat-tree and
      // the ideal switch differ only in the flow solver's last digits).
      if (larger ? v[k] > v[b] + 1e-9 * std::abs(v[b]) : v[k] < v[b] - 1e-9 * std::abs(v[b])) b = k;
    d.best = d.members[b];
    const Json& br = rows[*d.best];
    if (opt.tolerance) {
      d.tolerance = *opt.tolerance;
      d.tolerance_source = "--tolerance";
    } else if (br.contains("prediction") && br["prediction"].is_object() && br["prediction"].contains("resolution") &&
               br["prediction"]["resolution"].is_number() && br["prediction"]["resolution"].get<double>() > 0) {
      // What the validation behind the best row's prediction band can resolve between two
      // predictions of one model (report/prediction.hpp): closer rows are a tie.
      d.tolerance = br["prediction"]["resolution"].get<double>();
      d.tolerance_source = "prediction band";
    } else {
      d.tolerance = 0.01;
      d.tolerance_source = "default";
    }
    d.flat.push_back(*d.best);
    for (size_t k = 0; k < v.size(); ++k)
      if (k != b && std::abs(v[k] - v[b]) <= d.tolerance * std::abs(v[b])) d.flat.push_back(d.members[k]);
  }
  return out;
}

std::string flat_text(const Json& rows, const Decision& d, Metric metric,
                      const std::function<std::string(const Json&)>& label) {
  std::string names;
  double lo = 0, hi = 0;
  for (size_t k = 0; k < d.flat.size(); ++k) {
    const Json& r = rows[d.flat[k]];
    names += (k ? ", " : "") + label(r);
    const double v = r[metric_key(metric)].get<double>();
    lo = k ? std::min(lo, v) : v;
    hi = k ? std::max(hi, v) : v;
  }
  return "flat: any of " + names + " within " + percent_text(d.tolerance) + " (" + metric_words(metric) + ": " +
         metric_text(metric, lo) + " .. " + metric_text(metric, hi) + ")";
}

}  // namespace ddpsim::compare
