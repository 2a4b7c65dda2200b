// Tests for the nccl-tests all_reduce_perf log parser (sim/collectives/nccl_tests_log.*).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "collectives/nccl_tests_log.hpp"
#include "core/error.hpp"

using namespace ddpsim::collectives;

namespace {

// The public logs the project keeps (tests/data/nccl-tests/README.md names their sources).
std::filesystem::path data_file(const std::string& name) {
  return std::filesystem::path("tests/data/nccl-tests") / name;
}

NcclTestsLog parse(const std::string& text) {
  std::istringstream in(text);
  return parse_nccl_tests_log(in, "inline.txt");
}

std::string error_of(const std::string& text) {
  try {
    parse(text);
  } catch (const NcclLogError& e) {
    return e.what();
  }
  return "<no error>";
}

}  // namespace

TEST(NcclTestsLog, NewFormatWithRootAndBanner) {
  const auto log = parse(
      "# nThread 1 nGpus 2 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: "
      "1\n"
      "#\n"
      "# Using devices\n"
      "#  Rank  0 Group  0 Pid   1234 on     host device  0 [0x07] NVIDIA A100-SXM4-80GB\n"
      "#  Rank  1 Group  0 Pid   1234 on     host device  1 [0x0b] NVIDIA A100-SXM4-80GB\n"
      "\n"
      "           8             2     float     sum      -1    40.12    0.00    0.00      0    38.85    0.00    0.00   "
      "   0\n"
      "          16             4     float     sum      -1    39.64    0.01    0.02    N/A    39.19    0.00    0.00   "
      " N/A\n"
      "# Avg bus bandwidth    : 66.2058 \n");
  ASSERT_EQ(log.rows.size(), 2u);
  EXPECT_EQ(log.nthread, 1);
  EXPECT_EQ(log.ngpus, 2);
  ASSERT_EQ(log.nranks(), 2);
  EXPECT_EQ(log.devices[0], "NVIDIA A100-SXM4-80GB");
  ASSERT_EQ(log.avg_bus_bandwidth.size(), 1u);
  EXPECT_DOUBLE_EQ(log.avg_bus_bandwidth[0], 66.2058);
  const auto& r = log.rows[1];
  EXPECT_DOUBLE_EQ(r.size_bytes, 16);
  EXPECT_EQ(r.count, 4);
  EXPECT_EQ(r.type, "float");
  EXPECT_EQ(r.redop, "sum");
  EXPECT_EQ(r.root, -1);
  EXPECT_DOUBLE_EQ(r.oop_time_us, 39.64);
  EXPECT_DOUBLE_EQ(r.oop_algbw, 0.01);
  EXPECT_DOUBLE_EQ(r.oop_busbw, 0.02);
  EXPECT_EQ(r.oop_wrong, "N/A");
  EXPECT_DOUBLE_EQ(r.ip_time_us, 39.19);
}

TEST(NcclTestsLog, OldFormatWithoutRootAndMpiPrefix) {
  const auto log = parse(
      "[1,0]<stdout>:#       size         count    type   redop     time   algbw   busbw  error     time   algbw   "
      "busbw  error\n"
      "[1,0]<stdout>:           8             2   float     sum    167.5    0.00    0.00  2e-07    167.1    0.00    "
      "0.00  1e-07\n");
  ASSERT_EQ(log.rows.size(), 1u);
  EXPECT_EQ(log.rows[0].root, -1);
  EXPECT_EQ(log.rows[0].redop, "sum");
  EXPECT_DOUBLE_EQ(log.rows[0].oop_time_us, 167.5);
  EXPECT_EQ(log.rows[0].oop_wrong, "2e-07");
  EXPECT_DOUBLE_EQ(log.rows[0].ip_time_us, 167.1);
}

TEST(NcclTestsLog, OldestFormatWithoutRedop) {
  const auto log =
      parse("     1048576        262144   float    89.27   11.75   20.56  2e-07    88.45   11.85   20.75  2e-07\n");
  ASSERT_EQ(log.rows.size(), 1u);
  EXPECT_EQ(log.rows[0].redop, "");
  EXPECT_DOUBLE_EQ(log.rows[0].oop_busbw, 20.56);
  EXPECT_DOUBLE_EQ(log.rows[0].ip_busbw, 20.75);
}

TEST(NcclTestsLog, ErrorWrongFieldCount) {
  EXPECT_EQ(
      error_of("\n  8 2 float sum -1 40.12 0.00\n"),
      "inline.txt:2: cannot parse \"8 2 float sum -1 40.12 0.00\": expected a data row 'size count type redop "
      "[root] time algbw busbw #wrong time algbw busbw #wrong' (sizes and counts integers, times and bandwidths "
      "numbers, #wrong a number or N/A), a '#' banner line or a blank line (got 7 fields; rows have 11, 12 or 13, "
      "or 21 with nccl-tests -I 1, plus 2 with -S 1)");
}

