// `ddpsim sweep`: a scenario for each combination of parameter values, one child process each,
// collected as they finish. Every finished row is appended at once to --out (JSONL) and --csv, so
// an interrupted sweep keeps what it finished and --resume runs only the rest; at the end the
// files are rewritten in point order, so a resumed, a sharded-then-merged and a plain sweep write
// the same bytes.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <set>

#include "app/commands.hpp"
#include "app/sweep.hpp"
#include "compare/compare.hpp"
#include "compare/decide.hpp"
#include "config/catalog.hpp"
#include "config/overrides.hpp"
#include "core/error.hpp"
#include "engine/simulation.hpp"
#include "report/csv.hpp"
#include "report/report.hpp"
#include "report/writers.hpp"

namespace fs = std::filesystem;
using ddpsim::core::Json;

namespace ddpsim::app {

namespace {

using Clock = std::chrono::steady_clock;

// A file rows are appended to, one write() per row, so a kill leaves whole lines.
class AppendFile {
 public:
  explicit AppendFile(const std::string& path) : path_(path) {
    if (path.empty() || path == "-") return;
    fd_ = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd_ < 0) throw core::SimulationError(path + ": cannot append: " + std::strerror(errno));
  }
  ~AppendFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  AppendFile(const AppendFile&) = delete;
  AppendFile& operator=(const AppendFile&) = delete;
  void append(const std::string& s) {
    if (fd_ < 0) return;
    size_t off = 0;
    while (off < s.size()) {
      ssize_t n = ::write(fd_, s.data() + off, s.size() - off);
      if (n < 0) {
        if (errno == EINTR) continue;
        throw core::SimulationError(path_ + ": write failed: " + std::strerror(errno));
      }
      off += static_cast<size_t>(n);
    }
  }

 private:
  std::string path_;
  int fd_ = -1;
};

std::string label_of(const std::vector<std::pair<std::string, std::string>>& point) {
  std::string s;
  for (const auto& [k, v] : point) s += (s.empty() ? "" : " ") + k + "=" + v;
  return s;
}

// The report fields plus what the recommendation needs from the buckets and the network.
Json sweep_row_value(const config::Scenario& sc) {
  engine::RunOptions opt;
  opt.collect_trace = false;
  auto rep = engine::simulate(sc, opt);
  Json row = report::summary_json(rep);
  const auto& bs = rep.steady.buckets;
  double last_ready = 0;
  for (const auto& b : bs) last_ready = std::max(last_ready, b.ready_s);
  if (!bs.empty()) {
    const auto& last =
        *std::max_element(bs.begin(), bs.end(), [](const auto& a, const auto& b) { return a.launch_s < b.launch_s; });
    row["last_bucket_bytes"] = last.bytes;
    row["last_bucket_launch_s"] = last.launch_s;
    row["last_bucket_alone_s"] = last.alone_s;
    row["last_bucket_exposed_s"] = last.exposed_s;
    row["last_gradient_ready_s"] = last_ready;
  }
  const auto& c = sc.cluster;
  row["inter_node_gbps"] = c.nodes > 1 ? c.inter_bandwidth() * 8 / 1e9 : 0.0;
  // --metric cost: USD per million samples from the cluster's price (compare/decide.hpp).
  // The price: the cluster's rent, or its cost of ownership (compare::option_facts).
  const auto facts = compare::option_facts(c);
  if (facts.price_per_gpu_hour > 0 && rep.steady.step_time_s > 0 && rep.steady.samples > 0) {
    row["price_per_gpu_hour"] = facts.price_per_gpu_hour;
    row["price_source"] = facts.price_source;
    row["cost_per_million_samples"] = compare::cost_per_million(facts.price_per_gpu_hour, rep.steady.step_time_s,
                                                                static_cast<double>(rep.steady.samples));
  }
  return row;
}

}  // namespace

