// nccl-tests bandwidth definitions and row format.
#include "nccl_format.hpp"

#include <gtest/gtest.h>

#include <sstream>

#include "collectives/nccl_tests_log.hpp"

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

// What ddpbench allreduce prints is what `ddpsim calibrate` and `ddpsim collective --compare` read.
TEST(NcclFormat, DdpsimParserReadsDdpbenchOutput) {
  std::vector<AllreduceRow> rows;
  for (uint64_t bytes : {8ULL, 1ULL << 20, 1ULL << 30}) {
    AllreduceRow r;
    r.bytes = bytes;
    r.count = bytes / 4;
    const double t = 20e-6 + static_cast<double>(bytes) / 100e9;
    r.out_of_place = {t, algbw_GBps(bytes, t), allreduce_busbw_GBps(bytes, t, 8), 0};
    r.in_place = {t * 1.01, algbw_GBps(bytes, t * 1.01), allreduce_busbw_GBps(bytes, t * 1.01, 8), 0};
    rows.push_back(r);
  }
  std::ostringstream out;
  out << "# nThread 1 nGpus 1 minBytes 8 maxBytes 1073741824 step: 1024(factor) warmup iters: 5 iters: 20\n";
  out << nccl_tests_header();
  for (const auto& r : rows) out << nccl_tests_row(r) << "\n";  // ddpbench prints one per line
  out << nccl_tests_footer(rows);
  std::istringstream in(out.str());
  const auto log = ddpsim::collectives::parse_nccl_tests_log(in, "ddpbench.txt");
  ASSERT_EQ(log.rows.size(), 3u);
  ASSERT_EQ(log.runs.size(), 1u);
  EXPECT_EQ(log.runs[0].ngpus, 1);
  EXPECT_EQ(log.avg_bus_bandwidth.size(), 1u);
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_DOUBLE_EQ(log.rows[i].size_bytes, static_cast<double>(rows[i].bytes));
    // Times are printed with 2, 1 or 0 decimals (nccl-tests): equal to that precision.
    EXPECT_NEAR(log.rows[i].oop_time_us, rows[i].out_of_place.time_s * 1e6, 0.5) << i;
    EXPECT_NEAR(log.rows[i].ip_time_us, rows[i].in_place.time_s * 1e6, 0.5) << i;
  }
  EXPECT_EQ(log.nranks_from_bandwidths(), 8);  // busbw / algbw = 2 x 7/8 on the 1 GiB row
}