TEST(NcclTestsLog, ErrorBadSize) {
  EXPECT_EQ(error_of("8.5 2 float sum -1 40.12 0.00 0.00 0 38.85 0.00 0.00 0"),
            "inline.txt:1: cannot parse \"8.5 2 float sum -1 40.12 0.00 0.00 0 38.85 0.00 0.00 0\": expected column 1 "
            "(size, bytes) to be a non-negative integer, got \"8.5\"");
}

TEST(NcclTestsLog, ErrorBadCount) {
  EXPECT_NE(error_of("8 two float sum -1 40.12 0.00 0.00 0 38.85 0.00 0.00 0")
                .find("expected column 2 (count, elements) to be a non-negative integer, got \"two\""),
            std::string::npos);
}

TEST(NcclTestsLog, ErrorBadType) {
  EXPECT_NE(error_of("8 2 3.5 sum -1 40.12 0.00 0.00 0 38.85 0.00 0.00 0")
                .find("expected column 3 (type) to be a name like float, got \"3.5\""),
            std::string::npos);
}

TEST(NcclTestsLog, ErrorBadRedop) {
  // Twelve fields: column 4 is a redop, or the root of the old rooted layout; neither here.
  EXPECT_NE(
      error_of("8 2 float 7.5 40.12 0.00 0.00 0 38.85 0.00 0.00 0")
          .find("expected column 4 (redop, or root without one) to be a name like sum or an integer, got \"7.5\""),
      std::string::npos);
}

TEST(NcclTestsLog, OldRootedLayoutBareVersionLineAndZeroSizedRows) {
  // broadcast_perf of nccl-tests before every test printed redop and root ("type root"; the A100
  // table of tests/data/nccl-tests/a100-sxm4-40gb_1x8_broadcast.txt), after NCCL_DEBUG=VERSION's
  // bare version line; "-b 1" gives two 0-byte rows, which open one run, not two.
  const auto log = parse(
      "# nThread 1 nGpus 8 minBytes 1 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 validation: 0\n"
      "NCCL version 2.9.6+cuda11.2\n"
      "#       size         count    type    root     time   algbw   busbw  error     time   algbw   busbw  error\n"
      "           0             0   float       0    34.61    0.00    0.00    N/A    34.33    0.00    0.00    N/A\n"
      "           0             0   float       0    34.43    0.00    0.00    N/A    35.06    0.00    0.00    N/A\n"
      "           4             1   float       0    33.96    0.00    0.00    N/A    33.80    0.00    0.00    N/A\n"
      "           8             2   float       0    34.16    0.00    0.00    N/A    34.32    0.00    0.00    N/A\n");
  ASSERT_EQ(log.rows.size(), 4u);
  EXPECT_EQ(log.runs.size(), 1u);
  EXPECT_EQ(log.rows[2].root, 0);
  EXPECT_EQ(log.rows[2].redop, "");
  EXPECT_EQ(log.nccl_version, 20906);
  EXPECT_EQ(log.ngpus, 8);
  // The same sizes again after the last row: a second run (-d all), also at one size each.
  EXPECT_EQ(parse("8 2 float sum -1 40.12 0.00 0.00 0 38.85 0.00 0.00 0\n"
                  "8 2 float sum -1 40.12 0.00 0.00 0 38.85 0.00 0.00 0\n")
                .runs.size(),
            2u);
}

TEST(NcclTestsLog, ErrorBadRoot) {
  EXPECT_NE(error_of("8 2 float sum x 40.12 0.00 0.00 0 38.85 0.00 0.00 0")
                .find("expected column 5 (root) to be an integer, got \"x\""),
            std::string::npos);
}

TEST(NcclTestsLog, ErrorBadTime) {
  const std::string msg = error_of("line one ok?\n");
  EXPECT_NE(msg.find("inline.txt:1: cannot parse \"line one ok?\""), std::string::npos) << msg;
  EXPECT_NE(error_of("8 2 float sum -1 fast 0.00 0.00 0 38.85 0.00 0.00 0")
                .find("expected column 6 (out-of-place time) to be a finite number > 0, got \"fast\""),
            std::string::npos);
  EXPECT_NE(error_of("8 2 float sum -1 40.12 0.00 0.00 0 38.85 0.00 zz 0")
                .find("expected column 12 (in-place busbw) to be a finite number >= 0, got \"zz\""),
            std::string::npos);
}

TEST(NcclTestsLog, ErrorBadWrongColumn) {
  EXPECT_NE(error_of("8 2 float sum -1 40.12 0.00 0.00 bad 38.85 0.00 0.00 0")
                .find("expected column 9 (out-of-place #wrong) to be a number or N/A, got \"bad\""),
            std::string::npos);
  EXPECT_NE(error_of("8 2 float sum -1 40.12 0.00 0.00 0 38.85 0.00 0.00 bad")
                .find("expected column 13 (in-place #wrong) to be a number or N/A, got \"bad\""),
            std::string::npos);
}

TEST(NcclTestsLog, ErrorBadAvgBusBandwidth) {
  EXPECT_EQ(
      error_of("# Avg bus bandwidth    : lots"),
      "inline.txt:1: cannot parse \"# Avg bus bandwidth    : lots\": expected a number after '# Avg bus bandwidth :'");
}

