#include "nccl_format.hpp"

#include <cmath>
#include <cstdio>

namespace ddpbench {

double algbw_GBps(uint64_t bytes, double seconds) {
  return seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : 0.0;
}

double allreduce_bus_factor(int nranks) { return nranks > 0 ? 2.0 * (nranks - 1) / nranks : 0.0; }

double allreduce_busbw_GBps(uint64_t bytes, double seconds, int nranks) {
  return algbw_GBps(bytes, seconds) * allreduce_bus_factor(nranks);
}

std::vector<uint64_t> sweep_sizes(uint64_t min_bytes, uint64_t max_bytes, double factor, uint64_t elem_size) {
  std::vector<uint64_t> out;
  if (elem_size == 0 || factor <= 1.0) return out;
  double size = static_cast<double>(min_bytes);
  while (size <= static_cast<double>(max_bytes) * (1 + 1e-12)) {
    uint64_t b = static_cast<uint64_t>(size);
    b = std::max<uint64_t>(elem_size, b / elem_size * elem_size);
    if (out.empty() || out.back() != b) out.push_back(b);
    size *= factor;
  }
  return out;
}

namespace {
std::string time_str(double seconds) {
  const double us = seconds * 1e6;
  char buf[64];
  if (us >= 10000.0)
    std::snprintf(buf, sizeof buf, "%7.0f", us);
  else if (us >= 100.0)
    std::snprintf(buf, sizeof buf, "%7.1f", us);
  else
    std::snprintf(buf, sizeof buf, "%7.2f", us);
  return buf;
}

std::string result_str(const AllreduceResult& r) {
  char buf[160];
  if (r.wrong >= 0)
    std::snprintf(buf, sizeof buf, "  %7s  %6.2f  %6.2f  %5g", time_str(r.time_s).c_str(), r.algbw_GBps, r.busbw_GBps,
                  static_cast<double>(r.wrong));
  else
    std::snprintf(buf, sizeof buf, "  %7s  %6.2f  %6.2f  %5s", time_str(r.time_s).c_str(), r.algbw_GBps, r.busbw_GBps,
                  "N/A");
  return buf;
}

nlohmann::json result_json(const AllreduceResult& r) {
  return {{"time_s", r.time_s},
          {"time_us", r.time_s * 1e6},
          {"algbw_GBps", r.algbw_GBps},
          {"busbw_GBps", r.busbw_GBps},
          {"wrong", r.wrong >= 0 ? nlohmann::json(r.wrong) : nlohmann::json(nullptr)}};
}
}  // namespace

std::string nccl_tests_header() {
  char buf[512];
  std::string s;
  std::snprintf(buf, sizeof buf,
                "#%12s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n", "", "",
                "", "", "");
  s += buf;
  std::snprintf(buf, sizeof buf, "#%12s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s\n", "size", "count",
                "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
  s += buf;
  std::snprintf(buf, sizeof buf, "#%12s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s\n", "(B)",
                "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
  s += buf;
  return s;
}

std::string nccl_tests_row(const AllreduceRow& r) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%12li  %12li  %8s  %6s  %6i", static_cast<long>(r.bytes), static_cast<long>(r.count),
                r.type.c_str(), r.redop.c_str(), r.root);
  return std::string(buf) + result_str(r.out_of_place) + result_str(r.in_place);
}

std::string nccl_tests_footer(const std::vector<AllreduceRow>& rows) {
  double sum = 0;
  int n = 0;
  for (const auto& r : rows) {
    sum += r.out_of_place.busbw_GBps + r.in_place.busbw_GBps;
    n += 2;
  }
  char buf[128];
  std::snprintf(buf, sizeof buf, "# Avg bus bandwidth    : %g \n", n ? sum / n : 0.0);
  return buf;
}

nlohmann::json row_json(const AllreduceRow& r) {
  return {{"size_bytes", r.bytes},
          {"count", r.count},
          {"type", r.type},
          {"redop", r.redop},
          {"root", r.root},
          {"out_of_place", result_json(r.out_of_place)},
          {"in_place", result_json(r.in_place)}};
}

}  // namespace ddpbench
