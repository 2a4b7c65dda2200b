#include "app/nccl_options.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <sstream>

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
  auto v = core::parse_nccl_tests_size(text);
  if (!v || !(*v > 0))
    throw core::ConfigError(flag + ": \"" + text + "\" is not a size; expected bytes like 8, 64K, 256M, 8G or 1MiB");
  // The range every byte quantity has (parse_quantity checks it for sizes with a unit); the NCCL
  // model counts bytes in 64-bit integers.
  if (*v > core::quantity_range(core::Quantity::BYTES).second)  // 1e18
    throw core::ConfigError(flag + ": \"" + text + "\" is too large; sizes are at most 1e18 bytes");
  return *v;
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
                                        bool collnet) {
  config::CollectiveSettings s;
  s.nccl_collnet_enable = collnet ? 1 : 0;
  s.nccl_min_nchannels = minc;
  s.nccl_max_nchannels = maxc;
  try {
    if (!algo.empty()) s.nccl_algo = collectives::allreduce_algos(algo);
  } catch (const std::invalid_argument& e) {
    throw core::ConfigError("--algo \"" + algo + "\": " + e.what());
  }
  try {
    if (!proto.empty()) s.nccl_proto = collectives::allreduce_protos(proto);
  } catch (const std::invalid_argument& e) {
    throw core::ConfigError("--proto \"" + proto + "\": " + e.what());
  }
  return collectives::nccl_settings(s);
}

void apply_buffer_flags(collectives::NcclSettings& settings, const std::string& buffsize, int nthreads) {
  if (!buffsize.empty()) {
    const double b = parse_size("--buffsize", buffsize);
    const std::string bad = collectives::check_buffsize(b);
    if (!bad.empty()) throw core::ConfigError("--buffsize: " + buffsize + " is not " + bad);
    settings.buffsize = b;
  }
  if (nthreads != 0) {
    const std::string bad = collectives::check_nthreads(nthreads);
    if (!bad.empty()) throw core::ConfigError("--nthreads: " + std::to_string(nthreads) + " is not " + bad);
    settings.nthreads = nthreads;
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

}  // namespace ddpsim::app
