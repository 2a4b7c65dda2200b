// `ddpsim compare`: one `ddpsim run` child per (cluster option, node count) and per option's
// 1-GPU baseline, run in parallel by the sweep's process pool (app/sweep), collected as they end;
// the rows, their derived figures and the best per criterion come from compare/compare. Outputs
// are written whole or not at all, after every child has ended.
#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sstream>

#include "app/commands.hpp"
#include "app/sweep.hpp"
#include "compare/compare.hpp"
#include "config/catalog.hpp"
#include "core/error.hpp"
#include "report/writers.hpp"

namespace fs = std::filesystem;
using ddpsim::core::Json;

namespace ddpsim::app {

namespace {

std::string self_exe() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) throw core::SimulationError(std::string("compare: cannot find its own binary: ") + std::strerror(errno));
  return std::string(buf, static_cast<size_t>(n));
}

struct Exec {
  int code = 0;
  std::string out, err;
};

// Runs `exe args...` and collects its stdout and stderr. It dies with its parent (the pool's
// child), so a stopped compare leaves no runs behind.
Exec exec_collect(const std::string& exe, const std::vector<std::string>& args) {
  int po[2], pe[2];
  if (::pipe(po) != 0 || ::pipe(pe) != 0) throw core::SimulationError(std::string("pipe: ") + std::strerror(errno));
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw core::SimulationError(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(128 + SIGTERM);
    ::dup2(po[1], 1);
    ::dup2(pe[1], 2);
    ::close(po[0]);
    ::close(po[1]);
    ::close(pe[0]);
    ::close(pe[1]);
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(exe.c_str()));
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(exe.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(po[1]);
  ::close(pe[1]);
  Exec r;
  pollfd fds[2] = {{po[0], POLLIN, 0}, {pe[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int k = 0; k < 2; ++k) {
      if (fds[k].fd < 0 || !(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = ::read(fds[k].fd, buf, sizeof buf);
      if (n > 0) {
        (k == 0 ? r.out : r.err).append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        ::close(fds[k].fd);
        fds[k].fd = -1;
        --open_fds;
      }
    }
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
  return r;
}

// The child's run report, or its error as the exception main() would have turned it into.
Json run_report(const std::string& exe, const std::vector<std::string>& args) {
  Exec r = exec_collect(exe, args);
  if (r.code == 0) {
    try {
      return Json::parse(r.out);
    } catch (const Json::parse_error& e) {
      throw core::SimulationError(std::string("ddpsim run wrote no JSON report: ") + e.what());
    }
  }
  std::vector<std::string> lines;
  std::istringstream in(r.err);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("  ", 0) == 0)
      lines.push_back(line.substr(2));
    else if (line.rfind("ddpsim: failed: ", 0) == 0)
      lines.push_back(line.substr(16));
  }
  if (lines.empty())
    lines.push_back("ddpsim run exited with status " + std::to_string(r.code) + (r.err.empty() ? "" : ": " + r.err));
  if (r.code == 2) throw core::ConfigError(lines);
  throw core::SimulationError(lines.size() == 1 ? lines[0] : core::ConfigError(lines).what());
}

// A Python that has matplotlib: $DDPSIM_PYTHON, python3 on PATH, or /usr/bin/python3. Returns the
// executable and the arguments that come before the script's.
std::vector<std::string> plot_python() {
  const char* env = std::getenv("DDPSIM_PYTHON");
  for (const char* c : {env, static_cast<const char*>("python3"), static_cast<const char*>("/usr/bin/python3")}) {
    if (!c || !*c) continue;
    std::vector<std::string> cmd;
    if (std::string(c).find('/') == std::string::npos)
      cmd = {"/usr/bin/env", c};
    else
      cmd = {c};
    std::vector<std::string> a(cmd.begin() + 1, cmd.end());
    a.insert(a.end(), {"-c", "import matplotlib"});
    if (exec_collect(cmd[0], a).code == 0) return cmd;
  }
  throw core::ConfigError(
      "compare --plot: no Python with matplotlib found (tried $DDPSIM_PYTHON, python3, /usr/bin/python3); install "
      "python3-matplotlib or set DDPSIM_PYTHON");
}

}  // namespace

int cmd_compare(const CommonOptions& common, const CompareArgs& args) {
  {
    std::vector<std::string> paths;
    for (const std::string* p : {&args.json_out, &args.csv_out, &args.plot_out})
      if (!p->empty()) paths.push_back(*p);
    report::check_output_paths(paths);
  }
  if (args.plot_out == "-") throw core::ConfigError("compare --plot -: the figure must be a file (.png or .svg)");
  auto cat = common.catalog();
  const fs::path file = scenario_path(cat, args.scenario);
  if (args.clusters.empty())
    throw core::ConfigError("compare: give at least one --cluster CLUSTER (a bundled name or a cluster file)");
  std::vector<compare::ClusterOption> options;
  for (const auto& c : args.clusters) options.push_back(compare::parse_cluster_option(c));
  compare::check_distinct_labels(options);
  for (auto& o : options) compare::inline_cluster_overrides(cat, o);
  const std::vector<int> nodes = args.nodes.empty() ? std::vector<int>{} : compare::parse_nodes(args.nodes);
  compare::Target target;
  if (args.samples > 0 && args.tokens > 0) throw core::ConfigError("compare: give --samples N or --tokens N, not both");
  if (args.samples > 0) target = {compare::Target::SAMPLES, args.samples};
  if (args.tokens > 0) target = {compare::Target::TOKENS, args.tokens};
  const fs::path plot_script = cat.root() / "scripts" / "ddpsim-plot";
  std::vector<std::string> py;
  if (!args.plot_out.empty()) {
    if (!fs::exists(plot_script))
      throw core::ConfigError("compare --plot: " + plot_script.string() + " is missing (it draws the figure)");
    py = plot_python();
  }

  // Validate every run before starting any; the parent keeps each point's price and fabric.
  const auto grid = compare::option_grid(options.size(), nodes);
  std::vector<compare::OptionFacts> facts(grid.size());
  std::vector<std::string> problems;
  for (size_t i = 0; i < grid.size(); ++i) {
    const auto& opt = options[grid[i].option];
    try {
      auto sc = cat.load_scenario(file, compare::point_overrides(common.overrides, opt, grid[i].nodes));
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
      cat.load_scenario(file, compare::baseline_overrides(common.overrides, options[o]));
    } catch (const core::ConfigError& e) {
      baseline_invalid[o] = std::string("1-GPU baseline: ") + e.what();
    }
  }

  const std::string exe = self_exe();
  auto run_args = [&](const std::vector<std::string>& ov) {
    std::vector<std::string> a;
    if (!common.data_dir.empty()) a.insert(a.end(), {"--data-dir", common.data_dir});
    a.insert(a.end(), {"run", file.string(), "--json", "-", "-q"});
    for (const auto& s : ov) a.insert(a.end(), {"--set", s});
    return a;
  };
  // Jobs: the baselines first (one per option), then the points in grid order.
  std::vector<std::function<Json()>> work;
  std::vector<std::string> labels;
  std::vector<size_t> order;
  for (size_t o = 0; o < options.size(); ++o) {
    work.push_back(
        [&, a = run_args(compare::baseline_overrides(common.overrides, options[o]))] { return run_report(exe, a); });
    labels.push_back(options[o].label + " on 1 GPU");
    if (!baseline_invalid[o]) order.push_back(o);
  }
  for (size_t i = 0; i < grid.size(); ++i) {
    const auto& opt = options[grid[i].option];
    work.push_back([&, a = run_args(compare::point_overrides(common.overrides, opt, grid[i].nodes))] {
      return run_report(exe, a);
    });
    labels.push_back(
        opt.label +
        (grid[i].nodes > 0 ? " on " + std::to_string(grid[i].nodes) + (grid[i].nodes == 1 ? " node" : " nodes") : ""));
    order.push_back(options.size() + i);
  }

  Progress progress("compare", args.quiet, order.size(), 0);
  progress.started(
      std::to_string(options.size()) + " options x " +
      (nodes.empty() ? std::string("the scenario's nodes") : std::to_string(nodes.size()) + " node counts") + " + " +
      std::to_string(options.size()) + " 1-GPU baselines: " + std::to_string(order.size()) + " runs");
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
  }
  auto out = compare::render(file.string(), options, common.overrides, target, std::move(rows), baselines);

  std::vector<report::Output> outs;
  const std::string json_text = report::json_text(out.json, 2, "compare report");
  if (!args.json_out.empty()) outs.push_back({args.json_out, json_text});
  if (!args.csv_out.empty()) outs.push_back({args.csv_out, out.csv});
  if (!args.plot_out.empty()) {
    // The figure is drawn into a temporary file beside its target from a temporary JSON, and
    // renamed into place with the other outputs.
    const fs::path target_path(args.plot_out);
    const std::string ext = target_path.extension().string();
    const fs::path tmp_png = target_path.parent_path() / (".ddpsim-compare-" + std::to_string(::getpid()) + ext);
    const fs::path tmp_json = fs::temp_directory_path() / ("ddpsim-compare-" + std::to_string(::getpid()) + ".json");
    report::write_output(tmp_json.string(), json_text);
    const std::string title = "ddpsim compare: " + file.stem().string();
    std::vector<std::string> pa(py.begin() + 1, py.end());
    pa.insert(pa.end(), {plot_script.string(), tmp_json.string(), "-o", tmp_png.string(), "--title", title});
    Exec p = exec_collect(py[0], pa);
    fs::remove(tmp_json);
    if (p.code != 0) {
      std::error_code ec;
      fs::remove(tmp_png, ec);
      throw core::SimulationError("compare --plot: " + plot_script.string() + " failed (exit " +
                                  std::to_string(p.code) + "): " + p.err);
    }
    report::write_outputs(outs);
    std::error_code ec;
    fs::rename(tmp_png, target_path, ec);
    if (ec)
      throw core::SimulationError("compare --plot: cannot rename the figure to " + args.plot_out + ": " + ec.message());
  } else {
    report::write_outputs(outs);
  }
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
  cmd->add_option("scenario", args->scenario, "bundled scenario name or file")->required();
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
  cmd->footer(
      "Each option runs at every --nodes count, plus once on 1 node with 1 GPU (nodes=1, gpus_per_node=1).\n"
      "scaling = (samples/s / GPUs) / samples/s on that 1 GPU: throughput per GPU relative to one GPU of the\n"
      "same cluster. $/h = price_per_gpu_hour x GPUs; $/M samples = $/h x step time / 3600 / samples per step\n"
      "x 1e6. Best per criterion (fastest, cheapest, best scaling) among runs that do not fail to fit\n"
      "(memory_per_gpu_bytes/fits from the run report; '-' when unknown).");
  return {cmd, [&common, args] {
            common.overrides = overrides_with_nccl(common);
            return cmd_compare(common, *args);
          }};
}
}  // namespace ddpsim::app
