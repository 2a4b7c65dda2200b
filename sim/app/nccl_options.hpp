#pragma once
// Command-line helpers shared by `ddpsim collective` and `ddpsim calibrate`: NCCL flags, nccl-tests
// sizes and logs turned into the library's types, errors as core::ConfigError naming the flag.
#include <filesystem>
#include <string>
#include <vector>

#include "collectives/nccl_model.hpp"
#include "collectives/nccl_tests_log.hpp"
#include "config/catalog.hpp"

namespace ddpsim::app {

// The number at the start of `text` into `v`; returns how many characters it took (0: none).
size_t leading_number(const std::string& text, double& v);

// nccl-tests sizes: a number with an optional K, M or G suffix (powers of 1024), or a unit ("8MiB").
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

// The log must come from a machine of the cluster's size: its "# Rank .. device" lines, or the
// rank count its busbw/algbw ratio implies.
void check_log_ranks(const collectives::NcclTestsLog& log, const std::string& name, const config::ClusterSpec& c);

}  // namespace ddpsim::app
