// Issue 23's goals for real DDP on CPU, checked on every run the project ships as such a check:
// the seven bench/results/cpu-*.json files and the runs of models never used while the mechanisms
// were built (bench/results/other-models-*/). The bounds are the issue's (median |step error| within
// 2 %; DDP over no DDP at one rank within 1 point, here its median) and `validate`'s default
// tolerance (5 %) for each file's median, not what this build happens to give: a change to the CPU
// model that makes these runs worse fails here. The issue's per-case bounds (every case within 3 %,
// every one-rank case within 1 point) are not met by the shipped runs (docs/accuracy.md); the test
// prints how many cases miss them instead of asserting them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "core/json_reader.hpp"
#include "core/stats.hpp"
#include "sim/cli_support.hpp"

namespace ddpsim {
namespace {

namespace fs = std::filesystem;
using core::Json;

// The shipped check set: bench/results/cpu-*.json and bench/results/other-models-*/*.json.
std::vector<std::string> shipped_cpu_runs() {
  std::vector<std::string> files;
  const fs::path root = "bench/results";
  for (const auto& e : fs::directory_iterator(root)) {
    const std::string name = e.path().filename().string();
    if (e.is_regular_file() && e.path().extension() == ".json" && name.rfind("cpu-", 0) == 0)
      files.push_back(e.path().string());
    if (e.is_directory() && name.rfind("other-models-", 0) == 0)
      for (const auto& f : fs::directory_iterator(e.path()))
        if (f.is_regular_file() && f.path().extension() == ".json") files.push_back(f.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(CpuRuns, ShippedRunsMeetTheIssuesMedianGoals) {
  const auto files = shipped_cpu_runs();
  // The seven top-level files and the 21 runs of other models of 2026-12-02 .. 12-07.
  ASSERT_GE(files.size(), 28u);
  std::vector<double> step_errs, ddp_points;
  int beyond3 = 0, beyond1pt = 0;
  for (const auto& f : files) {
    const auto r = testing::run_cli("validate " + f + " --tolerance 100 --json -");
    ASSERT_EQ(r.code, 0) << f << ": " << r.err;
    const Json j = Json::parse(r.out);
    std::vector<double> file_errs;
    for (const auto& c : j.at("cases")) {
      const double e = std::abs(c.at("step_time_error").get<double>());
      file_errs.push_back(e);
      step_errs.push_back(e);
      beyond3 += e > 0.03;
      if (c.contains("ddp_overhead") && c["ddp_overhead"].is_object()) {
        const double pt = std::abs(c["ddp_overhead"].at("error_points").get<double>());
        ddp_points.push_back(pt);
        beyond1pt += pt > 1.0;
      }
    }
    ASSERT_FALSE(file_errs.empty()) << f;
    // validate's own default tolerance, per file.
    EXPECT_LE(core::median(file_errs), 0.05) << f;
    // The file's median as validate computes it is the same figure.
    EXPECT_NEAR(j.at("median_abs_step_time_error").get<double>(), core::median(file_errs), 1e-9) << f;
  }
  ASSERT_GE(step_errs.size(), 90u);
  ASSERT_GE(ddp_points.size(), 15u);  // five one-rank files, three caps each
  const double m = core::median(step_errs), mp = core::median(ddp_points);
  std::printf(
      "[cpu runs] %zu files, %zu cases: median |step error| %.2f %% (goal 2 %%), %d beyond 3 %%; "
      "one rank, %zu cases: median |DDP-over-no-DDP error| %.2f points (goal 1), %d beyond 1 point\n",
      files.size(), step_errs.size(), 100 * m, beyond3, ddp_points.size(), mp, beyond1pt);
  EXPECT_LE(m, 0.02) << "issue 23: median step error within 2 % over the shipped CPU runs";
  EXPECT_LE(mp, 1.0) << "issue 23: DDP over no DDP at one rank within 1 point (median)";
}

}  // namespace
}  // namespace ddpsim
