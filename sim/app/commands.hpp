#pragma once
// The `ddpsim` subcommands. Each returns the process exit code; errors are thrown as
// core::ConfigError (exit 2) or other exceptions (exit 1) and reported by main().
// Each cmd_*.cpp also registers its subcommand (register_<name>, listed in main.cpp's table): it
// adds the subcommand and its flags to the CLI11 app and returns what runs when it is chosen.
#include <CLI/CLI.hpp>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "app/nccl_options.hpp"
#include "config/catalog.hpp"
#include "report/rendered.hpp"

namespace ddpsim::app {

struct CommonOptions {
  std::string data_dir;                // empty: Catalog::default_root()
  std::vector<std::string> overrides;  // --set
  NcclFlags nccl;                      // the NCCL flags (--algo, --proto, ...) of the chosen subcommand
  config::Catalog catalog() const;     // over data_dir
};

// One subcommand: its CLI11 node and what runs when it was chosen (after parsing).
struct Command {
  CLI::App* cli = nullptr;
  std::function<int()> run;
};
// Adds one subcommand to `app`; `common` outlives the parse and the run.
using Registrar = Command (*)(CLI::App& app, CommonOptions& common);
Command register_run(CLI::App& app, CommonOptions& common);
Command register_buckets(CLI::App& app, CommonOptions& common);
Command register_sweep(CLI::App& app, CommonOptions& common);
Command register_compare(CLI::App& app, CommonOptions& common);
Command register_merge(CLI::App& app, CommonOptions& common);
Command register_list(CLI::App& app, CommonOptions& common);
Command register_show(CLI::App& app, CommonOptions& common);
Command register_import_trace(CLI::App& app, CommonOptions& common);
Command register_bench(CLI::App& app, CommonOptions& common);
Command register_collective(CLI::App& app, CommonOptions& common);
Command register_calibrate(CLI::App& app, CommonOptions& common);
Command register_validate(CLI::App& app, CommonOptions& common);

// A command-line number: finite (CLI11's PositiveNumber lets "nan" and "inf" through) and within
// [lo, hi] (lo exclusive when `above`), with a short message instead of the double maximum.
CLI::Validator number_in(double lo, double hi, bool above = false);

// --set PATH=VALUE (repeatable) into common.overrides.
void add_set_option(CLI::App& cmd, CommonOptions& common, const std::string& help);

// What run (and sweep / compare) simulate: a scenario (bundled name, "compare/NAME" in a
// subfolder, or a file), or one built from flags: --model M --cluster C [--nodes N]
// [--gpus-per-node G], DDP defaults and the model's own batch size.
struct ScenarioFlags {
  std::string scenario;  // empty with no model: scenarios/default.json
  std::string model, cluster;
  int nodes = 0, gpus_per_node = 0;  // 0: the scenario's / cluster's own
};
struct ScenarioSource {
  std::filesystem::path file;  // the scenario file; empty for one built from flags
  core::Json doc;              // built from flags: {"name", "model", "cluster", "nodes", ...}
  std::string title;           // the scenario as asked for, or "model M on cluster C"
  // The scenario with `overrides` (--set) applied; its name is the file's "name" (or stem), or
  // `title` for one built from flags. Headers add the overrides (scenario_title).
  config::Scenario load(const config::Catalog& cat, const std::vector<std::string>& overrides) const;
};
// Refuses flags that do not go together (a scenario and --model, --cluster without --model, ...)
// with exit 2; --nodes / --gpus-per-node with a scenario become overrides in `extra_overrides`.
ScenarioSource scenario_source(const config::Catalog& cat, const ScenarioFlags& flags,
                               std::vector<std::string>* extra_overrides = nullptr);
// Bundled scenarios: scenarios/*.json by stem, then one level of subfolders as "folder/stem".
std::vector<std::string> scenario_names(const config::Catalog& cat);
// Likely mistakes in a valid scenario (a bucket cap above all the gradients, seq_len beyond the
// model's position table): one sentence each. print_warnings writes them to stderr.
std::vector<std::string> scenario_warnings(const config::Scenario& s);
void print_warnings(const config::Scenario& s);
// `sweep -q` / `merge -q` without any output file run everything and write nothing: say so on
// stderr (a likely mistake, not an error). Not for `run -q`, which checks a scenario and shows only
// its warnings.
void warn_if_nothing_written(const std::string& command, bool quiet, const std::vector<std::string>& outputs);
// The NCCL flags as overrides, then --set (which wins): what run, sweep and compare apply.
std::vector<std::string> overrides_with_nccl(const CommonOptions& common);
// "NAME" or "NAME, with --set A=1 --set B=2": what a report's header names.
std::string scenario_title(const std::string& title, const std::vector<std::string>& overrides);

// Refuses unusable output paths (an empty one: not asked for) before any work, so a bad path
// costs nothing (report::check_output_paths).
void check_outputs(std::initializer_list<std::string> paths);

// `r.doc` to `json_out` when given, `r.text` to standard output unless the JSON goes there ("-");
// returns `r.status`.
int emit(const report::Rendered& r, const std::string& json_out, const std::string& what);

// A bundled scenario name or file; empty: scenarios/default.json.
std::filesystem::path scenario_path(const config::Catalog& cat, const std::string& name);

struct RunArgs {
  ScenarioFlags what;  // a scenario, or --model/--cluster
  std::string json_out, trace_out, csv_out;
  bool quiet = false;
};
int cmd_run(const CommonOptions& common, const RunArgs& args);

struct BucketsArgs {
  std::string scenario;
  std::string model;
  double bucket_cap_mb = -1;  // < 0: from the scenario
  std::string json_out;
};
int cmd_buckets(const CommonOptions& common, const BucketsArgs& args);

// How sweep and merge rank rows (app/sweep.hpp SweepDecide, parsed by decide_from_flags).
struct DecideFlags {
  std::string metric = "step_time";  // step_time, samples_per_s, cost (compare/decide.hpp)
  std::string group_by;              // a swept path or "none"; empty: nodes when swept
  std::string tolerance;             // percent; empty: the prediction band, else 1 %
};
// --metric, --group-by and --tolerance, the same for sweep and merge.
void add_decide_flags(CLI::App& cmd, DecideFlags& flags);

struct SweepArgs {
  ScenarioFlags what;  // a scenario, or --model/--cluster
  std::vector<std::string> params;
  std::string csv_out, json_out;
  std::string out;    // the row journal (JSONL), appended to as points finish
  std::string shard;  // "K/N": the K-th of N deterministic slices
  bool resume = false;
  bool quiet = false;    // no progress on stderr, no table
  bool dry_run = false;  // validate the points to run and list them; simulate nothing
  int jobs = 0;
  DecideFlags decide;
  std::string plot_out, html_out;  // scripts/ddpsim-plot's figure and HTML report
};
// Exit 0; 4 when some points failed (their rows carry the error); 128 + N when stopped by signal N.
int cmd_sweep(const CommonOptions& common, const SweepArgs& args);

struct CompareArgs {
  std::string scenario;
  std::string model;                  // instead of a scenario: this model on each option's cluster
  std::vector<std::string> clusters;  // [LABEL=]CLUSTER[:PATH=VALUE,...] (compare/compare.hpp)
  std::string nodes;                  // "1,16,64"; empty: the scenario's own
  double samples = 0, tokens = 0;     // time and cost to train this many (0: not asked)
  std::string json_out, csv_out, plot_out, html_out;
  int jobs = 0;
  bool quiet = false;     // no progress on stderr
  std::string tolerance;  // percent: options within it tie (empty: the prediction band, else 1 %)
};
// Exit 0; 4 when some runs failed (their rows carry the error); 128 + N when stopped by signal N.
int cmd_compare(const CommonOptions& common, const CompareArgs& args);

struct MergeArgs {
  std::vector<std::string> inputs;  // the shards' --out journals
  std::string out, csv_out, json_out;
  bool quiet = false;
  DecideFlags decide;  // as the sweep's (scripts/sweep-slurm passes the sweep's own)
};
int cmd_merge(const CommonOptions& common, const MergeArgs& args);

int cmd_list(const CommonOptions& common, const std::string& what);
struct ImportTraceArgs {
  std::string trace, model, out;
  int batch = 0;  // the batch the trace was recorded at (0: the model's batch_size)
};
int cmd_import_trace(const CommonOptions& common, const ImportTraceArgs& args);
// A model's layers, or a cluster's, GPU's or link's figures (whichever catalog has the name).
int cmd_show(const CommonOptions& common, const std::string& name, const std::string& json_out);

struct BenchArgs {
  std::string scenario = "bench-gpt2-1024";
  int repeat = 3;
  std::vector<int> nodes;  // node counts to time instead of the scenario's own
  bool scaling = false;    // GPUs, flows, wall time and peak RSS per size (default sizes: cmd_bench.cpp)
  std::string json_out;
};
int cmd_bench(const CommonOptions& common, const BenchArgs& args);

}  // namespace ddpsim::app