TEST(NcclTestsLog, ErrorUnreadableFile) {
  try {
    parse_nccl_tests_log_file("/nonexistent/x.txt");
    FAIL();
  } catch (const ddpsim::core::ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), "/nonexistent/x.txt: cannot open file (it does not exist)");
  }
}

// /dev/zero never ends and a directory is not a log: both refused before reading.
TEST(NcclTestsLog, ErrorNonRegularFile) {
  for (const char* path : {"/dev/zero", "/tmp"}) {
    try {
      parse_nccl_tests_log_file(path);
      FAIL() << path;
    } catch (const ddpsim::core::ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string(path) + ": is "), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("expected a regular file"), std::string::npos) << e.what();
    }
  }
}

// Banner integers beyond int (B2, B4 of the fuzzing findings) and non-finite row numbers.
TEST(NcclTestsLog, ErrorBannerIntegersOutOfRange) {
  EXPECT_EQ(error_of("# nThread 1 nGpus 99999999999 minBytes 8"),
            "inline.txt:1: cannot parse \"# nThread 1 nGpus 99999999999 minBytes 8\": expected 'nThread N nGpus G' "
            "with N an integer in [0, 1048576] and G in [0, 1024]");
  EXPECT_EQ(error_of("# NCCL version 999999.0.0"),
            "inline.txt:1: cannot parse \"# NCCL version 999999.0.0\": expected 'NCCL version MAJOR.MINOR.PATCH' with "
            "each part an integer in [0, 99]");
  EXPECT_NE(error_of("# NCCL version 99999999999.0.0").find("each part an integer in [0, 99]"), std::string::npos);
}

TEST(NcclTestsLog, ErrorNonFiniteNumbers) {
  for (const char* bad : {"nan", "inf", "1e999", "-inf", "0x10"})
    EXPECT_NE(error_of(std::string("8 2 float sum -1 ") + bad + " 0.00 0.00 0 38.85 0.00 0.00 0")
                  .find("(out-of-place time) to be a finite number > 0, got \"" + std::string(bad) + "\""),
              std::string::npos)
        << bad;
  EXPECT_NE(error_of("8 2 float sum -1 40.12 nan 0.00 0 38.85 0.00 0.00 0")
                .find("(out-of-place algbw) to be a finite number >= 0, got \"nan\""),
            std::string::npos);
}

TEST(NcclTestsLog, ShippedLogsParse) {
  struct Expect {
    const char* file;
    size_t rows;
    size_t avgs;
    bool root;
  };
  const Expect expect[] = {{"a100-sxm4-80gb_1x8_nvswitch.txt", 60, 2, true},
                           {"aws-p4d_2x8_a100_efa.txt", 28, 1, false},
                           {"azure-nc12s-v3_1x2_v100_pcie.txt", 58, 2, true},
                           {"v100-sxm2_1x8_nvlink_cube_mesh.txt", 25, 1, false}};
  ASSERT_TRUE(std::filesystem::exists(data_file(expect[0].file))) << "missing " << data_file(expect[0].file);
  for (const auto& x : expect) {
    SCOPED_TRACE(x.file);
    const auto log = parse_nccl_tests_log_file(data_file(x.file).string());
    EXPECT_EQ(log.rows.size(), x.rows);
    EXPECT_EQ(log.avg_bus_bandwidth.size(), x.avgs);
    for (const auto& r : log.rows) {
      EXPECT_EQ(r.type, "float");
      EXPECT_EQ(r.redop, "sum");
      EXPECT_EQ(r.root, -1);
      EXPECT_GT(r.oop_time_us, 0);
      EXPECT_EQ(r.count * 4, static_cast<long long>(r.size_bytes));
      // nccl-tests prints algbw = size / time in GB/s, to two decimals.
      EXPECT_NEAR(r.oop_algbw, r.size_bytes / (r.oop_time_us * 1e3), 0.0051 + 0.001 * r.oop_algbw);
    }
  }
}

TEST(NcclTestsLog, RunsBannersVersionAndDebugLines) {
  const auto log = parse(
      "# nThread 1 nGpus 8 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: 20\n"
      "node1:1234:1234 [0] NCCL INFO Bootstrap : Using ib0:10.0.0.1<0>\n"
      "node1:1234:1234 [0] NCCL INFO NCCL version 2.18.5+cuda12.2\n"
      "           8             2     float     sum      -1    40.12    0.00    0.00      0    38.85    0.00    0.00   "
      "   0\n"
      "          16             4     float     sum      -1    39.64    0.00    0.00      0    39.19    0.00    0.00   "
      "   0\n"
      "node1:1234:1240 [3] NCCL WARN Call to ibv_reg_mr failed\n"
      "# nThread 1 nGpus 1 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: 20\n"
      "          32             8     float     sum      -1    20.26    0.00    0.00      0    17.74    0.00    0.00   "
      "   0\n"
      "           8             2     float     sum      -1    20.26    0.00    0.00      0    17.74    0.00    0.00   "
      "   0\n");
  ASSERT_EQ(log.rows.size(), 4u);
  EXPECT_EQ(log.nccl_version, 21805);
  ASSERT_EQ(log.runs.size(), 3u);
  EXPECT_EQ(log.runs[0].first_row, 0u);
  EXPECT_EQ(log.runs[0].row_count, 2u);
  EXPECT_EQ(log.runs[0].ngpus, 8);
  // A new banner starts a run even though the size grew.
  EXPECT_EQ(log.runs[1].first_row, 2u);
  EXPECT_EQ(log.runs[1].row_count, 1u);
  EXPECT_EQ(log.runs[1].ngpus, 1);
  // Sizes starting over without a banner: a run whose launch mode the file does not say.
  EXPECT_EQ(log.runs[2].first_row, 3u);
  EXPECT_EQ(log.runs[2].ngpus, 0);
}

