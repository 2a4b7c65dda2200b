// `ddpsim collective` (an nccl-tests-style table predicted from the hardware description) and
// `ddpsim calibrate` (fit the cluster's NCCL figures to real all_reduce_perf output).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <sstream>

#include "app/commands.hpp"
#include "collectives/nccl_model.hpp"
#include "collectives/nccl_tests_log.hpp"
#include "collectives/topology.hpp"
#include "config/catalog.hpp"
#include "core/error.hpp"
#include "core/units.hpp"
#include "report/writers.hpp"

namespace fs = std::filesystem;
using ddpsim::core::Json;

namespace ddpsim::app {
namespace {

// nccl-tests sizes: a number with an optional K, M or G suffix (powers of 1024), or a unit ("8MiB").
double parse_size(const std::string& flag, const std::string& text) {
  if (auto q = core::parse_quantity(text, core::Quantity::BYTES)) return *q;
  size_t pos = 0;
  double v = 0;
  try {
    v = std::stod(text, &pos);
  } catch (const std::exception&) {
    pos = 0;
  }
  double mult = 1;
  if (pos > 0 && pos + 1 == text.size()) {
    switch (text.back()) {
      case 'K':
      case 'k': mult = 1024.0; break;
      case 'M':
      case 'm': mult = 1048576.0; break;
      case 'G':
      case 'g': mult = 1073741824.0; break;
      default: pos = 0;
    }
  } else if (pos != text.size()) {
    pos = 0;
  }
  if (pos == 0 || !(v > 0))
    throw core::ConfigError(flag + ": \"" + text + "\" is not a size; expected bytes like 8, 64K, 256M, 8G or 1MiB");
  return v * mult;
}

config::ClusterSpec load_cluster(const config::Catalog& cat, const std::string& name, int nodes, fs::path* file) {
  if (name.empty()) throw core::ConfigError("--cluster is required: a bundled cluster name or a cluster file");
  fs::path p = cat.resolve(config::Kind::CLUSTER, name);
  if (file) *file = p;
  auto c = cat.load_cluster(p);
  if (nodes > 0) c.nodes = nodes;
  if (c.nodes > 1 && !c.inter_link)
    throw core::ConfigError(p.string() + ": /inter_node: missing; " + std::to_string(c.nodes) +
                            " nodes need an inter-node link");
  return c;
}

collectives::NcclSettings settings_from(const std::string& algo, const std::string& proto, int minc, int maxc) {
  config::CollectiveSettings s;
  auto split = [](const std::string& v) {
    std::vector<std::string> out;
    std::stringstream ss(v);
    std::string item;
    while (std::getline(ss, item, ',')) out.push_back(item);
    return out;
  };
  s.nccl_algo = split(algo);
  s.nccl_proto = split(proto);
  s.nccl_min_nchannels = minc;
  s.nccl_max_nchannels = maxc;
  try {
    return collectives::nccl_settings(s);
  } catch (const std::invalid_argument& e) {
    throw core::ConfigError(std::string("--algo/--proto: ") + e.what());
  }
}

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

}  // namespace

int cmd_collective(const CommonOptions& common, const CollectiveArgs& args) {
  if (args.op != "allreduce")
    throw core::ConfigError("collective: \"" + args.op + "\" is not supported; supported: allreduce");
  auto cat = common.catalog();
  auto cluster = load_cluster(cat, args.cluster, args.nodes, nullptr);
  const double lo = parse_size("--min-bytes", args.min_bytes), hi = parse_size("--max-bytes", args.max_bytes);
  if (hi < lo) throw core::ConfigError("--max-bytes " + args.max_bytes + " is below --min-bytes " + args.min_bytes);
  if (!(args.factor > 1)) throw core::ConfigError("--factor: " + fmt("%g", args.factor) + " is not > 1");
  auto settings = settings_from(args.algo, args.proto, args.min_channels, args.max_channels);
  auto topo = collectives::nccl_topology(cluster);
  try {
    collectives::validate(topo);
  } catch (const std::invalid_argument& e) {
    throw core::ConfigError(cluster.file + ": " + e.what());
  }
  const int n = cluster.world_size();
  Json rows = Json::array();
  std::ostringstream table;
  table << "# ddpsim collective allreduce: " << cluster.name << ", " << cluster.nodes << " x " << cluster.gpus_per_node
        << " " << cluster.gpu.name << " = " << n << " ranks (predicted, float sum)\n";
  table << "#       size         count     time   algbw   busbw  algo      proto   channels\n";
  table << "#        (B)    (elements)     (us)  (GB/s)  (GB/s)\n";
  for (double size = lo; size <= hi * (1 + 1e-12); size *= args.factor) {
    // nccl-tests rounds the size down to whole float elements.
    const double bytes = std::max(4.0, std::floor(size / 4) * 4);
    collectives::AllReduceEstimate e;
    try {
      e = collectives::predict_allreduce(topo, bytes, settings);
    } catch (const std::invalid_argument& ex) {
      throw core::ConfigError(std::string("collective: ") + ex.what());
    }
    const double alg = collectives::algbw(bytes, e.time) / 1e9;
    const double bus = collectives::busbw_allreduce(alg, n);
    char line[200];
    std::snprintf(line, sizeof line, "%12.0f  %12.0f %8.2f %7.2f %7.2f  %-9s %-7s %8d\n", bytes, bytes / 4,
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
  Json doc{{"cluster", cluster.name}, {"world_size", n}, {"nodes", cluster.nodes}, {"rows", rows}};
  if (!args.json_out.empty()) report::write_output(args.json_out, doc.dump(2));
  if (args.json_out != "-") std::cout << table.str();
  return 0;
}

int cmd_calibrate(const CommonOptions& common, const CalibrateArgs& args) {
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
  if (log.nranks() > 0 && log.nranks() != n)
    throw core::ConfigError(args.log + ": the log has " + std::to_string(log.nranks()) + " ranks but cluster \"" +
                            cluster.name + "\" has " + std::to_string(n) + " (" + std::to_string(cluster.nodes) +
                            " x " + std::to_string(cluster.gpus_per_node) + "); give --nodes or another cluster");
  // Median out-of-place time per size over every run in the file.
  std::map<double, std::vector<double>> by_size;
  for (const auto& r : log.rows)
    if (r.oop_time_us > 0) by_size[r.size_bytes].push_back(r.oop_time_us * 1e-6);
  std::vector<std::pair<double, double>> points;
  for (auto& [size, times] : by_size) {
    std::sort(times.begin(), times.end());
    const size_t m = times.size();
    points.push_back({size, m % 2 ? times[m / 2] : 0.5 * (times[m / 2 - 1] + times[m / 2])});
  }
  std::vector<std::pair<double, double>> train, test;
  for (size_t i = 0; i < points.size(); ++i) (args.holdout && i % 2 ? test : train).push_back(points[i]);

  auto start = collectives::nccl_topology(cluster);
  start.bw_scale_intra = start.bw_scale_inter = start.latency_scale = 1.0;
  start.latency_offset = 0.0;
  collectives::NcclFit fit;
  collectives::NcclTopology fitted;
  try {
    fitted = collectives::calibrate(start, train, &fit);
  } catch (const std::invalid_argument& e) {
    throw core::ConfigError(args.log + ": " + e.what());
  }

  auto rel_errors = [](const collectives::NcclTopology& t, const std::vector<std::pair<double, double>>& pts) {
    std::vector<double> errs;
    for (const auto& [b, meas] : pts) errs.push_back(collectives::predict_allreduce(t, b).time / meas - 1.0);
    return errs;
  };
  auto median_abs = [](std::vector<double> v) {
    if (v.empty()) return 0.0;
    for (auto& x : v) x = std::fabs(x);
    std::sort(v.begin(), v.end());
    const size_t m = v.size();
    return m % 2 ? v[m / 2] : 0.5 * (v[m / 2 - 1] + v[m / 2]);
  };
  const auto before = rel_errors(start, points);
  const auto after = rel_errors(fitted, points);
  Json knobs{{"bw_scale_intra", fitted.bw_scale_intra},
             {"bw_scale_inter", fitted.bw_scale_inter},
             {"latency_scale", fitted.latency_scale},
             {"latency_offset_s", fitted.latency_offset},
             {"source", fs::path(args.log).filename().string()}};
  const double med_before = median_abs(before), med_after = median_abs(after);
  double med_test = 0;
  if (args.holdout) med_test = median_abs(rel_errors(fitted, test));
  knobs["fit"] = {{"median_abs_time_error_before", med_before},
                  {"median_abs_time_error_after", med_after},
                  {"points", train.size()}};

  std::ostringstream o;
  o << "calibrate: " << args.log << " (" << points.size() << " sizes, " << n << " ranks) against " << cluster.name
    << "\n";
  o << "       size    measured us   before us   err %    after us   err %" << (args.holdout ? "   used" : "") << "\n";
  Json rows = Json::array();
  for (size_t i = 0; i < points.size(); ++i) {
    const double b = points[i].first, meas = points[i].second;
    const bool used = !args.holdout || i % 2 == 0;
    char line[200];
    std::snprintf(line, sizeof line, "%11.0f %14.2f %11.2f %7.1f %11.2f %7.1f%s\n", b, meas * 1e6,
                  meas * (1 + before[i]) * 1e6, before[i] * 100, meas * (1 + after[i]) * 1e6, after[i] * 100,
                  args.holdout ? (used ? "   fit" : "   held out") : "");
    o << line;
    rows.push_back({{"size_bytes", b},
                    {"measured_us", meas * 1e6},
                    {"before_error", before[i]},
                    {"after_error", after[i]},
                    {"held_out", !used}});
  }
  o << "median |time error|: " << fmt("%.1f", med_before * 100) << " % before, " << fmt("%.1f", med_after * 100)
    << " % after";
  if (args.holdout) o << ", " << fmt("%.1f", med_test * 100) << " % on the held-out sizes";
  o << "\nfitted: bw_scale_" << (cluster.nodes > 1 ? "inter " : "intra ")
    << fmt("%.4g", cluster.nodes > 1 ? fitted.bw_scale_inter : fitted.bw_scale_intra) << ", latency_scale "
    << fmt("%.4g", fitted.latency_scale) << ", latency_offset " << core::format_time(fitted.latency_offset) << "\n";

  if (!args.out.empty()) {
    Json doc = core::read_json_file(cluster_file.string());
    doc["nccl_calibration"] = knobs;
    doc["nodes"] = cluster.nodes;
    doc["name"] = cluster.name + "-calibrated";
    report::write_output(args.out, doc.dump(2));
    o << "wrote " << args.out << " (use it as --cluster or as a scenario's \"cluster\")\n";
  }
  Json result{{"log", args.log},
              {"cluster", cluster.name},
              {"world_size", n},
              {"calibration", knobs},
              {"rows", rows},
              {"median_abs_error_before", med_before},
              {"median_abs_error_after", med_after}};
  if (args.holdout) result["median_abs_error_held_out"] = med_test;
  if (!args.json_out.empty()) report::write_output(args.json_out, result.dump(2));
  if (args.json_out != "-") std::cout << o.str();
  return 0;
}

}  // namespace ddpsim::app
