// nccl-tests all_reduce_perf output.
#include <cmath>
#include <sstream>

#include "collectives/nccl_tests_log.hpp"
#include "fuzz_support.hpp"

using namespace ddpsim;

DDPSIM_FUZZ_TARGET({
  std::istringstream in(text);
  auto log = collectives::parse_nccl_tests_log(in, "fuzz.txt");
  for (const auto& r : log.rows)
    if (!std::isfinite(r.oop_time_us) || !std::isfinite(r.ip_busbw) || !(r.oop_time_us > 0)) __builtin_trap();
  (void)log.nranks_from_bandwidths();
})
