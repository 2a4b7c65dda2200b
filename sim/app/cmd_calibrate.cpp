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

namespace fs = std::filesystem;
using ddpsim::core::Json;

namespace ddpsim::app {

using core::median_abs;

int cmd_calibrate(const CommonOptions& common, const CalibrateArgs& args) {
  {
    std::vector<std::string> out_paths;
    for (const std::string* p : {&args.out, &args.json_out})
      if (!p->empty()) out_paths.push_back(*p);
    report::check_output_paths(out_paths);  // before the work, so a bad path costs nothing
  }
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
  const int n = cluster.world_size();
  check_log_ranks(log, args.log, cluster);

  // How each run was launched: its banner, else -g (one value per run, or one for all), else 1.
  const std::vector<int> run_g = launch_per_run(args.gpus_per_process, log, args.log, cluster);
  int version = cluster.nccl_version;
  std::string version_from_what = version ? "cluster file" : "default";
  if (log.nccl_version) {
    version = log.nccl_version;
    version_from_what = "log";
  }
  if (!args.nccl_version.empty()) {
    version = version_from("--nccl-version", args.nccl_version);
    version_from_what = "--nccl-version";
  }

  struct Point {
    collectives::CalibrationPoint p;
    size_t run = 0;
    bool held_out = false;
    std::string column;  // "oop" (out-of-place) or "ip" (in-place)
  };
  std::vector<Point> points;
  for (size_t r = 0; r < log.runs.size(); ++r) {
    const auto& run = log.runs[r];
    for (size_t i = 0; i < run.row_count; ++i) {
      const auto& row = log.rows[run.first_row + i];
      if (!(row.size_bytes > 0)) continue;
      const bool held = args.holdout && i % 2 == 1;  // a size is fitted or held out with both of its times
      if (args.times != "in-place" && row.oop_time_us > 0)
        points.push_back({{row.size_bytes, row.oop_time_us * 1e-6, run_g[r]}, r, held, "oop"});
      if (args.times != "out-of-place" && row.ip_time_us > 0)
        points.push_back({{row.size_bytes, row.ip_time_us * 1e-6, run_g[r]}, r, held, "ip"});
    }
  }
  if (points.empty()) throw core::ConfigError(args.log + ": no rows with a positive size and time to fit");
  std::vector<collectives::CalibrationPoint> train;
  for (const auto& pt : points)
    if (!pt.held_out) train.push_back(pt.p);

  // The fit starts from the cluster as described: hand-set pre-pick knobs stay, fitted
  // post-pick ones start over.
  auto start = collectives::nccl_topology(cluster);
  start.nccl_version = version;
  start.launch_overhead = collectives::kHostLaunchSeconds;
  start.achieved_all = {};
  start.achieved = {};
  // The run's NCCL environment: the fit must see the (algorithm, protocol) the log ran.
  auto settings = settings_from(args.algo, args.proto, args.min_channels, args.max_channels);
  apply_buffer_flags(settings, args.buffsize, args.nthreads);
  collectives::NcclFit fit;
  collectives::NcclTopology fitted;
  try {
    fitted = collectives::calibrate(start, train, &fit, settings);
  } catch (const std::invalid_argument& e) {
    throw core::ConfigError(args.log + ": " + e.what());
  }

  auto predict = [&settings](collectives::NcclTopology t, const collectives::CalibrationPoint& p) {
    t.gpus_per_process = p.gpus_per_process;
    return collectives::predict_allreduce(t, p.bytes, settings);
  };
  std::vector<double> before, after, test_err;
  for (const auto& pt : points) {
    before.push_back(predict(start, pt.p).time / pt.p.seconds - 1.0);
    after.push_back(predict(fitted, pt.p).time / pt.p.seconds - 1.0);
    if (pt.held_out) test_err.push_back(after.back());
  }
  const double med_before = median_abs(before), med_after = median_abs(after);
  const double med_test = median_abs(test_err);

  Json knobs = Json::object();
  if (cluster.calibration.bw_scale_intra != 1.0) knobs["bw_scale_intra"] = cluster.calibration.bw_scale_intra;
  if (cluster.calibration.bw_scale_inter != 1.0) knobs["bw_scale_inter"] = cluster.calibration.bw_scale_inter;
  if (cluster.calibration.latency_scale != 1.0) knobs["latency_scale"] = cluster.calibration.latency_scale;
  if (cluster.calibration.latency_offset != 0.0) knobs["latency_offset_s"] = cluster.calibration.latency_offset;
  bool any_multi = false;
  for (int g : run_g) any_multi = any_multi || g > 1;
  if (any_multi) knobs["launch_overhead_s"] = fitted.launch_overhead;
  knobs["achieved_all"] = {{"bw_factor", fitted.achieved_all.bw_factor},
                           {"latency_offset_s", fitted.achieved_all.latency_offset}};
  Json pairs = Json::array();
  std::ostringstream pair_text;
  for (int a = 0; a < collectives::kNumAlgos; ++a)
    for (int p = 0; p < collectives::kNumProtos; ++p) {
      const auto& k = fitted.achieved[a][p];
      if (k.bw_factor == 1.0 && k.latency_offset == 0.0) continue;
      const auto algo = collectives::to_string(static_cast<collectives::Algo>(a));
      const auto proto = collectives::to_string(static_cast<collectives::Proto>(p));
      pairs.push_back(
          {{"algo", algo}, {"proto", proto}, {"bw_factor", k.bw_factor}, {"latency_offset_s", k.latency_offset}});
      pair_text << "  " << algo << "/" << proto << ": bw x" << fmt("%.3f", k.bw_factor) << ", latency "
                << (k.latency_offset >= 0 ? "+" : "") << core::format_time(k.latency_offset) << "\n";
    }
  knobs["achieved"] = pairs;
  knobs["source"] = fs::path(args.log).filename().string();
  knobs["fit"] = {{"median_abs_time_error_before", med_before},
                  {"median_abs_time_error_after", med_after},
                  {"points", train.size()}};
  if (args.holdout && !test_err.empty()) knobs["fit"]["median_abs_time_error_held_out"] = med_test;

  std::ostringstream o;
  o << "calibrate: " << args.log << " (" << log.runs.size() << " run(s), " << points.size() << " rows, " << n
    << " ranks) against " << cluster.name << "; NCCL " << collectives::nccl_version_string(version) << " ("
    << version_from_what << ")";
  for (size_t r = 0; r < run_g.size(); ++r) o << (r ? ", " : "; -g ") << run_g[r];
  o << "\n";
  o << "run        size  col    measured us   before us   err %    after us   err %  algo/proto"
    << (args.holdout ? "     used" : "") << "\n";
  Json rows = Json::array();
  for (size_t i = 0; i < points.size(); ++i) {
    const auto& pt = points[i];
    const auto e = predict(fitted, pt.p);
    char line[240];
    std::snprintf(line, sizeof line, "%3zu %11.0f  %-4s %14.2f %11.2f %7.1f %11.2f %7.1f  %-12s%s\n", pt.run,
                  pt.p.bytes, pt.column.c_str(), pt.p.seconds * 1e6, pt.p.seconds * (1 + before[i]) * 1e6,
                  before[i] * 100, pt.p.seconds * (1 + after[i]) * 1e6, after[i] * 100,
                  (collectives::to_string(e.algo) + "/" + collectives::to_string(e.proto)).c_str(),
                  args.holdout ? (pt.held_out ? "  held out" : "  fit") : "");
    o << line;
    rows.push_back({{"run", pt.run},
                    {"size_bytes", pt.p.bytes},
                    {"column", pt.column == "oop" ? "out-of-place" : "in-place"},
                    {"gpus_per_process", pt.p.gpus_per_process},
                    {"measured_us", pt.p.seconds * 1e6},
                    {"before_error", before[i]},
                    {"after_error", after[i]},
                    {"algo", collectives::to_string(e.algo)},
                    {"proto", collectives::to_string(e.proto)},
                    {"held_out", pt.held_out}});
  }
  o << "median |time error|: " << fmt("%.1f", med_before * 100) << " % before, " << fmt("%.1f", med_after * 100)
    << " % after";
  if (args.holdout && !test_err.empty()) o << ", " << fmt("%.1f", med_test * 100) << " % on the held-out sizes";
  if (args.holdout && test_err.empty()) o << " (nothing held out: every run has a single size)";
  o << "\nfitted (after NCCL's pick): bandwidth x" << fmt("%.3f", fitted.achieved_all.bw_factor) << ", latency "
    << (fitted.achieved_all.latency_offset >= 0 ? "+" : "") << core::format_time(fitted.achieved_all.latency_offset);
  if (any_multi) o << ", host launch " << core::format_time(fitted.launch_overhead) << " per GPU";
  o << "\n" << pair_text.str();

  std::vector<report::Output> outs;
  if (!args.out.empty()) {
    Json doc = core::read_json_file(cluster_file.string());
    doc["nccl_calibration"] = knobs;
    doc["nodes"] = cluster.nodes;
    doc["name"] = cluster.name + "-calibrated";
    if (version != 0) doc["nccl_version"] = collectives::nccl_version_string(version);
    outs.push_back({args.out, report::json_text(doc, 2, "calibrated cluster")});
    o << "wrote " << args.out << " (use it as --cluster or as a scenario's \"cluster\")\n";
  }
  Json result{{"log", args.log},
              {"cluster", cluster.name},
              {"world_size", n},
              {"nccl_version", collectives::nccl_version_string(version)},
              {"gpus_per_process", run_g},
              {"calibration", knobs},
              {"rows", rows},
              {"median_abs_error_before", med_before},
              {"median_abs_error_after", med_after}};
  if (args.holdout) result["median_abs_error_held_out"] = test_err.empty() ? Json(nullptr) : Json(med_test);
  if (!args.json_out.empty()) outs.push_back({args.json_out, report::json_text(result, 2, "calibrate")});
  report::write_outputs(outs);
  if (args.json_out != "-") std::cout << o.str();
  return 0;
}

}  // namespace ddpsim::app