int cmd_sweep(const CommonOptions& common, const SweepArgs& args) {
  check_outputs({args.json_out, args.csv_out, args.plot_out, args.html_out});
  if (!args.dry_run)
    warn_if_nothing_written("sweep", args.quiet, {args.json_out, args.csv_out, args.out, args.plot_out, args.html_out});
  auto cat = common.catalog();
  std::vector<std::string> base = common.overrides;  // --nodes / --gpus-per-node on a scenario go first
  const ScenarioSource src = scenario_source(cat, args.what, &base);
  const std::string name = src.title;  // as asked: a bundled name, a file path, or "model M on cluster C"
  std::vector<SweepParam> params;
  for (const auto& p : args.params) params.push_back(parse_sweep_param(p));
  if (params.empty()) throw core::ConfigError("sweep: give at least one --param PATH=V1,V2,...");
  if (args.resume && args.out.empty())
    throw core::ConfigError("sweep --resume: give --out FILE.jsonl, the rows of the run to resume");
  if (args.out == "-") throw core::ConfigError("sweep --out -: the row journal must be a file");
  const auto grid = sweep_grid(params);
  SweepHeader header;
  header.scenario = name;
  header.overrides = base;
  for (const auto& p : params) header.params.push_back(p.path);
  header.points = grid.size();
  header.shard = args.shard.empty() ? Shard{} : parse_shard(args.shard);
  const auto mine = shard_points(grid.size(), header.shard);
  const SweepDecide decide = parse_decide(args.decide.metric, args.decide.group_by, args.decide.tolerance);
  group_path(header, decide);  // a --group-by that is not swept is refused before any run
  const auto python = check_plot_outputs(cat.root(), "sweep", args.plot_out, args.html_out);

  // Rows a previous run of the same sweep finished (failed ones run again).
  std::map<size_t, Json> rows;
  if (args.resume && fs::exists(args.out)) {
    auto j = read_journal(args.out);
    if (!j.header.same_sweep(header) || j.header.shard.k != header.shard.k || j.header.shard.n != header.shard.n)
      throw core::ConfigError(args.out + ": holds rows of another sweep (" + j.header.to_json().dump() + "), not of " +
                              header.to_json().dump());
    for (auto& [point, row] : j.rows)
      if (!row.contains("error")) rows.emplace(point, std::move(row));
  }
  std::vector<size_t> todo;
  for (size_t i : mine)
    if (!rows.count(i)) todo.push_back(i);

  Progress progress("sweep", args.quiet, mine.size(), mine.size() - todo.size());
  {
    char b[200];
    std::snprintf(
        b, sizeof b, "%zu points%s%s, %zu to run", mine.size(),
        header.shard.whole() ? "" : (" (shard " + args.shard + " of " + std::to_string(grid.size()) + ")").c_str(),
        rows.empty() ? "" : (", " + std::to_string(rows.size()) + " already in " + args.out).c_str(), todo.size());
    progress.started(b);
  }

  // Validate every configuration to run before simulating any of them.
  std::vector<std::vector<std::string>> override_sets(grid.size());
  std::vector<std::string> problems;
  for (size_t i : todo) {
    auto ov = base;
    for (const auto& [k, v] : grid[i]) ov.push_back(k + "=" + v);
    try {
      auto sc = src.load(cat, ov);
      if (decide.metric == compare::Metric::COST && compare::option_facts(sc.cluster).price_per_gpu_hour <= 0)
        problems.push_back("sweep --metric cost: point " + std::to_string(i) + " (" + label_of(grid[i]) +
                           "): cluster " + sc.cluster.name +
                           " has no price: add price_per_gpu_hour (rented) or an ownership block (owned) to the "
                           "cluster file, or rank by "
                           "--metric step_time or samples_per_s");
    } catch (const core::ConfigError& e) {
      problems.insert(problems.end(), e.problems().begin(), e.problems().end());
    }
    override_sets[i] = std::move(ov);
  }
  if (!problems.empty()) throw core::ConfigError(problems);
  if (args.dry_run) {
    for (size_t i : todo) std::cout << "point " << i << ": " << label_of(grid[i]) << "\n";
    return 0;
  }

  // Streams: rewritten with what is kept, then appended to as points finish.
  SweepOutputs outputs{args.out, args.csv_out, args.json_out};
  auto params_json = [&](size_t i) {
    Json p = Json::object();
    for (const auto& [k, v] : grid[i]) p[k] = config::parse_override_value(v);
    return p;
  };
  {
    SweepOutputs partial{args.out, args.csv_out == "-" ? "" : args.csv_out, ""};
    finish_sweep(header, rows, partial);
  }
  AppendFile out_stream(args.out), csv_stream(args.csv_out);

  std::vector<std::function<Json()>> work(grid.size());
  for (size_t i : todo) work[i] = [&cat, &src, ov = override_sets[i]] { return sweep_row_value(src.load(cat, ov)); };
  ChildEvents ev;
  ev.on_done = [&](size_t i, ChildResult r) {
    Json row{{"point", i}, {"params", params_json(i)}};
    if (r.ok)
      for (auto it = r.value.begin(); it != r.value.end(); ++it) row[it.key()] = it.value();
    else {
      row["error"] = r.error;
      row["exit_code"] = r.exit_code;
    }
    out_stream.append(row.dump() + "\n");
    std::string csv = report::sweep_csv(header.params, Json::array({row}), std::nullopt);
    csv_stream.append(csv.substr(csv.find('\n') + 1));
    rows[i] = std::move(row);
    progress.point_done(r.ok, "point " + std::to_string(i) + " " + label_of(grid[i]), r.wall_s);
  };
  ev.on_tick = [&] { progress.tick(); };
  int sig = todo.empty() ? 0 : run_children(work, args.jobs, ev, &todo);
  progress.close();

  if (sig != 0) {
    SweepOutputs partial{args.out, args.csv_out == "-" ? "" : args.csv_out, ""};
    finish_sweep(header, rows, partial);
    std::fprintf(stderr, "sweep: stopped by signal %d: %zu of %zu points done%s\n", sig,
                 static_cast<size_t>(std::count_if(mine.begin(), mine.end(), [&](size_t i) { return rows.count(i); })),
                 mine.size(), args.out.empty() ? "" : ("; rerun with --resume to finish " + args.out).c_str());
    return 128 + sig;
  }
  Json doc;
  std::string table = finish_sweep(header, rows, outputs, decide, &doc);
  draw_plots(cat.root(), python, "sweep", doc.dump(2),
             "ddpsim sweep: " + (src.file.empty() ? src.title : src.file.stem().string()), args.plot_out,
             args.html_out);
  if (!args.quiet && args.json_out != "-" && args.csv_out != "-") std::cout << table;
  if (progress.failed() > 0) {
    std::fprintf(stderr, "sweep: %zu of %zu points failed (their rows carry the error and exit code)\n",
                 progress.failed(), mine.size());
    return 4;
  }
  return 0;
}