// nccl-tests -G N prints "graph: N" at the end of the nThread banner; older banners do not.
TEST(NcclTestsLog, CudaGraphFromTheBanner) {
  const auto log = parse(
      "# nThread 1 nGpus 8 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 "
      "validation: 1 graph: 1\n"
      "           8             2     float     sum      -1    15.12    0.00    0.00      0    14.85    0.00    0.00   "
      "   0\n"
      "# nThread 1 nGpus 8 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 "
      "validation: 1 graph: 0\n"
      "           8             2     float     sum      -1    40.12    0.00    0.00      0    38.85    0.00    0.00   "
      "   0\n"
      "# nThread 1 nGpus 8 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: 20 validation: 1\n"
      "           8             2     float     sum      -1    40.12    0.00    0.00      0    38.85    0.00    0.00   "
      "   0\n"
      "           8             2     float     sum      -1    40.12    0.00    0.00      0    38.85    0.00    0.00   "
      "   0\n");
  ASSERT_EQ(log.runs.size(), 4u);
  EXPECT_EQ(log.runs[0].cuda_graph, 1);
  EXPECT_EQ(log.runs[1].cuda_graph, 0);
  EXPECT_EQ(log.runs[2].cuda_graph, -1);  // a banner without "graph:" does not say
  EXPECT_EQ(log.runs[3].cuda_graph, -1);  // sizes starting over without a banner: not said either
  EXPECT_EQ(error_of("# nThread 1 nGpus 1 validation: 1 graph: 99999999999"),
            "inline.txt:1: cannot parse \"# nThread 1 nGpus 1 validation: 1 graph: 99999999999\": expected 'graph: N' "
            "(nccl-tests -G, CUDA graph launches) with N an integer in [0, 1048576]");
}

TEST(NcclTestsLog, ShippedLogsSplitIntoTheirRuns) {
  ASSERT_TRUE(std::filesystem::exists(data_file("aws-p4d_2x8_a100_efa.txt"))) << "missing tests/data/nccl-tests";
  const auto p4d = parse_nccl_tests_log_file(data_file("aws-p4d_2x8_a100_efa.txt").string());
  EXPECT_EQ(p4d.nccl_version, 20803);  // "# NCCL version 2.8.3+cuda11.2" in the file's header
  ASSERT_EQ(p4d.runs.size(), 1u);
  EXPECT_EQ(p4d.runs[0].row_count, 28u);  // 8 B .. 1 GiB
  const auto a100 = parse_nccl_tests_log_file(data_file("a100-sxm4-80gb_1x8_nvswitch.txt").string());
  ASSERT_EQ(a100.runs.size(), 2u);  // RUN A (-g 8) and RUN B (mpirun, -g 1), 8 B .. 4 GiB each
  EXPECT_EQ(a100.runs[0].row_count, 30u);
  EXPECT_EQ(a100.runs[1].row_count, 30u);
}

TEST(NcclTestsLog, NcclTestsBannerCarriesTheLibraryVersion) {
  const auto log = parse(
      "# nccl-tests version 2.20.0 (b4d5bee) nccl-headers=23102 nccl-library=23102\n"
      "# Collective test starting: all_reduce_perf\n"
      "# nThread 1 nGpus 1 minBytes 8192 maxBytes 16384 step: 2(factor) warmup iters: 10 iters: 100\n"
      "        8192          2048     float     sum      -1    35.15    0.23    0.23       0    30.33    0.27    0.27  "
      "     0\n");
  EXPECT_EQ(log.nccl_version, 23102);  // NCCL 2.31.2
  EXPECT_EQ(log.rows.size(), 1u);
  EXPECT_EQ(log.runs.at(0).ngpus, 1);
  // The pre-2.9 code scheme (major*1000 + minor*100 + patch).
  EXPECT_EQ(parse("# nccl-tests version 2.10.0 nccl-headers=2803 nccl-library=2803\n").nccl_version, 20803);
}

