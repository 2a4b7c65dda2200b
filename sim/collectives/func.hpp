#pragma once
// NCCL's collective functions, apart from the model so that light headers (validated.hpp, the
// report's prediction) can name them.
#include <string>

namespace ddpsim::collectives {

// NCCL's collective functions (src/include/device.h ncclFunc_t order: Broadcast, Reduce,
// AllGather, ReduceScatter, AllReduce; Reduce is not modelled, Broadcast has no rules yet).
enum class Func { BROADCAST, ALL_GATHER, REDUCE_SCATTER, ALL_REDUCE };
inline constexpr int kNumFuncs = 4;
std::string to_string(Func f);
// The nccl-tests binary that measures it ("all_reduce_perf", "all_gather_perf", ...).
const char* nccl_tests_binary(Func f);

}  // namespace ddpsim::collectives
