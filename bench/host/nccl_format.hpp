#pragma once
// nccl-tests semantics and output format (NVIDIA/nccl-tests doc/PERFORMANCE.md, src/common.cu):
// algbw = bytes / time in GB/s (1 GB = 1e9 B); all-reduce busbw = algbw * 2(n-1)/n.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ddpbench {

double algbw_GBps(uint64_t bytes, double seconds);
double allreduce_bus_factor(int nranks);  // 2(n-1)/n (0 for one rank, as nccl-tests prints)
double allreduce_busbw_GBps(uint64_t bytes, double seconds, int nranks);

struct AllreduceResult {
  double time_s = 0;
  double algbw_GBps = 0;
  double busbw_GBps = 0;
  int64_t wrong = -1;  // -1 = not checked (printed as N/A)
};

struct AllreduceRow {
  uint64_t bytes = 0;
  uint64_t count = 0;
  std::string type = "float";
  std::string redop = "sum";
  int root = -1;
  AllreduceResult out_of_place, in_place;
};

// The sizes nccl-tests visits: min, min*f, ... up to max (inclusive), each rounded down to a
// multiple of the element size (at least one element).
std::vector<uint64_t> sweep_sizes(uint64_t min_bytes, uint64_t max_bytes, double factor, uint64_t elem_size);

// nccl-tests' three header lines (after the "# nThread ... " preamble).
std::string nccl_tests_header();
// One data row, formatted exactly like all_reduce_perf ("%12li  %12li  %8s  %6s  %6i" then, for
// out-of-place and in-place, "  %7s  %6.2f  %6.2f  %5g" with the time in us as %7.2f/%7.1f/%7.0f).
std::string nccl_tests_row(const AllreduceRow& r);
// "# Avg bus bandwidth    : X" over the rows' in-place and out-of-place busbw, as nccl-tests.
std::string nccl_tests_footer(const std::vector<AllreduceRow>& rows);

nlohmann::json row_json(const AllreduceRow& r);

}  // namespace ddpbench