TEST(NcclTestsLog, RankCountFromThePrintedBandwidths) {
  ASSERT_TRUE(std::filesystem::exists(data_file("aws-p4d_2x8_a100_efa.txt"))) << "missing tests/data/nccl-tests";
  // busbw / algbw = 2(n-1)/n on the largest row: 232.44 / 132.82 = 1.75 -> 8; 32.71 / 17.44 -> 16.
  EXPECT_EQ(parse_nccl_tests_log_file(data_file("a100-sxm4-80gb_1x8_nvswitch.txt").string()).nranks_from_bandwidths(),
            8);
  EXPECT_EQ(parse_nccl_tests_log_file(data_file("aws-p4d_2x8_a100_efa.txt").string()).nranks_from_bandwidths(), 16);
  EXPECT_EQ(parse_nccl_tests_log_file(data_file("azure-nc12s-v3_1x2_v100_pcie.txt").string()).nranks_from_bandwidths(),
            2);
  EXPECT_EQ(
      parse_nccl_tests_log_file(data_file("v100-sxm2_1x8_nvlink_cube_mesh.txt").string()).nranks_from_bandwidths(), 8);
  // Nothing large enough to read a ratio from.
  EXPECT_EQ(
      parse("           8             2     float     sum      -1    40.12    0.00    0.00      0    38.85    0.00    "
            "0.00      0\n")
          .nranks_from_bandwidths(),
      0);
}

TEST(NcclTestsLog, ReadsWhichTestProducedTheLog) {
  EXPECT_EQ(parse("# Collective test starting: reduce_scatter_perf\n").test_name, "reduce_scatter_perf");
  EXPECT_EQ(parse("# nThread 1 nGpus 1 minBytes 8 maxBytes 16\n").test_name, "");
}

TEST(NcclTestsLog, TellsTheTestFromTheBannerOrTheRows) {
  // The banner names it; an "_mpi" build's name is the same test.
  EXPECT_EQ(nccl_test_of(parse("# Collective test starting: all_gather_perf_mpi\n")), "all_gather_perf");
  EXPECT_EQ(nccl_test_of(parse("# Collective test starting: alltoall_perf\n")), "alltoall_perf");
  // No banner: busbw/algbw 1.75 = 2(n-1)/n is all-reduce; .875 = (n-1)/n with redop "none" is
  // all-gather, with "sum" reduce-scatter (8 ranks, nccl-tests *GetBw).
  const std::string ar =
      "  1073741824     268435456     float     sum      -1   8000.0  134.22  234.88      0   8000.0  "
      "134.22  234.88      0\n";
  const std::string ag =
      "  1073741824     268435456     float    none      -1   8000.0  134.22  117.44      0   8000.0  "
      "134.22  117.44      0\n";
  const std::string rs =
      "  1073741824     268435456     float     sum      -1   8000.0  134.22  117.44      0   8000.0  "
      "134.22  117.44      0\n";
  EXPECT_EQ(nccl_test_of(parse(ar)), "all_reduce_perf");
  EXPECT_EQ(nccl_test_of(parse(ag)), "all_gather_perf");
  EXPECT_EQ(nccl_test_of(parse(rs)), "reduce_scatter_perf");
  // The ratio gives the rank count for either kind.
  EXPECT_EQ(parse(ag).nranks_from_bandwidths(true), 8);
  EXPECT_EQ(parse(ar).nranks_from_bandwidths(), 8);
  // A rooted row with redop "none" and busbw = algbw is broadcast_perf's (src/broadcast.cu
  // passes "none"); the rank count is not in its ratio.
  const auto bc = parse(
      "  1073741824     268435456     float    none       0   8000.0  134.22  134.22      0   "
      "8000.0  134.22  134.22      0\n");
  EXPECT_EQ(nccl_test_of(bc), "broadcast_perf");
  // Another rooted test (reduce_perf: root 0) or rows too small to read a ratio from: unknown.
  EXPECT_EQ(nccl_test_of(parse("  1073741824     268435456     float     sum       0   8000.0  134.22  134.22      0   "
                               "8000.0  134.22  134.22      0\n")),
            "");
  EXPECT_EQ(
      nccl_test_of(parse("           8             2     float    none      -1    40.12    0.00    0.00      0    "
                         "38.85    0.00    0.00      0\n")),
      "");
}

// nccl-tests 2.17.3+ layouts (tests/data/nccl-tests/formats: RUN B of the A100 log rewritten in
// each layout by make_formats.py, following util.cu's printf formats).
namespace {
std::filesystem::path format_file(const std::string& name) { return data_file("formats") / name; }

NcclTestsLog run_b_of_a100() {
  const auto all = parse_nccl_tests_log_file(data_file("a100-sxm4-80gb_1x8_nvswitch.txt").string());
  NcclTestsLog b = all;
  b.rows.assign(all.rows.begin() + static_cast<long>(all.runs[1].first_row),
                all.rows.begin() + static_cast<long>(all.runs[1].first_row + all.runs[1].row_count));
  return b;
}
}  // namespace

