// `ddpsim collective`: an nccl-tests-style table predicted from the hardware description, or
// side by side with a real all_reduce_perf log (--compare).
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

namespace fs = std::filesystem;
using ddpsim::core::Json;

namespace ddpsim::app {

using core::median_abs;

int cmd_collective(const CommonOptions& common, const CollectiveArgs& args) {
  if (args.op != "allreduce")
    throw core::ConfigError("collective: \"" + args.op + "\" is not supported; supported: allreduce");
  {
    std::vector<std::string> out_paths;
    for (const std::string* p : {&args.json_out})
      if (!p->empty()) out_paths.push_back(*p);
    report::check_output_paths(out_paths);  // before the work, so a bad path costs nothing
  }
  auto cat = common.catalog();
  auto cluster = load_cluster(cat, args.cluster, args.nodes, nullptr);
  const double lo = parse_size("--min-bytes", args.min_bytes), hi = parse_size("--max-bytes", args.max_bytes);
  if (hi < lo) throw core::ConfigError("--max-bytes " + args.max_bytes + " is below --min-bytes " + args.min_bytes);
  if (!(args.factor > 1)) throw core::ConfigError("--factor: " + fmt("%g", args.factor) + " is not > 1");
  if (args.tolerance > 0 && args.compare.empty())
    throw core::ConfigError("--tolerance: only with --compare LOG (the measurements to hold the prediction to)");
  auto settings = settings_from(args.algo, args.proto, args.min_channels, args.max_channels, args.collnet_enable);
  apply_buffer_flags(settings, args.buffsize, args.nthreads);
  auto topo = collectives::nccl_topology(cluster);
  const int n = cluster.world_size();

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
  Json rows = Json::array();
  std::ostringstream table;
  table << "# ddpsim collective allreduce: " << cluster.name << ", " << cluster.nodes << " x " << cluster.gpus_per_node
        << " " << cluster.gpu.name << " = " << n << " ranks (predicted, float sum; NCCL "
        << collectives::nccl_version_string(topo.nccl_version) << ", " << topo.gpus_per_process
        << " GPU(s) per process)\n";
  Json doc{{"cluster", cluster.name},
           {"world_size", n},
           {"nodes", cluster.nodes},
           {"nccl_version", collectives::nccl_version_string(topo.nccl_version)},
           {"gpus_per_process", topo.gpus_per_process}};
  int status = 0;
  if (!args.explain.empty()) {
    if (!args.compare.empty()) throw core::ConfigError("--explain and --compare: give one of them");
    const double bytes = std::max(4.0, std::floor(parse_size("--explain", args.explain) / 4) * 4);
    std::vector<collectives::AllReduceEstimate> cands;
    try {
      cands = collectives::allreduce_candidates(topo, bytes, settings);
    } catch (const std::invalid_argument& ex) {
      throw core::ConfigError(std::string("collective: ") + ex.what());
    }
    if (cands.empty()) throw core::ConfigError("collective: no (algorithm, protocol) is enabled for this topology");
    const auto tu = collectives::tune_model(topo, settings);
    const bool thresholds = topo.nccl_version != 0 && topo.nccl_version < 20500;  // before the 2.5 tuner
    table << "# " << fmt("%.0f", bytes) << " B: every enabled (algorithm, protocol)"
          << (thresholds ? "; NCCL 2.4 picks by fixed size thresholds" : ", by NCCL's tuner time")
          << "; NCCL runs the first. graph: ring " << tu.ring.nchannels << " x " << fmt("%.1f", tu.ring.bw_intra)
          << " GB/s, tree " << tu.tree.nchannels << " x " << fmt("%.1f", tu.tree.bw_intra) << " GB/s; "
          << tu.comm_channels << " channels\n";
    table << "#  algo          proto    nccl model us  achieved us  busbw GB/s  channels  latency us  algbw GB/s\n";
    Json cand_rows = Json::array();
    for (size_t i = 0; i < cands.size(); ++i) {
      const auto& e = cands[i];
      const double bus = collectives::busbw_allreduce(collectives::algbw(bytes, e.time), n) / 1e9;
      char line[200];
      std::snprintf(line, sizeof line, "%s %-13s %-7s %14.2f %12.2f %11.2f %9d %11.2f %11.2f\n", i == 0 ? "*" : " ",
                    collectives::to_string(e.algo).c_str(), collectives::to_string(e.proto).c_str(),
                    e.nccl_model_time * 1e6, e.time * 1e6, bus, e.nchannels, e.latency * 1e6, e.bandwidth / 1e9);
      table << line;
      cand_rows.push_back({{"algo", collectives::to_string(e.algo)},
                           {"proto", collectives::to_string(e.proto)},
                           {"picked", i == 0},
                           {"nccl_model_time_us", e.nccl_model_time * 1e6},
                           {"time_us", e.time * 1e6},
                           {"busbw_GBps", bus},
                           {"channels", e.nchannels},
                           {"latency_us", e.latency * 1e6},
                           {"bandwidth_GBps", e.bandwidth / 1e9}});
    }
    doc["size_bytes"] = bytes;
    doc["candidates"] = cand_rows;
    if (!args.json_out.empty()) report::write_output(args.json_out, report::json_text(doc, 2, "collective"));
    if (args.json_out != "-") std::cout << table.str();
    return 0;
  }
  if (args.compare.empty()) {
    table << "#       size         count     time   algbw   busbw  algo          proto   channels\n";
    table << "#        (B)    (elements)     (us)  (GB/s)  (GB/s)\n";
    for (double size = lo; size <= hi * (1 + 1e-12); size *= args.factor) {
      // nccl-tests rounds the size down to whole float elements.
      const double bytes = std::max(4.0, std::floor(size / 4) * 4);
      const auto e = predict(topo, bytes, settings);
      const double alg = collectives::algbw(bytes, e.time) / 1e9;
      const double bus = collectives::busbw_allreduce(alg, n);
      char line[200];
      std::snprintf(line, sizeof line, "%12.0f  %12.0f %8.2f %7.2f %7.2f  %-13s %-7s %8d\n", bytes, bytes / 4,
                    e.time * 1e6, alg, bus, collectives::to_string(e.algo).c_str(),
                    collectives::to_string(e.proto).c_str(), e.nchannels);
      table << line;
      rows.push_back({{"size_bytes", bytes},
                      {"count", bytes / 4},
                      {"time_us", e.time * 1e6},
                      {"algbw_GBps", alg},
                      {"busbw_GBps", bus},
                      {"algo", collectives::to_string(e.algo)},
                      {"proto", collectives::to_string(e.proto)},
                      {"channels", e.nchannels}});
    }
  } else {
    // Side by side with the log: every run with its own launch mode (banner nGpus, else -g).
    table << "# against " << args.compare << " (out-of-place times; busbw error = predicted / measured - 1)\n";
    table << "# run        size    pred us    meas us  pred busbw  meas busbw   err %  algo          proto\n";
    std::vector<double> large, small;
    for (size_t r = 0; r < log.runs.size(); ++r) {
      collectives::NcclTopology t = topo;
      t.gpus_per_process = run_g[r];
      for (size_t i = 0; i < log.runs[r].row_count; ++i) {
        const auto& row = log.rows[log.runs[r].first_row + i];
        if (!(row.size_bytes > 0) || !(row.oop_time_us > 0)) continue;
        const auto e = predict(t, row.size_bytes, settings);
        const double pred = collectives::busbw_allreduce(collectives::algbw(row.size_bytes, e.time), n) / 1e9;
        const double meas =
            collectives::busbw_allreduce(collectives::algbw(row.size_bytes, row.oop_time_us * 1e-6), n) / 1e9;
        const double err = pred / meas - 1;
        (row.size_bytes >= 1048576 ? large : small).push_back(err);
        char line[220];
        std::snprintf(line, sizeof line, "%5zu %11.0f %10.2f %10.2f %11.2f %11.2f %7.1f  %-13s %-7s\n", r,
                      row.size_bytes, e.time * 1e6, row.oop_time_us, pred, meas, err * 100,
                      collectives::to_string(e.algo).c_str(), collectives::to_string(e.proto).c_str());
        table << line;
        rows.push_back({{"run", r},
                        {"size_bytes", row.size_bytes},
                        {"gpus_per_process", t.gpus_per_process},
                        {"time_us", e.time * 1e6},
                        {"measured_time_us", row.oop_time_us},
                        {"busbw_GBps", pred},
                        {"measured_busbw_GBps", meas},
                        {"busbw_error", err},
                        {"algo", collectives::to_string(e.algo)},
                        {"proto", collectives::to_string(e.proto)},
                        {"channels", e.nchannels}});
      }
    }
    const double ml = median_abs(large), ms = median_abs(small);
    table << "median |busbw error|: " << (large.empty() ? std::string("-") : fmt("%.1f %%", ml * 100))
          << " for sizes >= 1 MiB (" << large.size() << " rows), "
          << (small.empty() ? std::string("-") : fmt("%.1f %%", ms * 100)) << " below (" << small.size() << " rows)\n";
    doc["compare"] = {{"log", args.compare},
                      {"median_abs_busbw_error_large", large.empty() ? Json(nullptr) : Json(ml)},
                      {"median_abs_busbw_error_small", small.empty() ? Json(nullptr) : Json(ms)}};
    if (args.tolerance > 0) {
      // A tolerance that nothing is checked against would always pass.
      if (large.empty())
        throw core::ConfigError(args.compare + ": no rows of 1 MiB or more, so --tolerance " +
                                fmt("%g", args.tolerance) +
                                " has nothing to check; expected a log with sizes >= 1 MiB (or no --tolerance)");
      const bool within = ml <= args.tolerance;
      doc["compare"]["tolerance"] = args.tolerance;
      doc["compare"]["within_tolerance"] = within;
      if (!within) {
        table << "beyond tolerance: " << fmt("%.1f %%", ml * 100) << " > " << fmt("%.1f %%", args.tolerance * 100)
              << "\n";
        status = 3;
      }
    }
  }
  doc["rows"] = rows;
  if (!args.json_out.empty()) report::write_output(args.json_out, report::json_text(doc, 2, "collective"));
  if (args.json_out != "-") std::cout << table.str();
  return status;
}

}  // namespace ddpsim::app