// Registration only (moved from main.cpp): the NCCL flags become overrides before --set.
void add_decide_flags(CLI::App& cmd, DecideFlags& flags) {
  cmd.add_option("--metric", flags.metric, "rank by step_time (default), samples_per_s or cost ($/M samples)");
  cmd.add_option("--group-by", flags.group_by,
                 "a swept PATH whose values are ranked apart (default: nodes when swept), or none");
  cmd.add_option("--tolerance", flags.tolerance,
                 "percent within which rows are flat, not ranked (default: the prediction band, else 1)");
}

Command register_sweep(CLI::App& app, CommonOptions& common) {
  auto args = std::make_shared<SweepArgs>();
  auto* cmd = app.add_subcommand("sweep", "run a scenario for each combination of parameter values");
  cmd->add_option("scenario", args->what.scenario, "bundled scenario name or file (or --model and --cluster)");
  cmd->add_option("--model", args->what.model, "instead of a scenario: a bundled model name or model file");
  cmd->add_option("--cluster", args->what.cluster, "with --model: a bundled cluster name or cluster file");
  cmd->add_option("--nodes", args->what.nodes, "node count (default: the scenario's or the cluster's)")
      ->check(number_in(1, 1 << 20));
  cmd->add_option("--gpus-per-node", args->what.gpus_per_node, "GPUs per node (default: the cluster's)")
      ->check(number_in(1, 1024));
  cmd->add_option("--param", args->params,
                  "PATH=V1,V2,... or PATH=[JSON list] for values with commas, e.g. "
                  "'collective.NCCL_ALGO=[\"Ring,Tree\",\"Ring\"]' (repeatable: the cartesian product is run)")
      ->required();
  add_set_option(*cmd, common, "override a field for every run: PATH=VALUE");
  add_nccl_flags(*cmd, common.nccl);
  cmd->add_option("--csv", args->csv_out, "write the rows as CSV to FILE or -");
  cmd->add_option("--json", args->json_out, "write {rows, best} JSON to FILE or -");
  cmd->add_option("-j,--jobs", args->jobs, "parallel child processes (default: all cores)")->check(number_in(0, 1024));
  cmd->add_option("--out", args->out, "append each finished row to FILE.jsonl at once (point order at the end)");
  cmd->add_flag("--resume", args->resume, "skip the points whose rows --out already holds");
  cmd->add_option("--shard", args->shard, "run only the K-th of N slices (K/N, 1 <= K <= N); join with merge");
  cmd->add_flag("-q,--quiet", args->quiet, "no progress on stderr and no table on stdout");
  add_decide_flags(*cmd, args->decide);
  cmd->add_option("--plot", args->plot_out, "draw the sweep (scripts/ddpsim-plot) to FILE.png or .svg");
  cmd->add_option("--html", args->html_out, "write a self-contained HTML report (figure, rows, why) to FILE");
  cmd->add_flag("--dry-run", args->dry_run, "validate the points to run and list them; simulate nothing");
  return {cmd, [&common, args] {
            common.overrides = overrides_with_nccl(common);
            return cmd_sweep(common, *args);
          }};
}
}  // namespace ddpsim::app
