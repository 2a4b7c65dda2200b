// The per-kernel model against the published single-kernel timings of tests/data/kernels/
// (kernels.csv; sources in its README.md). `ctest -R KernelDevSet -V` prints the table. The
// bounds are the errors the model achieved when the rows were added (stated next to each bound)
// plus a margin of 5 points: a regression guard that fails if the model moves away from the
// measurements, not a fit (no constant was tuned to make these rows pass; see the README).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "config/catalog.hpp"
#include "config/specs.hpp"
#include "gpu/kernel_model.hpp"

namespace {

struct Row {
  std::string id, gpu, kind, dtype;
  double m = 0, n = 0, k = 0, bytes = 0, measured_s = 0;
  std::string source;
};

std::vector<Row> load_rows() {
  const auto file = std::filesystem::path(DDPSIM_SOURCE_DIR) / "tests" / "data" / "kernels" / "kernels.csv";
  std::ifstream in(file);
  std::vector<Row> rows;
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::stringstream ss(line);
    std::vector<std::string> f;
    std::string cell;
    while (std::getline(ss, cell, ',')) f.push_back(cell);
    if (f.size() != 10) {
      ADD_FAILURE() << file << ": malformed row: " << line;
      continue;
    }
    Row r;
    r.id = f[0];
    r.gpu = f[1];
    r.kind = f[2];
    r.dtype = f[3];
    r.m = std::stod(f[4]);
    r.n = std::stod(f[5]);
    r.k = std::stod(f[6]);
    r.bytes = std::stod(f[7]);
    r.measured_s = std::stod(f[8]);
    r.source = f[9];
    rows.push_back(r);
  }
  return rows;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

TEST(KernelDevSet, PublishedKernelTimings) {
  using ddpsim::config::Catalog;
  Catalog cat(Catalog::default_root());
  const auto rows = load_rows();
  ASSERT_GE(rows.size(), 10u) << "tests/data/kernels/kernels.csv missing or short";
  const double fixed = ddpsim::config::ComputeSettings{}.kernel_overhead;
  std::vector<double> gemm_err, stream_err;
  std::printf("%-32s %-16s %12s %12s %8s\n", "kernel", "gpu", "measured us", "model us", "error");
  for (const auto& r : rows) {
    const auto gpu = cat.load_gpu(cat.resolve(ddpsim::config::Kind::GPU, r.gpu));
    const auto d = ddpsim::gpu::device_rates(gpu, r.dtype, fixed);
    double model = 0;
    if (r.kind == "gemm")
      model = ddpsim::gpu::gemm_estimate(1, r.m, r.n, r.k, d).seconds;
    else if (r.kind == "stream")
      model = ddpsim::gpu::memory_kernel(r.bytes, d).seconds;
    else
      ADD_FAILURE() << r.id << ": unknown kind " << r.kind;
    const double err = model / r.measured_s - 1;
    (r.kind == "gemm" ? gemm_err : stream_err).push_back(std::fabs(err));
    std::printf("%-32s %-16s %12.2f %12.2f %+7.1f%%\n", r.id.c_str(), r.gpu.c_str(), 1e6 * r.measured_s, 1e6 * model,
                100 * err);
  }
  ASSERT_FALSE(gemm_err.empty());
  ASSERT_FALSE(stream_err.empty());
  std::printf("gemm: median |error| %.1f %%, max %.1f %%; stream: max %.1f %%\n", 100 * median(gemm_err),
              100 * *std::max_element(gemm_err.begin(), gemm_err.end()),
              100 * *std::max_element(stream_err.begin(), stream_err.end()));
  // Achieved when added: GEMM median 9.3 %, max 38.2 % (the 1024^3 SGEMM: 64 tiles of 128x128 on
  // 108 SMs, where cuBLAS picks a smaller tile or split the model's three SIMT tiles do not
  // have); stream 1.3 %. Margin 5 points each.
  EXPECT_LT(median(gemm_err), 0.093 + 0.05);
  EXPECT_LT(*std::max_element(gemm_err.begin(), gemm_err.end()), 0.382 + 0.05);
  EXPECT_LT(*std::max_element(stream_err.begin(), stream_err.end()), 0.013 + 0.05);
}

}  // namespace