TEST(NcclTestsLog, PerIterationColumnsAndTimestampsReadAsTheRowsTheyExtend) {
  const auto b = run_b_of_a100();
  const auto log = parse_nccl_tests_log_file(format_file("a100-runb-I1-S1.txt").string());
  ASSERT_EQ(log.runs.size(), 1u);
  ASSERT_EQ(log.rows.size(), 30u);
  ASSERT_EQ(b.rows.size(), 30u);
  EXPECT_EQ(log.nccl_version, 22807);
  EXPECT_EQ(log.ngpus, 1);
  EXPECT_EQ(log.nranks(), 8);
  EXPECT_FALSE(log.runs[0].host_time);
  for (size_t i = 0; i < 30; ++i) {
    const auto& r = log.rows[i];
    EXPECT_EQ(r.size_bytes, b.rows[i].size_bytes);
    EXPECT_EQ(r.oop_time_us, b.rows[i].oop_time_us);
    EXPECT_EQ(r.ip_time_us, b.rows[i].ip_time_us);
    ASSERT_TRUE(r.per_iteration);
    // make_formats.py wrote i_min = 0.97 t, i_max = 1.05 t, i_p99 = 1.04 t, i_cv% = 1.5, printed
    // with getFloatStr (two decimals up to 9999.99 us, then fewer).
    const double t = r.oop_time_us, ulp = (t < 1e4 ? 0.005 : 0.05) * 1.0001;
    EXPECT_NEAR(r.oop_iter.min_us, 0.97 * t, ulp);
    EXPECT_NEAR(r.oop_iter.max_us, 1.05 * t, ulp * 10);
    EXPECT_NEAR(r.ip_iter.p99_us, 1.04 * r.ip_time_us, ulp * 10);
    EXPECT_DOUBLE_EQ(r.ip_iter.cv_pct, 1.5);
    EXPECT_EQ(r.timestamp.size(), 19u);
  }
  EXPECT_EQ(log.rows[29].timestamp, "2026-07-09 14:00:29");
  EXPECT_TRUE(log_warnings(log).empty());
}

TEST(NcclTestsLog, JsonOutputReadsAsTheTextDoes) {
  const auto b = run_b_of_a100();
  const auto log = parse_nccl_tests_log_file(format_file("a100-runb.json").string());
  ASSERT_EQ(log.runs.size(), 1u);
  ASSERT_EQ(log.rows.size(), 30u);
  EXPECT_EQ(log.test_name, "all_reduce_perf");
  EXPECT_EQ(nccl_test_of(log), "all_reduce_perf");
  EXPECT_EQ(log.nccl_version, 22807);
  EXPECT_EQ(log.runs[0].ngpus, 1);
  EXPECT_EQ(log.runs[0].cuda_graph, 0);
  EXPECT_EQ(log.nranks(), 8);
  EXPECT_EQ(log.devices[7], "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(log.hosts_by_ranks(), (std::array<int, 2>{1, 8}));
  EXPECT_EQ(parse_nccl_tests_log_file(format_file("a100-runb-I1-S1.txt").string()).hosts_by_ranks(),
            (std::array<int, 2>{1, 8}));
  for (size_t i = 0; i < 30; ++i) {
    EXPECT_EQ(log.rows[i].size_bytes, b.rows[i].size_bytes);
    EXPECT_EQ(log.rows[i].count, b.rows[i].count);
    EXPECT_EQ(log.rows[i].oop_time_us, b.rows[i].oop_time_us);
    EXPECT_EQ(log.rows[i].ip_time_us, b.rows[i].ip_time_us);
    EXPECT_EQ(log.rows[i].root, -1);  // "    -1", a string in the file
    EXPECT_EQ(log.rows[i].redop, "sum");
    EXPECT_EQ(log.rows[i].oop_wrong, "0");
  }
  // The bandwidth ratio gives the same 8 ranks as the device list (6-decimal bandwidths).
  EXPECT_EQ(log.nranks_from_bandwidths(), 8);
}

TEST(NcclTestsLog, HostTimeColumnsAreReplacedBySizeOverAlgbw) {
  const auto b = run_b_of_a100();
  const auto log = parse_nccl_tests_log_file(format_file("a100-runb-C1.txt").string());
  ASSERT_EQ(log.runs.size(), 1u);
  ASSERT_TRUE(log.runs[0].host_time);
  size_t kept = 0;
  for (size_t i = 0; i < 30; ++i) {
    const auto& r = log.rows[i];
    if (r.oop_algbw < 1.0) {
      EXPECT_EQ(r.oop_time_us, 0) << "row " << i << " has too few digits of algbw to give a time";
      continue;
    }
    ++kept;
    // algbw printed to 0.01 GB/s: the time back within half a unit of the last digit.
    EXPECT_NEAR(r.oop_time_us / b.rows[i].oop_time_us, 1.0, 0.005 / r.oop_algbw + 1e-9) << "row " << i;
  }
  EXPECT_EQ(kept, 30u - log.runs[0].host_time_rows_dropped);
  EXPECT_EQ(log.runs[0].host_time_rows_dropped, 12u);  // 8 B .. 16 KiB: algbw 0.00-0.93 GB/s
  const auto w = log_warnings(log);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("nccl-tests -C 1"), std::string::npos) << w[0];
  EXPECT_NE(w[0].find("12 row(s)"), std::string::npos) << w[0];
}

