#pragma once
// Runs independent jobs in forked child processes (one SimGrid Engine per process), at most
// `jobs` at a time, and collects each child's JSON result over a pipe in completion order.
// Also the sweep's grid (--param lists, --shard slices) and its row journal (--out rows.jsonl),
// which `sweep`, `sweep --resume` and `merge` share.
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compare/decide.hpp"
#include "core/json_reader.hpp"

namespace ddpsim::app {

struct ChildResult {
  bool ok = false;
  core::Json value;   // the job's JSON when ok
  std::string error;  // the child's error message otherwise
  int exit_code = 0;  // 2 bad input, 1 failure, 128 + N killed by signal N
  double wall_s = 0;  // seconds from the child's start to its end
};

// What run_children reports to its caller, in the parent process, as it goes.
struct ChildEvents {
  std::function<void(size_t index)> on_start;                     // a child was forked for work[index]
  std::function<void(size_t index, ChildResult result)> on_done;  // work[index] ended (completion order)
  std::function<void()> on_tick;                                  // about every tick_s while children run
  double tick_s = 1.0;
};

// Runs work[i] for every i in `*order` (all of them, in index order, when null). Returns 0 when
// every job ran, or the signal (SIGINT, SIGTERM) that stopped it: the running children are then
// killed and waited for, and the jobs not yet ended are not reported. `jobs` <= 0: all cores.
int run_children(const std::vector<std::function<core::Json()>>& work, int jobs, const ChildEvents& events,
                 const std::vector<size_t>* order = nullptr);

// Each job runs in its own child; results come back in job order. `jobs` <= 0 means all cores.
// SIGINT/SIGTERM kill the children and then the process, as before this runner handled them.
std::vector<ChildResult> run_in_children(const std::vector<std::function<core::Json()>>& work, int jobs);

// Progress of a pool of children on stderr, as `NAME: 3/8 done, 0 failed, 1.20 s elapsed, ETA ..`:
// one line rewritten in place on a terminal, one line per finished job otherwise. `name` is the
// command ("sweep", "compare"); `already_done` counts jobs finished by an earlier run.
std::string duration_text(double seconds);
class Progress {
 public:
  Progress(std::string name, bool quiet, size_t total, size_t already_done);
  void started(const std::string& what);
  void point_done(bool ok, const std::string& label, double wall_s);
  void tick();
  void close();
  size_t failed() const { return failed_; }
  void status(const std::string& event);

