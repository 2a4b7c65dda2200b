// ddpsim: predicts PyTorch DDP step time and communication/computation overlap.
// Only main() turns exceptions into messages and exit codes: 0 ok, 2 bad input, 1 failure.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "app/commands.hpp"
#include "core/error.hpp"

namespace {
// A command-line number: finite (CLI11's PositiveNumber lets "nan" and "inf" through) and within
// [lo, hi] (lo exclusive when `above`), with a short message instead of the double maximum.
CLI::Validator number_in(double lo, double hi, bool above = false) {
  auto fmt = [](double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%g", v);
    return std::string(b);
  };
  const std::string allowed = "a finite number " + (above ? "> " + fmt(lo) : ">= " + fmt(lo)) + " and <= " + fmt(hi);
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        char* end = nullptr;
        errno = 0;
        const double v = std::strtod(text.c_str(), &end);
        if (text.empty() || end != text.c_str() + text.size() || errno == ERANGE || !std::isfinite(v) ||
            (above ? v <= lo : v < lo) || v > hi)
          return text + " is not allowed; expected " + allowed;
        return std::string();
      },
      allowed);
}
}  // namespace

int main(int argc, char** argv) {
  using namespace ddpsim::app;
  CLI::App app{"ddpsim: a discrete-event simulator of PyTorch DistributedDataParallel training"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "ddpsim 0.1.0");
  CommonOptions common;
  std::string log_level = "warn";  // debug: files loaded, scenarios resolved, child processes
  app.add_option("--data-dir", common.data_dir,
                 "folder holding models/, configs/ and scenarios/ (default: $DDPSIM_DATA_DIR or the source tree)");
  app.add_option("--log-level", log_level, "messages on stderr: trace, debug, info, warn (default), error, off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));

  RunArgs run;
  auto* run_cmd = app.add_subcommand("run", "simulate a scenario and print its step time and overlap");
  run_cmd->add_option("scenario", run.scenario, "bundled scenario name or file (default: scenarios/default.json)");
  run_cmd->add_option("--set", common.overrides, "override a scenario field: PATH=VALUE (repeatable)");
  run_cmd->add_option("--json", run.json_out, "write the report as JSON to FILE or - (stdout)");
  run_cmd->add_option("--trace", run.trace_out, "write a Chrome trace (open in Perfetto) to FILE");
  run_cmd->add_option("--csv", run.csv_out, "write per-bucket rows as CSV to FILE or -");
  run_cmd->add_flag("-q,--quiet", run.quiet, "do not print the summary");

  BucketsArgs buckets;
  auto* buckets_cmd = app.add_subcommand("buckets", "print DDP's iteration-1 and steady-state bucket plans");
  buckets_cmd->add_option("scenario", buckets.scenario, "bundled scenario name or file");
  buckets_cmd->add_option("--model", buckets.model,
                          "bundled model name or model file (without a scenario: DDP defaults)");
  buckets_cmd->add_option("--bucket-cap-mb", buckets.bucket_cap_mb, "DDP bucket_cap_mb")
      ->check(number_in(0, 1e9, true));
  buckets_cmd->add_option("--set", common.overrides, "override a field: PATH=VALUE, e.g. ddp.pytorch_version=1.13");
  buckets_cmd->add_option("--json", buckets.json_out, "write {iteration1, steady_state} JSON to FILE or -");

  SweepArgs sweep;
  auto* sweep_cmd = app.add_subcommand("sweep", "run a scenario for each combination of parameter values");
  sweep_cmd->add_option("scenario", sweep.scenario, "bundled scenario name or file")->required();
  sweep_cmd
      ->add_option("--param", sweep.params,
                   "PATH=V1,V2,... or PATH=[JSON list] for values with commas, e.g. "
                   "'collective.NCCL_ALGO=[\"Ring,Tree\",\"Ring\"]' (repeatable: the cartesian product is run)")
      ->required();
  sweep_cmd->add_option("--set", common.overrides, "override a field for every run: PATH=VALUE");
  sweep_cmd->add_option("--csv", sweep.csv_out, "write the rows as CSV to FILE or -");
  sweep_cmd->add_option("--json", sweep.json_out, "write {rows, best} JSON to FILE or -");
  sweep_cmd->add_option("-j,--jobs", sweep.jobs, "parallel child processes (default: all cores)")
      ->check(number_in(0, 1024));
  sweep_cmd->add_option("--out", sweep.out, "append each finished row to FILE.jsonl at once (point order at the end)");
  sweep_cmd->add_flag("--resume", sweep.resume, "skip the points whose rows --out already holds");
  sweep_cmd->add_option("--shard", sweep.shard, "run only the K-th of N slices (K/N, 1 <= K <= N); join with merge");
  sweep_cmd->add_flag("-q,--quiet", sweep.quiet, "no progress on stderr and no table on stdout");
  sweep_cmd->add_option("--metric", sweep.metric, "rank by step_time (default), samples_per_s or cost ($/M samples)");
  sweep_cmd->add_option("--group-by", sweep.group_by,
                        "a swept PATH whose values are ranked apart (default: nodes when swept), or none");
  sweep_cmd->add_option("--tolerance", sweep.tolerance,
                        "percent within which rows are flat, not ranked (default: the prediction band, else 1)");
  sweep_cmd->add_option("--plot", sweep.plot_out, "draw the sweep (scripts/ddpsim-plot) to FILE.png or .svg");
  sweep_cmd->add_option("--html", sweep.html_out, "write a self-contained HTML report (figure, rows, why) to FILE");
  sweep_cmd->add_flag("--dry-run", sweep.dry_run, "validate the points to run and list them; simulate nothing");

  CompareArgs cmp;
  auto* cmp_cmd = app.add_subcommand(
      "compare", "run a scenario on several clusters and node counts side by side: speed, scaling, cost, fit, fabric");
  cmp_cmd->add_option("scenario", cmp.scenario, "bundled scenario name or file")->required();
  cmp_cmd
      ->add_option("--cluster", cmp.clusters,
                   "an option: [LABEL=]CLUSTER[:PATH=VALUE,...], a bundled cluster or file with --set overrides of "
                   "its own, e.g. 'ndr-2:1=dgx-h100:fabric.topology=fat_tree,fabric.oversubscription=2:1' "
                   "(repeatable)")
      ->required();
  cmp_cmd->add_option("--nodes", cmp.nodes,
                      "node counts to run each option at, e.g. 1,16,64 (default: the scenario's)");
  auto* cmp_samples = cmp_cmd->add_option("--samples", cmp.samples, "time and cost to train this many samples")
                          ->check(number_in(0, 1e30, true));
  auto* cmp_tokens =
      cmp_cmd->add_option("--tokens", cmp.tokens, "time and cost to train this many tokens (sequence models)")
          ->check(number_in(0, 1e30, true));
  cmp_samples->excludes(cmp_tokens);
  cmp_cmd->add_option("--set", common.overrides, "override a field for every run: PATH=VALUE");
  cmp_cmd->add_option("--json", cmp.json_out, "write {options, rows, best} JSON to FILE or -");
  cmp_cmd->add_option("--csv", cmp.csv_out, "write one row per run as CSV to FILE or -");
  cmp_cmd->add_option("--plot", cmp.plot_out,
                      "draw the options side by side (scripts/ddpsim-plot) to FILE.png or .svg");
  cmp_cmd->add_option("-j,--jobs", cmp.jobs, "parallel child processes (default: all cores)")
      ->check(number_in(0, 1024));
  cmp_cmd->add_flag("-q,--quiet", cmp.quiet, "no progress on stderr");
  cmp_cmd->add_option("--html", cmp.html_out, "write a self-contained HTML report (figure, every column) to FILE");
  cmp_cmd->add_option("--tolerance", cmp.tolerance,
                      "percent within which options tie (default: the prediction band, else 1)");
  cmp_cmd->footer(
      "Each option runs at every --nodes count, plus once on 1 node with 1 GPU (nodes=1, gpus_per_node=1).\n"
      "scaling = (samples/s / GPUs) / samples/s on that 1 GPU: throughput per GPU relative to one GPU of the\n"
      "same cluster. $/h = price_per_gpu_hour x GPUs (or the cluster's cost of ownership: its \"ownership\"\n"
      "block); $/M samples = $/h x step time / 3600 / samples per step x 1e6. Best per criterion (fastest,\n"
      "cheapest) among runs that do not fail to fit; options within --tolerance tie. Scaling is shown, not\n"
      "ranked (the slowest GPU scales best). 'why' names each option's mechanism against the fastest.");

  MergeArgs merge;
  auto* merge_cmd = app.add_subcommand("merge", "join sweep --shard outputs into what the unsharded sweep writes");
  merge_cmd->add_option("inputs", merge.inputs, "the shards' --out FILE.jsonl")->required();
  merge_cmd->add_option("--out", merge.out, "write the merged rows (JSONL) to FILE");
  merge_cmd->add_option("--csv", merge.csv_out, "write the rows as CSV to FILE or -");
  merge_cmd->add_option("--json", merge.json_out, "write {rows, best} JSON to FILE or -");
  merge_cmd->add_flag("-q,--quiet", merge.quiet, "do not print the table");

  std::string list_what;
  auto* list_cmd = app.add_subcommand("list", "list bundled models, GPUs, links, clusters and scenarios");
  list_cmd->add_option("what", list_what, "models, gpus, links, clusters or scenarios (default: all)");

  std::string show_model, show_json;
  auto* show_cmd = app.add_subcommand("show", "list a model's layers with their parameters, FLOPs and measured times");
  show_cmd->add_option("model", show_model, "bundled model name or model file")->required();
  show_cmd->add_option("--json", show_json, "write the layers as JSON to FILE or -");

  ImportTraceArgs imp;
  auto* imp_cmd = app.add_subcommand("import-trace", "measured per-layer times from a torch.profiler Chrome trace");
  imp_cmd->add_option("trace", imp.trace, "trace JSON from torch.profiler (with_modules=True or with_stack=True)")
      ->required();
  imp_cmd->add_option("--model", imp.model, "the model the trace ran (bundled name or file)")->required();
  imp_cmd->add_option("-o,--output", imp.out, "write the model with measured times here");
  imp_cmd->add_option("--batch", imp.batch, "batch size the trace was recorded at (default: the model's)")
      ->check(number_in(1, 1 << 24));

  BenchArgs bench;
  auto* bench_cmd = app.add_subcommand("bench", "time the simulator on GPT-2 over 1024 GPUs (steady-state step)");
  bench_cmd->add_option("--scenario", bench.scenario, "scenario to time");
  bench_cmd->add_option("--repeat", bench.repeat, "runs (one process each); the median is reported")
      ->check(number_in(1, 1000));
  bench_cmd->add_option("--nodes", bench.nodes, "time these node counts instead of the scenario's")
      ->check(number_in(1, 1 << 20));
  bench_cmd->add_flag("--scaling", bench.scaling,
                      "GPUs, flows, wall s per step and peak RSS per size (default nodes 128, 512, 2048, 16384)");
  bench_cmd->add_option("--set", common.overrides, "override a field: PATH=VALUE");
  bench_cmd->add_option("--json", bench.json_out, "write the figures as JSON to FILE or -");

  CollectiveArgs coll;
  auto* coll_cmd = app.add_subcommand("collective", "predict an nccl-tests-style table for a collective on a cluster");
  coll_cmd->add_option("op", coll.op, "collective (allreduce)");
  coll_cmd->add_option("--cluster", coll.cluster, "bundled cluster name or cluster file")->required();
  coll_cmd->add_option("--nodes", coll.nodes, "node count (default: the cluster's)")->check(number_in(1, 1 << 20));
  coll_cmd->add_option("-b,--min-bytes", coll.min_bytes, "smallest size (8, 64K, 1M, 1MiB...)");
  coll_cmd->add_option("-e,--max-bytes", coll.max_bytes, "largest size (default 8G)");
  coll_cmd->add_option("-f,--factor", coll.factor, "size multiplier between rows (default 2)")
      ->check(number_in(1, 1e6));
  coll_cmd->add_option("--algo", coll.algo,
                       "NCCL_ALGO as NCCL reads it: comma list of Ring, Tree, NVLS, NVLSTree, CollNetDirect, "
                       "CollNetChain; ^ first disables those listed; ';'-separated function:list entries");
  coll_cmd->add_flag("--collnet-enable", coll.collnet_enable,
                     "NCCL_COLLNET_ENABLE=1: CollNet (SHARP) where the cluster has inter_node.sharp");
  coll_cmd->add_option("--proto", coll.proto,
                       "NCCL_PROTO as NCCL reads it: comma list of LL, LL128, Simple (^LL128: all but LL128)");
  coll_cmd->add_option("--min-channels", coll.min_channels, "NCCL_MIN_NCHANNELS")->check(number_in(0, 64));
  coll_cmd->add_option("--max-channels", coll.max_channels, "NCCL_MAX_NCHANNELS")->check(number_in(0, 64));
  coll_cmd->add_option("--min-ctas", coll.min_ctas, "NCCL_MIN_CTAS (NCCL 2.17+; also bounds the NVLS channels)")
      ->check(number_in(0, 64));
  coll_cmd->add_option("--max-ctas", coll.max_ctas, "NCCL_MAX_CTAS (NCCL 2.17+; also bounds the NVLS channels)")
      ->check(number_in(0, 64));
  coll_cmd->add_option("--buffsize", coll.buffsize,
                       "NCCL_BUFFSIZE: Simple buffer per channel in bytes (4M, 8388608; default 4 MiB)");
  coll_cmd->add_option("--nthreads", coll.nthreads, "NCCL_NTHREADS: 64 to 512, a multiple of 32 (default NCCL's)");
  coll_cmd->add_option("-g,--gpus-per-process", coll.gpus_per_process,
                       "GPUs one process drives, as nccl-tests -g (default 1, as DDP); with --compare one per run "
                       "(\"8,1\") unless the log's banner says");
  coll_cmd->add_flag("--cuda-graph", coll.cuda_graph,
                     "the calls are replayed from a CUDA graph, as nccl-tests -G: no host step per call on one node "
                     "(across nodes NCCL keeps one per GPU for its proxy); with --compare a run's banner "
                     "\"graph: N\" decides");
  coll_cmd->add_option("--nccl-version", coll.nccl_version,
                       "NCCL release, e.g. 2.8.3 (default: the cluster's, or current)");
  coll_cmd->add_option("--explain", coll.explain,
                       "a size (64M, 1GiB, ...): every enabled (algorithm, protocol) with NCCL's tuner time and the "
                       "achieved time, the pick first");
  coll_cmd->add_option("--compare", coll.compare,
                       "an all_reduce_perf log: predict its sizes (each run with its -g) and show the busbw error");
  coll_cmd
      ->add_option("--tolerance", coll.tolerance,
                   "with --compare: exit 3 if the median |busbw error| for sizes >= 1 MiB exceeds it (e.g. 0.1)")
      ->check(number_in(0, 1e6, true));
  coll_cmd->add_option("--json", coll.json_out, "write rows as JSON to FILE or -");

  CalibrateArgs cal;
  auto* cal_cmd = app.add_subcommand("calibrate", "fit a cluster's NCCL figures to real all_reduce_perf output");
  cal_cmd->add_option("log", cal.log, "nccl-tests all_reduce_perf output")->required();
  cal_cmd->add_option("--cluster", cal.cluster, "bundled cluster name or cluster file")->required();
  cal_cmd->add_option("--nodes", cal.nodes, "node count of the run (default: the cluster's)")
      ->check(number_in(1, 1 << 20));
  cal_cmd->add_option("-o,--output", cal.out, "write the calibrated cluster file here");
  cal_cmd->add_flag("--holdout", cal.holdout, "fit on every other size and report the error on the rest");
  cal_cmd->add_option("-g,--gpus-per-process", cal.gpus_per_process,
                      "nccl-tests -g of each run in the log (\"8,1\") or one value for all; default 1; a run's own "
                      "'# nThread .. nGpus ..' banner wins");
  cal_cmd->add_option("--nccl-version", cal.nccl_version,
                      "NCCL release of the log, e.g. 2.8.3 (default: its 'NCCL version' line, else the cluster's)");
  cal_cmd->add_option("--algo", cal.algo, "NCCL_ALGO the log was run with, as NCCL reads it (Ring,Tree; ^NVLS)");
  cal_cmd->add_option("--proto", cal.proto, "NCCL_PROTO the log was run with, as NCCL reads it (Simple; ^LL128)");
  cal_cmd->add_option("--min-channels", cal.min_channels, "NCCL_MIN_NCHANNELS the log was run with")
      ->check(number_in(0, 64));
  cal_cmd->add_option("--max-channels", cal.max_channels, "NCCL_MAX_NCHANNELS the log was run with")
      ->check(number_in(0, 64));
  cal_cmd->add_option("--buffsize", cal.buffsize, "NCCL_BUFFSIZE the log was run with (bytes, 4M; default 4 MiB)");
  cal_cmd->add_option("--nthreads", cal.nthreads, "NCCL_NTHREADS the log was run with (default NCCL's)");
  cal_cmd->add_option("--times", cal.times, "measured times to fit: out-of-place (default), in-place or both")
      ->check(CLI::IsMember({"out-of-place", "in-place", "both"}));
  cal_cmd->add_option("--json", cal.json_out, "write the fit as JSON to FILE or -");

  ValidateArgs val;
  auto* val_cmd =
      app.add_subcommand("validate", "simulate what a ddpbench / ddp_cpu_bench results file measured, side by side");
  val_cmd->add_option("results", val.results, "ddpbench-results/1 JSON file")->required();
  val_cmd
      ->add_option("--tolerance", val.tolerance,
                   "relative step-time (or busbw) error allowed; exit 3 beyond it (default 0.05)")
      ->check(number_in(0, 1e6, true));
  val_cmd->add_option("--cluster", val.cluster, "cluster for GPU results (default: inferred from the GPU name)");
  val_cmd->add_option("--json", val.json_out, "write the comparison as JSON to FILE or -");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  // Log lines go to stderr so that `--json -` output on stdout stays parseable.
  spdlog::set_default_logger(spdlog::stderr_color_mt("ddpsim"));
  spdlog::set_pattern("ddpsim: %l: %v");
  spdlog::set_level(spdlog::level::from_str(log_level));
  try {
    if (*run_cmd) return cmd_run(common, run);
    if (*buckets_cmd) return cmd_buckets(common, buckets);
    if (*sweep_cmd) return cmd_sweep(common, sweep);
    if (*merge_cmd) return cmd_merge(common, merge);
    if (*cmp_cmd) return cmd_compare(common, cmp);
    if (*list_cmd) return cmd_list(common, list_what);
    if (*show_cmd) return cmd_show(common, show_model, show_json);
    if (*imp_cmd) return cmd_import_trace(common, imp);
    if (*bench_cmd) return cmd_bench(common, bench);
    if (*coll_cmd) return cmd_collective(common, coll);
    if (*cal_cmd) return cmd_calibrate(common, cal);
    if (*val_cmd) return cmd_validate(common, val);
  } catch (const ddpsim::core::ConfigError& e) {
    std::cerr << "ddpsim: error:\n";
    for (const auto& p : e.problems()) std::cerr << "  " << p << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "ddpsim: failed: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
