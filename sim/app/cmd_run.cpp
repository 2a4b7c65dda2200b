// `ddpsim run`: simulate a scenario, print the summary, write JSON / trace / CSV.
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
  auto sc = cat.load_scenario(scenario_path(cat, args.scenario), common.overrides);
  spdlog::info("scenario {}: model {} ({}), cluster {} ({}), {} GPUs, backend {}", sc.name, sc.model.name,
               sc.model.file, sc.cluster.name, sc.cluster.file, sc.cluster.world_size(),
               config::to_string(sc.simulation.backend));
  engine::RunOptions opt;
  opt.collect_trace = !args.trace_out.empty();
  auto rep = engine::simulate(sc, opt);
  // Everything is computed before anything is written: a failure leaves no partial output.
  std::vector<report::Output> outs;
  if (!args.json_out.empty()) outs.push_back({args.json_out, report::json_text(report::to_json(rep), 2, "run report")});
  if (!args.trace_out.empty())
    outs.push_back({args.trace_out, report::json_text(report::to_chrome_trace(rep), -1, "run trace")});
  if (!args.csv_out.empty()) outs.push_back({args.csv_out, report::bucket_csv(rep)});
  report::write_outputs(outs);
  if (const auto w = report::memory_warning(rep); !w.empty()) std::cerr << w << "\n";
  if (!args.quiet && args.json_out != "-" && args.trace_out != "-" && args.csv_out != "-")
    std::cout << report::to_table(rep);
  return 0;
}

}  // namespace ddpsim::app
