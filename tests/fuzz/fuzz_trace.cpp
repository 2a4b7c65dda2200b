// torch.profiler (Kineto) traces against the tiny3 fixture model (tests/golden/traces, read once).
#include "core/json_reader.hpp"
#include "fuzz_support.hpp"
#include "profile/trace_import.hpp"

using namespace ddpsim;

namespace {
const core::Json& model() {
  static const core::Json m = core::read_json_file(DDPSIM_SOURCE_DIR "/tests/golden/traces/tiny3.json");
  return m;
}
}  // namespace

DDPSIM_FUZZ_TARGET({
  core::Json trace = core::parse_json_text(text, "fuzz.json");
  auto res = profile::import_trace(trace, "fuzz.json", model(), "model.json", std::nullopt);
  if (core::find_non_finite(res.model)) __builtin_trap();  // would be written as null
})
