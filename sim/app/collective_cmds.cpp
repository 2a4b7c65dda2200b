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

// The number at the start of `text` into `v`; returns how many characters it took (0: none).
size_t leading_number(const std::string& text, double& v) {
  size_t pos = 0;
  try {
    v = std::stod(text, &pos);
  } catch (const std::exception&) {
    pos = 0;
  }
  return pos;
}

// nccl-tests sizes: a number with an optional K, M or G suffix (powers of 1024), or a unit ("8MiB").
double parse_size(const std::string& flag, const std::string& text) {
  if (auto q = core::parse_quantity(text, core::Quantity::BYTES)) return *q;
  double v = 0;
  size_t pos = leading_number(text, v);
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

collectives::NcclSettings settings_from(const std::string& algo, const std::string& proto, int minc, int maxc,
                                        bool collnet = false) {
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
  s.nccl_collnet_enable = collnet ? 1 : 0;
  try {
    return collectives::nccl_settings(s);
  } catch (const std::invalid_argument& e) {
    throw core::ConfigError(std::string("--algo/--proto: ") + e.what());
  }
}

int version_from(const std::string& flag, const std::string& text) {
  try {
    return collectives::parse_nccl_version(text);
  } catch (const std::invalid_argument& e) {
    throw core::ConfigError(flag + ": " + e.what());
  }
}

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

}  // namespace

namespace {

// nccl-tests -g of each run in `log`: the run's own "# nThread .. nGpus .." banner, else `flag`
// ("8,1": one value per run in file order, or one for all; empty = 1). Errors name the flag.
std::vector<int> launch_per_run(const std::string& flag, const collectives::NcclTestsLog& log,
                                const std::string& log_name, const config::ClusterSpec& cluster) {
  std::vector<int> values;
  std::stringstream ss(flag);
  for (std::string item; !flag.empty() && std::getline(ss, item, ',');) {
    double g = 0;
    const size_t pos = leading_number(item, g);
    if (pos == 0 || pos != item.size() || g != std::floor(g) || g < 1 || g > cluster.gpus_per_node)
      throw core::ConfigError("--gpus-per-process: \"" + item + "\" is not an integer from 1 to " +
                              std::to_string(cluster.gpus_per_node) + " (GPUs per node of \"" + cluster.name + "\")");
    values.push_back(static_cast<int>(g));
  }
  if (values.size() > 1 && values.size() != log.runs.size())
    throw core::ConfigError("--gpus-per-process: " + std::to_string(values.size()) + " values for " +
                            std::to_string(log.runs.size()) + " runs in " + log_name +
                            "; give one value, or one per run in file order");
  std::vector<int> per_run(log.runs.size(), 1);
  for (size_t r = 0; r < log.runs.size(); ++r) {
    if (log.runs[r].ngpus > 0)
      per_run[r] = std::min(log.runs[r].ngpus, cluster.gpus_per_node);
    else if (!values.empty())
      per_run[r] = values.size() == 1 ? values[0] : values[r];
  }
  return per_run;
}

// The log must come from a machine of the cluster's size: its "# Rank .. device" lines, or the
// rank count its busbw/algbw ratio implies.
void check_log_ranks(const collectives::NcclTestsLog& log, const std::string& name, const config::ClusterSpec& c) {
  if (!log.test_name.empty() && log.test_name != "all_reduce_perf")
    throw core::ConfigError(name + ": the log is " + log.test_name +
                            " output; ddpsim models all-reduce: give all_reduce_perf output");
  const int n = c.world_size();
  const bool listed = log.nranks() > 0;
  const int ranks = listed ? log.nranks() : log.nranks_from_bandwidths();
  if (ranks > 0 && ranks != n)
    throw core::ConfigError(name + ": the log has " + std::to_string(ranks) + " ranks (" +
                            (listed ? "its device lines" : "busbw/algbw = 2(n-1)/n on its largest row") +
                            ") but cluster \"" + c.name + "\" has " + std::to_string(n) + " (" +
                            std::to_string(c.nodes) + " x " + std::to_string(c.gpus_per_node) +
                            "); give --nodes or another cluster");
}

double median_abs(std::vector<double> v) {
  if (v.empty()) return 0.0;
  for (auto& x : v) x = std::fabs(x);
  std::sort(v.begin(), v.end());
  const size_t m = v.size();
  return m % 2 ? v[m / 2] : 0.5 * (v[m / 2 - 1] + v[m / 2]);
}

collectives::AllReduceEstimate predict(const collectives::NcclTopology& topo, double bytes,
                                       const collectives::NcclSettings& settings) {
  try {
    return collectives::predict_allreduce(topo, bytes, settings);
  } catch (const std::invalid_argument& ex) {
    throw core::ConfigError(std::string("collective: ") + ex.what());
  }
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
  if (args.tolerance > 0 && args.compare.empty())
    throw core::ConfigError("--tolerance: only with --compare LOG (the measurements to hold the prediction to)");
  auto settings = settings_from(args.algo, args.proto, args.min_channels, args.max_channels, args.collnet_enable);
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
    if (!args.json_out.empty()) report::write_output(args.json_out, doc.dump(2));
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
      const bool within = large.empty() || ml <= args.tolerance;
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
  if (!args.json_out.empty()) report::write_output(args.json_out, doc.dump(2));
  if (args.json_out != "-") std::cout << table.str();
  return status;
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
  const auto settings = settings_from(args.algo, args.proto, args.min_channels, args.max_channels);
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

  if (!args.out.empty()) {
    Json doc = core::read_json_file(cluster_file.string());
    doc["nccl_calibration"] = knobs;
    doc["nodes"] = cluster.nodes;
    doc["name"] = cluster.name + "-calibrated";
    if (version != 0) doc["nccl_version"] = collectives::nccl_version_string(version);
    report::write_output(args.out, doc.dump(2));
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
  if (!args.json_out.empty()) report::write_output(args.json_out, result.dump(2));
  if (args.json_out != "-") std::cout << o.str();
  return 0;
}

}  // namespace ddpsim::app
