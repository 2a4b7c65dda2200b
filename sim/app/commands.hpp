#pragma once
// The `ddpsim` subcommands. Each returns the process exit code; errors are thrown as
// core::ConfigError (exit 2) or other exceptions (exit 1) and reported by main().
#include <initializer_list>
#include <string>
#include <vector>

#include "config/catalog.hpp"
#include "report/rendered.hpp"

namespace ddpsim::app {

struct CommonOptions {
  std::string data_dir;                // empty: Catalog::default_root()
  std::vector<std::string> overrides;  // --set
  config::Catalog catalog() const;     // over data_dir
};

// Refuses unusable output paths (an empty one: not asked for) before any work, so a bad path
// costs nothing (report::check_output_paths).
void check_outputs(std::initializer_list<std::string> paths);

// `r.doc` to `json_out` when given, `r.text` to standard output unless the JSON goes there ("-");
// returns `r.status`.
int emit(const report::Rendered& r, const std::string& json_out, const std::string& what);

// A bundled scenario name or file; empty: scenarios/default.json.
std::filesystem::path scenario_path(const config::Catalog& cat, const std::string& name);

struct RunArgs {
  std::string scenario;  // empty: scenarios/default.json
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

struct SweepArgs {
  std::string scenario;
  std::vector<std::string> params;
  std::string csv_out, json_out;
  std::string out;    // the row journal (JSONL), appended to as points finish
  std::string shard;  // "K/N": the K-th of N deterministic slices
  bool resume = false;
  bool quiet = false;    // no progress on stderr, no table
  bool dry_run = false;  // validate the points to run and list them; simulate nothing
  int jobs = 0;
  std::string metric = "step_time";  // step_time, samples_per_s, cost (compare/decide.hpp)
  std::string group_by;              // a swept path or "none"; empty: nodes when swept
  std::string tolerance;             // percent; empty: the prediction band, else 1 %
  std::string plot_out, html_out;    // scripts/ddpsim-plot's figure and HTML report
};
// Exit 0; 4 when some points failed (their rows carry the error); 128 + N when stopped by signal N.
int cmd_sweep(const CommonOptions& common, const SweepArgs& args);

struct CompareArgs {
  std::string scenario;
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
};
int cmd_merge(const CommonOptions& common, const MergeArgs& args);

int cmd_list(const CommonOptions& common, const std::string& what);
struct ImportTraceArgs {
  std::string trace, model, out;
  int batch = 0;  // the batch the trace was recorded at (0: the model's batch_size)
};
int cmd_import_trace(const CommonOptions& common, const ImportTraceArgs& args);
int cmd_show(const CommonOptions& common, const std::string& model, const std::string& json_out);

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
  std::string algo, proto;  // NCCL_ALGO / NCCL_PROTO
  int min_channels = 0, max_channels = 0;
  int min_ctas = 0, max_ctas = 0;  // NCCL_MIN_CTAS / NCCL_MAX_CTAS
  std::string buffsize;            // NCCL_BUFFSIZE (bytes, K/M suffixes); empty = NCCL's 4 MiB
  int nthreads = 0;                // NCCL_NTHREADS; 0 = NCCL's default
  bool collnet_enable = false;     // NCCL_COLLNET_ENABLE=1 (CollNet on a cluster with inter_node.sharp)
  std::string gpus_per_process;    // nccl-tests -g: GPUs one process drives (DDP: 1); with --compare, per run
  bool cuda_graph = false;         // nccl-tests -G: replayed from a CUDA graph (a log's banner "graph: N" wins)
  std::string nccl_version;        // "2.8.3"; empty = the cluster's (current if unset)
  std::string compare;             // an all_reduce_perf log: predict its sizes and put them side by side
  std::string explain;             // a size: list every (algorithm, protocol) NCCL weighs for it
  double tolerance = 0;            // with compare: exit 3 if the median busbw error for >= 1 MiB exceeds it
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
  std::string nccl_version;            // overrides the log's "NCCL version" line and the cluster's
  std::string times = "out-of-place";  // which measured times to fit: out-of-place, in-place, both
  std::string algo, proto;             // NCCL_ALGO / NCCL_PROTO the log was run with
  int min_channels = 0, max_channels = 0;
  std::string buffsize;  // NCCL_BUFFSIZE the log was run with (empty: default)
  int nthreads = 0;      // NCCL_NTHREADS the log was run with (0: default)
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
};
// Exit 0 within tolerance, 3 beyond it.
int cmd_validate(const CommonOptions& common, const ValidateArgs& args);

}  // namespace ddpsim::app
