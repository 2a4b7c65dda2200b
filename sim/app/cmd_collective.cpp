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
  auto settings = settings_from(args.algo, args.proto, args.min_channels, args.max_channels, args.collnet_enable);
  settings.min_ctas = args.min_ctas;
  settings.max_ctas = args.max_ctas;
  apply_buffer_flags(settings, args.buffsize, args.nthreads);
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
  if (!args.nccl_version.empty()) topo.nccl_version = version_from("--nccl-version", args.nccl_version);
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

}  // namespace ddpsim::app
