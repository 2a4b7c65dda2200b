#include "validate/nccl_calibration.hpp"

#include <cstdio>
#include <filesystem>
#include <sstream>
#include <stdexcept>

#include "collectives/topology.hpp"
#include "core/error.hpp"
#include "core/stats.hpp"
#include "core/text.hpp"
#include "core/units.hpp"

namespace fs = std::filesystem;

namespace ddpsim::validate {

using core::Json;
using core::median_abs;

Calibration calibrate_from_log(const CalibrationRequest& q) {
  const int n = q.cluster.world_size();
  struct Point {
    collectives::CalibrationPoint p;
    size_t run = 0;
    bool held_out = false;
    std::string column;  // "oop" (out-of-place) or "ip" (in-place)
  };
  std::vector<Point> points;
  for (size_t r = 0; r < q.log.runs.size(); ++r) {
    const auto& run = q.log.runs[r];
    const int graph = run.graph_mode();  // the banner's "graph: N"
    for (size_t i = 0; i < run.row_count; ++i) {
      const auto& row = q.log.rows[run.first_row + i];
      if (!(row.size_bytes > 0)) continue;
      const bool held = q.holdout && i % 2 == 1;  // a size is fitted or held out with both of its times
      if (q.times != "in-place" && row.oop_time_us > 0)
        points.push_back({{row.size_bytes, row.oop_time_us * 1e-6, q.run_g[r], graph}, r, held, "oop"});
      if (q.times != "out-of-place" && row.ip_time_us > 0)
        points.push_back({{row.size_bytes, row.ip_time_us * 1e-6, q.run_g[r], graph}, r, held, "ip"});
    }
  }
  if (points.empty()) throw core::ConfigError(q.log_name + ": no rows with a positive size and time to fit");
  std::vector<collectives::CalibrationPoint> train;
  for (const auto& pt : points)
    if (!pt.held_out) train.push_back(pt.p);

  // The fit starts from the cluster as described: hand-set pre-pick knobs stay, fitted
  // post-pick ones start over.
  auto start = collectives::nccl_topology(q.cluster);
  start.nccl_version = q.version;
  start.net_plugin_version = q.log.net_plugin_version;  // the plugin release the log names, if any
  start.launch_overhead = collectives::kHostLaunchSeconds;
  start.achieved_all = {};
  start.achieved = {};
  // The run's NCCL environment: the fit must see the (algorithm, protocol) the log ran.
  const auto& settings = q.settings;
  collectives::NcclFit fit;
  collectives::NcclTopology fitted;
  try {
    fitted = collectives::calibrate(start, train, &fit, settings);
  } catch (const std::invalid_argument& e) {
    throw core::ConfigError(q.log_name + ": " + e.what());
  }

  auto predict = [&settings](const collectives::NcclTopology& t, const collectives::CalibrationPoint& p) {
    return collectives::predict_allreduce(collectives::as_launched(t, p), p.bytes, settings);
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
  if (q.cluster.calibration.bw_scale_intra != 1.0) knobs["bw_scale_intra"] = q.cluster.calibration.bw_scale_intra;
  if (q.cluster.calibration.bw_scale_inter != 1.0) knobs["bw_scale_inter"] = q.cluster.calibration.bw_scale_inter;
  if (q.cluster.calibration.latency_scale != 1.0) knobs["latency_scale"] = q.cluster.calibration.latency_scale;
  if (q.cluster.calibration.latency_offset != 0.0) knobs["latency_offset_s"] = q.cluster.calibration.latency_offset;
  // The launch knob means something only where a run had a host step per GPU to pay.
  bool any_multi = false;
  for (const auto& pt : points) {
    const auto u = collectives::as_launched(start, pt.p);
    any_multi = any_multi || (u.gpus_per_process > 1 && collectives::host_steps(u));
  }
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
      pair_text << "  " << algo << "/" << proto << ": bw x" << core::printf_text("%.3f", k.bw_factor) << ", latency "
                << (k.latency_offset >= 0 ? "+" : "") << core::format_time(k.latency_offset) << "\n";
    }
  knobs["achieved"] = pairs;
  knobs["source"] = fs::path(q.log_name).filename().string();
  knobs["nodes"] = q.cluster.nodes;  // what the fit saw: the prediction band extrapolates beyond it
  knobs["fit"] = {{"median_abs_time_error_before", med_before},
                  {"median_abs_time_error_after", med_after},
                  {"points", train.size()}};
  if (q.holdout && !test_err.empty()) knobs["fit"]["median_abs_time_error_held_out"] = med_test;

  std::ostringstream o;
  o << "calibrate: " << q.log_name << " (" << q.log.runs.size() << " run(s), " << points.size() << " rows, " << n
    << " ranks) against " << q.cluster.name << "; NCCL " << collectives::nccl_version_string(q.version) << " ("
    << q.version_from << ")";
  for (size_t r = 0; r < q.run_g.size(); ++r)
    o << (r ? ", " : "; -g ") << q.run_g[r] << (q.log.runs[r].graph_mode() > 0 ? " (CUDA graph)" : "");
  o << "\n";
  o << "run        size  col    measured us   before us   err %    after us   err %  algo/proto"
    << (q.holdout ? "     used" : "") << "\n";
  Json rows = Json::array();
  for (size_t i = 0; i < points.size(); ++i) {
    const auto& pt = points[i];
    const auto e = predict(fitted, pt.p);
    char line[240];
    std::snprintf(line, sizeof line, "%3zu %11.0f  %-4s %14.2f %11.2f %7.1f %11.2f %7.1f  %-12s%s\n", pt.run,
                  pt.p.bytes, pt.column.c_str(), pt.p.seconds * 1e6, pt.p.seconds * (1 + before[i]) * 1e6,
                  before[i] * 100, pt.p.seconds * (1 + after[i]) * 1e6, after[i] * 100,
                  (collectives::to_string(e.algo) + "/" + collectives::to_string(e.proto)).c_str(),
                  q.holdout ? (pt.held_out ? "  held out" : "  fit") : "");
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
  o << "median |time error|: " << core::printf_text("%.1f", med_before * 100) << " % before, "
    << core::printf_text("%.1f", med_after * 100) << " % after";
  if (q.holdout && !test_err.empty())
    o << ", " << core::printf_text("%.1f", med_test * 100) << " % on the held-out sizes";
  if (q.holdout && test_err.empty()) o << " (nothing held out: every run has a single size)";
  o << "\nfitted (after NCCL's pick): bandwidth x" << core::printf_text("%.3f", fitted.achieved_all.bw_factor)
    << ", latency " << (fitted.achieved_all.latency_offset >= 0 ? "+" : "")
    << core::format_time(fitted.achieved_all.latency_offset);
  if (any_multi) o << ", host launch " << core::format_time(fitted.launch_overhead) << " per GPU";
  o << "\n" << pair_text.str();

  Json result{{"log", q.log_name},
              {"cluster", q.cluster.name},
              {"world_size", n},
              {"nccl_version", collectives::nccl_version_string(q.version)},
              {"gpus_per_process", q.run_g},
              {"calibration", knobs},
              {"rows", rows},
              {"median_abs_error_before", med_before},
              {"median_abs_error_after", med_after}};
  if (q.holdout) result["median_abs_error_held_out"] = test_err.empty() ? Json(nullptr) : Json(med_test);
  Calibration out;
  out.knobs = knobs;
  out.view.doc = result;
  out.view.text = o.str();
  return out;
}

}  // namespace ddpsim::validate
