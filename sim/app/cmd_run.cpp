// `ddpsim run`: simulate a scenario (or --model M --cluster C), print the summary, write JSON /
// trace / CSV.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "app/commands.hpp"
#include "config/catalog.hpp"
#include "core/error.hpp"
#include "core/units.hpp"
#include "engine/simulation.hpp"
#include "report/csv.hpp"
#include "report/report.hpp"
#include "report/writers.hpp"

namespace fs = std::filesystem;
using ddpsim::core::Json;

namespace ddpsim::app {

int cmd_run(const CommonOptions& common, const RunArgs& args) {
  std::vector<std::string> paths;
  for (const auto* p : {&args.json_out, &args.trace_out, &args.csv_out})
    if (!p->empty()) paths.push_back(*p);
  report::check_output_paths(paths);  // before minutes of simulation, not after
  auto cat = common.catalog();
  std::vector<std::string> overrides = overrides_with_nccl(common);
  const ScenarioSource src = scenario_source(cat, args.what, &overrides);
  auto sc = src.load(cat, overrides);
  spdlog::info("scenario {}: model {} ({}), cluster {} ({}), {} GPUs, backend {}", sc.name, sc.model.name,
               sc.model.file, sc.cluster.name, sc.cluster.file, sc.cluster.world_size(),
               config::to_string(sc.simulation.backend));
  print_warnings(sc);
  engine::RunOptions opt;
  opt.collect_trace = !args.trace_out.empty();
  opt.process_ends_after = true;
  auto rep = engine::simulate(sc, opt);
  // Everything is computed before anything is written: a failure leaves no partial output.
  std::vector<report::Output> outs;
  if (!args.json_out.empty()) {
    Json doc = report::to_json(rep);
    doc["overrides"] = overrides;  // what changed the scenario: the flags', then --set
    outs.push_back({args.json_out, report::json_text(doc, 2, "run report")});
  }
  if (!args.trace_out.empty())
    outs.push_back({args.trace_out, report::json_text(report::to_chrome_trace(rep), -1, "run trace")});
  if (!args.csv_out.empty()) outs.push_back({args.csv_out, report::bucket_csv(rep)});
  report::write_outputs(outs);
  if (const auto w = report::memory_warning(rep); !w.empty()) std::cerr << w << "\n";
  // The header names the scenario (or "model M on cluster C") and every override.
  rep.scenario = scenario_title(sc.name, overrides);
  if (!args.quiet && args.json_out != "-" && args.trace_out != "-" && args.csv_out != "-")
    std::cout << report::to_table(rep);
  return 0;
}

Command register_run(CLI::App& app, CommonOptions& common) {
  auto args = std::make_shared<RunArgs>();
  auto* cmd =
      app.add_subcommand("run", "simulate a scenario (or --model M --cluster C) and print its step time and overlap");
  cmd->add_option("scenario", args->what.scenario,
                  "bundled scenario name (`ddpsim list scenarios`, e.g. compare/llama7b-16x8-h100-adamw) or file "
                  "(default: scenarios/default.json)");
  cmd->add_option("--model", args->what.model,
                  "without a scenario: a bundled model name or model file, trained with DDP's defaults");
  cmd->add_option("--cluster", args->what.cluster, "with --model: a bundled cluster name or cluster file");
  cmd->add_option("--nodes", args->what.nodes, "node count (default: the scenario's or the cluster's)")
      ->check(number_in(1, 1 << 20));
  cmd->add_option("--gpus-per-node", args->what.gpus_per_node, "GPUs per node (default: the cluster's)")
      ->check(number_in(1, 1024));
  add_set_option(*cmd, common, "override a scenario field: PATH=VALUE (repeatable; echoed in the header)");
  add_nccl_flags(*cmd, common.nccl);
  cmd->add_option("--json", args->json_out, "write the report as JSON to FILE or - (stdout)");
  cmd->add_option("--trace", args->trace_out, "write a Chrome trace (open in Perfetto) to FILE");
  cmd->add_option("--csv", args->csv_out, "write per-bucket rows as CSV to FILE or -");
  cmd->add_flag("-q,--quiet", args->quiet, "do not print the summary");
  return {cmd, [&common, args] { return cmd_run(common, *args); }};
}

}  // namespace ddpsim::app
