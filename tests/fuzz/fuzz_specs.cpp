// Every spec parser: model, GPU, link, cluster and scenario, one binary each (DDPSIM_FUZZ_SPEC),
// on a JSON document parsed by the strict reader. Clusters and scenarios resolve bundled names
// against the source tree, as the commands do.
#include "config/catalog.hpp"
#include "core/json_reader.hpp"
#include "fuzz_support.hpp"

using namespace ddpsim;

namespace {
[[maybe_unused]] const config::Catalog& catalog() {
  static const config::Catalog cat(DDPSIM_SOURCE_DIR);
  return cat;
}
// A two-parameter model inline, so that a fuzzed cluster does not read a model file per input.
[[maybe_unused]] const core::Json& tiny_model() {
  static const core::Json m = core::Json::parse(R"({"format": "ddpsim-model/1", "name": "tiny", "batch_size": 4,
    "params": [{"name": "w", "shape": [4, 4], "dtype": "float32"}, {"name": "b", "shape": [4], "dtype": "float32"}],
    "layers": [{"name": "fc", "type": "linear", "params": [0, 1], "fwd_flops": 128, "bwd_flops": 256}],
    "grad_ready_order": [1, 0]})");
  return m;
}
}  // namespace

DDPSIM_FUZZ_TARGET({
  core::Json j = core::parse_json_text(text, "fuzz.json");
  core::Diagnostics d("fuzz.json");
#if DDPSIM_FUZZ_SPEC == 1
  (void)config::parse_model(j, d);
#elif DDPSIM_FUZZ_SPEC == 2
  (void)config::parse_gpu(j, "", d);
#elif DDPSIM_FUZZ_SPEC == 3
  (void)config::parse_link(j, "", d);
#elif DDPSIM_FUZZ_SPEC == 4
  core::Json s{{"model", tiny_model()}, {"cluster", j}};
  (void)catalog().scenario_from_json(s, "fuzz.json", DDPSIM_SOURCE_DIR "/configs/clusters");
#else
  if (j.is_object() && !j.contains("model")) j["model"] = tiny_model();
  (void)catalog().scenario_from_json(j, "fuzz.json", DDPSIM_SOURCE_DIR "/scenarios");
#endif
  d.throw_if_any();
})
