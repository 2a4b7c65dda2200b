// The ddpbench-results/1 reader of `ddpsim validate` (app/results_reader).
#include "app/results_reader.hpp"
#include "core/json_reader.hpp"
#include "fuzz_support.hpp"

using namespace ddpsim;

DDPSIM_FUZZ_TARGET({
  core::Json doc = core::parse_json_text(text, "fuzz.json");
  app::check_results(doc, "fuzz.json");
})
