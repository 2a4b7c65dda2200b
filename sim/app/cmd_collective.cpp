// `ddpsim collective`: flags and the log read here; the tables are validate/nccl_tests.
#include <algorithm>
#include <cmath>

#include "app/commands.hpp"
#include "app/nccl_options.hpp"
#include "collectives/nccl_model.hpp"
#include "collectives/nccl_tests_log.hpp"
#include "collectives/topology.hpp"
#include "collectives/validated.hpp"
#include "config/catalog.hpp"
#include "core/error.hpp"
#include "fabric/spec.hpp"
#include "validate/nccl_tests.hpp"

namespace ddpsim::app {

namespace {
// The collective and the nccl-tests binary whose output --compare takes.
struct Op {
  collectives::Func func;
  const char* test;
};
Op op_of(const std::string& op) {
  auto of = [](collectives::Func f) { return Op{f, collectives::nccl_tests_binary(f)}; };
  if (op == "allreduce") return of(collectives::Func::ALL_REDUCE);
  if (op == "allgather") return of(collectives::Func::ALL_GATHER);
  if (op == "reducescatter") return of(collectives::Func::REDUCE_SCATTER);
  if (op == "broadcast") return of(collectives::Func::BROADCAST);
  throw core::ConfigError("collective: \"" + op +
                          "\" is not supported; supported: allreduce, allgather, reducescatter, broadcast");
}
}  // namespace

int cmd_collective(const CommonOptions& common, const CollectiveArgs& args) {
  const Op op = op_of(args.op);
  check_outputs({args.json_out});
  auto cat = common.catalog();
  auto cluster = load_cluster(cat, args.cluster, args.nodes, nullptr);
  const double lo = parse_size("--min-bytes", args.min_bytes), hi = parse_size("--max-bytes", args.max_bytes);
  if (hi < lo) throw core::ConfigError("--max-bytes " + args.max_bytes + " is below --min-bytes " + args.min_bytes);
  if (!(args.factor > 1)) throw core::ConfigError("--factor: " + fmt("%g", args.factor) + " is not > 1");
  if (args.tolerance > 0 && args.compare.empty())
    throw core::ConfigError("--tolerance: only with --compare LOG (the measurements to hold the prediction to)");
  const auto settings = common.nccl.settings();
  collectives::NcclTestsLog log;
  if (!args.compare.empty()) {
    try {
      log = collectives::parse_nccl_tests_log_file(args.compare);
    } catch (const collectives::NcclLogError& e) {
      throw core::ConfigError(e.what());
    }
    if (log.rows.empty()) throw core::ConfigError(args.compare + ": no " + op.test + " rows found");
    nodes_from_log(cluster, log, args.compare, args.nodes);
    check_log_ranks(log, args.compare, cluster, op.test);
  }
  auto topo = collectives::nccl_topology(cluster);
  topo.cuda_graph = args.cuda_graph;
  if (log.nccl_version) topo.nccl_version = log.nccl_version;
  if (log.net_plugin_version) topo.net_plugin_version = log.net_plugin_version;
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
    const double asked = parse_size("--explain", args.explain);
    const int n = cluster.world_size();
    // As nccl-tests would run it; the smallest size that gives every rank a part at least.
    const double bytes = validate::whole_buffer(op.func)
                             ? std::max(4.0, validate::nccl_tests_size(op.func, asked, n))
                             : std::max(16.0 * n, validate::nccl_tests_size(op.func, asked, n));
    report::Rendered r = validate::explain_allreduce(cluster, topo, settings, bytes, op.func);
    // What the net plugin did to NCCL's pick (aws-ofi-nccl: region tuner, reported latency).
    const auto plugin = collectives::plugin_pick_effect(op.func, topo, bytes, settings);
    if (!plugin.plugin.empty()) {
      r.text += plugin.text + "\n";
      r.doc["plugin"] = {{"net_plugin", plugin.plugin},
                         {"effect", plugin.effect},
                         {"pick", plugin.pick},
                         {"without_region_tuner", plugin.without_region_tuner},
                         {"nccl_alone", plugin.nccl_alone},
                         {"region_tuner", plugin.region_tuner},
                         {"reported_latency_us", plugin.reported_latency * 1e6},
                         {"text", plugin.text}};
      if (plugin.channels > 0) r.doc["plugin"]["channels"] = plugin.channels;
      if (!plugin.efa_step_from.empty()) r.doc["plugin"]["efa_step_from"] = plugin.efa_step_from;
    }
    // How far to trust it (issue 24 item 4): in the document's header ("# trust:", JSON "trust").
    // The placement assumed on a fabric (issue 24 item 3; absent on the single switch, one node).
    const std::string placement = fabric::placement_line(cluster.inter_fabric, cluster.name, cluster.nodes);
    if (!placement.empty()) {
      r.text += "placement: " + placement + "\n";
      r.doc["placement"] = {{"assumed", fabric::to_string(cluster.inter_fabric.placement)},
                            {"guaranteed", cluster.inter_fabric.placement_guaranteed},
                            {"text", placement}};
    }
    if (const auto* c = collectives::closest_validated(cluster.name, cluster.gpu.name, cluster.nodes)) {
      r.doc["closest_validated"] = {{"cluster_class", c->cluster_class},
                                    {"preset", c->preset},
                                    {"nodes", c->nodes},
                                    {"table", c->table},
                                    {"median_busbw_error_ge_1MiB", c->median_large}};
      if (c->median_small >= 0) r.doc["closest_validated"]["median_busbw_error_lt_1MiB"] = c->median_small;
    }
    return emit(r, args.json_out, "collective");
  }
  if (args.compare.empty() && !validate::whole_buffer(op.func) &&
      !(validate::nccl_tests_size(op.func, hi, cluster.world_size()) > 0))
    throw core::ConfigError("--max-bytes " + args.max_bytes + ": below " + std::to_string(16 * cluster.world_size()) +
                            " B, the smallest " + op.test + " size on " + std::to_string(cluster.world_size()) +
                            " ranks (nccl-tests gives every rank a whole 16-byte part); no row to predict");
  if (args.compare.empty())
    return emit(validate::allreduce_table(cluster, topo, settings, lo, hi, args.factor, op.func), args.json_out,
                "collective");
  return emit(validate::compare_with_log(cluster, topo, settings, log, args.compare, run_g, args.tolerance, op.func),
              args.json_out, "collective");
}

Command register_collective(CLI::App& app, CommonOptions& common) {
  auto args = std::make_shared<CollectiveArgs>();
  auto* cmd = app.add_subcommand("collective", "predict an nccl-tests-style table for a collective on a cluster");
  cmd->add_option("op", args->op,
                  "collective: allreduce, allgather (size = the output), reducescatter (size = one rank's input), "
                  "broadcast (from rank 0)");
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
  cmd->add_option(
      "--compare", args->compare,
      "an all_reduce_perf / all_gather_perf / reduce_scatter_perf / broadcast_perf log (as the collective): "
      "predict its sizes (each run with its -g) and show the busbw error");
  cmd->add_option("--tolerance", args->tolerance,
                  "with --compare: exit 3 if the median |busbw error| for sizes >= 1 MiB exceeds it (e.g. 0.1)")
      ->check(number_in(0, 1e6, true));
  cmd->add_option("--json", args->json_out, "write rows as JSON to FILE or -");
  return {cmd, [&common, args] { return cmd_collective(common, *args); }};
}
}  // namespace ddpsim::app
