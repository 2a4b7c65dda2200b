// nccl-tests output: the text of all_reduce_perf and friends, and the -J JSON file (chosen as
// parse_nccl_tests_log_file does, by the first non-blank character).
#include <cmath>
#include <sstream>

#include "collectives/nccl_tests_log.hpp"
#include "fuzz_support.hpp"

using namespace ddpsim;

DDPSIM_FUZZ_TARGET({
  const size_t first = text.find_first_not_of(" \t\r\n");
  collectives::NcclTestsLog log;
  if (first != std::string::npos && text[first] == '{') {
    log = collectives::parse_nccl_tests_json(text, "fuzz.json");
  } else {
    std::istringstream in(text);
    log = collectives::parse_nccl_tests_log(in, "fuzz.txt");
  }
  for (const auto& run : log.runs)
    for (size_t i = run.first_row; i < run.first_row + run.row_count; ++i) {
      const auto& r = log.rows.at(i);
      // A row's time is > 0, or 0 where a -C 1 run's algbw gave none (every consumer skips it).
      if (!std::isfinite(r.oop_time_us) || !std::isfinite(r.ip_busbw) || !(r.oop_time_us > 0 || run.host_time))
        __builtin_trap();
    }
  (void)log.nranks_from_bandwidths();
  (void)collectives::log_warnings(log);
})
