#include "core/units.hpp"

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <utility>

namespace ddpsim::core {
namespace {

struct UnitEntry {
  std::string_view suffix;
  double factor;
};

// Longest suffixes first within each table so that "MiB" is not read as "B".
constexpr std::array kByteUnits{
    UnitEntry{"KiB", 1024.0},       UnitEntry{"MiB", 1048576.0},
    UnitEntry{"GiB", 1073741824.0}, UnitEntry{"TiB", 1099511627776.0},
    UnitEntry{"kB", 1e3},           UnitEntry{"KB", 1e3},
    UnitEntry{"MB", 1e6},           UnitEntry{"GB", 1e9},
    UnitEntry{"TB", 1e12},          UnitEntry{"B", 1.0},
};
// Bit rates are divided by 8; "GBps" and "GB/s" are bytes per second.
constexpr std::array kBandwidthUnits{
    UnitEntry{"Kbps", 1e3 / 8},    UnitEntry{"Mbps", 1e6 / 8},
    UnitEntry{"Gbps", 1e9 / 8},    UnitEntry{"Tbps", 1e12 / 8},
    UnitEntry{"bps", 1.0 / 8},     UnitEntry{"KiBps", 1024.0},
    UnitEntry{"MiBps", 1048576.0}, UnitEntry{"GiBps", 1073741824.0},
    UnitEntry{"KBps", 1e3},        UnitEntry{"MBps", 1e6},
    UnitEntry{"GBps", 1e9},        UnitEntry{"TBps", 1e12},
    UnitEntry{"KB/s", 1e3},        UnitEntry{"MB/s", 1e6},
    UnitEntry{"GB/s", 1e9},        UnitEntry{"TB/s", 1e12},
    UnitEntry{"Bps", 1.0},         UnitEntry{"B/s", 1.0},
};
constexpr std::array kTimeUnits{
    UnitEntry{"ns", 1e-9},
    UnitEntry{"us", 1e-6},
    UnitEntry{"ms", 1e-3},
    UnitEntry{"s", 1.0},
};
constexpr std::array kFlopUnits{
    UnitEntry{"GFLOPS", 1e9}, UnitEntry{"TFLOPS", 1e12}, UnitEntry{"PFLOPS", 1e15},
    UnitEntry{"MFLOPS", 1e6}, UnitEntry{"FLOPS", 1.0},
};

template <size_t N>
std::optional<double> lookup(std::string_view unit, const std::array<UnitEntry, N>& table) {
  for (const auto& e : table)
    if (unit == e.suffix) return e.factor;
  return std::nullopt;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

}  // namespace

std::string_view quantity_name(Quantity kind) {
  switch (kind) {
    case Quantity::BYTES: return "a size";
    case Quantity::BANDWIDTH: return "a bandwidth";
    case Quantity::TIME: return "a duration";
    case Quantity::FLOP_RATE: return "a FLOP rate";
  }
  return "a quantity";
}

std::string_view quantity_examples(Quantity kind) {
  switch (kind) {
    case Quantity::BYTES: return "a number with B, kB, MB, GB, KiB, MiB or GiB, e.g. \"25MiB\"";
    case Quantity::BANDWIDTH:
      return "a number with bps, Mbps, Gbps, Tbps (bits) or Bps, MBps, GBps, GB/s (bytes), e.g. \"200Gbps\"";
    case Quantity::TIME: return "a number with ns, us, ms or s, e.g. \"1.5us\"";
    case Quantity::FLOP_RATE: return "a number with FLOPS, GFLOPS, TFLOPS or PFLOPS, e.g. \"19.5TFLOPS\"";
  }
  return "";
}

std::optional<double> parse_quantity(std::string_view text, Quantity kind, std::string* why) {
  auto fail = [&]() -> std::optional<double> {
    if (why) *why = std::string(quantity_name(kind)) + ": " + std::string(quantity_examples(kind));
    return std::nullopt;
  };
  std::string_view s = trim(text);
  double value = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || ptr == s.data()) return fail();
  std::string_view unit = trim(std::string_view(ptr, static_cast<size_t>(s.data() + s.size() - ptr)));
  std::optional<double> factor;
  switch (kind) {
    case Quantity::BYTES: factor = lookup(unit, kByteUnits); break;
    case Quantity::BANDWIDTH: factor = lookup(unit, kBandwidthUnits); break;
    case Quantity::TIME: factor = lookup(unit, kTimeUnits); break;
    case Quantity::FLOP_RATE: factor = lookup(unit, kFlopUnits); break;
  }
  if (!factor || !std::isfinite(value)) return fail();
  const double x = value * *factor;
  // Finite before scaling is not enough: "1e308TBps" is inf after it, and values far beyond any
  // hardware (1e30 TB/s) break the simulation's arithmetic instead of making it faster.
  const auto [lo, hi] = quantity_range(kind);
  if (!std::isfinite(x) || x > hi || (x != 0 && std::fabs(x) < lo)) {
    if (why)
      *why = std::string(quantity_name(kind)) + " between " + quantity_range_text(kind) + " (or 0 where allowed)";
    return std::nullopt;
  }
  return x;
}

std::pair<double, double> quantity_range(Quantity kind) {
  switch (kind) {
    case Quantity::BYTES: return {0.0, 1e18};      // 1 EB
    case Quantity::BANDWIDTH: return {1.0, 1e15};  // 1 B/s .. 1 PB/s
    case Quantity::TIME: return {0.0, 1e6};        // .. about 11.6 days
    case Quantity::FLOP_RATE: return {1.0, 1e18};  // 1 FLOP/s .. 1 EFLOPS
  }
  return {0.0, 0.0};
}

std::string quantity_range_text(Quantity kind) {
  switch (kind) {
    case Quantity::BYTES: return "0B and 1e18B";
    case Quantity::BANDWIDTH: return "1Bps and 1e15Bps";
    case Quantity::TIME: return "0s and 1e6s";
    case Quantity::FLOP_RATE: return "1FLOPS and 1e18FLOPS";
  }
  return "";
}

namespace {
std::string fmt(const char* f, double v, const char* unit) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v, unit);
  return buf;
}
}  // namespace

