// Published training throughput of 22 CNNs on one RTX 3090 (timm's benchmark; rows, source and
// method in tests/data/cnn-throughput/README.md) against `ddpsim run` on the same GPU at the same
// batch. End-to-end figures: a check of the compute and memory estimates; nothing in ddpsim is set
// from them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_support.hpp"
#include "timm_table.hpp"

namespace {

TEST(PublishedCnnThroughput, TimmTrainingOnOneRtx3090) {
  const auto table = ddpsim::testing::timm_rows();
  ASSERT_EQ(table.size(), 22u);
  std::map<std::string, double> err;
  std::vector<double> abs_err;
  std::printf("%-30s %6s %10s %10s %8s %9s\n", "model", "batch", "measured", "ddpsim", "error", "memory");
  for (const auto& r : table) {
    const auto res = ddpsim::testing::run_cli(ddpsim::testing::timm_run_args(r) + " --json -");
    ASSERT_EQ(res.code, 0) << r.name << ": " << res.err;
    const auto report = nlohmann::json::parse(res.out.substr(0, res.out.size() - res.err.size()));
    const double predicted = report["samples_per_s"];
    const double gib = report["memory_per_gpu_bytes"].get<double>() / (1024.0 * 1024 * 1024);
    const double e = predicted / r.measured - 1;
    err[r.name] = e;
    abs_err.push_back(std::fabs(e));
    std::printf("%-30s %6.0f %10.1f %10.1f %+7.1f%% %6.1f GiB\n", r.name.c_str(), r.batch, r.measured, predicted,
                100 * e, gib);
    // Each row ran on the card's 24 GB (timm's benchmark.py lowers the batch on out-of-memory and
    // records the batch that ran), so ddpsim must say it fits.
    EXPECT_TRUE(report["fits"].get<bool>()) << r.name << ": " << gib << " GiB";
  }
  std::sort(abs_err.begin(), abs_err.end());
  const size_t mid = abs_err.size() / 2;
  const double median = abs_err.size() % 2 ? abs_err[mid] : (abs_err[mid - 1] + abs_err[mid]) / 2;
  std::printf("median |error| %.1f %%\n", 100 * median);
  // Achieved when added (2026-12-04): median 10.3 % over the 22, the six depthwise networks within
  // 17.1 % (they were 75-86 % too slow while depthwise convolutions were priced as padded implicit
  // GEMMs). Margin 5 points: a guard against the estimate moving away, not a target.
  EXPECT_LT(median, 0.103 + 0.05);
  for (const char* dw : {"mobilenetv2_100", "mobilenetv3_large_100", "efficientnet_b0", "convnext_tiny",
                         "convnext_small", "mnasnet_100"})
    EXPECT_LT(std::fabs(err.at(dw)), 0.171 + 0.05) << dw;
}

}  // namespace