namespace ddpsim::app {

struct CollectiveArgs {
  std::string op = "allreduce";
  std::string cluster;
  int nodes = 0;  // 0: the cluster's own
  std::string min_bytes = "8", max_bytes = "8G";
  double factor = 2;
  // The NCCL settings (--algo, --proto, --min-channels, ...): CommonOptions::nccl.
  std::string gpus_per_process;  // nccl-tests -g: GPUs one process drives (DDP: 1); with --compare, per run
  bool cuda_graph = false;       // nccl-tests -G: replayed from a CUDA graph (a log's banner "graph: N" wins)
  std::string compare;           // an all_reduce_perf log: predict its sizes and put them side by side
  std::string explain;           // a size: list every (algorithm, protocol) NCCL weighs for it
  double tolerance = 0;          // with compare: exit 3 if the median busbw error for >= 1 MiB exceeds it
  std::string json_out;
};
int cmd_collective(const CommonOptions& common, const CollectiveArgs& args);

struct CalibrateArgs {
  std::string log;
  std::string cluster;
  int nodes = 0;
  std::string out;
  bool holdout = false;                // fit on even-indexed sizes, report the odd ones as held out
  std::string gpus_per_process;        // nccl-tests -g per run ("8,1") or one for all; banners win
  std::string times = "out-of-place";  // which measured times to fit: out-of-place, in-place, both
  // The NCCL settings the log was run with (and --nccl-version, which beats the log's "NCCL
  // version" line and the cluster's): CommonOptions::nccl.
  std::string json_out;
};
int cmd_calibrate(const CommonOptions& common, const CalibrateArgs& args);

}  // namespace ddpsim::app

namespace ddpsim::app {

struct ValidateArgs {
  std::string results;
  double tolerance = 0.05;
  std::string cluster;  // GPU results: a cluster instead of the one inferred from the GPU's name
  std::string json_out;
  bool given_no_ddp_step = false;  // compute calibrated to each case's measured no-DDP step
};
// Exit 0 within tolerance, 3 beyond it.
int cmd_validate(const CommonOptions& common, const ValidateArgs& args);

}  // namespace ddpsim::app
