// `ddpsim sweep`: a scenario for each combination of parameter values, one child process each.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "app/commands.hpp"
#include "app/sweep.hpp"
#include "config/catalog.hpp"
#include "config/overrides.hpp"
#include "core/error.hpp"
#include "core/units.hpp"
#include "engine/simulation.hpp"
#include "report/csv.hpp"
#include "report/report.hpp"
#include "report/tables.hpp"
#include "report/writers.hpp"

namespace fs = std::filesystem;
using ddpsim::core::Json;

namespace ddpsim::app {

namespace {
std::vector<std::string> params_paths(const std::vector<SweepParam>& params) {
  std::vector<std::string> out;
  for (const auto& p : params) out.push_back(p.path);
  return out;
}
}  // namespace

int cmd_sweep(const CommonOptions& common, const SweepArgs& args) {
  {
    std::vector<std::string> out_paths;
    for (const std::string* p : {&args.json_out, &args.csv_out})
      if (!p->empty()) out_paths.push_back(*p);
    report::check_output_paths(out_paths);  // before the work, so a bad path costs nothing
  }
  auto cat = common.catalog();
  fs::path file = scenario_path(cat, args.scenario);
  std::vector<SweepParam> params;
  for (const auto& p : args.params) params.push_back(parse_sweep_param(p));
  if (params.empty()) throw core::ConfigError("sweep: give at least one --param PATH=V1,V2,...");
  auto grid = sweep_grid(params);
  // Validate every configuration before simulating any of them.
  std::vector<std::vector<std::string>> override_sets;
  std::vector<std::string> problems;
  for (const auto& row : grid) {
    auto ov = common.overrides;
    for (const auto& [k, v] : row) ov.push_back(k + "=" + v);
    try {
      cat.load_scenario(file, ov);
    } catch (const core::ConfigError& e) {
      problems.insert(problems.end(), e.problems().begin(), e.problems().end());
    }
    override_sets.push_back(std::move(ov));
  }
  if (!problems.empty()) throw core::ConfigError(problems);

  std::vector<std::function<Json()>> work;
  for (const auto& ov : override_sets)
    work.push_back([&cat, file, ov] {
      auto sc = cat.load_scenario(file, ov);
      engine::RunOptions opt;
      opt.collect_trace = false;
      return report::summary_json(engine::simulate(sc, opt));
    });
  auto results = run_in_children(work, args.jobs);
  for (const auto& r : results)
    if (!r.ok) throw core::SimulationError("sweep: a configuration failed: " + r.error);

  Json rows = Json::array();
  size_t best = 0;
  for (size_t i = 0; i < results.size(); ++i) {
    Json row = results[i].value;
    Json p = Json::object();
    for (const auto& [k, v] : grid[i]) p[k] = config::parse_override_value(v);
    Json out{{"params", p}};
    for (auto it = row.begin(); it != row.end(); ++it) out[it.key()] = it.value();
    rows.push_back(out);
    if (rows[i]["step_time_s"].get<double>() < rows[best]["step_time_s"].get<double>()) best = i;
  }
  Json doc{{"scenario", file.string()}, {"metric", "step_time_s"}, {"rows", rows}, {"best", rows[best]}};

  const std::string csv = report::sweep_csv(params_paths(params), grid, rows, best);
  std::vector<report::Output> outs;
  if (!args.json_out.empty()) outs.push_back({args.json_out, report::json_text(doc, 2, "sweep")});
  if (!args.csv_out.empty()) outs.push_back({args.csv_out, csv});
  report::write_outputs(outs);
  if (args.json_out != "-" && args.csv_out != "-")
    std::cout << report::sweep_table(file.string(), params_paths(params), grid, rows, best);
  return 0;
}

}  // namespace ddpsim::app