TEST(NcclTestsLog, NewLayoutsRefuseWhatTheyCannotBe) {
  const std::string row13 = "8 2 float sum -1 20.26 0.00 0.00 0 17.74 0.00 0.00 0";
  // A timestamp needs both parts in their formats; 15 fields otherwise are no layout.
  EXPECT_NE(error_of(row13 + " 2026-07-09 14:00\n").find("got 15 fields"), std::string::npos);
  EXPECT_NE(error_of(row13 + " 2026-7-09 14:00:00\n").find("got 15 fields"), std::string::npos);
  EXPECT_EQ(parse(row13 + " 2026-07-09 14:00:00\n").rows[0].timestamp, "2026-07-09 14:00:00");
  // Per-iteration columns are numbers >= 0.
  const std::string row21 =
      "8 2 float sum -1 20.26 0.00 0.00 0 19.65 21.27 21.07 1.50 17.74 0.00 0.00 0 17.21 18.63 x 1.50\n";
  EXPECT_NE(error_of(row21).find("column 20 (in-place i_p99) to be a finite number >= 0, got \"x\""), std::string::npos)
      << error_of(row21);
  // A "cputime" header applies to the rows after it, not to an earlier run's.
  const auto two = parse(row13 + "\n#  size  count  type  redop  root  cputime  algbw  busbw  #wrong\n" +
                         "4194304 1048576 float sum -1 6.5 51.0 89.25 0 6.5 51.0 89.25 0\n");
  ASSERT_EQ(two.runs.size(), 2u);
  EXPECT_FALSE(two.runs[0].host_time);
  EXPECT_TRUE(two.runs[1].host_time);
  EXPECT_DOUBLE_EQ(two.rows[1].oop_time_us, 4194304 / 51.0e3);
  EXPECT_DOUBLE_EQ(two.rows[0].oop_time_us, 20.26);
}

TEST(NcclTestsLog, BlockingAndAggregatedRunsAreKeptAndWarned) {
  const auto log = parse(
      "# nThread 1 nGpus 1 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1\n"
      "# Blocking Enabled: wait and barrier after each outer iteration (-n); time excludes barrier \n"
      "8 2 float sum -1 20.26 0.00 0.00 0 17.74 0.00 0.00 0\n"
      "# nThread 1 nGpus 1 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 4\n"
      "8 2 float sum -1 20.26 0.00 0.00 0 17.74 0.00 0.00 0\n");
  ASSERT_EQ(log.runs.size(), 2u);
  EXPECT_EQ(log.runs[0].blocking, 3);
  EXPECT_EQ(log.runs[1].blocking, 0);
  EXPECT_EQ(log.runs[0].agg_iters, 1);
  EXPECT_EQ(log.runs[1].agg_iters, 4);
  const auto w = log_warnings(log);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_NE(w[0].find("run 1: measured with blocking calls (nccl-tests -z 3)"), std::string::npos) << w[0];
  EXPECT_NE(w[1].find("run 2: measured with 4 calls per group (nccl-tests -a 4)"), std::string::npos) << w[1];
}