 private:
  std::string name_;
  bool quiet_, tty_;
  size_t total_, done_, done_now_ = 0, failed_ = 0;
  std::chrono::steady_clock::time_point start_;
  bool drawn_ = false;
};

// "ddp.bucket_cap_mb=1,2,5" or, for values holding commas, a JSON list:
// 'collective.NCCL_ALGO=["Ring,Tree","Ring"]'. Each value is kept as --set text.
struct SweepParam {
  std::string path;
  std::vector<std::string> values;
};
SweepParam parse_sweep_param(const std::string& text);
// The cartesian product of the parameters' values, as --set override lists, in row-major order.
std::vector<std::vector<std::pair<std::string, std::string>>> sweep_grid(const std::vector<SweepParam>& params);

// --shard K/N: K in 1..N. Point i belongs to shard (i mod N) + 1, so every shard gets a share of
// each parameter's values (costly values spread over the shards).
struct Shard {
  int k = 1, n = 1;
  bool whole() const { return n == 1; }
};
Shard parse_shard(const std::string& text);
std::vector<size_t> shard_points(size_t points, Shard shard);

// What a finished (or interrupted) sweep writes, from its rows alone: `merge` writes the same.
struct SweepOutputs {
  std::string out;   // FILE.jsonl: the journal, rows in point order
  std::string csv;   // FILE or -
  std::string json;  // FILE or -: {scenario, metric, rows, best, failed, recommendation}
};

// The journal of a sweep: a header line, then one JSON line per finished point (completion order
// while it runs; point order once it ends). A header names the sweep, so --resume and merge can
// tell whether rows belong to it.
struct SweepHeader {
  std::string scenario;
  std::vector<std::string> overrides;  // --set, in order
  std::vector<std::string> params;     // swept paths
  size_t points = 0;                   // of the whole (unsharded) sweep
  Shard shard;
  core::Json to_json() const;
  static SweepHeader from_json(const core::Json& j, const std::string& origin);
  bool same_sweep(const SweepHeader& o) const;  // equal but for the shard
};
struct SweepJournal {
  SweepHeader header;
  std::map<size_t, core::Json> rows;  // by point
  size_t dropped_partial_lines = 0;   // a last line cut short by a kill
};
// Reads FILE.jsonl; throws ConfigError naming the file and line for anything else malformed.
SweepJournal read_journal(const std::string& path);
// Header line + rows in point order, each line JSON without spaces.
std::string journal_text(const SweepHeader& header, const std::map<size_t, core::Json>& rows);
// How a sweep picks its best: the metric, the groups ranked apart (default: `nodes` when it is
// swept, since fewer nodes always step faster), and the tolerance under which rows are flat.
struct SweepDecide {
  compare::Metric metric = compare::Metric::STEP_TIME;
  std::string group_by;             // a swept path, "none", or empty: `nodes` when swept, else none
  std::optional<double> tolerance;  // relative; unset: the prediction band, else 1 %
};
// The swept path rows are grouped by (empty: one group). Throws core::ConfigError when
// `group_by` names a path that is not swept.
std::string group_path(const SweepHeader& header, const SweepDecide& decide);
// --tolerance: "1%" or "1" (percent), >= 0 and < 100; returns the fraction.
double parse_tolerance(const std::string& text);
// The flags' text (--metric, --group-by, --tolerance; empty: the default) as a SweepDecide; throws
// core::ConfigError for a bad metric or tolerance.
SweepDecide parse_decide(const std::string& metric, const std::string& group_by, const std::string& tolerance);

// Writes the outputs named in `outputs` (each whole: temporary file, then rename) and returns the
// table with the decision per group and why, for stdout.
std::string finish_sweep(const SweepHeader& header, const std::map<size_t, core::Json>& rows,
                         const SweepOutputs& outputs, const SweepDecide& decide = {}, core::Json* doc_out = nullptr);

// One CSV line (no header) per row, as report::sweep_csv writes them; `best` marks the rows.
std::string sweep_csv_lines(const std::vector<std::string>& params, const core::Json& rows,
                            const std::vector<bool>& best);

// Runs `exe args...` and collects its stdout, stderr and exit code. The child dies with its parent.
struct Exec {
  int code = 0;
  std::string out, err;
};
Exec exec_collect(const std::string& exe, const std::vector<std::string>& args);

// A Python that has matplotlib: $DDPSIM_PYTHON, python3 on PATH, or /usr/bin/python3 (the order
// scripts/ddpsim-plot follows too). Returns the executable and the arguments before the script's.
// Throws core::ConfigError naming `flag` when none has it.
std::vector<std::string> plot_python(const std::string& flag);

// --plot FILE.png|.svg and --html FILE of `command` (sweep, compare): checks them before any work.
// Returns the interpreter for draw_plots (empty when neither is asked for).
std::vector<std::string> check_plot_outputs(const std::filesystem::path& root, const std::string& command,
                                            const std::string& plot_out, const std::string& html_out);
// Draws `json_text` (the command's --json document) with scripts/ddpsim-plot into `plot_out`
// and/or `html_out`, each written beside its target first and renamed into place.
void draw_plots(const std::filesystem::path& root, const std::vector<std::string>& python, const std::string& command,
                const std::string& json_text, const std::string& title, const std::string& plot_out,
                const std::string& html_out);

}  // namespace ddpsim::app
