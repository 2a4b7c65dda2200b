// Unit tests for the quantity parser and formatters (sim/core/units.*). Expected values are the
// unit definitions themselves: KiB = 2^10 B, MB = 10^6 B, 1 Gbit/s = 1e9 / 8 B/s, and so on.
#include "core/units.hpp"

#include <gtest/gtest.h>

#include <string>

using ddpsim::core::parse_quantity;
using ddpsim::core::Quantity;

namespace {

double parsed(const std::string& text, Quantity kind) {
  std::string why;
  auto v = parse_quantity(text, kind, &why);
  EXPECT_TRUE(v.has_value()) << "\"" << text << "\" rejected: " << why;
  return v.value_or(-1.0);
}

}  // namespace

TEST(Units, BinaryAndDecimalBytes) {
  EXPECT_DOUBLE_EQ(parsed("1B", Quantity::BYTES), 1.0);
  EXPECT_DOUBLE_EQ(parsed("1KiB", Quantity::BYTES), 1024.0);
  EXPECT_DOUBLE_EQ(parsed("25MiB", Quantity::BYTES), 25.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(parsed("2GiB", Quantity::BYTES), 2.0 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(parsed("1TiB", Quantity::BYTES), 1024.0 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(parsed("1kB", Quantity::BYTES), 1000.0);
  EXPECT_DOUBLE_EQ(parsed("1KB", Quantity::BYTES), 1000.0);
  EXPECT_DOUBLE_EQ(parsed("25MB", Quantity::BYTES), 25e6);
  EXPECT_DOUBLE_EQ(parsed("40GB", Quantity::BYTES), 40e9);
  EXPECT_DOUBLE_EQ(parsed("3TB", Quantity::BYTES), 3e12);
}

TEST(Units, MebibyteIsNotMegabyte) {
  const double mib = parsed("1MiB", Quantity::BYTES);
  const double mb = parsed("1MB", Quantity::BYTES);
  EXPECT_DOUBLE_EQ(mib, 1048576.0);
  EXPECT_DOUBLE_EQ(mb, 1000000.0);
  EXPECT_NE(mib, mb);
}

TEST(Units, FractionalAndExponentValues) {
  EXPECT_DOUBLE_EQ(parsed("0.5KiB", Quantity::BYTES), 512.0);
  EXPECT_DOUBLE_EQ(parsed("1.5MiB", Quantity::BYTES), 1.5 * 1048576.0);
  EXPECT_DOUBLE_EQ(parsed("1e3B", Quantity::BYTES), 1000.0);
}

TEST(Units, SurroundingAndInnerWhitespaceAccepted) {
  EXPECT_DOUBLE_EQ(parsed("  25 MiB ", Quantity::BYTES), 25.0 * 1048576.0);
  EXPECT_DOUBLE_EQ(parsed("1.5 us", Quantity::TIME), 1.5e-6);
}

TEST(Units, BandwidthBitsAreDividedByEight) {
  EXPECT_DOUBLE_EQ(parsed("200Gbps", Quantity::BANDWIDTH), 25e9);
  EXPECT_DOUBLE_EQ(parsed("100Gbps", Quantity::BANDWIDTH), 12.5e9);
  EXPECT_DOUBLE_EQ(parsed("400Gbps", Quantity::BANDWIDTH), 50e9);
  EXPECT_DOUBLE_EQ(parsed("8Mbps", Quantity::BANDWIDTH), 1e6);
  EXPECT_DOUBLE_EQ(parsed("8Kbps", Quantity::BANDWIDTH), 1e3);
  EXPECT_DOUBLE_EQ(parsed("1Tbps", Quantity::BANDWIDTH), 125e9);
  EXPECT_DOUBLE_EQ(parsed("16bps", Quantity::BANDWIDTH), 2.0);
}

TEST(Units, BandwidthBytesPerSecond) {
  EXPECT_DOUBLE_EQ(parsed("12.5GBps", Quantity::BANDWIDTH), 12.5e9);
  EXPECT_DOUBLE_EQ(parsed("12.5GB/s", Quantity::BANDWIDTH), 12.5e9);
  EXPECT_DOUBLE_EQ(parsed("1555GBps", Quantity::BANDWIDTH), 1555e9);
  EXPECT_DOUBLE_EQ(parsed("3MBps", Quantity::BANDWIDTH), 3e6);
  EXPECT_DOUBLE_EQ(parsed("3MB/s", Quantity::BANDWIDTH), 3e6);
  EXPECT_DOUBLE_EQ(parsed("2KBps", Quantity::BANDWIDTH), 2e3);
  EXPECT_DOUBLE_EQ(parsed("2TB/s", Quantity::BANDWIDTH), 2e12);
  EXPECT_DOUBLE_EQ(parsed("7Bps", Quantity::BANDWIDTH), 7.0);
  EXPECT_DOUBLE_EQ(parsed("7B/s", Quantity::BANDWIDTH), 7.0);
  EXPECT_DOUBLE_EQ(parsed("1GiBps", Quantity::BANDWIDTH), 1073741824.0);
  EXPECT_DOUBLE_EQ(parsed("1MiBps", Quantity::BANDWIDTH), 1048576.0);
  EXPECT_DOUBLE_EQ(parsed("1KiBps", Quantity::BANDWIDTH), 1024.0);
}

TEST(Units, GigabitIsOneEighthOfGigabyte) {
  EXPECT_DOUBLE_EQ(parsed("8Gbps", Quantity::BANDWIDTH), parsed("1GBps", Quantity::BANDWIDTH));
}

TEST(Units, Durations) {
  EXPECT_DOUBLE_EQ(parsed("1.5us", Quantity::TIME), 1.5e-6);
  EXPECT_DOUBLE_EQ(parsed("250ns", Quantity::TIME), 250e-9);
  EXPECT_DOUBLE_EQ(parsed("3ms", Quantity::TIME), 3e-3);
  EXPECT_DOUBLE_EQ(parsed("2s", Quantity::TIME), 2.0);
  EXPECT_DOUBLE_EQ(parsed("0s", Quantity::TIME), 0.0);
}

TEST(Units, FlopRates) {
  EXPECT_DOUBLE_EQ(parsed("19.5TFLOPS", Quantity::FLOP_RATE), 19.5e12);
  EXPECT_DOUBLE_EQ(parsed("312TFLOPS", Quantity::FLOP_RATE), 312e12);
  EXPECT_DOUBLE_EQ(parsed("100GFLOPS", Quantity::FLOP_RATE), 100e9);
  EXPECT_DOUBLE_EQ(parsed("2PFLOPS", Quantity::FLOP_RATE), 2e15);
  EXPECT_DOUBLE_EQ(parsed("5MFLOPS", Quantity::FLOP_RATE), 5e6);
  EXPECT_DOUBLE_EQ(parsed("42FLOPS", Quantity::FLOP_RATE), 42.0);
}

TEST(Units, PlainNumberRejectedWithWhy) {
  std::string why;
  EXPECT_FALSE(parse_quantity("25", Quantity::BYTES, &why).has_value());
  EXPECT_NE(why.find("a size"), std::string::npos) << why;
  EXPECT_NE(why.find("MiB"), std::string::npos) << why;
  EXPECT_NE(why.find("\"25MiB\""), std::string::npos) << why;

  why.clear();
  EXPECT_FALSE(parse_quantity("200", Quantity::BANDWIDTH, &why).has_value());
  EXPECT_NE(why.find("a bandwidth"), std::string::npos) << why;
  EXPECT_NE(why.find("Gbps"), std::string::npos) << why;
  EXPECT_NE(why.find("GBps"), std::string::npos) << why;

  why.clear();
  EXPECT_FALSE(parse_quantity("1.5", Quantity::TIME, &why).has_value());
  EXPECT_NE(why.find("a duration"), std::string::npos) << why;
  EXPECT_NE(why.find("us"), std::string::npos) << why;

  why.clear();
  EXPECT_FALSE(parse_quantity("19.5", Quantity::FLOP_RATE, &why).has_value());
  EXPECT_NE(why.find("a FLOP rate"), std::string::npos) << why;
  EXPECT_NE(why.find("TFLOPS"), std::string::npos) << why;
}

TEST(Units, UnknownUnitRejected) {
  std::string why;
  EXPECT_FALSE(parse_quantity("25 furlongs", Quantity::BYTES, &why).has_value());
  EXPECT_NE(why.find("a size"), std::string::npos) << why;
  // Case matters: "mib" is not a unit, and "Gb" without "ps" is not a rate.
  EXPECT_FALSE(parse_quantity("25mib", Quantity::BYTES).has_value());
  EXPECT_FALSE(parse_quantity("200Gb", Quantity::BANDWIDTH).has_value());
  EXPECT_FALSE(parse_quantity("1.5sec", Quantity::TIME).has_value());
  EXPECT_FALSE(parse_quantity("10TFLOP", Quantity::FLOP_RATE).has_value());
}

TEST(Units, UnitOfAnotherFamilyRejected) {
  EXPECT_FALSE(parse_quantity("25MiB", Quantity::BANDWIDTH).has_value());
  EXPECT_FALSE(parse_quantity("200Gbps", Quantity::BYTES).has_value());
  EXPECT_FALSE(parse_quantity("1.5us", Quantity::BYTES).has_value());
  EXPECT_FALSE(parse_quantity("19.5TFLOPS", Quantity::TIME).has_value());
  // Bytes per second is a bandwidth, not a size.
  EXPECT_FALSE(parse_quantity("12.5GBps", Quantity::BYTES).has_value());
}

TEST(Units, GarbageRejected) {
  for (const char* text :
       {"", "   ", "MiB", "abc", "25 MiB extra", "25MiBMiB", "--3MiB", "nan MiB", "inf MiB", "infMiB", "1..5MiB"}) {
    std::string why;
    EXPECT_FALSE(parse_quantity(text, Quantity::BYTES, &why).has_value()) << "accepted \"" << text << "\"";
    EXPECT_FALSE(why.empty()) << "no explanation for \"" << text << "\"";
  }
}

TEST(Units, WhyIsOptional) {
  EXPECT_FALSE(parse_quantity("junk", Quantity::TIME, nullptr).has_value());
  EXPECT_FALSE(parse_quantity("junk", Quantity::TIME).has_value());
}

TEST(Units, FormatBytes) {
  EXPECT_EQ(ddpsim::core::format_bytes(512), "512 B");
  EXPECT_EQ(ddpsim::core::format_bytes(1536), "1.50 KiB");
  EXPECT_EQ(ddpsim::core::format_bytes(25.0 * 1048576.0), "25.00 MiB");
  EXPECT_EQ(ddpsim::core::format_bytes(2.0 * 1073741824.0), "2.00 GiB");
}

TEST(Units, FormatTime) {
  EXPECT_EQ(ddpsim::core::format_time(0), "0");
  EXPECT_EQ(ddpsim::core::format_time(2.5), "2.500 s");
  EXPECT_EQ(ddpsim::core::format_time(1.5e-3), "1.500 ms");
  EXPECT_EQ(ddpsim::core::format_time(1.5e-6), "1.50 us");
  EXPECT_EQ(ddpsim::core::format_time(250e-9), "250.0 ns");
}

TEST(Units, FormatBandwidth) {
  EXPECT_EQ(ddpsim::core::format_bandwidth(25e9), "25.00 GB/s");
  EXPECT_EQ(ddpsim::core::format_bandwidth(3e6), "3.00 MB/s");
  EXPECT_EQ(ddpsim::core::format_bandwidth(512), "512 B/s");
}

namespace ddpsim::core {
namespace {

TEST(NcclTestsSize, NumberWithOptionalBinarySuffix) {
  EXPECT_EQ(parse_nccl_tests_size("8"), 8.0);
  EXPECT_EQ(parse_nccl_tests_size("64K"), 64.0 * 1024);
  EXPECT_EQ(parse_nccl_tests_size("64k"), 64.0 * 1024);
  EXPECT_EQ(parse_nccl_tests_size("1.5M"), 1.5 * 1048576);
  EXPECT_EQ(parse_nccl_tests_size("8G"), 8.0 * 1073741824);
  // Finite before the suffix, infinite after it (fuzz_units found "1e304G").
  EXPECT_FALSE(parse_nccl_tests_size("1e304G").has_value());
  EXPECT_FALSE(parse_nccl_tests_size("1e308k").has_value());
  EXPECT_EQ(parse_nccl_tests_size("1e290G"), 1e290 * 1073741824);
  for (const char* bad : {"", "lots", "12Q", "1MiB", "8 G", "-8", "inf", "nan", "1KK"})
    EXPECT_FALSE(parse_nccl_tests_size(bad).has_value()) << bad;
}

}  // namespace
}  // namespace ddpsim::core
