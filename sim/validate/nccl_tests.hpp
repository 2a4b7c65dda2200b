#pragma once
// `ddpsim collective allreduce`: NCCL's all-reduce as an nccl-tests-style table predicted from the
// hardware description, every candidate (algorithm, protocol) for one size (--explain), or the
// prediction side by side with a real all_reduce_perf log (--compare).
#include <string>
#include <vector>

#include "collectives/nccl_model.hpp"
#include "collectives/nccl_tests_log.hpp"
#include "config/specs.hpp"
#include "report/rendered.hpp"

namespace ddpsim::validate {

// collectives::predict_allreduce with the model's refusals as core::ConfigError (exit 2).
collectives::AllReduceEstimate predict(const collectives::NcclTopology& topo, double bytes,
                                       const collectives::NcclSettings& settings);

// Sizes lo, lo x factor, ... <= hi, each rounded down to whole floats as nccl-tests does.
report::Rendered allreduce_table(const config::ClusterSpec& cluster, const collectives::NcclTopology& topo,
                                 const collectives::NcclSettings& settings, double lo, double hi, double factor);

// Every enabled (algorithm, protocol) for `bytes`, in NCCL's order of preference (the first is run).
report::Rendered explain_allreduce(const config::ClusterSpec& cluster, const collectives::NcclTopology& topo,
                                   const collectives::NcclSettings& settings, double bytes);

// The log's out-of-place rows against the prediction, each run with its own -g (`run_g`);
// `tolerance` > 0 holds the median |busbw error| for sizes >= 1 MiB to it (status 3 beyond).
report::Rendered compare_with_log(const config::ClusterSpec& cluster, const collectives::NcclTopology& topo,
                                  const collectives::NcclSettings& settings, const collectives::NcclTestsLog& log,
                                  const std::string& log_name, const std::vector<int>& run_g, double tolerance);

}  // namespace ddpsim::validate
