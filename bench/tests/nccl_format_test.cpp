// nccl-tests bandwidth definitions and row format.
#include "nccl_format.hpp"

#include <gtest/gtest.h>

#include <sstream>

using namespace ddpbench;

TEST(NcclFormat, AlgbwIsBytesOverTimeInDecimalGB) {
  EXPECT_DOUBLE_EQ(algbw_GBps(1'000'000'000, 1.0), 1.0);
  EXPECT_NEAR(algbw_GBps(1ULL << 30, 0.01), 107.3741824, 1e-9);
  EXPECT_EQ(algbw_GBps(100, 0.0), 0.0);
}

TEST(NcclFormat, AllreduceBusbwFactorIsTwoNMinusOneOverN) {
  EXPECT_DOUBLE_EQ(allreduce_bus_factor(1), 0.0);
  EXPECT_DOUBLE_EQ(allreduce_bus_factor(2), 1.0);
  EXPECT_DOUBLE_EQ(allreduce_bus_factor(8), 1.75);
  EXPECT_NEAR(allreduce_busbw_GBps(1ULL << 30, 0.01, 8), 107.3741824 * 1.75, 1e-9);
}

TEST(NcclFormat, SweepSizesLikeNcclTests) {
  EXPECT_EQ(sweep_sizes(8, 64, 2, 4), (std::vector<uint64_t>{8, 16, 32, 64}));
  EXPECT_EQ(sweep_sizes(1, 8, 2, 4), (std::vector<uint64_t>{4, 8}));  // rounded to whole floats, deduplicated
  EXPECT_EQ(sweep_sizes(8ULL << 30, 8ULL << 30, 2, 4), (std::vector<uint64_t>{8ULL << 30}));
}

TEST(NcclFormat, RowHasNcclTestsColumns) {
  AllreduceRow r;
  r.bytes = 1 << 20;
  r.count = r.bytes / 4;
  r.out_of_place = {123.456e-6, 8.49, 14.86, 0};
  r.in_place = {12345.6e-6, 0.08, 0.15, -1};
  const std::string row = nccl_tests_row(r);
  std::istringstream is(row);
  std::vector<std::string> f;
  for (std::string s; is >> s;) f.push_back(s);
  ASSERT_EQ(f.size(), 13u) << row;
  EXPECT_EQ(f[0], "1048576");
  EXPECT_EQ(f[1], "262144");
  EXPECT_EQ(f[2], "float");
  EXPECT_EQ(f[3], "sum");
  EXPECT_EQ(f[4], "-1");
  EXPECT_EQ(f[5], "123.5");  // %7.1f between 100 us and 10 ms
  EXPECT_EQ(f[6], "8.49");
  EXPECT_EQ(f[8], "0");
  EXPECT_EQ(f[9], "12346");  // %7.0f from 10 ms
  EXPECT_EQ(f[12], "N/A");
  EXPECT_EQ(row.substr(0, 12), "     1048576");
  EXPECT_NE(nccl_tests_header().find("#wrong"), std::string::npos);
  EXPECT_NE(nccl_tests_footer({r}).find("# Avg bus bandwidth    : 7.505"), std::string::npos);
}
