#pragma once
// Command-line helpers: the one set of NCCL flags (collective, calibrate, run, sweep, compare),
// nccl-tests sizes and logs turned into the library's types, errors as core::ConfigError naming
// the flag.
#include <filesystem>
#include <string>
#include <vector>

namespace CLI {
class App;
}

#include "collectives/nccl_model.hpp"
#include "collectives/nccl_tests_log.hpp"
#include "config/catalog.hpp"

namespace ddpsim::app {

// NCCL's environment settings as flags, the same for every subcommand that takes them.
struct NcclFlags {
  std::string algo, proto;  // NCCL_ALGO / NCCL_PROTO, as NCCL reads them
  int min_channels = 0, max_channels = 0;
  int min_ctas = 0, max_ctas = 0;  // NCCL_MIN_CTAS / NCCL_MAX_CTAS (2.17+)
  bool collnet_enable = false;     // NCCL_COLLNET_ENABLE=1 (CollNet on a cluster with inter_node.sharp)
  std::string buffsize;            // NCCL_BUFFSIZE (bytes, 4M, 4MiB); empty = NCCL's 4 MiB
  int nthreads = 0;                // NCCL_NTHREADS; 0 = NCCL's default
  std::string nccl_version;        // "2.8.3"; empty = the log's / cluster's
  bool given = false;              // add_nccl_flags was called (the subcommand takes them)

  // Checks every flag (exit 2 naming the flag) and returns the settings collective/calibrate use.
  collectives::NcclSettings settings() const;
  // The flags as scenario overrides (collective.NCCL_ALGO=..., collective.nccl_version=...) for
  // run, sweep and compare; checked as settings() does. Empty when no flag was given.
  std::vector<std::string> as_overrides() const;
};

// Adds --algo, --proto, --min-channels, --max-channels, --min-ctas, --max-ctas, --collnet-enable,
// --buffsize, --nthreads and --nccl-version to `cmd`; `what` ends each help text ("" or "the log
// was run with").
void add_nccl_flags(CLI::App& cmd, NcclFlags& flags, const std::string& what = "");

// The number at the start of `text` into `v`; returns how many characters it took (0: none).
size_t leading_number(const std::string& text, double& v);

// Command-line sizes (-b, -e, --explain, --buffsize): a number of bytes with an optional K, M or G
// (powers of 1024, as nccl-tests reads them) or KiB, MiB, GiB, TiB. "8GB" (kB, MB, GB, TB) is
// refused: in ddpsim's files GB is 10^9, in nccl-tests' -e "8G" is 2^30, and a flag that read one
// of them silently would be off by 7 %; the message gives the accepted forms.
double parse_size(const std::string& flag, const std::string& text);

config::ClusterSpec load_cluster(const config::Catalog& cat, const std::string& name, int nodes,
                                 std::filesystem::path* file);

// `collnet`: NCCL_COLLNET_ENABLE=1 (CollNet where the cluster has inter_node.sharp).
collectives::NcclSettings settings_from(const std::string& algo, const std::string& proto, int minc, int maxc,
                                        bool collnet = false);

// --buffsize / --nthreads (NCCL_BUFFSIZE / NCCL_NTHREADS) into `settings`; empty / 0 keep NCCL's defaults.
// Bad values: core::ConfigError naming the flag, the value and what is allowed.
void apply_buffer_flags(collectives::NcclSettings& settings, const std::string& buffsize, int nthreads);

int version_from(const std::string& flag, const std::string& text);

// printf-style formatting of one number.
std::string fmt(const char* f, double v);

// nccl-tests -g of each run in `log`: the run's own "# nThread .. nGpus .." banner, else `flag`
// ("8,1": one value per run in file order, or one for all; empty = 1). Errors name the flag.
std::vector<int> launch_per_run(const std::string& flag, const collectives::NcclTestsLog& log,
                                const std::string& log_name, const config::ClusterSpec& cluster);

// Without --nodes (`nodes_flag` 0): when the log's device lines name H hosts with the cluster's
// GPUs per node each, the cluster runs at H nodes, said on stderr. Otherwise nothing changes (and
// check_log_ranks says what does not fit).
void nodes_from_log(config::ClusterSpec& c, const collectives::NcclTestsLog& log, const std::string& name,
                    int nodes_flag);

// The log must come from a machine of the cluster's size: its "# Rank .. device" lines, or the
// rank count its busbw/algbw ratio implies.
// Refuses (core::ConfigError, exit 2) a log another nccl-tests binary than `test` wrote, or one of
// another rank count than the cluster's.
void check_log_ranks(const collectives::NcclTestsLog& log, const std::string& name, const config::ClusterSpec& c,
                     const std::string& test = "all_reduce_perf");

}  // namespace ddpsim::app
