// `ddpsim bench`: time the simulator itself (one child process per run).
#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "app/commands.hpp"
#include "app/sweep.hpp"
#include "config/catalog.hpp"
#include "core/error.hpp"
#include "core/stats.hpp"
#include "core/units.hpp"
#include "engine/simulation.hpp"
#include "report/tables.hpp"
#include "report/writers.hpp"

namespace fs = std::filesystem;
using ddpsim::core::Json;

namespace ddpsim::app {

int cmd_bench(const CommonOptions& common, const BenchArgs& args) {
  check_outputs({args.json_out});
  auto cat = common.catalog();
  fs::path file = scenario_path(cat, args.scenario);
  std::vector<int> node_counts = args.nodes;
  // --scaling: 1,024 to 131,072 GPUs of the bench scenario (8 GPUs per node) unless --nodes says.
  if (node_counts.empty() && args.scaling) node_counts = {128, 512, 2048, 16384};
  if (node_counts.empty()) node_counts.push_back(-1);  // the scenario's own
  Json cases = Json::array();
  for (int nodes : node_counts) {
    auto ov = common.overrides;
    if (nodes > 0) ov.push_back("nodes=" + std::to_string(nodes));
    cat.load_scenario(file, ov);  // validate before forking
    std::vector<std::function<Json()>> work;
    for (int i = 0; i < std::max(1, args.repeat); ++i)
      work.push_back([&cat, file, ov] {
        auto sc = cat.load_scenario(file, ov);
        engine::RunOptions opt;
        opt.simulate_iteration1 = false;
        opt.collect_trace = false;
        opt.process_ends_after = true;  // a child per run (run_in_children), as `run` is a process
        auto t0 = std::chrono::steady_clock::now();
        auto rep = engine::simulate(sc, opt);
        double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        // Peak resident set of this child (Linux: KiB), the simulation included.
        struct rusage ru {};
        ::getrusage(RUSAGE_SELF, &ru);
        // Explicit ranks simulate stragglers.steps steady steps: the figure is per step.
        const int steps = std::max(1, rep.steady.steps_simulated);
        return Json{{"wall_s", wall / steps},
                    {"steps_simulated", steps},
                    {"peak_rss_mib", static_cast<double>(ru.ru_maxrss) / 1024.0},
                    {"world_size", rep.world_size},
                    {"num_params", rep.num_params},
                    {"num_buckets", rep.steady.buckets.size()},
                    {"flows", rep.flows},
                    {"flows_reused", rep.flows_reused},
                    {"step_time_s", rep.steady.step_time_s}};
      });
    // One at a time: timings of concurrent children would disturb each other.
    auto results = run_in_children(work, 1);
    std::vector<double> walls;
    std::vector<double> rss;
    Json last;
    for (const auto& r : results) {
      if (!r.ok) throw core::SimulationError("bench: " + r.error);
      walls.push_back(r.value["wall_s"].get<double>());
      rss.push_back(r.value["peak_rss_mib"].get<double>());
      last = r.value;
    }
    spdlog::debug("bench: {} nodes, {} GPUs: median {:.4f} s per step", nodes, last["world_size"].get<int>(),
                  core::median(walls));
    Json c = last;
    c.erase("wall_s");
    c["wall_s_per_step"] = core::median(walls);
    c["peak_rss_mib"] = *std::max_element(rss.begin(), rss.end());
    c["wall_s_runs"] = walls;
    cases.push_back(c);
  }
  Json out = cases.front();
  out["scenario"] = file.string();
  out["repeat"] = args.repeat;
  out["note"] = "wall time of simulating one steady-state step (median of the runs), one process per run";
  if (cases.size() > 1 || args.scaling) out["scaling"] = cases;
  if (!args.json_out.empty()) report::write_output(args.json_out, report::json_text(out, 2, "bench"));
  if (args.json_out != "-")
    std::cout << (args.scaling ? report::scaling_table(file.string(), args.repeat, cases)
                               : report::bench_table(file.string(), args.repeat, cases));
  return 0;
}

Command register_bench(CLI::App& app, CommonOptions& common) {
  auto args = std::make_shared<BenchArgs>();
  auto* cmd = app.add_subcommand("bench", "time the simulator on GPT-2 over 1024 GPUs (steady-state step)");
  cmd->add_option("--scenario", args->scenario, "scenario to time");
  cmd->add_option("--repeat", args->repeat, "runs (one process each); the median is reported")
      ->check(number_in(1, 1000));
  cmd->add_option("--nodes", args->nodes, "time these node counts instead of the scenario's")
      ->check(number_in(1, 1 << 20));
  cmd->add_flag("--scaling", args->scaling,
                "GPUs, flows, wall s per step and peak RSS per size (default nodes 128, 512, 2048, 16384)");
  add_set_option(*cmd, common, "override a field: PATH=VALUE");
  cmd->add_option("--json", args->json_out, "write the figures as JSON to FILE or -");
  return {cmd, [&common, args] { return cmd_bench(common, *args); }};
}
}  // namespace ddpsim::app
