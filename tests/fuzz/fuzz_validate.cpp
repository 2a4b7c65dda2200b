// The ddpbench-results/1 reader of `ddpsim validate` (validate/results_reader), then the per-case
// readers of validate/bench_results that take numbers out of a step case: the measured optimizer
// step and the ranks' compute variation (rank_compute_only_times_s); then the comparison itself
// (compare_steps) against a stand-in prediction per case, which reads the timed steps (the measured
// median's interval, the slow-phase check), the buckets and the no-DDP step of whatever passed.
#include <algorithm>

#include "core/json_reader.hpp"
#include "fuzz_support.hpp"
#include "validate/bench_results.hpp"
#include "validate/results_reader.hpp"

using namespace ddpsim;

DDPSIM_FUZZ_TARGET({
  core::Json doc = core::parse_json_text(text, "fuzz.json");
  validate::check_results(doc, "fuzz.json");
  const core::Json hw = doc.is_object() ? doc.value("hardware", core::Json::object()) : core::Json::object();
  const int ranks = hw.is_object() && hw.value("ngpus", core::Json()).is_number_integer()
                        ? static_cast<int>(std::clamp<long long>(hw["ngpus"].get<long long>(), 0, 1 << 20))
                        : 1;
  if (doc.contains("step") && doc["step"].is_object() && doc["step"].contains("cases") &&
      doc["step"]["cases"].is_array()) {
    const core::Json& cases = doc["step"]["cases"];
    for (size_t i = 0; i < cases.size(); ++i) {
      (void)validate::measured_optimizer_step(cases[i], "fuzz.json", i);
      const double cv = validate::rank_jitter_cv(cases[i], ranks, "fuzz.json", i);
      if (!(cv >= 0)) __builtin_trap();  // a coefficient of variation: never negative nor NaN
    }
    validate::Plan plan;
    plan.file = "fuzz.json";
    plan.mode = "step";
    plan.ranks = std::max(ranks, 1);
    std::vector<core::Json> predicted;
    for (size_t i = 0; i < cases.size(); ++i) {
      validate::StepCase c;
      c.label = "case";
      c.measured = cases[i];
      plan.steps.push_back(c);
      predicted.push_back({{"step_time_s", 0.1},
                           {"exposed_comm_s", 0.0},
                           {"overlap_ratio", nullptr},
                           {"compute_only_s", 0.1},
                           {"num_buckets", 0},
                           {"buckets", core::Json::array()},
                           {"ddp_overhead_s", 0.01}});
    }
    (void)validate::compare_steps(plan, predicted, 0.05);
  }
})