std::string format_bytes(double b) {
  if (b >= 1073741824.0) return fmt("%.2f %s", b / 1073741824.0, "GiB");
  if (b >= 1048576.0) return fmt("%.2f %s", b / 1048576.0, "MiB");
  if (b >= 1024.0) return fmt("%.2f %s", b / 1024.0, "KiB");
  return fmt("%.0f %s", b, "B");
}

std::string format_time(double s) {
  double a = std::fabs(s);
  if (a >= 1.0) return fmt("%.3f %s", s, "s");
  if (a >= 1e-3) return fmt("%.3f %s", s * 1e3, "ms");
  if (a >= 1e-6) return fmt("%.2f %s", s * 1e6, "us");
  if (a == 0.0) return "0";
  return fmt("%.1f %s", s * 1e9, "ns");
}

std::string format_bandwidth(double bps) {
  if (bps >= 1e9) return fmt("%.2f %s", bps / 1e9, "GB/s");
  if (bps >= 1e6) return fmt("%.2f %s", bps / 1e6, "MB/s");
  return fmt("%.0f %s", bps, "B/s");
}

std::optional<double> parse_nccl_tests_size(std::string_view text) {
  const std::string t(text);
  double v = 0;
  size_t pos = 0;
  try {
    v = std::stod(t, &pos);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  // stod also reads "inf", "nan" and hex; nccl-tests takes decimal digits only.
  if (!(std::isdigit(static_cast<unsigned char>(t[0])) || t[0] == '.') || !std::isfinite(v)) return std::nullopt;
  if (pos == t.size()) return v;
  if (pos + 1 != t.size()) return std::nullopt;
  double scale = 0;
  switch (t.back()) {
    case 'K':
    case 'k': scale = 1024.0; break;
    case 'M':
    case 'm': scale = 1048576.0; break;
    case 'G':
    case 'g': scale = 1073741824.0; break;
    default: return std::nullopt;
  }
  // A finite number can overflow with its suffix ("1e304G", found by fuzz_units).
  if (!std::isfinite(v * scale)) return std::nullopt;
  return v * scale;
}

}  // namespace ddpsim::core
