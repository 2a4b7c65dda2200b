// Quantities with units ("25MiB", "200Gbps") and nccl-tests sizes ("64K"): a value, or nullopt.
#include <cmath>

#include "core/units.hpp"
#include "fuzz_support.hpp"

using namespace ddpsim;

DDPSIM_FUZZ_TARGET({
  for (auto kind :
       {core::Quantity::BYTES, core::Quantity::BANDWIDTH, core::Quantity::TIME, core::Quantity::FLOP_RATE}) {
    std::string why;
    if (auto v = core::parse_quantity(text, kind, &why)) {
      const auto [lo, hi] = core::quantity_range(kind);
      if (!std::isfinite(*v) || *v > hi || (*v != 0 && std::fabs(*v) < lo)) __builtin_trap();
      (void)core::format_bytes(*v), (void)core::format_time(*v), (void)core::format_bandwidth(*v);
    } else if (why.empty()) {
      __builtin_trap();  // a refusal says what is allowed
    }
  }
  if (!text.empty())
    if (auto v = core::parse_nccl_tests_size(text); v && !std::isfinite(*v)) __builtin_trap();
})
