#pragma once
// Units exist only at the edges: JSON strings such as "25MiB", "200Gbps", "12.5GBps", "1.5us",
// "19.5TFLOPS" are parsed here once into SI doubles (bytes, bytes/s, seconds, FLOP/s).
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace ddpsim::core {

enum class Quantity { BYTES, BANDWIDTH, TIME, FLOP_RATE };

// Parses `text` as a quantity of the given kind. Returns nullopt and sets `why` (what is allowed)
// when the text is not such a quantity. Plain numbers are not accepted: a unit is required.
// Values outside quantity_range(kind) are refused too (so is anything that overflows to inf).
std::optional<double> parse_quantity(std::string_view text, Quantity kind, std::string* why = nullptr);
// The SI range a non-zero quantity of `kind` must lie in, and how it reads in units.
std::pair<double, double> quantity_range(Quantity kind);
std::string quantity_range_text(Quantity kind);

// Human-readable forms for reports ("24.0 MiB", "1.50 ms", "25.0 GB/s").
std::string format_bytes(double bytes);
std::string format_time(double seconds);
std::string format_bandwidth(double bytes_per_s);

// nccl-tests' size spelling (-b/-e): a number with an optional K, M or G suffix, powers of 1024
// ("8", "64K", "1.5M"); nullopt when `text` is not one. The simulator and ddpbench share it.
std::optional<double> parse_nccl_tests_size(std::string_view text);

std::string_view quantity_name(Quantity kind);
std::string_view quantity_examples(Quantity kind);

}  // namespace ddpsim::core
