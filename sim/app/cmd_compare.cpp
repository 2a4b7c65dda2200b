// `ddpsim compare`: one run per (cluster option, node count) and per option's 1-GPU baseline,
// simulated in the sweep's process pool (app/sweep: one child per run, its report returned as
// JSON over a pipe, errors typed by exit code), collected as they end;
// the rows, their derived figures and the best per criterion come from compare/compare. Outputs
// are written whole or not at all, after every child has ended.
#include <cstdio>
#include <iostream>
#include <optional>

#include "app/commands.hpp"
#include "app/sweep.hpp"
#include "compare/compare.hpp"
#include "config/catalog.hpp"
#include "core/error.hpp"
#include "engine/simulation.hpp"
#include "report/report.hpp"
#include "report/writers.hpp"

namespace fs = std::filesystem;
using ddpsim::core::Json;

namespace ddpsim::app {

namespace {

// One option's run report, simulated in this (pool child) process: the very report `ddpsim run
// --json` writes for the same scenario and overrides (cmd_run.cpp), without a second process.
Json run_report(const config::Catalog& cat, const ScenarioSource& src, const std::vector<std::string>& overrides) {
  auto sc = src.load(cat, overrides);
  engine::RunOptions opt;
  opt.collect_trace = false;
  return report::to_json(engine::simulate(sc, opt));
}

}  // namespace

int cmd_compare(const CommonOptions& common, const CompareArgs& args) {
  {
    std::vector<std::string> paths;
    for (const std::string* p : {&args.json_out, &args.csv_out, &args.plot_out, &args.html_out})
      if (!p->empty()) paths.push_back(*p);
    report::check_output_paths(paths);
  }
  auto cat = common.catalog();
  if (args.clusters.empty())
    throw core::ConfigError("compare: give at least one --cluster CLUSTER (a bundled name or a cluster file)");
  std::vector<compare::ClusterOption> options;
  for (const auto& c : args.clusters) options.push_back(compare::parse_cluster_option(c));
  // A scenario, or --model M on the options' clusters (each option sets its own cluster).
  ScenarioSource src = scenario_source(
      cat, ScenarioFlags{args.scenario, args.model, args.model.empty() ? "" : options.front().cluster, 0, 0});
  if (!args.model.empty()) {  // the cluster is each option's, so the title names the model alone
    src.title = "model " + args.model;
    src.doc["name"] = src.title;
  }
  const std::string name = src.file.empty() ? src.title : src.file.stem().string();
  compare::check_distinct_labels(options);
  for (auto& o : options) compare::inline_cluster_overrides(cat, o);
  const std::vector<int> nodes = args.nodes.empty() ? std::vector<int>{} : compare::parse_nodes(args.nodes);
  compare::Target target;
  if (args.samples > 0 && args.tokens > 0) throw core::ConfigError("compare: give --samples N or --tokens N, not both");
  if (args.samples > 0) target = {compare::Target::SAMPLES, args.samples};
  if (args.tokens > 0) target = {compare::Target::TOKENS, args.tokens};
  const auto python = check_plot_outputs(cat.root(), "compare", args.plot_out, args.html_out);
  const std::optional<double> tolerance =
      args.tolerance.empty() ? std::nullopt : std::optional<double>(parse_tolerance(args.tolerance));

  // Validate every run before starting any; the parent keeps each point's price and fabric.
  const auto grid = compare::option_grid(options.size(), nodes);
  std::vector<compare::OptionFacts> facts(grid.size());
  std::vector<std::string> problems;
  for (size_t i = 0; i < grid.size(); ++i) {
    const auto& opt = options[grid[i].option];
    try {
      auto sc = src.load(cat, compare::point_overrides(common.overrides, opt, grid[i].nodes));
      facts[i] = compare::option_facts(sc.cluster);
    } catch (const core::ConfigError& e) {
      for (const auto& p : e.problems())
        problems.push_back("--cluster " + opt.text +
                           (grid[i].nodes > 0 ? " --nodes " + std::to_string(grid[i].nodes) : "") + ": " + p);
    }
  }
  if (!problems.empty()) throw core::ConfigError(problems);
  // A baseline that cannot be built (e.g. stragglers on rank 5) leaves scaling unknown, not the command failed.
  std::vector<std::optional<std::string>> baseline_invalid(options.size());
  for (size_t o = 0; o < options.size(); ++o) {
    try {
      src.load(cat, compare::baseline_overrides(common.overrides, options[o]));
    } catch (const core::ConfigError& e) {
      baseline_invalid[o] = std::string("1-GPU baseline: ") + e.what();
    }
  }

  // Jobs: the baselines first (one per option), then the points in grid order; each runs in a
  // child of the sweep's pool (one SimGrid engine per process) and returns its run report.
  std::vector<std::function<Json()>> work;
  std::vector<std::string> labels;
  std::vector<size_t> order;
  for (size_t o = 0; o < options.size(); ++o) {
    work.push_back([&cat, &src, ov = compare::baseline_overrides(common.overrides, options[o])] {
      return run_report(cat, src, ov);
    });
    labels.push_back(options[o].label + " on 1 GPU");
    if (!baseline_invalid[o]) order.push_back(o);
  }
  for (size_t i = 0; i < grid.size(); ++i) {
    const auto& opt = options[grid[i].option];
    work.push_back([&cat, &src, ov = compare::point_overrides(common.overrides, opt, grid[i].nodes)] {
      return run_report(cat, src, ov);
    });
    labels.push_back(
        opt.label +
        (grid[i].nodes > 0 ? " on " + std::to_string(grid[i].nodes) + (grid[i].nodes == 1 ? " node" : " nodes") : ""));
    order.push_back(options.size() + i);
  }

  // Rented capacity whose placement the provider does not guarantee: each such multi-node point
  // also runs scattered (compare/compare.hpp OptionFacts::scattered_set), after every point.
  std::vector<std::optional<size_t>> scattered_job(grid.size());
  size_t n_scattered = 0;
  for (size_t i = 0; i < grid.size(); ++i) {
    if (facts[i].scattered_set.empty()) continue;
    const auto& opt = options[grid[i].option];
    auto ov = compare::point_overrides(common.overrides, opt, grid[i].nodes);
    ov.insert(ov.end(), facts[i].scattered_set.begin(), facts[i].scattered_set.end());
    scattered_job[i] = work.size();
    work.push_back([&cat, &src, ov] { return run_report(cat, src, ov); });
    labels.push_back(labels[options.size() + i] + " scattered");
    order.push_back(work.size() - 1);
    ++n_scattered;
  }

  Progress progress("compare", args.quiet, order.size(), 0);
  progress.started(
      std::to_string(options.size()) + " options x " +
      (nodes.empty() ? std::string("the scenario's nodes") : std::to_string(nodes.size()) + " node counts") + " + " +
      std::to_string(options.size()) + " 1-GPU baselines" +
      (n_scattered ? " + " + std::to_string(n_scattered) + " scattered placements" : std::string()) + ": " +
      std::to_string(order.size()) + " runs");
  std::vector<ChildResult> results(work.size());
  ChildEvents ev;
  ev.on_done = [&](size_t i, ChildResult r) {
    progress.point_done(r.ok, labels[i], r.wall_s);
    results[i] = std::move(r);
  };
  ev.on_tick = [&] { progress.tick(); };
  const int sig = run_children(work, args.jobs, ev, &order);
  progress.close();
  if (sig != 0) {
    std::fprintf(stderr, "compare: stopped by signal %d; nothing written\n", sig);
    return 128 + sig;
  }

  Json baselines = Json::array();
  for (size_t o = 0; o < options.size(); ++o) {
    if (baseline_invalid[o])
      baselines.push_back({{"error", *baseline_invalid[o]}});
    else if (!results[o].ok)
      baselines.push_back({{"error", results[o].error}, {"exit_code", results[o].exit_code}});
    else
      baselines.push_back(results[o].value);
  }
  Json rows = Json::array();
  size_t failed = 0;
  for (size_t i = 0; i < grid.size(); ++i) {
    const auto& opt = options[grid[i].option];
    const auto& r = results[options.size() + i];
    if (!r.ok) {
      ++failed;
      rows.push_back(compare::failed_row(grid[i], opt, r.error, r.exit_code));
      continue;
    }
    const Json& b = baselines[grid[i].option];
    rows.push_back(compare::compare_row(grid[i], opt, r.value, b.contains("error") ? nullptr : &b, facts[i], target));
    if (scattered_job[i]) {
      const auto& sr = results[*scattered_job[i]];
      compare::attach_scattered(rows.back(), sr.ok ? &sr.value : nullptr, sr.error);
    }
  }
  auto out = compare::render(src.title, options, common.overrides, target, std::move(rows), baselines, tolerance);

  // Everything is computed before anything is written; the figures last, from the same JSON.
  std::vector<report::Output> outs;
  const std::string json_text = report::json_text(out.json, 2, "compare report");
  if (!args.json_out.empty()) outs.push_back({args.json_out, json_text});
  if (!args.csv_out.empty()) outs.push_back({args.csv_out, out.csv});
  draw_plots(cat.root(), python, "compare", json_text, "ddpsim compare: " + name, args.plot_out, args.html_out);
  report::write_outputs(outs);
  if (args.json_out != "-" && args.csv_out != "-") std::cout << out.table;
  if (failed > 0) {
    std::fprintf(stderr, "compare: %zu of %zu runs failed (their rows carry the error and exit code)\n", failed,
                 grid.size());
    return 4;
  }
  return 0;
}

// Registration only (moved from main.cpp): the NCCL flags become overrides before --set.
Command register_compare(CLI::App& app, CommonOptions& common) {
  auto args = std::make_shared<CompareArgs>();
  auto* cmd = app.add_subcommand(
      "compare", "run a scenario on several clusters and node counts side by side: speed, scaling, cost, fit, fabric");
  cmd->add_option("scenario", args->scenario, "bundled scenario name or file (or --model)");
  cmd->add_option("--model", args->model,
                  "instead of a scenario: a bundled model name or model file, run on each option");
  cmd->add_option("--cluster", args->clusters,
                  "an option: [LABEL=]CLUSTER[:PATH=VALUE,...], a bundled cluster or file with --set overrides of "
                  "its own, e.g. 'ndr-2:1=dgx-h100:fabric.topology=fat_tree,fabric.oversubscription=2:1' "
                  "(repeatable)")
      ->required();
  cmd->add_option("--nodes", args->nodes, "node counts to run each option at, e.g. 1,16,64 (default: the scenario's)");
  auto* samples = cmd->add_option("--samples", args->samples, "time and cost to train this many samples")
                      ->check(number_in(0, 1e30, true));
  auto* tokens = cmd->add_option("--tokens", args->tokens, "time and cost to train this many tokens (sequence models)")
                     ->check(number_in(0, 1e30, true));
  samples->excludes(tokens);
  add_set_option(*cmd, common, "override a field for every run: PATH=VALUE");
  add_nccl_flags(*cmd, common.nccl);
  cmd->add_option("--json", args->json_out, "write {options, rows, best} JSON to FILE or -");
  cmd->add_option("--csv", args->csv_out, "write one row per run as CSV to FILE or -");
  cmd->add_option("--plot", args->plot_out, "draw the options side by side (scripts/ddpsim-plot) to FILE.png or .svg");
  cmd->add_option("-j,--jobs", args->jobs, "parallel child processes (default: all cores)")->check(number_in(0, 1024));
  cmd->add_flag("-q,--quiet", args->quiet, "no progress on stderr");
  cmd->add_option("--html", args->html_out, "write a self-contained HTML report (figure, every column) to FILE");
  cmd->add_option("--tolerance", args->tolerance,
                  "percent within which options tie (default: the prediction band, else 1)");
  cmd->footer(
      "Each option runs at every --nodes count, plus once on 1 node with 1 GPU (nodes=1, gpus_per_node=1).\n"
      "scaling = (samples/s / GPUs) / samples/s on that 1 GPU: throughput per GPU relative to one GPU of the\n"
      "same cluster. $/h = price_per_gpu_hour x GPUs (or the cluster's cost of ownership: its \"ownership\"\n"
      "block); $/M samples = $/h x step time / 3600 / samples per step x 1e6. Best per criterion (fastest,\n"
      "cheapest) among runs that do not fail to fit; options within --tolerance tie. Scaling is shown, not\n"
      "ranked (the slowest GPU scales best). 'why' names each option's mechanism against the fastest.");
  return {cmd, [&common, args] {
            common.overrides = overrides_with_nccl(common);
            return cmd_compare(common, *args);
          }};
}
}  // namespace ddpsim::app
