// The ddpbench-results/1 reader of `ddpsim validate` (validate/results_reader).
#include "core/json_reader.hpp"
#include "fuzz_support.hpp"
#include "validate/results_reader.hpp"

using namespace ddpsim;

DDPSIM_FUZZ_TARGET({
  core::Json doc = core::parse_json_text(text, "fuzz.json");
  validate::check_results(doc, "fuzz.json");
})
