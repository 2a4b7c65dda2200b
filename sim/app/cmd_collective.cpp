// `ddpsim collective`: flags and the log read here; the tables are validate/nccl_tests.
#include <algorithm>
#include <cmath>

#include "app/commands.hpp"
#include "app/nccl_options.hpp"
#include "collectives/nccl_model.hpp"
#include "collectives/nccl_tests_log.hpp"
#include "collectives/topology.hpp"
#include "config/catalog.hpp"
#include "core/error.hpp"
#include "validate/nccl_tests.hpp"

namespace ddpsim::app {

int cmd_collective(const CommonOptions& common, const CollectiveArgs& args) {
  if (args.op != "allreduce")
    throw core::ConfigError("collective: \"" + args.op + "\" is not supported; supported: allreduce");
  check_outputs({args.json_out});
  auto cat = common.catalog();
  auto cluster = load_cluster(cat, args.cluster, args.nodes, nullptr);
  const double lo = parse_size("--min-bytes", args.min_bytes), hi = parse_size("--max-bytes", args.max_bytes);
  if (hi < lo) throw core::ConfigError("--max-bytes " + args.max_bytes + " is below --min-bytes " + args.min_bytes);
  if (!(args.factor > 1)) throw core::ConfigError("--factor: " + fmt("%g", args.factor) + " is not > 1");
  if (args.tolerance > 0 && args.compare.empty())
    throw core::ConfigError("--tolerance: only with --compare LOG (the measurements to hold the prediction to)");
  const auto settings = common.nccl.settings();
  auto topo = collectives::nccl_topology(cluster);
  topo.cuda_graph = args.cuda_graph;

  collectives::NcclTestsLog log;
  if (!args.compare.empty()) {
    try {
      log = collectives::parse_nccl_tests_log_file(args.compare);
    } catch (const collectives::NcclLogError& e) {
      throw core::ConfigError(e.what());
    }
    if (log.rows.empty()) throw core::ConfigError(args.compare + ": no all_reduce_perf rows found");
    check_log_ranks(log, args.compare, cluster);
    if (log.nccl_version) topo.nccl_version = log.nccl_version;
  }
  if (!common.nccl.nccl_version.empty()) topo.nccl_version = version_from("--nccl-version", common.nccl.nccl_version);
  // -g: one value for the predicted table; with --compare one per run of the log (or one for all).
  std::vector<int> run_g;
  if (!args.compare.empty()) {
    run_g = launch_per_run(args.gpus_per_process, log, args.compare, cluster);
    topo.gpus_per_process = run_g.empty() ? 1 : run_g[0];
  } else {
    if (args.gpus_per_process.find(',') != std::string::npos)
      throw core::ConfigError("--gpus-per-process: \"" + args.gpus_per_process +
                              "\" is a list; one value per run needs --compare LOG, the table takes one value");
    collectives::NcclTestsLog one_run;
    one_run.runs.resize(1);
    topo.gpus_per_process = launch_per_run(args.gpus_per_process, one_run, "", cluster)[0];
  }
  try {
    collectives::validate(topo);
  } catch (const std::invalid_argument& e) {
    throw core::ConfigError(cluster.file + ": " + e.what());
  }
  if (!args.explain.empty()) {
    if (!args.compare.empty()) throw core::ConfigError("--explain and --compare: give one of them");
    const double bytes = std::max(4.0, std::floor(parse_size("--explain", args.explain) / 4) * 4);
    return emit(validate::explain_allreduce(cluster, topo, settings, bytes), args.json_out, "collective");
  }
  if (args.compare.empty())
    return emit(validate::allreduce_table(cluster, topo, settings, lo, hi, args.factor), args.json_out, "collective");
  return emit(validate::compare_with_log(cluster, topo, settings, log, args.compare, run_g, args.tolerance),
              args.json_out, "collective");
}

Command register_collective(CLI::App& app, CommonOptions& common) {
  auto args = std::make_shared<CollectiveArgs>();
  auto* cmd = app.add_subcommand("collective", "predict an nccl-tests-style table for a collective on a cluster");
  cmd->add_option("op", args->op, "collective (allreduce)");
  cmd->add_option("--cluster", args->cluster, "bundled cluster name or cluster file")->required();
  cmd->add_option("--nodes", args->nodes, "node count (default: the cluster's)")->check(number_in(1, 1 << 20));
  cmd->add_option("-b,--min-bytes", args->min_bytes,
                  "smallest size: 8, 64K, 1M, 1MiB (K, M, G: powers of 1024; 1MB is refused as ambiguous)");
  cmd->add_option("-e,--max-bytes", args->max_bytes, "largest size (default 8G = 8 GiB)");
  cmd->add_option("-f,--factor", args->factor, "size multiplier between rows (default 2)")->check(number_in(1, 1e6));
  add_nccl_flags(*cmd, common.nccl);
  cmd->add_option("-g,--gpus-per-process", args->gpus_per_process,
                  "GPUs one process drives, as nccl-tests -g (default 1, as DDP); with --compare one per run "
                  "(\"8,1\") unless the log's banner says");
  cmd->add_flag("--cuda-graph", args->cuda_graph,
                "the calls are replayed from a CUDA graph, as nccl-tests -G: no host step per call on one node "
                "(across nodes NCCL keeps one per GPU for its proxy); with --compare a run's banner "
                "\"graph: N\" decides");
  cmd->add_option("--explain", args->explain,
                  "a size (64M, 1GiB, ...): every enabled (algorithm, protocol) with NCCL's tuner time and the "
                  "achieved time, the pick first");
  cmd->add_option("--compare", args->compare,
                  "an all_reduce_perf log: predict its sizes (each run with its -g) and show the busbw error");
  cmd->add_option("--tolerance", args->tolerance,
                  "with --compare: exit 3 if the median |busbw error| for sizes >= 1 MiB exceeds it (e.g. 0.1)")
      ->check(number_in(0, 1e6, true));
  cmd->add_option("--json", args->json_out, "write rows as JSON to FILE or -");
  return {cmd, [&common, args] { return cmd_collective(common, *args); }};
}
}  // namespace ddpsim::app
