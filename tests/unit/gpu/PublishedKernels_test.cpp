// The per-kernel model against published single-GPU kernel timings (sim/gpu/NOTES.md,
// "Published kernel timings"). Nothing in kernel_model.cpp is fitted to these figures; the bound
// below is a regression guard (the errors are printed: ctest -R PublishedKernels -V).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "config/catalog.hpp"
#include "gpu/kernel_model.hpp"

namespace {

struct Published {
  const char* gpu;   // bundled preset
  const char* what;  // the source's row
  double m, n, k;    // C[m, n] = A[m, k] B[k, n]
  double tflops;     // published achieved TFLOPS
};

// Stas Bekman, "Machine Learning Engineering", compute/accelerator/README.md, "Maximum Achievable
// Matmul FLOPS comparison table" (github.com/stas00/ml-engineering): torch.mm in BF16, the
// fastest of 100 timed iterations at the best shape of a shape scan, CUDA 12.1. mamf-finder.py
// writes shapes as MxNxK with A = (M, N), B = (N, K): N is the inner dimension, so the published
// "6912x16384x2048" is m = 6912, k = 16384, n = 2048 here.
const Published kMamf[] = {
    {"a100-sxm4-80gb", "A100 SXM 6912x16384x2048", 6912, 2048, 16384, 267.9},
    {"a100-pcie-80gb", "A100 PCIe 2304x5120x1536", 2304, 1536, 5120, 256.4},
    {"h100-sxm", "H100 SXM 6144x17920x2816", 6144, 2816, 17920, 792.1},
};

TEST(PublishedKernels, BestShapeBf16GemmsFromMamf) {
  using ddpsim::config::Catalog;
  Catalog cat(Catalog::default_root());
  std::printf("%-28s %10s %10s %8s %6s %6s\n", "GEMM (published shape)", "published", "ddpsim", "error", "tile",
              "waves");
  for (const auto& p : kMamf) {
    const auto gpu = cat.load_gpu(cat.resolve(ddpsim::config::Kind::GPU, p.gpu));
    const auto d = ddpsim::gpu::device_rates(gpu, "bfloat16", 2e-6);
    const auto e = ddpsim::gpu::gemm_estimate(1, p.m, p.n, p.k, d);
    const double tflops = 2 * p.m * p.n * p.k / e.seconds / 1e12;
    const double err = tflops / p.tflops - 1;
    std::printf("%-28s %10.1f %10.1f %+7.1f%% %3dx%-3d %5.0f\n", p.what, p.tflops, tflops, 100 * err, e.tile_m,
                e.tile_n, e.waves);
    EXPECT_LT(std::fabs(err), 0.15) << p.what;
  }
}

}  // namespace
