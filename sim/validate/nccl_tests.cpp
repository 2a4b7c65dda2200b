#include "validate/nccl_tests.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <stdexcept>

#include "collectives/topology.hpp"
#include "collectives/validated.hpp"
#include "core/error.hpp"
#include "core/stats.hpp"
#include "core/text.hpp"

namespace ddpsim::validate {

using core::Json;

namespace {

// The title line and the fields every collective document starts with.
std::string op_name(collectives::Func func) {
  return func == collectives::Func::ALL_GATHER       ? "allgather"
         : func == collectives::Func::REDUCE_SCATTER ? "reducescatter"
         : func == collectives::Func::BROADCAST      ? "broadcast"
                                                     : "allreduce";
}

report::Rendered start(const config::ClusterSpec& cluster, const collectives::NcclTopology& topo,
                       collectives::Func func) {
  report::Rendered r;
  std::ostringstream t;
  t << "# ddpsim collective " << op_name(func) << ": " << cluster.name << ", " << cluster.nodes << " x "
    << cluster.gpus_per_node << " " << cluster.gpu.name << " = " << cluster.world_size() << " ranks (predicted, float"
    << (func == collectives::Func::ALL_GATHER  ? ""
        : func == collectives::Func::BROADCAST ? ", root 0"
                                               : " sum")
    << "; NCCL " << collectives::nccl_version_string(topo.nccl_version) << ", " << topo.gpus_per_process
    << " GPU(s) per process" << (topo.cuda_graph ? ", CUDA graph" : "");
  const bool plugin = topo.net_plugin != collectives::NetPlugin::NONE;
  const std::string plugin_release = collectives::nccl_version_string(topo.net_plugin_version);
  if (plugin && topo.net_plugin_version) t << "; aws-ofi-nccl " << plugin_release << " (log)";
  t << ")\n";
  // How far to trust the table (issue 24 item 4): the closest validated table of this collective
  // (without one, what stands in), and the held-out figure where the cluster leaves it
  // (collectives/validated.hpp).
  const std::string trust =
      collectives::trust_line(cluster.name, cluster.gpu.name, cluster.nodes, cluster.net_plugin, func);
  t << "# trust: " << trust << "\n";
  r.text = t.str();
  r.doc = {{"collective", op_name(func)},
           {"cluster", cluster.name},
           {"world_size", cluster.world_size()},
           {"nodes", cluster.nodes},
           {"nccl_version", collectives::nccl_version_string(topo.nccl_version)},
           {"gpus_per_process", topo.gpus_per_process},
           {"cuda_graph", topo.cuda_graph},
           {"trust", trust}};
  if (plugin) r.doc["net_plugin_release"] = plugin_release;
  return r;
}

}  // namespace

collectives::AllReduceEstimate predict(const collectives::NcclTopology& topo, double bytes,
                                       const collectives::NcclSettings& settings, collectives::Func func) {
  try {
    return collectives::predict_collective(func, topo, bytes, settings);
  } catch (const std::invalid_argument& ex) {
    throw core::ConfigError(std::string("collective: ") + ex.what());
  }
}

bool whole_buffer(collectives::Func func) {
  return func == collectives::Func::ALL_REDUCE || func == collectives::Func::BROADCAST;
}

double nccl_tests_size(collectives::Func func, double requested, int nranks) {
  const double count = std::floor(requested / 4);
  if (whole_buffer(func) || nranks < 1) return count * 4;
  return nranks * std::floor(std::floor(count / nranks) / 4) * 4 * 4;
}

report::Rendered allreduce_table(const config::ClusterSpec& cluster, const collectives::NcclTopology& topo,
                                 const collectives::NcclSettings& settings, double lo, double hi, double factor,
                                 collectives::Func func) {
  report::Rendered r = start(cluster, topo, func);
  const int n = cluster.world_size();
  std::ostringstream table;
  table << "#       size         count     time   algbw   busbw  algo          proto   channels\n";
  table << "#        (B)    (elements)     (us)  (GB/s)  (GB/s)\n";
  Json rows = Json::array();
  for (double size = lo; size <= hi * (1 + 1e-12); size *= factor) {
    // nccl-tests rounds the size down (whole floats; whole 16-byte per-rank parts); too small a
    // size for every rank to hold a part runs nothing and is left out.
    const double bytes =
        whole_buffer(func) ? std::max(4.0, nccl_tests_size(func, size, n)) : nccl_tests_size(func, size, n);
    if (!(bytes > 0)) continue;
    const auto e = predict(topo, bytes, settings, func);
    const double alg = collectives::algbw(bytes, e.time) / 1e9;
    const double bus = collectives::busbw(func, alg, n);
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
  r.text += table.str();
  r.doc["rows"] = rows;
  return r;
}

report::Rendered explain_allreduce(const config::ClusterSpec& cluster, const collectives::NcclTopology& topo,
                                   const collectives::NcclSettings& settings, double bytes, collectives::Func func) {
  report::Rendered r = start(cluster, topo, func);
  const int n = cluster.world_size();
  std::vector<collectives::AllReduceEstimate> cands;
  try {
    cands = collectives::collective_candidates(func, topo, bytes, settings);
  } catch (const std::invalid_argument& ex) {
    throw core::ConfigError(std::string("collective: ") + ex.what());
  }
  if (cands.empty()) throw core::ConfigError("collective: no (algorithm, protocol) is enabled for this topology");
  const auto tu = collectives::tune_model(topo, settings, func);
  const bool thresholds = topo.nccl_version != 0 && topo.nccl_version < 20500;  // before the 2.5 tuner
  std::ostringstream table;
  table << "# " << core::printf_text("%.0f", bytes) << " B: every enabled (algorithm, protocol)"
        << (thresholds ? "; NCCL 2.4 picks by fixed size thresholds" : ", by NCCL's tuner time")
        << "; NCCL runs the first. graph: ring " << tu.ring.nchannels << " x "
        << core::printf_text("%.1f", tu.ring.bw_intra) << " GB/s, tree " << tu.tree.nchannels << " x "
        << core::printf_text("%.1f", tu.tree.bw_intra) << " GB/s; " << tu.comm_channels << " channels\n";
  table << "#  algo          proto    nccl model us  achieved us  busbw GB/s  channels  latency us  algbw GB/s  "
           "achieved vs NCCL's estimate\n";
  Json cand_rows = Json::array();
  for (size_t i = 0; i < cands.size(); ++i) {
    const auto& e = cands[i];
    const double bus = collectives::busbw(func, collectives::algbw(bytes, e.time), n) / 1e9;
    char line[200];
    std::snprintf(line, sizeof line, "%s %-13s %-7s %14.2f %12.2f %11.2f %9d %11.2f %11.2f", i == 0 ? "*" : " ",
                  collectives::to_string(e.algo).c_str(), collectives::to_string(e.proto).c_str(),
                  e.nccl_model_time * 1e6, e.time * 1e6, bus, e.nchannels, e.latency * 1e6, e.bandwidth / 1e9);
    const std::string why = collectives::explain_difference(e);
    table << line << (why.empty() ? "" : "  ") << why << "\n";
    cand_rows.push_back({{"algo", collectives::to_string(e.algo)},
                         {"proto", collectives::to_string(e.proto)},
                         {"picked", i == 0},
                         {"nccl_model_time_us", e.nccl_model_time * 1e6},
                         {"time_us", e.time * 1e6},
                         {"busbw_GBps", bus},
                         {"channels", e.nchannels},
                         {"latency_us", e.latency * 1e6},
                         {"bandwidth_GBps", e.bandwidth / 1e9},
                         {"why",
                          {{"text", why},
                           {"bandwidth_limit", collectives::limit_key(e.why.limit)},
                           {"nccl_bandwidth_GBps", e.why.nccl_bandwidth / 1e9},
                           {"nccl_latency_us", e.why.nccl_latency * 1e6},
                           {"pipeline_fill_us", e.why.fill * 1e6},
                           {"simple_slices", e.why.simple_slices},
                           {"ring_hops", e.why.ring_hops},
                           {"host_bound", e.why.host_bound},
                           {"calibrated", e.why.calibrated}}}});
  }
  // How far a call of this size can be trusted: the trust line's figure in this size's class,
  // as the run report's band takes it (collectives/validated.hpp Trust::at).
  const collectives::Trust t =
      collectives::trust(cluster.name, cluster.gpu.name, cluster.nodes, cluster.net_plugin, func);
  table << "# trust at this size: median |busbw error| " << core::printf_text("%.1f", 100 * t.at(bytes))
        << " % for sizes " << collectives::size_class_label(collectives::size_class(bytes))
        << " (the trust line's table in that size class" << (t.grown > 0 ? ", at least the held-out figure" : "")
        << "; what a run's band takes for such a call)\n";
  r.text += table.str();
  r.doc["size_bytes"] = bytes;
  r.doc["candidates"] = cand_rows;
  r.doc["trust_at_size"] = t.at(bytes);
  return r;
}

report::Rendered compare_with_log(const config::ClusterSpec& cluster, const collectives::NcclTopology& topo,
                                  const collectives::NcclSettings& settings, const collectives::NcclTestsLog& log,
                                  const std::string& log_name, const std::vector<int>& run_g, double tolerance,
                                  collectives::Func func) {
  report::Rendered r = start(cluster, topo, func);
  const int n = cluster.world_size();
  std::ostringstream table;
  // Side by side with the log: every run with its own launch mode (banner nGpus, else -g).
  table << "# against " << log_name << " (out-of-place times; busbw error = predicted / measured - 1)\n";
  table << "# run        size    pred us    meas us  pred busbw  meas busbw   err %  algo          proto\n";
  std::vector<double> large, small, mid, big;  // mid / big: the >= 1 MiB rows below / from 64 MiB
  Json rows = Json::array();
  for (size_t run = 0; run < log.runs.size(); ++run) {
    // Each run as it was launched: its -g, and the banner's "graph: N" over --cuda-graph.
    const collectives::NcclTopology t = collectives::as_launched(topo, {0, 0, run_g[run], log.runs[run].graph_mode()});
    for (size_t i = 0; i < log.runs[run].row_count; ++i) {
      const auto& row = log.rows[log.runs[run].first_row + i];
      if (!(row.size_bytes > 0) || !(row.oop_time_us > 0)) continue;
      const auto e = predict(t, row.size_bytes, settings, func);
      const double pred = collectives::busbw(func, collectives::algbw(row.size_bytes, e.time), n) / 1e9;
      const double meas = collectives::busbw(func, collectives::algbw(row.size_bytes, row.oop_time_us * 1e-6), n) / 1e9;
      const double err = pred / meas - 1;
      const collectives::SizeClass k = collectives::size_class(row.size_bytes);
      (k == collectives::SizeClass::SMALL ? small : large).push_back(err);
      if (k != collectives::SizeClass::SMALL) (k == collectives::SizeClass::BIG ? big : mid).push_back(err);
      char line[220];
      std::snprintf(line, sizeof line, "%5zu %11.0f %10.2f %10.2f %11.2f %11.2f %7.1f  %-13s %-7s\n", run,
                    row.size_bytes, e.time * 1e6, row.oop_time_us, pred, meas, err * 100,
                    collectives::to_string(e.algo).c_str(), collectives::to_string(e.proto).c_str());
      table << line;
      rows.push_back({{"run", run},
                      {"size_bytes", row.size_bytes},
                      {"gpus_per_process", t.gpus_per_process},
                      {"cuda_graph", t.cuda_graph},
                      {"time_us", e.time * 1e6},
                      {"measured_time_us", row.oop_time_us},
                      {"busbw_GBps", pred},
                      {"measured_busbw_GBps", meas},
                      {"busbw_error", err},
                      {"algo", collectives::to_string(e.algo)},
                      {"proto", collectives::to_string(e.proto)},
                      {"channels", e.nchannels}});
      if (row.per_iteration)  // nccl-tests -I 1: the measured spread over the timed iterations
        rows.back()["measured_iterations"] = {{"min_us", row.oop_iter.min_us},
                                              {"max_us", row.oop_iter.max_us},
                                              {"p99_us", row.oop_iter.p99_us},
                                              {"cv_pct", row.oop_iter.cv_pct}};
    }
  }
  const double ml = core::median_abs(large), ms = core::median_abs(small);
  // nccl-tests -I 1: how much the measurement itself varied over its timed iterations.
  std::vector<double> cv;
  for (const auto& run : log.runs)
    for (size_t i = 0; i < run.row_count; ++i)
      if (const auto& row = log.rows[run.first_row + i]; row.per_iteration && row.oop_time_us > 0)
        cv.push_back(row.oop_iter.cv_pct);
  // The >= 1 MiB rows split where the band's size classes split (collectives/validated.hpp).
  const auto part = [](const std::vector<double>& v, const char* label) {
    if (v.empty()) return std::string();
    char b[96];
    std::snprintf(b, sizeof b, "%zu %s, %.1f %%", v.size(), label, core::median_abs(v) * 100);
    return std::string(b);
  };
  table << "median |busbw error|: " << (large.empty() ? std::string("-") : core::printf_text("%.1f %%", ml * 100))
        << " for sizes >= 1 MiB (" << large.size() << " rows"
        << (mid.empty() || big.empty() ? "" : ": " + part(mid, "at 1-64 MiB") + "; " + part(big, "at >= 64 MiB"))
        << "), " << (small.empty() ? std::string("-") : core::printf_text("%.1f %%", ms * 100)) << " below ("
        << small.size() << " rows)\n";
  if (!cv.empty())
    table << "measured spread (nccl-tests -I 1): median i_cv% " << core::printf_text("%.2f", core::median_abs(cv))
          << " % over " << cv.size() << " rows (the coefficient of variation of each row's timed iterations)\n";
  r.doc["compare"] = {{"log", log_name},
                      {"median_abs_busbw_error_large", large.empty() ? Json(nullptr) : Json(ml)},
                      {"median_abs_busbw_error_small", small.empty() ? Json(nullptr) : Json(ms)},
                      {"median_abs_busbw_error_mid", mid.empty() ? Json(nullptr) : Json(core::median_abs(mid))},
                      {"median_abs_busbw_error_big", big.empty() ? Json(nullptr) : Json(core::median_abs(big))},
                      {"measured_iter_cv_pct_median", cv.empty() ? Json(nullptr) : Json(core::median_abs(cv))}};
  if (tolerance > 0) {
    // A tolerance that nothing is checked against would always pass.
    if (large.empty())
      throw core::ConfigError(log_name + ": no rows of 1 MiB or more, so --tolerance " +
                              core::printf_text("%g", tolerance) +
                              " has nothing to check; expected a log with sizes >= 1 MiB (or no --tolerance)");
    const bool within = ml <= tolerance;
    r.doc["compare"]["tolerance"] = tolerance;
    r.doc["compare"]["within_tolerance"] = within;
    if (!within) {
      table << "beyond tolerance: " << core::printf_text("%.1f %%", ml * 100) << " > "
            << core::printf_text("%.1f %%", tolerance * 100) << "\n";
      r.status = 3;
    }
  }
  r.text += table.str();
  r.doc["rows"] = rows;
  return r;
}

}  // namespace ddpsim::validate