TEST(NcclTestsLog, JsonErrorsNameThePath) {
  auto err = [](const std::string& text) {
    try {
      parse_nccl_tests_json(text, "r.json");
    } catch (const ddpsim::core::ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("<no error>");
  };
  const std::string cfg = R"("config": {"nthreads": 1, "ngpus": 1, "graph": 0}, )";
  const std::string row = R"({"size": 8, "count": 2, "type": "float", "redop": "sum", "root": "    -1", )";
  auto doc = [&](const std::string& time) {
    const std::string blk = "{\"time\": " + time + ", \"alg_bw\": 0.0, \"bus_bw\": 0.0, \"nwrong\": 0.0}";
    return "{\"version\": 3, " + cfg + "\"results\": [" + row + "\"out_of_place\": " + blk + ", \"in_place\": " + blk +
           "}]}";
  };
  EXPECT_EQ(err(doc("20.26")), "<no error>");
  EXPECT_NE(err(R"({"version": 2, "results": []})").find("/version: 2; this reader knows JSON_FILE_VERSION 3"),
            std::string::npos);
  EXPECT_NE(err("{\"version\": 3, " + cfg + "\"results\": [" + row +
                "\"out_of_place\": {\"time\": 1, \"alg_bw\": 0, \"bus_bw\": 0}}]}")
                .find("r.json: /results/0/in_place: missing or not an object"),
            std::string::npos);
  EXPECT_NE(err(doc("\"nan\"")).find("/results/0/out_of_place/time: \"nan\" is not allowed"), std::string::npos)
      << err(doc("\"nan\""));
  EXPECT_NE(err(doc("0")).find("/results/0/out_of_place/time: 0; a time must be > 0"), std::string::npos)
      << err(doc("0"));
  EXPECT_NE(err("{\"version\": 3, \"results\": 5}").find("/config: missing or not an object"), std::string::npos);
  EXPECT_NE(err("{\"version\": 3, ").find("not valid JSON"), std::string::npos);
}

TEST(NcclTestsLog, RankPrefixesOfIntelMpiAndSrunAreStripped) {
  // Intel MPI -l: "[0]" before every write, so inside a row too (rows as posted in NVIDIA/nccl#1453,
  // 3 x 8 H100 across two racks).
  const auto impi = parse(
      "[0]      1048576        262144     float     sum      -1[0]    1626.5    0.64    1.24      0[0]    2302.3    "
      "0.46    0.87      0\n"
      "[0]      4194304       1048576     float     sum      -1[0]     622.6    6.74   12.91      0[0]     625.8    "
      "6.70   12.85      0\n");
  ASSERT_EQ(impi.rows.size(), 2u);
  EXPECT_DOUBLE_EQ(impi.rows[0].oop_time_us, 1626.5);
  EXPECT_DOUBLE_EQ(impi.rows[0].ip_time_us, 2302.3);
  EXPECT_DOUBLE_EQ(impi.rows[1].ip_busbw, 12.85);
  EXPECT_EQ(impi.rows[1].root, -1);
  // srun --label: "N: " (right-aligned when there are many tasks).
  const auto srun = parse(
      " 0: # nThread 1 nGpus 1 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1\n"
      " 0: #  Rank  0 Group  0 Pid   1234 on     host device  0 [0x07] NVIDIA A100-SXM4-80GB\n"
      " 0: #  Rank  1 Group  0 Pid   1235 on     host device  1 [0x0b] NVIDIA A100-SXM4-80GB\n"
      " 0:            8             2     float     sum      -1    40.12    0.00    0.00      0    38.85    0.00    "
      "0.00      0\n");
  ASSERT_EQ(srun.rows.size(), 1u);
  EXPECT_EQ(srun.nranks(), 2);
  EXPECT_EQ(srun.ngpus, 1);
  EXPECT_DOUBLE_EQ(srun.rows[0].oop_time_us, 40.12);
  // nccl-tests before 2.0 printed device lines without "Group" (as posted in NVIDIA/nccl-tests#29).
  const auto old = parse(
      "#   Rank  0 Pid  23905 on    server1 device  0 [0x2d] Tesla V100-SXM2-16GB\n"
      "#   Rank  1 Pid  23906 on    server1 device  1 [0x32] Tesla V100-SXM2-16GB\n");
  ASSERT_EQ(old.nranks(), 2);
  EXPECT_EQ(old.devices[1], "Tesla V100-SXM2-16GB");
}

// A column header starts a run, but only a banner since the last row gives it a launch mode.
TEST(NcclTestsLog, AHeaderStartsARunWithoutInheritingTheLastBanner) {
  const std::string header = "#       size         count      type   redop    root     time   algbw   busbw #wrong\n";
  const std::string row = "8 2 float sum -1 20.26 0.00 0.00 0 17.74 0.00 0.00 0\n";
  const std::string row16 = "16 4 float sum -1 20.26 0.00 0.00 0 17.74 0.00 0.00 0\n";
  const auto log = parse("# nThread 1 nGpus 8 minBytes 8 maxBytes 16\n" + header + row + header + row16);
  ASSERT_EQ(log.runs.size(), 2u);
  EXPECT_EQ(log.runs[0].ngpus, 8);
  EXPECT_EQ(log.runs[1].ngpus, 0);
  EXPECT_EQ(log.runs[1].first_row, 1u);
}

// nccl-tests -d all runs the sizes once per data type under one banner: each type's run keeps it;
// sizes that start over with the same type (another log pasted below) do not.
TEST(NcclTestsLog, EveryTypeOfADashDAllRunKeepsTheBanner) {
  const auto log = parse(
      "# nThread 1 nGpus 8 minBytes 1048576 maxBytes 2097152 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 "
      "validation: 1 graph: 0\n"
      "1048576 262144 float sum -1 37.89 27.67 48.43 0 37.89 27.67 48.43 0\n"
      "2097152 524288 float sum -1 55.39 37.86 66.26 0 55.39 37.86 66.26 0\n"
      "1048576 524288 half sum -1 37.89 27.67 48.43 0 37.89 27.67 48.43 0\n"
      "2097152 1048576 half sum -1 55.39 37.86 66.26 0 55.39 37.86 66.26 0\n"
      "1048576 524288 half sum -1 37.89 27.67 48.43 0 37.89 27.67 48.43 0\n");
  ASSERT_EQ(log.runs.size(), 3u);
  EXPECT_EQ(log.runs[0].ngpus, 8);
  EXPECT_EQ(log.runs[1].ngpus, 8);
  EXPECT_EQ(log.runs[1].first_row, 2u);
  EXPECT_EQ(log.runs[2].ngpus, 0);
}

// aws-ofi-nccl prints its release at init under NCCL_DEBUG=INFO (nccl_ofi_net.cpp: "Initializing "
// PACKAGE_STRING); the first one is the log's.
TEST(NcclTestsLog, ReadsTheNetPluginRelease) {
  const auto log = parse(
      "ip-10-0-0-1:1234:1234 [0] NCCL INFO NET/OFI Initializing aws-ofi-nccl 1.9.1-aws\n"
      "ip-10-0-0-1:1234:1234 [0] NCCL INFO NET/OFI Initializing aws-ofi-nccl 1.10.0-aws\n"
      "8 2 float sum -1 20.26 0.00 0.00 0 17.74 0.00 0.00 0\n");
  EXPECT_EQ(log.net_plugin_version, 10901);
  EXPECT_EQ(parse("8 2 float sum -1 20.26 0.00 0.00 0 17.74 0.00 0.00 0\n").net_plugin_version, 0);
}
