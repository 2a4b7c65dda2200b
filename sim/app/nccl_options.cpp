#include "app/nccl_options.hpp"

#include <CLI/CLI.hpp>
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

double parse_size(const std::string& flag, const std::string& text) {
  const std::string accepted =
      "bytes like 8, 64K, 256M, 8G (K, M, G: powers of 1024, as nccl-tests reads them) or "
      "8KiB, 8MiB, 8GiB, 1TiB";
  // The decimal units are ambiguous here (see the header): refused, with the two readings.
  for (const char* si : {"kB", "KB", "MB", "GB", "TB"}) {
    const std::string u(si);
    if (text.size() > u.size() && text.compare(text.size() - u.size(), u.size(), u) == 0) {
      const std::string num = text.substr(0, text.size() - u.size());
      const std::string binary = num + (u[0] == 'k' ? "K" : u.substr(0, 1)) + "iB";
      throw core::ConfigError(flag + ": \"" + text + "\" is ambiguous: write " +
                              (u == "TB" ? binary : num + u.substr(0, 1) + " or " + binary) +
                              " for powers of 1024, or the number of bytes for powers of 1000; accepted: " + accepted);
    }
  }
  if (auto q = core::parse_quantity(text, core::Quantity::BYTES)) return *q;
  auto v = core::parse_nccl_tests_size(text);
  if (!v || !(*v > 0)) throw core::ConfigError(flag + ": \"" + text + "\" is not a size; expected " + accepted);
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

collectives::NcclSettings NcclFlags::settings() const {
  auto s = settings_from(algo, proto, min_channels, max_channels, collnet_enable);
  s.min_ctas = min_ctas;
  s.max_ctas = max_ctas;
  apply_buffer_flags(s, buffsize, nthreads);
  if (!nccl_version.empty()) version_from("--nccl-version", nccl_version);
  return s;
}

std::vector<std::string> NcclFlags::as_overrides() const {
  settings();  // every flag checked, with its name, before it becomes a scenario field
  std::vector<std::string> out;
  // Strings as JSON strings: "2.18" or "Ring" must not be read as a number or fail as JSON.
  if (!algo.empty()) out.push_back("collective.NCCL_ALGO=" + core::Json(algo).dump());
  if (!proto.empty()) out.push_back("collective.NCCL_PROTO=" + core::Json(proto).dump());
  if (min_channels) out.push_back("collective.NCCL_MIN_NCHANNELS=" + std::to_string(min_channels));
  if (max_channels) out.push_back("collective.NCCL_MAX_NCHANNELS=" + std::to_string(max_channels));
  if (min_ctas) out.push_back("collective.NCCL_MIN_CTAS=" + std::to_string(min_ctas));
  if (max_ctas) out.push_back("collective.NCCL_MAX_CTAS=" + std::to_string(max_ctas));
  if (collnet_enable) out.push_back("collective.NCCL_COLLNET_ENABLE=1");
  if (!buffsize.empty()) out.push_back("collective.NCCL_BUFFSIZE=" + fmt("%.0f", parse_size("--buffsize", buffsize)));
  if (nthreads) out.push_back("collective.NCCL_NTHREADS=" + std::to_string(nthreads));
  if (!nccl_version.empty()) out.push_back("collective.nccl_version=" + core::Json(nccl_version).dump());
  return out;
}

namespace {
CLI::Validator count_in(int lo, int hi) {
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        size_t pos = 0;
        long v = 0;
        try {
          v = std::stol(text, &pos);
        } catch (const std::exception&) {
          pos = 0;
        }
        if (pos == 0 || pos != text.size() || v < lo || v > hi)
          return text + " is not allowed; expected an integer from " + std::to_string(lo) + " to " + std::to_string(hi);
        return std::string();
      },
      "an integer from " + std::to_string(lo) + " to " + std::to_string(hi));
}
}  // namespace

