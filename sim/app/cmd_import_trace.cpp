// `ddpsim import-trace`: measured per-layer times from a torch.profiler trace into a model file.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "app/commands.hpp"
#include "config/catalog.hpp"
#include "core/error.hpp"
#include "core/units.hpp"
#include "profile/trace_import.hpp"
#include "report/writers.hpp"

namespace fs = std::filesystem;
using ddpsim::core::Json;

namespace ddpsim::app {

int cmd_import_trace(const CommonOptions& common, const ImportTraceArgs& args) {
  check_outputs({args.out});
  auto cat = common.catalog();
  const auto model_file = cat.resolve(config::Kind::MODEL, args.model);
  cat.load_model(model_file);  // validate the model first
  Json model = core::read_json_file(model_file.string());
  Json trace = profile::read_trace_file(args.trace);
  std::optional<int> batch;
  if (args.batch > 0) batch = args.batch;
  auto res = profile::import_trace(trace, args.trace, model, model_file.string(), batch);
  // The result must load as a model before it is written.
  core::Diagnostics d(args.out.empty() ? "import-trace output" : args.out);
  config::parse_model(res.model, d);
  d.throw_if_any();
  if (!args.out.empty()) report::write_output(args.out, report::json_text(res.model, 2, "imported model"));
  std::cout << "import-trace: " << res.layers_timed << " of " << res.layers_total << " layers timed from " << args.trace
            << " (forward " << core::format_time(res.trace_forward_s) << ", backward "
            << core::format_time(res.trace_backward_s) << " in the trace)\n";
  for (const auto& w : res.warnings) std::cout << "  warning: " << w << "\n";
  if (args.out.empty()) std::cout << "  (no -o given: nothing written)\n";
  return 0;
}

Command register_import_trace(CLI::App& app, CommonOptions& common) {
  auto args = std::make_shared<ImportTraceArgs>();
  auto* cmd = app.add_subcommand("import-trace", "measured per-layer times from a torch.profiler Chrome trace");
  cmd->add_option("trace", args->trace, "trace JSON from torch.profiler (with_modules=True or with_stack=True)")
      ->required();
  cmd->add_option("--model", args->model, "the model the trace ran (bundled name or file)")->required();
  cmd->add_option("-o,--output", args->out, "write the model with measured times here");
  cmd->add_option("--batch", args->batch, "batch size the trace was recorded at (default: the model's)")
      ->check(number_in(1, 1 << 24));
  return {cmd, [&common, args] { return cmd_import_trace(common, *args); }};
}
}  // namespace ddpsim::app
