// `ddpsim calibrate`: fit the cluster's NCCL figures to real all_reduce_perf output.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <sstream>

#include "app/commands.hpp"
#include "app/nccl_options.hpp"
#include "collectives/nccl_model.hpp"
#include "collectives/nccl_tests_log.hpp"
#include "collectives/topology.hpp"
#include "config/catalog.hpp"
#include "core/error.hpp"
#include "core/stats.hpp"
#include "core/text.hpp"
#include "core/units.hpp"
#include "report/writers.hpp"
#include "validate/nccl_calibration.hpp"

namespace fs = std::filesystem;
using ddpsim::core::Json;

namespace ddpsim::app {

using core::median_abs;

int cmd_calibrate(const CommonOptions& common, const CalibrateArgs& args) {
  check_outputs({args.out, args.json_out});
  auto cat = common.catalog();
  fs::path cluster_file;
  auto cluster = load_cluster(cat, args.cluster, args.nodes, &cluster_file);
  collectives::NcclTestsLog log;
  try {
    log = collectives::parse_nccl_tests_log_file(args.log);
  } catch (const collectives::NcclLogError& e) {
    throw core::ConfigError(e.what());
  }
  if (log.rows.empty()) throw core::ConfigError(args.log + ": no all_reduce_perf rows found");
  nodes_from_log(cluster, log, args.log, args.nodes);
  check_log_ranks(log, args.log, cluster);

  // How each run was launched: its banner, else -g (one value per run, or one for all), else 1.
  const std::vector<int> run_g = launch_per_run(args.gpus_per_process, log, args.log, cluster);
  int version = cluster.nccl_version;
  std::string version_from_what = version ? "cluster file" : "default";
  if (log.nccl_version) {
    version = log.nccl_version;
    version_from_what = "log";
  }
  if (!common.nccl.nccl_version.empty()) {
    version = version_from("--nccl-version", common.nccl.nccl_version);
    version_from_what = "--nccl-version";
  }

  auto settings = common.nccl.settings();
  validate::CalibrationRequest q{cluster,           log,        args.log,     run_g,   version,
                                 version_from_what, args.times, args.holdout, settings};
  auto cal = validate::calibrate_from_log(q);
  std::vector<report::Output> outs;
  if (!args.out.empty()) {
    Json doc = core::read_json_file(cluster_file.string());
    doc["nccl_calibration"] = cal.knobs;
    doc["nodes"] = cluster.nodes;
    doc["name"] = cluster.name + "-calibrated";
    if (version != 0) doc["nccl_version"] = collectives::nccl_version_string(version);
    // The plugin release the log named, which the fit ran with (net_plugin.hpp).
    if (log.net_plugin_version && !cluster.net_plugin.empty() && doc.contains("inter_node"))
      doc["inter_node"]["net_plugin_version"] = collectives::nccl_version_string(log.net_plugin_version);
    outs.push_back({args.out, report::json_text(doc, 2, "calibrated cluster")});
    cal.view.text += "wrote " + args.out + " (use it as --cluster or as a scenario's \"cluster\")\n";
  }
  if (!args.json_out.empty()) outs.push_back({args.json_out, report::json_text(cal.view.doc, 2, "calibrate")});
  report::write_outputs(outs);
  if (args.json_out != "-") std::cout << cal.view.text;
  return 0;
}

Command register_calibrate(CLI::App& app, CommonOptions& common) {
  auto args = std::make_shared<CalibrateArgs>();
  auto* cmd = app.add_subcommand("calibrate", "fit a cluster's NCCL figures to real all_reduce_perf output");
  cmd->add_option("log", args->log, "nccl-tests all_reduce_perf output")->required();
  cmd->add_option("--cluster", args->cluster, "bundled cluster name or cluster file")->required();
  cmd->add_option("--nodes", args->nodes, "node count of the run (default: the cluster's)")
      ->check(number_in(1, 1 << 20));
  cmd->add_option("-o,--output", args->out, "write the calibrated cluster file here");
  cmd->add_flag("--holdout", args->holdout, "fit on every other size and report the error on the rest");
  cmd->add_option("-g,--gpus-per-process", args->gpus_per_process,
                  "nccl-tests -g of each run in the log (\"8,1\") or one value for all; default 1; a run's own "
                  "'# nThread .. nGpus ..' banner wins");
  add_nccl_flags(*cmd, common.nccl, "the log was run with");
  cmd->add_option("--times", args->times, "measured times to fit: out-of-place (default), in-place or both")
      ->check(CLI::IsMember({"out-of-place", "in-place", "both"}));
  cmd->add_option("--json", args->json_out, "write the fit as JSON to FILE or -");
  return {cmd, [&common, args] { return cmd_calibrate(common, *args); }};
}
}  // namespace ddpsim::app