void add_nccl_flags(CLI::App& cmd, NcclFlags& f, const std::string& what) {
  const std::string tail = what.empty() ? "" : " " + what;
  f.given = true;
  cmd.add_option("--algo", f.algo,
                 "NCCL_ALGO" + tail +
                     ", as NCCL reads it: comma list of Ring, Tree, NVLS, NVLSTree, CollNetDirect, CollNetChain; ^ "
                     "first disables those listed; ';'-separated function:list entries");
  cmd.add_option("--proto", f.proto,
                 "NCCL_PROTO" + tail + ", as NCCL reads it: comma list of LL, LL128, Simple (^LL128: all but LL128)");
  cmd.add_option("--min-channels", f.min_channels, "NCCL_MIN_NCHANNELS" + tail)->check(count_in(0, 64));
  cmd.add_option("--max-channels", f.max_channels, "NCCL_MAX_NCHANNELS" + tail)->check(count_in(0, 64));
  cmd.add_option("--min-ctas", f.min_ctas, "NCCL_MIN_CTAS" + tail + " (NCCL 2.17+; also bounds the NVLS channels)")
      ->check(count_in(0, 64));
  cmd.add_option("--max-ctas", f.max_ctas, "NCCL_MAX_CTAS" + tail + " (NCCL 2.17+; also bounds the NVLS channels)")
      ->check(count_in(0, 64));
  cmd.add_flag("--collnet-enable", f.collnet_enable,
               "NCCL_COLLNET_ENABLE=1" + tail + ": CollNet (SHARP) where the cluster has inter_node.sharp");
  cmd.add_option("--buffsize", f.buffsize,
                 "NCCL_BUFFSIZE" + tail + ": Simple buffer per channel in bytes (4M, 4MiB, 4194304; default 4 MiB)");
  cmd.add_option("--nthreads", f.nthreads, "NCCL_NTHREADS" + tail + ": 64 to 512, a multiple of 32 (default NCCL's)");
  cmd.add_option("--nccl-version", f.nccl_version,
                 "NCCL release" + tail + ", e.g. 2.8.3 (default: the log's 'NCCL version' line, else the cluster's)");
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
    if (log.runs[r].ngpus > 0) {
      per_run[r] = std::min(log.runs[r].ngpus, cluster.gpus_per_node);
    } else if (!values.empty()) {
      per_run[r] = values.size() == 1 ? values[0] : values[r];
    } else if (!log_name.empty()) {
      // A log cut below its banner: -g 1 is a guess, and a single-process -g 8 run taken as
      // eight processes is off by far more than the model's error (the host step per call).
      std::cerr << "ddpsim: warning: " << log_name << ": run " << (r + 1) << " of " << log.runs.size()
                << " has no '# nThread .. nGpus ..' banner; assumed -g 1 (one GPU per process); give "
                   "-g/--gpus-per-process if it ran otherwise\n";
    }
  }
  return per_run;
}

void nodes_from_log(config::ClusterSpec& c, const collectives::NcclTestsLog& log, const std::string& name,
                    int nodes_flag) {
  if (nodes_flag > 0) return;
  const auto hr = log.hosts_by_ranks();
  if (!hr || (*hr)[1] != c.gpus_per_node || (*hr)[0] == c.nodes) return;
  if ((*hr)[0] > 1 && !c.inter_link)
    throw core::ConfigError(name + ": the log's device lines name " + std::to_string((*hr)[0]) + " hosts, and \"" +
                            c.name + "\" has no inter-node link; give a cluster with /inter_node");
  c.nodes = (*hr)[0];
  std::cerr << "ddpsim: " << name << ": " << c.nodes << " nodes of \"" << c.name << "\", from the log's device lines ("
            << c.nodes << " hosts x " << c.gpus_per_node << " GPUs; --nodes sets another count)\n";
}

// The log must come from the nccl-tests binary `test` names (its banner, or its rows:
// collectives::nccl_test_of) and a machine of the cluster's size: its "# Rank .. device" lines, or
// the rank count its busbw/algbw ratio implies.
void check_log_ranks(const collectives::NcclTestsLog& log, const std::string& name, const config::ClusterSpec& c,
                     const std::string& test) {
  const std::string found = collectives::nccl_test_of(log);
  // busbw / algbw: 2(n-1)/n for all_reduce_perf, (n-1)/n for all-gather and reduce-scatter; 1 for
  // broadcast_perf, which says nothing of n.
  const bool one_phase = test == "all_gather_perf" || test == "reduce_scatter_perf";
  const bool ratio_says_n = test != "broadcast_perf";
  if (!found.empty() && found != test)
    throw core::ConfigError(name + ": the log is " + found + " output (" +
                            (log.test_name.empty() ? "its rows' redop and busbw/algbw" : "its banner") + "); give " +
                            test + " output");
  if (found.empty() && test != "all_reduce_perf")
    std::cerr << "ddpsim: warning: " << name << ": the log does not say which nccl-tests binary wrote it (no "
              << "'# Collective test starting' line, and its rows fit several); taken as " << test << "\n";
  for (const auto& w : collectives::log_warnings(log)) std::cerr << "ddpsim: warning: " << w << "\n";
  const int n = c.world_size();
  const bool listed = log.nranks() > 0;
  const int ranks = listed ? log.nranks() : ratio_says_n ? log.nranks_from_bandwidths(one_phase) : 0;
  if (ranks > 0 && ranks != n)
    throw core::ConfigError(
        name + ": the log has " + std::to_string(ranks) + " ranks (" +
        (listed      ? "its device lines"
         : one_phase ? "busbw/algbw = (n-1)/n on its largest row"
                     : "busbw/algbw = 2(n-1)/n on its largest row") +
        ") but cluster \"" + c.name + "\" has " + std::to_string(n) + " (" + std::to_string(c.nodes) + " x " +
        std::to_string(c.gpus_per_node) + "); give " +
        (ranks % c.gpus_per_node == 0 ? "--nodes " + std::to_string(ranks / c.gpus_per_node) : std::string("--nodes")) +
        " or another cluster");
}

}  // namespace ddpsim::app
