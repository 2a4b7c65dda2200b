#pragma once
// `ddpsim collective allreduce|allgather|reducescatter`: NCCL's all-reduce, all-gather or
// reduce-scatter as an nccl-tests-style table predicted from the hardware description, every
// candidate (algorithm, protocol) for one size (--explain), or the prediction side by side with a
// real all_reduce_perf / all_gather_perf / reduce_scatter_perf log (--compare). Sizes are
// nccl-tests' "size" column: all-reduce the buffer, all-gather the output, reduce-scatter the
// input (nranks x the per-rank part; collectives::predict_collective).
#include <string>
#include <vector>

#include "collectives/nccl_model.hpp"
#include "collectives/nccl_tests_log.hpp"
#include "config/specs.hpp"
#include "report/rendered.hpp"

namespace ddpsim::validate {

// collectives::predict_allreduce with the model's refusals as core::ConfigError (exit 2).
collectives::AllReduceEstimate predict(const collectives::NcclTopology& topo, double bytes,
                                       const collectives::NcclSettings& settings,
                                       collectives::Func func = collectives::Func::ALL_REDUCE);

// Sizes lo, lo x factor, ... <= hi, each rounded down as nccl-tests does (nccl_tests_size).
report::Rendered allreduce_table(const config::ClusterSpec& cluster, const collectives::NcclTopology& topo,
                                 const collectives::NcclSettings& settings, double lo, double hi, double factor,
                                 collectives::Func func = collectives::Func::ALL_REDUCE);

// The size nccl-tests runs for a requested one, float elements: all-reduce and broadcast whole
// floats (src/broadcast.cu BroadcastGetCollByteCount: the whole count); all-gather and
// reduce-scatter nranks x the per-rank count, rounded down to a multiple of 16 bytes
// (src/all_gather.cu, reduce_scatter.cu *GetCollByteCount: (count/nranks) & ~(16/eltSize - 1)).
double nccl_tests_size(collectives::Func func, double requested, int nranks);
// All-reduce and broadcast: the size is the whole buffer every rank holds.
bool whole_buffer(collectives::Func func);

// Every enabled (algorithm, protocol) for `bytes`, in NCCL's order of preference (the first is run).
report::Rendered explain_allreduce(const config::ClusterSpec& cluster, const collectives::NcclTopology& topo,
                                   const collectives::NcclSettings& settings, double bytes,
                                   collectives::Func func = collectives::Func::ALL_REDUCE);

// The log's out-of-place rows against the prediction, each run with its own -g (`run_g`);
// `tolerance` > 0 holds the median |busbw error| for sizes >= 1 MiB to it (status 3 beyond).
report::Rendered compare_with_log(const config::ClusterSpec& cluster, const collectives::NcclTopology& topo,
                                  const collectives::NcclSettings& settings, const collectives::NcclTestsLog& log,
                                  const std::string& log_name, const std::vector<int>& run_g, double tolerance,
                                  collectives::Func func = collectives::Func::ALL_REDUCE);

}  // namespace ddpsim::validate
