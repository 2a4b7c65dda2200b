// Unit tests for the per-kernel model (sim/gpu/kernel_model.*). Every expected time is worked out
// by hand in the comment above it from the synthetic GPU below and the constants in
// kernel_model.cpp (tile list and relative efficiencies, alignment factors, host cost).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "config/specs.hpp"
#include "gpu/compute_model.hpp"
#include "gpu/kernel_model.hpp"

using ddpsim::config::KernelRecord;
using ddpsim::gpu::DeviceRates;
using ddpsim::gpu::gemm_estimate;
using ddpsim::gpu::memory_kernel;

namespace {

// 10 SMs, fp16 tensor cores 100 TFLOPS (10 per SM), large-tile efficiency 0.8, HBM 1 TB/s at 0.9,
// 2 us per kernel. One 256x128 tile at k = 4096: 2*256*128*4096 / (10e12 * 0.8) = 33.554432 us.
DeviceRates gpu16() {
  DeviceRates d;
  d.sms = 10;
  d.math_peak = 100e12;
  d.tensor_cores = true;
  d.elem_bytes = 2;
  d.align_elems = 8;
  d.gemm_efficiency = 0.8;
  d.hbm_bandwidth = 1e12;
  d.memory_efficiency = 0.9;
  d.kernel_fixed_s = 2e-6;
  return d;
}

constexpr double kTol = 1e-12;

TEST(KernelModel, OneFullWaveOfLargeTiles) {
  // m = 2560, n = 128: ten 256x128 tiles = one wave on 10 SMs: 33.554432 us of math; the operands
  // (2 B x (2560*4096 + 4096*128 + 2560*128) = 22,675,456 B) take 25.19 us: compute-bound.
  const auto e = gemm_estimate(1, 2560, 128, 4096, gpu16());
  EXPECT_EQ(e.tile_m, 256);
  EXPECT_EQ(e.waves, 1);
  EXPECT_NEAR(e.shape.compute_s, 33.554432e-6, kTol);
  EXPECT_NEAR(e.shape.memory_s, 22675456.0 / 0.9e12, kTol);
  EXPECT_NEAR(e.seconds, 35.554432e-6, kTol);
  // Its compute is one group of ten CTAs (what NCCL's SMs cost it: gpu/contention.hpp).
  ASSERT_TRUE(e.shape.waves);
  ASSERT_EQ(e.shape.waves->size(), 1u);
  EXPECT_EQ((*e.shape.waves)[0].ctas, 10);
  EXPECT_EQ((*e.shape.waves)[0].share, 1.0);
}

TEST(KernelModel, SimtGemmEfficiencyDependsOnTheFp32LanesPerSm) {
  // A float32 GEMM without tensor cores: 0.95 of the FP32 peak on an SM of 64 FP32 lanes, 0.78 on
  // one of 128 (kernel_model.cpp, sources there); float64 keeps 0.95 (its own units). 100 SMs at
  // 50 TFLOPS: m = n = 1280, k = 4096 is exactly 100 tiles of 128x128, one wave, so the compute
  // time is 2*128*128*4096 / (0.5e12 * eff): 0.28255 ms at 0.95, 0.34412 ms at 0.78.
  ddpsim::config::GpuSpec g;
  g.name = "t";
  g.sm_count = 100;
  g.peak_flops = {{"float32", 50e12}, {"float64", 50e12}};
  g.hbm_bandwidth = 1e15;
  const double tile = 2.0 * 128 * 128 * 4096 / 0.5e12;
  for (const auto& [lanes, eff] : std::vector<std::pair<int, double>>{{64, 0.95}, {128, 0.78}}) {
    g.fp32_lanes_per_sm = lanes;
    const auto d = ddpsim::gpu::device_rates(g, "float32", 0.0);
    EXPECT_FALSE(d.tensor_cores);
    EXPECT_DOUBLE_EQ(d.gemm_efficiency, eff) << lanes;
    const auto e = gemm_estimate(1, 1280, 1280, 4096, d);
    EXPECT_EQ(e.waves, 1);
    EXPECT_NEAR(e.shape.compute_s, tile / eff, 1e-15) << lanes;
    EXPECT_DOUBLE_EQ(ddpsim::gpu::device_rates(g, "float64", 0.0).gemm_efficiency, 0.95) << lanes;
  }
}

TEST(KernelModel, WaveQuantizationStep) {
  // m = 2816 (+10 %): 11 tiles of 256x128 need 2 waves (67.1 us). The best choice is 128x64 (or
  // 64x128): 22 x 2 = 44 tiles, 5 waves of 2*128*64*4096 / (8e12 * 0.85) = 9.8689505 us
  // = 49.344753 us; 128x128 gives 3 waves x 17.660 = 52.98 us, 64x64 9 waves x 5.9918 = 53.93 us.
  // So 10 % more work costs 39 % more time.
  const auto e = gemm_estimate(1, 2816, 128, 4096, gpu16());
  const double wave = 2.0 * 128 * 64 * 4096 / (8e12 * 0.85);
  EXPECT_EQ(e.waves, 5);
  EXPECT_NEAR(e.shape.compute_s, 5 * wave, kTol);
  EXPECT_NEAR(e.seconds, 5 * wave + 2e-6, kTol);
  EXPECT_GT(e.seconds / gemm_estimate(1, 2560, 128, 4096, gpu16()).seconds, 1.38);
}

TEST(KernelModel, MisalignedLeadingDimensionHalvesTensorCoreRate) {
  // k = 4100: not a multiple of 8 halves, but 8200 bytes is a multiple of 4: factor 0.5.
  // One wave of 256x128: 2*256*128*4100 / (8e12 * 0.5) = 67.1744 us, + 2 us.
  const auto e = gemm_estimate(1, 2560, 128, 4100, gpu16());
  EXPECT_EQ(e.alignment_factor, 0.5);
  EXPECT_NEAR(e.seconds, 2.0 * 256 * 128 * 4100 / 4e12 + 2e-6, kTol);
  // An odd k: a quarter of the rate.
  EXPECT_EQ(gemm_estimate(1, 2560, 128, 4099, gpu16()).alignment_factor, 0.25);
  // k = 4104 is a multiple of 8 again: full rate.
  EXPECT_EQ(gemm_estimate(1, 2560, 128, 4104, gpu16()).alignment_factor, 1.0);
}

TEST(KernelModel, SplitKFillsTheGpuForSmallOutputs) {
  // 256 x 128 output, k = 65536: one 256x128 tile (536.9 us of math unsplit). Best: two 128x128
  // tiles split 5 ways (floor(10 SMs / 2 tiles)), one wave of k = 13108:
  // 2*128*128*13108 / (8e12 * 0.95) = 56.51 us; bytes = operands 2 x (256*65536 + 65536*128 +
  // 256*128) = 50,397,184 + partials 2 x 4 B x 256*128*5 = 1,310,720 -> 57.45 us: memory-bound,
  // + 2 kernels x 2 us = 61.45 us. (256x128 split 10: max(53.69, 58.91) + 4 = 62.91 us.)
  const auto e = gemm_estimate(1, 256, 128, 65536, gpu16());
  EXPECT_EQ(e.split_k, 5);
  EXPECT_EQ(e.tile_m, 128);
  EXPECT_NEAR(e.shape.compute_s, 2.0 * 128 * 128 * 13108 / (8e12 * 0.95), kTol);
  const double bytes = 2.0 * (256.0 * 65536 + 65536.0 * 128 + 256.0 * 128) + 8.0 * 256 * 128 * 5;
  EXPECT_NEAR(e.seconds, bytes / 0.9e12 + 4e-6, kTol);
}

TEST(KernelModel, MemoryBoundAchievedBandwidthGrowsWithSize) {
  // t = 2 us + bytes / 0.9 TB/s: 1 MB -> 3.1111 us (0.32 TB/s achieved); 1 GB -> 1113.11 us (0.898).
  EXPECT_NEAR(memory_kernel(1e6, gpu16()).seconds, 2e-6 + 1e6 / 0.9e12, kTol);
  EXPECT_NEAR(memory_kernel(1e9, gpu16()).seconds, 2e-6 + 1e9 / 0.9e12, 1e-12);
  EXPECT_NEAR(1e6 / memory_kernel(1e6, gpu16()).seconds, 1e6 / 3.1111111e-6, 1e6);
}

ddpsim::gpu::KernelContext context() {
  ddpsim::gpu::KernelContext c;
  c.gemm = c.conv = c.memory = gpu16();
  return c;
}

ddpsim::config::ModelSpec one_layer(std::vector<KernelRecord> ks) {
  ddpsim::config::ModelSpec m;
  m.batch_size = 1;
  ddpsim::config::LayerSpec l;
  l.name = "l";
  l.kernels = std::move(ks);
  m.layers = {l};
  return m;
}

// A square convolution record with both gradients: N x C x H x H in, O filters of R x R,
// N x O x P x P out.
KernelRecord conv(double n, double c, double h, double o, double r, double p) {
  KernelRecord k;
  k.op = KernelRecord::Op::CONV;
  k.n = n;
  k.c = c;
  k.h = k.w = h;
  k.o = o;
  k.r = k.s = r;
  k.p = k.q = p;
  k.grad_a = k.grad_b = true;
  return k;
}

KernelRecord linear(bool grad_input) {
  KernelRecord r;
  r.op = KernelRecord::Op::GEMM;
  r.m = 2560;
  r.n = 128;
  r.k = 4096;
  r.grad_a = grad_input;
  r.grad_b = true;
  r.bias = true;
  return r;
}

TEST(KernelModel, LinearBackwardIsDgradWgradAndBiasReduction) {
  // Forward 2560x128x4096 (35.554432 us, above). dgrad: m 2560, n 4096, k 128: 320 tiles of
  // 256x128 = 32 waves x 2*256*128*128/8e12 (1.048576 us) = 33.554432 us, operands 25.19 us ->
  // 35.554432 us. wgrad: m 4096, n 128, k 2560: 16 tiles -> 2 waves x 20.97152 us = 41.94304 us;
  // (128x128: 32 tiles, 4 waves x 11.0376 = 44.15; 128x64 64 tiles 7 waves x 6.168 = 43.18):
  // 41.94304 + 2 us. Bias: reads 2 B x 2560*128 and writes 4 B x 128: 2 us + 655,872 B / 0.9e12.
  const auto lk = ddpsim::gpu::layer_kernels(one_layer({linear(true)}), context());
  ASSERT_EQ(lk[0].forward.size(), 1u);
  ASSERT_EQ(lk[0].backward.size(), 3u);
  EXPECT_NEAR(lk[0].forward[0].seconds, 35.554432e-6, kTol);
  EXPECT_NEAR(lk[0].backward[0].seconds, 35.554432e-6, kTol);
  EXPECT_NEAR(lk[0].backward[1].seconds, 2 * 2.0 * 256 * 128 * 2560 / 8e12 + 2e-6, kTol);
  EXPECT_NEAR(lk[0].backward[2].seconds, 2e-6 + (2.0 * 2560 * 128 + 4 * 128) / 0.9e12, kTol);
  EXPECT_DOUBLE_EQ(lk[0].flops_bwd, 2 * lk[0].flops_fwd);
  // A first layer (input needs no gradient): no dgrad GEMM.
  EXPECT_EQ(ddpsim::gpu::layer_kernels(one_layer({linear(false)}), context())[0].backward.size(), 2u);
}

TEST(KernelModel, ConvBackwardIsDgradAndWgradImplicitGemms) {
  // 3x3 conv, N 8, C 64 -> K 64, 56x56 -> 56x56. Forward implicit GEMM M = 8*56*56 = 25088,
  // N = 64, K = 64*9 = 576; dgrad M = 25088, N = 64, K = 576; wgrad M = 64, N = 576, K = 25088.
  const KernelRecord r = conv(8, 64, 56, 64, 3, 56);
  const auto lk = ddpsim::gpu::layer_kernels(one_layer({r}), context());
  ASSERT_EQ(lk[0].backward.size(), 2u);
  const auto d = gpu16();
  EXPECT_NEAR(lk[0].forward[0].shape.compute_s, gemm_estimate(1, 25088, 64, 576, d).shape.compute_s, kTol);
  EXPECT_NEAR(lk[0].backward[1].shape.compute_s, gemm_estimate(1, 64, 576, 25088, d).shape.compute_s, kTol);
  // Bytes are the tensors, not an im2col copy: 2 B x (8*64*56*56 x 2 + 64*64*9). In fp16 on tensor
  // cores the NCHW tensors are transposed to NHWC and back (x, w in; y out), each read and written
  // once (3 more kernels of 2 us + 2 x bytes / 0.9 TB/s), added to the convolution: 3x the bytes.
  const double io = 2.0 * (2 * 8 * 64 * 56 * 56 + 64 * 64 * 9);
  EXPECT_NEAR(lk[0].forward[0].shape.memory_s, 3 * io / 0.9e12, kTol);
  EXPECT_NEAR(
      lk[0].forward[0].seconds,
      std::max(gemm_estimate(1, 25088, 64, 576, d).shape.compute_s, io / 0.9e12) + 2e-6 + 3 * 2e-6 + 2 * io / 0.9e12,
      kTol);
  // TF32 (4-byte operands on tensor cores): the same three transposes at 4 B an element (the
  // A100 profile of pytorch/pytorch#81940): 3x the 4-byte tensors' bytes.
  auto c32 = context();
  c32.conv.elem_bytes = 4;
  c32.conv.align_elems = 4;
  const auto lk32 = ddpsim::gpu::layer_kernels(one_layer({r}), c32);
  EXPECT_NEAR(lk32[0].forward[0].shape.memory_s, 3 * 2 * io / 0.9e12, kTol);
  // SIMT convolutions (FP32 without tensor cores, e.g. Volta) run NCHW kernels: no transposes.
  auto simt = c32;
  simt.conv.tensor_cores = false;
  const auto lks = ddpsim::gpu::layer_kernels(one_layer({r}), simt);
  EXPECT_NEAR(lks[0].forward[0].shape.memory_s, 2 * io / 0.9e12, kTol);
  // channels_last (NHWC tensors): cuDNN's NHWC kernels take them as they are, no transposes; on
  // tensor cores forward, dgrad and wgrad each lose their three transpose kernels (3 x 2 us + 2 x
  // the bytes read and written), and the SIMT case stays as it was.
  auto cl = context();
  cl.channels_last = true;
  const auto lkc = ddpsim::gpu::layer_kernels(one_layer({r}), cl);
  ASSERT_EQ(lkc[0].backward.size(), 2u);
  EXPECT_NEAR(lkc[0].forward[0].shape.memory_s, io / 0.9e12, kTol);
  for (int i = 0; i < 3; ++i) {
    const auto& nchw = i == 0 ? lk[0].forward[0] : lk[0].backward[i - 1];
    const auto& nhwc = i == 0 ? lkc[0].forward[0] : lkc[0].backward[i - 1];
    EXPECT_NEAR(nchw.seconds - nhwc.seconds, 3 * 2e-6 + 2 * io / 0.9e12, kTol) << "kernel " << i;
  }
  auto simt_cl = simt;
  simt_cl.channels_last = true;
  EXPECT_NEAR(ddpsim::gpu::layer_kernels(one_layer({r}), simt_cl)[0].forward[0].seconds, lks[0].forward[0].seconds,
              kTol);
  // Forward FLOPs 2 x 25088 x 64 x 576; backward twice that.
  EXPECT_DOUBLE_EQ(lk[0].flops_fwd, 2.0 * 25088 * 64 * 576);
  EXPECT_DOUBLE_EQ(lk[0].flops_bwd, 2 * lk[0].flops_fwd);
}

TEST(KernelModel, DgradDoesNotSplitK) {
  // cuDNN runs a convolution's dgrad without splitting its reduction (kernel_model.cpp
  // kDgradSplitK): 3x3 conv, N 1, C 128 -> K 1024, 16x16 -> 16x16. dgrad M = 256, N = 128,
  // K = 1024*9 = 9216. Unsplit, the best tile is 64x64: 4 x 2 = 8 CTAs on 10 SMs, one wave of
  // 2*64*64*9216 / (10 TFLOPS per SM x 0.8 x 0.70) = 13.4817 us. A plain GEMM of that shape may
  // split K (it has fewer tiles than SMs) and is faster.
  const KernelRecord r = conv(1, 128, 16, 1024, 3, 16);
  const auto d = gpu16();
  const auto lk = ddpsim::gpu::layer_kernels(one_layer({r}), context());
  ASSERT_EQ(lk[0].backward.size(), 2u);
  const double unsplit = 2.0 * 64 * 64 * 9216 / (10e12 * 0.8 * 0.70);
  EXPECT_NEAR(lk[0].backward[0].shape.compute_s, unsplit, kTol);
  EXPECT_EQ(gemm_estimate(1, 256, 128, 9216, d, false).split_k, 1);
  EXPECT_NEAR(gemm_estimate(1, 256, 128, 9216, d, false).shape.compute_s, unsplit, kTol);
  const auto split = gemm_estimate(1, 256, 128, 9216, d);
  EXPECT_GT(split.split_k, 1);
  EXPECT_LT(split.shape.compute_s, unsplit);
}

TEST(KernelModel, StridedDgradRunsOneGemmPerOutputPhase) {
  // A stride-2 convolution's dgrad skips the taps between the strided positions (CUTLASS's
  // strided dgrad, NVIDIA/cutlass#928): one GEMM per output phase (ph, pw) in 2 x 2, each with
  // M = N*ceil(H/2)*ceil(W/2) and K = filters x the taps that reach that phase.
  KernelRecord r = conv(8, 64, 56, 128, 3, 28);  // stride 2, padding 1: floor((56 + 2 - 3) / 2) + 1 = 28
  const auto d = gpu16();
  const double m = 8 * 28 * 28;  // 6272
  // Taps per phase along an axis: ceil(3/2) = 2 at phase 0, ceil(2/2) = 1 at phase 1, so the
  // four phases have 4, 2, 2 and 1 taps (9 in all: the forward's multiply-adds).
  const double expect = gemm_estimate(1, m, 64, 128 * 4, d).shape.compute_s +
                        2 * gemm_estimate(1, m, 64, 128 * 2, d).shape.compute_s +
                        gemm_estimate(1, m, 64, 128 * 1, d).shape.compute_s;
  const auto lk = ddpsim::gpu::layer_kernels(one_layer({r}), context());
  ASSERT_EQ(lk[0].backward.size(), 2u);
  EXPECT_NEAR(lk[0].backward[0].shape.compute_s, expect, kTol);
  // Not the one GEMM over every input pixel (M = 8*56*56, K = 128*9) it was priced as before.
  EXPECT_LT(lk[0].backward[0].shape.compute_s, 0.5 * gemm_estimate(1, 8 * 56 * 56, 64, 128 * 9, d).shape.compute_s);
  // A 1x1 stride-2 projection (ResNet's downsample): only phase (0, 0) has a tap.
  r.r = r.s = 1;
  const auto lk1 = ddpsim::gpu::layer_kernels(one_layer({r}), context());
  EXPECT_NEAR(lk1[0].backward[0].shape.compute_s, gemm_estimate(1, m, 64, 128, d).shape.compute_s, kTol);
  // Stride 1 without padding (3x3, 56 -> 54): one GEMM over the padded input, M = 8*56*56.
  r.r = r.s = 3;
  r.p = r.q = 54;
  const auto lkv = ddpsim::gpu::layer_kernels(one_layer({r}), context());
  EXPECT_NEAR(lkv[0].backward[0].shape.compute_s, gemm_estimate(1, 8 * 56 * 56, 64, 128 * 9, d).shape.compute_s, kTol);
}

TEST(KernelModel, StridedDgradPhasesAreCountedNotEnumerated) {
  // A 2^20 x 2^20 filter over a 2^21 x 2^21 input to 2 x 2 outputs (sizes the record reader
  // accepts per dimension): stride ceil((2^21 - 2^20 + 1) / 2) = 2^19 + 1 on each axis, so
  // 2^20 = 1 x (2^19 + 1) + (2^19 - 1): 2^19 - 1 phases with 2 taps, 2 phases with 1 tap. The
  // phases (2^38 of them) are summed by group, so this returns at once.
  const double big = 1 << 20, s = (1 << 19) + 1, many = (1 << 19) - 1;
  KernelRecord r = conv(1, 8, 2 * big, 8, big, 2);
  const auto d = gpu16();
  const double pm = 1 * std::ceil(2 * big / s) * std::ceil(2 * big / s);  // 4 x 4
  const auto g = [&](double taps) { return gemm_estimate(1, pm, 8, 8 * taps, d).shape.compute_s; };
  const double expect = many * many * g(4) + 2 * (many * 2) * g(2) + 2 * 2 * g(1);
  const auto lk = ddpsim::gpu::layer_kernels(one_layer({r}), context());
  ASSERT_EQ(lk[0].backward.size(), 2u);
  EXPECT_NEAR(lk[0].backward[0].shape.compute_s / expect, 1.0, 1e-12);
}

TEST(KernelModel, DepthwiseConvIsADirectKernelNotAPaddedGemm) {
  // Conv2d(64, 64, 3, padding 1, groups 64), N 8, 56x56: PyTorch's direct depthwise kernels
  // (DepthwiseConv2d.cu), each a roofline of its tensors' bytes at 0.9 TB/s and its multiply-adds
  // at the FP32 CUDA-core rate (the memory context's peak, here 10 TFLOPS), + 2 us.
  KernelRecord r = conv(8, 64, 56, 64, 3, 56);
  r.g = 64;
  auto c = context();
  c.memory.math_peak = 10e12;
  const double f = 2.0 * 8 * 64 * 56 * 56 * 9;                       // 28,901,376 FLOP: 2.89 us
  const double bytes = 2.0 * (2 * 8 * 64 * 56 * 56) + 2.0 * 64 * 9;  // x and y, w: 7.14 us
  const auto lk = ddpsim::gpu::layer_kernels(one_layer({r}), c);
  ASSERT_EQ(lk[0].forward.size(), 1u);
  ASSERT_EQ(lk[0].backward.size(), 2u);
  for (const auto& k : {lk[0].forward[0], lk[0].backward[0], lk[0].backward[1]})
    EXPECT_NEAR(k.seconds, bytes / 0.9e12 + 2e-6, kTol);
  EXPECT_DOUBLE_EQ(lk[0].flops_fwd, f);
  EXPECT_DOUBLE_EQ(lk[0].flops_bwd, 2 * f);
  EXPECT_EQ(lk[0].transposes_s, 0);  // no cuDNN NCHW<->NHWC transposes around them
  // 7x7 (ConvNeXt's): 157.35 MFLOP at 10 TFLOPS outlasts the bytes.
  r.r = r.s = 7;
  const auto lk7 = ddpsim::gpu::layer_kernels(one_layer({r}), c);
  EXPECT_NEAR(lk7[0].forward[0].seconds, 2.0 * 8 * 64 * 56 * 56 * 49 / 10e12 + 2e-6, kTol);
  // Two channels per group is a grouped convolution, not depthwise: cuDNN's implicit GEMM.
  KernelRecord g2 = conv(8, 128, 56, 128, 3, 56);
  g2.g = 64;
  const auto lkg = ddpsim::gpu::layer_kernels(one_layer({g2}), c);
  EXPECT_GT(lkg[0].transposes_s, 0);
}

TEST(KernelModel, TransposedConvIsTheAdjointConvolutionsKernels) {
  // ConvTranspose2d(64, 32, 4, stride 2, padding 1), N 8, 28x28 -> 56x56: the adjoint of a
  // stride-2 convolution from 32 x 56 x 56 to 64 x 28 x 28 (PyTorch's cuDNN path: the transposed
  // forward is that convolution's dgrad, its input gradient that convolution's forward).
  KernelRecord r = conv(8, 64, 28, 32, 4, 56);
  r.transposed = true;
  const auto d = gpu16();
  const auto lk = ddpsim::gpu::layer_kernels(one_layer({r}), context());
  ASSERT_EQ(lk[0].forward.size(), 1u);
  ASSERT_EQ(lk[0].backward.size(), 2u);
  // Forward: four output phases of the stride, each 8*28*28 = 6272 rows, 32 columns (the
  // adjoint's input channels) and 64 x (2 x 2 taps) = 256 deep.
  EXPECT_NEAR(lk[0].forward[0].shape.compute_s, 4 * gemm_estimate(1, 6272, 32, 256, d).shape.compute_s, kTol);
  // Input gradient: the adjoint convolution's forward, M = 8*28*28, N = 64, K = 32*4*4.
  EXPECT_NEAR(lk[0].backward[0].shape.compute_s, gemm_estimate(1, 6272, 64, 512, d).shape.compute_s, kTol);
  // Weight gradient: M = 64, N = 32*4*4, K = 8*28*28.
  EXPECT_NEAR(lk[0].backward[1].shape.compute_s, gemm_estimate(1, 64, 512, 6272, d).shape.compute_s, kTol);
  // FLOPs: one multiply-add per input element, filter tap and output channel, as the export counts.
  EXPECT_DOUBLE_EQ(lk[0].flops_fwd, 2.0 * 8 * 28 * 28 * 64 * 32 * 16);
  // Bytes of the forward: x (8 x 64 x 28 x 28) in, y (8 x 32 x 56 x 56) out, the weight, 2 B each.
  auto cl = context();
  cl.channels_last = true;  // no transposes: the kernel's own bytes
  const double io = 2.0 * (8 * 64 * 28 * 28 + 8 * 32 * 56 * 56 + 64 * 32 * 16);
  EXPECT_NEAR(ddpsim::gpu::layer_kernels(one_layer({r}), cl)[0].forward[0].shape.memory_s, io / 0.9e12, kTol);
  // Without an input gradient, two kernels remain, each transposing x, w and y once (NCHW on
  // tensor cores): two thirds of the three kernels' transposes, none counted for the dropped one.
  r.grad_a = false;
  const auto lk2 = ddpsim::gpu::layer_kernels(one_layer({r}), context());
  ASSERT_EQ(lk2[0].backward.size(), 1u);
  EXPECT_GT(lk[0].transposes_s, 0);
  EXPECT_NEAR(lk2[0].transposes_s, lk[0].transposes_s * 2 / 3, kTol);
}

KernelRecord mem(const char* name, double in, double out, bool backward) {
  KernelRecord r;
  r.name = name;
  r.in[0] = in;
  r.out[0] = out;
  r.backward = backward;
  return r;
}

// t = 2 us + bytes / 0.9 TB/s on gpu16().
double mt(double bytes) { return 2e-6 + bytes / 0.9e12; }

TEST(KernelModel, ATensorSavedByTwoOpsIsStoredOnce) {
  // ResNet's conv -> batch norm -> relu_ -> conv: the second convolution saves its input, which is
  // the tensor relu_ saved as its result (autograd keeps references, not copies). X = the
  // activation's bytes (2 B x 8 x 64 x 56 x 56).
  const double x = 2.0 * 8 * 64 * 56 * 56;
  const auto c = context();
  const auto saved = [&](std::vector<KernelRecord> ks) { return ddpsim::gpu::layer_saved_bytes(one_layer(ks), c)[0]; };
  const KernelRecord cv = conv(8, 64, 56, 64, 3, 56);
  // conv input + batch-norm input + relu_'s result; the second conv's input is relu_'s result.
  EXPECT_DOUBLE_EQ(saved({cv, mem("native_batch_norm", x, x, true), mem("relu_", x, x, true), cv}), 3 * x);
  // The same for a max-pool after relu_ (ResNet's stem).
  EXPECT_DOUBLE_EQ(saved({mem("relu_", x, x, true), mem("max_pool2d_with_indices", x, x / 4, true)}), x);
  // Not adjacent: an add in between (no save) breaks the chain; both count.
  EXPECT_DOUBLE_EQ(saved({mem("relu_", x, x, true), mem("add", 2 * x, x, true), cv}), 2 * x);
  // GELU saves its input, not its result: the next convolution's input is a new tensor.
  EXPECT_DOUBLE_EQ(saved({mem("gelu", x, x, true), cv}), 2 * x);
  // softmax then the bmm with V (A = the probabilities, 4 x 128 x 128 at 2 B): one tensor in
  // float32 math; under half autocast softmax returns float32 and bmm saves its half copy: two.
  KernelRecord pv;
  pv.op = KernelRecord::Op::GEMM;
  pv.batch = 4;
  pv.m = 128;
  pv.n = 64;
  pv.k = 128;
  pv.grad_a = pv.grad_b = true;
  const double p = 2.0 * 4 * 128 * 128;
  // With float32 math the probabilities are bmm's A: softmax adds nothing to what bmm keeps.
  EXPECT_DOUBLE_EQ(saved({mem("_softmax", p, p, true), pv}), saved({pv}));
  auto half = context();
  half.act_bytes_factor = 0.5;
  const auto saved_half = [&](std::vector<KernelRecord> ks) {
    return ddpsim::gpu::layer_saved_bytes(one_layer(ks), half)[0];
  };
  // Under half autocast (the record's float32 bytes 2p, counted at half: p) both are kept.
  EXPECT_DOUBLE_EQ(saved_half({mem("_softmax", 2 * p, 2 * p, true), pv}), p + saved_half({pv}));
}

KernelRecord with_saved(KernelRecord r, double c0, double c1 = 0, double c2 = 0) {
  r.has_saved = true;
  r.saved[0] = c0;
  r.saved[1] = c1;
  r.saved[2] = c2;
  return r;
}

TEST(KernelModel, SavedBytesRecordedByTheExportAreSummedAsTheyScale) {
  // Records with the export's `sv` (what saved_tensors_hooks saw each op save first, float32 at the
  // export size): the layer keeps their sum, times the batch ratio, at c0 + c1 r + c2 r^2 of the
  // size ratio r; the byte rules (a mul keeps both operands, a GEMM its input) are not used.
  const double x = 4.0 * 8 * 1024 * 768;  // one [8, 1024, 768] float32 activation
  auto c = context();                     // float32 activations (act_bytes_factor 1)
  const auto saved = [](std::vector<KernelRecord> ks, const ddpsim::gpu::KernelContext& ctx) {
    return ddpsim::gpu::layer_saved_bytes(one_layer(ks), ctx)[0];
  };
  KernelRecord q;  // a q/k/v projection: [8192, 768] x [768, 768]
  q.op = KernelRecord::Op::GEMM;
  q.m = 8 * 1024;
  q.n = q.k = 768;
  q.grad_a = false;
  q.grad_b = true;
  // RMSNorm's pow and mul save the same input (charged to pow), mean its input (torch 1.13 keeps
  // it), the mul by a number nothing of size; q, k and v share one input (charged to q).
  const std::vector<KernelRecord> block = {with_saved(mem("pow", x, x, true), x),
                                           with_saved(mem("mean", x, x / 768, true), x),
                                           with_saved(mem("rsqrt", x / 768, x / 768, true), x / 768),
                                           with_saved(mem("mul", x, x, true), 0),
                                           with_saved(mem("mul", x, x, true), x),
                                           with_saved(q, x),
                                           with_saved(q, 0),
                                           with_saved(q, 0)};
  EXPECT_DOUBLE_EQ(saved(block, c), 4 * x + x / 768);
  // Twice the batch: twice the bytes; at half the sequence a record of c0 + c1 r + c2 r^2.
  c.batch_ratio = 2;
  EXPECT_DOUBLE_EQ(saved(block, c), 2 * (4 * x + x / 768));
  c.batch_ratio = 1;
  c.size_ratio = 0.5;
  EXPECT_DOUBLE_EQ(saved({with_saved(mem("_softmax", x, x, true), 100, 2 * x, 4 * x)}, c), 100 + x + x);
  c.size_ratio = 1;
  // Dropout as the CPU export records it (bernoulli_ into a float32 noise tensor, div_, the mul
  // that saves the noise): on CUDA native_dropout keeps a one-byte mask instead, x / 4.
  const std::vector<KernelRecord> dropout = {with_saved(mem("bernoulli_", x, x, false), 0),
                                             with_saved(mem("div_", x, x, false), 0),
                                             with_saved(mem("mul", 2 * x, x, true), x)};
  EXPECT_DOUBLE_EQ(saved(dropout, c), x / 4);
  // Under half autocast the memory-bound records' bytes halve and each projection saves the half
  // copy autocast made for it (2 B x 8192 x 768 = x / 2 apiece): the byte rule, three copies.
  auto half = context();
  half.act_bytes_factor = 0.5;
  EXPECT_DOUBLE_EQ(saved(block, half), (3 * x + x / 768) / 2 + 3 * (x / 2));
  // A record without `sv` (an older export) keeps the byte rule: mul counts both operands.
  EXPECT_DOUBLE_EQ(saved({mem("mul", 2 * x, x, true)}, c), 2 * x);
}

// A batch-norm layer of `channels` channels (its weight [C] is parameter 0) whose input and output
// are `bytes` each at float32 (the export's bytes).
ddpsim::config::ModelSpec bn_layer(double channels, double bytes) {
  auto m = one_layer({mem("native_batch_norm", bytes, bytes, true)});
  ddpsim::config::ParamSpec w;
  w.name = "bn.weight";
  w.shape = {static_cast<int64_t>(channels)};
  w.numel = static_cast<int64_t>(channels);
  m.params = {w};
  m.layers[0].type = ddpsim::config::LayerType::BATCHNORM;
  m.layers[0].params = {0};
  return m;
}

TEST(KernelModel, BatchNormIsBoundByOneChannelOrByItsPasses) {
  // cuDNN (float32): forward reads x twice and writes y (3 passes), backward reads x and dy twice
  // and writes dx (5). A channel is one parallel unit: 5.23e9 element passes a second plus 18.5 us
  // forward, 3.47e9 plus 28 us backward (kernel_model.cpp, from the H200 table). gpu16(): 0.9 TB/s
  // streaming, 2 us a launch.
  // 16 channels of 64 x 28 x 28 = 50,176 elements (3.21 MB): one channel's work, 3 x 50,176 /
  // 5.23e9 + 18.5 us = 47.281 us, outlasts streaming 9.63 MB (10.7 us); backward 5 x 50,176 /
  // 3.47e9 + 28 us = 100.300 us against 17.8 us.
  const double ch = 64.0 * 28 * 28;
  auto lk = ddpsim::gpu::layer_kernels(bn_layer(16, 4 * 16 * ch), context());
  ASSERT_EQ(lk[0].forward.size(), 1u);
  ASSERT_EQ(lk[0].backward.size(), 1u);
  EXPECT_NEAR(lk[0].forward[0].seconds, 2e-6 + 3 * ch / 5.23e9 + 18.5e-6, kTol);
  EXPECT_NEAR(lk[0].forward[0].seconds, 49.281e-6, 1e-9);
  EXPECT_NEAR(lk[0].backward[0].seconds, 2e-6 + 5 * ch / 3.47e9 + 28e-6, kTol);
  EXPECT_NEAR(lk[0].backward[0].seconds, 102.300e-6, 1e-9);
  // 2,048 channels (411 MB): the passes at the streaming rate take longer (1.37 ms forward).
  const double wide = 4 * 2048 * ch;
  lk = ddpsim::gpu::layer_kernels(bn_layer(2048, wide), context());
  EXPECT_NEAR(lk[0].forward[0].seconds, mt(3 * wide), kTol);
  EXPECT_NEAR(lk[0].backward[0].seconds, mt(5 * wide), kTol);
  // A small channel (64 x 14 x 14 = 12,544 elements, under 25,088): cuDNN's _singleread kernels
  // read x (and dy) once: 2 x 12,544 / 5.23e9 + 18.5 us = 23.297 us forward, 3 x 12,544 / 3.47e9
  // + 28 us = 38.845 us backward.
  const double small = 64.0 * 14 * 14;
  lk = ddpsim::gpu::layer_kernels(bn_layer(16, 4 * 16 * small), context());
  EXPECT_NEAR(lk[0].forward[0].seconds, 25.297e-6, 1e-9);
  EXPECT_NEAR(lk[0].backward[0].seconds, 40.845e-6, 1e-9);
  // The ops torch 2.x records for nn.BatchNorm2d in training are the same batch norm.
  for (const char* op : {"_native_batch_norm_legit", "_batch_norm_with_update", "cudnn_batch_norm"}) {
    auto m = bn_layer(16, 4 * 16 * ch);
    m.layers[0].kernels[0].name = op;
    EXPECT_NEAR(ddpsim::gpu::layer_kernels(m, context())[0].forward.at(0).seconds, 49.281e-6, 1e-9) << op;
  }
  // A GPU whose SMs run at half the H200 preset's clock (67 TFLOPS / (2 x 128 x 132) = 1.983 GHz):
  // one channel's work takes twice as long, the fixed time too: 2 x 47.281 + 2 = 96.563 us.
  auto slow = context();
  slow.memory.sms = 132;
  slow.memory.sm_cycles_per_s = 132 * (67e12 / (2.0 * 128 * 132)) / 2;
  EXPECT_NEAR(ddpsim::gpu::layer_kernels(bn_layer(16, 4 * 16 * ch), slow)[0].forward.at(0).seconds, 96.563e-6, 1e-9);
  // float16 (cuDNN too, half the bytes): the same elements a channel, the same time.
  auto half = context();
  half.act_bytes_factor = 0.5;
  lk = ddpsim::gpu::layer_kernels(bn_layer(16, 4 * 16 * ch), half);
  EXPECT_NEAR(lk[0].forward[0].seconds, 49.281e-6, 1e-9);
  // Channels unknown (no weight): the passes at the streaming rate, 1 MB -> 3 MB and 5 MB.
  lk = ddpsim::gpu::layer_kernels(one_layer({mem("native_batch_norm", 1e6, 1e6, true)}), context());
  ASSERT_EQ(lk[0].forward.size(), 1u);
  EXPECT_NEAR(lk[0].forward[0].seconds, mt(3e6), kTol);
  EXPECT_NEAR(lk[0].backward[0].seconds, mt(5e6), kTol);
  // channels_last: PyTorch's / cuDNN's NHWC kernels, no per-channel bound: the statistics (x, 1
  // MB) and normalise (x, y: 2 MB) passes; the backward's reduce kernel (x, dy: 2 MB) and element
  // kernel (dy, x, dx: 3 MB).
  auto cl = context();
  cl.channels_last = true;
  const auto lkc = ddpsim::gpu::layer_kernels(bn_layer(16, 1e6), cl);
  ASSERT_EQ(lkc[0].forward.size(), 2u);
  ASSERT_EQ(lkc[0].backward.size(), 2u);
  EXPECT_NEAR(lkc[0].forward[0].seconds + lkc[0].forward[1].seconds, mt(1e6) + mt(2e6), kTol);
  EXPECT_NEAR(lkc[0].backward[0].seconds, mt(2e6), kTol);
  EXPECT_NEAR(lkc[0].backward[1].seconds, mt(3e6), kTol);
}

TEST(KernelModel, BatchNormOnBfloat16RunsPyTorchsOwnKernels) {
  // Normalization.cpp: cuDNN is not used for bfloat16. PyTorch's NCHW kernels, 16 channels of
  // 50,176 elements (1.61 MB at 2 B): batch_norm_collect_statistics_kernel, one block a channel,
  // 50,176 / 1.12e9 = 44.800 us (streaming 1.61 MB: 1.8 us); batch_norm_transform_input_kernel
  // (grid over channels and batch) at 0.291 of the 1 TB/s peak: 3.21 MB -> 11.036 us;
  // batch_norm_backward_kernel, one block a channel, 5 x 50,176 / 2.31e9 = 108.606 us. + 2 us each.
  auto bf = context();
  bf.bfloat16 = true;
  bf.act_bytes_factor = 0.5;
  const double ch = 64.0 * 28 * 28;
  const auto lk = ddpsim::gpu::layer_kernels(bn_layer(16, 4 * 16 * ch), bf);
  ASSERT_EQ(lk[0].forward.size(), 2u);
  ASSERT_EQ(lk[0].backward.size(), 1u);
  EXPECT_NEAR(lk[0].forward[0].seconds, 46.800e-6, 1e-9);
  EXPECT_NEAR(lk[0].forward[1].seconds, 2e-6 + 2 * (2 * 16 * ch) / (1e12 * 0.291), kTol);
  EXPECT_NEAR(lk[0].forward[1].seconds, 13.036e-6, 1e-9);
  EXPECT_NEAR(lk[0].backward[0].seconds, 110.606e-6, 1e-9);
  // With the SMs' cycles known the transform runs at 0.291 x 4.8 TB/s over the H200's 132 x 1.983e9
  // SM cycles a second (5.337 B per SM cycle): at 1e12 SM cycles a second 3.21 MB take 0.602 us,
  // under the 1 TB/s GPU's streaming time (3.57 us), which bounds it.
  bf.memory.sm_cycles_per_s = 1e12;
  bf.memory.sms = 132;
  const auto fast = ddpsim::gpu::layer_kernels(bn_layer(16, 4 * 16 * ch), bf);
  EXPECT_NEAR(fast[0].forward[1].seconds, mt(2 * (2 * 16 * ch)), kTol);
  bf.memory.sm_cycles_per_s = 1e11;  // 5.337e11 B/s: 6.017 us
  const auto slowtr = ddpsim::gpu::layer_kernels(bn_layer(16, 4 * 16 * ch), bf);
  EXPECT_NEAR(slowtr[0].forward[1].seconds,
              2e-6 + 2 * (2 * 16 * ch) / (0.291 * 4.8e12 / (132 * (67e12 / (2.0 * 128 * 132))) * 1e11), kTol);
  // channels_last bfloat16 takes PyTorch's channels-last kernels (vectorized, not one block per
  // channel): the streaming passes.
  bf.channels_last = true;
  const auto lkc = ddpsim::gpu::layer_kernels(bn_layer(16, 4 * 16 * ch), bf);
  ASSERT_EQ(lkc[0].backward.size(), 2u);
  EXPECT_NEAR(lkc[0].forward[0].seconds, mt(2 * 16 * ch), kTol);
}

TEST(KernelModel, MaxPoolIsBoundByItsElements) {
  // A 3 x 3 stride-2 max pool, 1e6 input elements to 250,000 outputs: the export's float32 bytes
  // are 4 MB in and 3 MB out (values 1 MB + int64 indices 2 MB). gpu16() at 1e10 SM cycles/s:
  // forward 4.19 cycles per output element, 250,000 x 4.19 / 1e10 = 104.75 us (streaming 7 MB:
  // 7.8 us) + 2 us; backward 2.89 cycles per input element, 1e6 x 2.89 / 1e10 = 289 us + 2 us.
  auto c = context();
  c.memory.sm_cycles_per_s = 1e10;
  const auto lk = ddpsim::gpu::layer_kernels(one_layer({mem("max_pool2d_with_indices", 4e6, 3e6, true)}), c);
  ASSERT_EQ(lk[0].forward.size(), 1u);
  ASSERT_EQ(lk[0].backward.size(), 1u);
  EXPECT_NEAR(lk[0].forward[0].seconds, 106.75e-6, 1e-12);
  EXPECT_NEAR(lk[0].backward[0].seconds, 291e-6, 1e-12);
  // Half precision: the values' bytes halve, the indices stay 8 B, the elements and the time stay.
  auto half = c;
  half.act_bytes_factor = 0.5;
  const auto lkh = ddpsim::gpu::layer_kernels(one_layer({mem("max_pool2d_with_indices", 4e6, 3e6, true)}), half);
  EXPECT_NEAR(lkh[0].forward[0].seconds, 106.75e-6, 1e-12);
  EXPECT_NEAR(lkh[0].backward[0].seconds, 291e-6, 1e-12);
  // A GPU with few cycles for its bandwidth streams: at 1e12 cycles/s the forward's 1.05 us of
  // cycles are under 7 MB / 0.9 TB/s.
  c.memory.sm_cycles_per_s = 1e12;
  EXPECT_NEAR(
      ddpsim::gpu::layer_kernels(one_layer({mem("max_pool2d_with_indices", 4e6, 3e6, true)}), c)[0].forward[0].seconds,
      mt(7e6), kTol);
  // channels_last (max_pool_forward_nhwc, another kernel): the streaming passes, as before.
  auto cl = context();
  cl.channels_last = true;
  const auto lkc = ddpsim::gpu::layer_kernels(one_layer({mem("max_pool2d_with_indices", 4e6, 3e6, true)}), cl);
  EXPECT_NEAR(lkc[0].forward[0].seconds, mt(7e6), kTol);
  EXPECT_NEAR(lkc[0].backward[0].seconds, mt(4e6 + 2 * 3e6), kTol);
}

TEST(KernelModel, StridedElementwiseIsBoundByItsElements) {
  // A division by a 0-dim tensor (export `strided`): 1e6 float32 elements, 4 MB in (+ 4 B) and 4
  // MB out. gpu16() at 1 GHz: 1e10 SM cycles/s. TensorIterator's strided path at 0.776 cycles per
  // 4-byte element: 1e6 x 0.776 / 1e10 = 77.6 us, against 8 MB / 0.9 TB/s = 8.9 us of streaming:
  // 2 + 77.6 = 79.6 us; the backward (grad / other, the same elements) likewise.
  auto c = context();
  c.memory.sm_cycles_per_s = 1e10;
  KernelRecord r = mem("div", 4e6, 4e6, true);
  r.in[0] += 4;
  r.strided = true;
  const auto lk = ddpsim::gpu::layer_kernels(one_layer({r}), c);
  ASSERT_EQ(lk[0].forward.size(), 1u);
  ASSERT_EQ(lk[0].backward.size(), 1u);
  EXPECT_NEAR(lk[0].forward[0].seconds, 79.6e-6, 1e-12);
  EXPECT_NEAR(lk[0].backward[0].seconds, 79.6e-6, 1e-12);
  EXPECT_NEAR(lk[0].forward[0].shape.compute_s, 77.6e-6, 1e-12);
  // Counted as a non-vectorized kernel: both passes, and what exceeds streaming their bytes (the
  // forward's 8 MB + 4 B, the backward's 12 MB + 4 B: grad_out, the input, grad_in): 68.71 + 64.27 us.
  EXPECT_NEAR(lk[0].per_element.seconds, 2 * 79.6e-6, 1e-12);
  EXPECT_NEAR(lk[0].per_element.over_bytes_s, (77.6e-6 - (8e6 + 4) / 0.9e12) + (77.6e-6 - (12e6 + 4) / 0.9e12), 1e-12);
  // Half-precision activations (autocast): the same 1e6 elements at 2 bytes, 0.669 cycles each
  // (unroll 4): 2 + 66.9 = 68.9 us.
  c.act_bytes_factor = 0.5;
  EXPECT_NEAR(ddpsim::gpu::layer_kernels(one_layer({r}), c)[0].forward[0].seconds, 68.9e-6, 1e-12);
  // A GPU fast enough per element (1e13 cycles/s: 0.0776 us) streams the bytes as before.
  c.act_bytes_factor = 1;
  c.memory.sm_cycles_per_s = 1e13;
  EXPECT_NEAR(ddpsim::gpu::layer_kernels(one_layer({r}), c)[0].forward[0].seconds, mt(8e6 + 4), kTol);
  // Without the flag (contiguous operands: the vectorized path) the bytes alone, at any clock.
  c.memory.sm_cycles_per_s = 1e10;
  r.strided = false;
  const auto vec = ddpsim::gpu::layer_kernels(one_layer({r}), c);
  EXPECT_NEAR(vec[0].forward[0].seconds, mt(8e6 + 4), kTol);
  EXPECT_EQ(vec[0].per_element.seconds, 0.0);
}

TEST(KernelModel, Bfloat16SoftmaxCastsItsInputFirst) {
  // SoftMax.cpp: half_to_float for a kHalf input only; bfloat16 is cast to float32 first
  // (input_.toType), and that cast (half -> float32) runs Copy.cu's unrolled path at 0.90 SM cycles
  // an element. 1e6 elements, records at float32 (4 MB in and out), bf16 activations (2 MB);
  // 1e10 SM cycles/s. Forward: the cast (6 MB: 8.67 us streaming, 90 us by elements: 2 + 90 = 92
  // us), softmax in float32 (8 MB: mt), its float32 result cast to half by the consumer
  // (vectorized: mt(6 MB)). Backward: that cast's gradient half -> float32 (92 us), softmax backward
  // in float32 (4 + 4 + 4 = 12 MB), the input cast's gradient float32 -> half (mt(6 MB)).
  auto c = context();
  c.memory.sm_cycles_per_s = 1e10;
  c.act_bytes_factor = 0.5;
  c.bfloat16 = true;
  const auto sm = ddpsim::gpu::layer_kernels(one_layer({mem("_softmax", 4e6, 4e6, true)}), c);
  ASSERT_EQ(sm[0].forward.size(), 3u);
  ASSERT_EQ(sm[0].backward.size(), 3u);
  EXPECT_NEAR(sm[0].forward[0].seconds, 92e-6, 1e-12);
  EXPECT_NEAR(sm[0].forward[1].seconds, mt(8e6), kTol);
  EXPECT_NEAR(sm[0].forward[2].seconds, mt(6e6), kTol);
  EXPECT_NEAR(sm[0].backward[0].seconds, 92e-6, 1e-12);
  EXPECT_NEAR(sm[0].backward[1].seconds, mt(12e6), kTol);
  EXPECT_NEAR(sm[0].backward[2].seconds, mt(6e6), kTol);
  // float16: one half_to_float softmax kernel (reads 2, writes 4 MB), no input cast; the gradient
  // of the output's cast is still half -> float32 (92 us).
  c.bfloat16 = false;
  const auto h = ddpsim::gpu::layer_kernels(one_layer({mem("_softmax", 4e6, 4e6, true)}), c);
  ASSERT_EQ(h[0].forward.size(), 2u);
  EXPECT_NEAR(h[0].forward[0].seconds, mt(6e6), kTol);
  EXPECT_NEAR(h[0].backward[0].seconds, 92e-6, 1e-12);
  // The cast alone: 2 MB of half, 1e6 elements.
  EXPECT_NEAR(ddpsim::gpu::half_to_float_cast_kernel(2e6, c.memory).seconds, 92e-6, 1e-12);
}

TEST(KernelModel, SmCyclesComeFromTheFp32Peak) {
  // 2 FLOPs per FP32 lane per cycle: H200's 67 TFLOPS over 132 SMs x 128 lanes is 1.983 GHz, so
  // 67e12 / 256 = 261.72e9 SM cycles per second over the GPU; A100's 19.5 TFLOPS over 64 lanes,
  // 152.3e9 (108 SMs at 1.41 GHz).
  ddpsim::config::GpuSpec g;
  g.sm_count = 132;
  g.fp32_lanes_per_sm = 128;
  g.peak_flops["float32"] = 67e12;
  EXPECT_NEAR(ddpsim::gpu::device_rates(g, "bfloat16", 2e-6).sm_cycles_per_s, 67e12 / 256, 1);
  g.sm_count = 108;
  g.fp32_lanes_per_sm = 64;
  g.peak_flops["float32"] = 19.5e12;
  EXPECT_NEAR(ddpsim::gpu::device_rates(g, "float32", 2e-6).sm_cycles_per_s, 19.5e12 / 128, 1);
  // No FP32 peak: no per-element bound.
  g.peak_flops.clear();
  EXPECT_EQ(ddpsim::gpu::device_rates(g, "float32", 2e-6).sm_cycles_per_s, 0.0);
}

TEST(KernelModel, LayerNormBackwardIsTwoKernels) {
  // layer_norm_kernel.cu: forward reads x, writes y (2 MB); backward grad-input kernel (compute_gI
  // reads dy and x for the row sums, then dy and x again and writes dx: 5 MB) and gamma/beta
  // kernel (dy, x: 2 MB).
  const auto lk = ddpsim::gpu::layer_kernels(one_layer({mem("native_layer_norm", 1e6, 1e6, true)}), context());
  ASSERT_EQ(lk[0].forward.size(), 1u);
  ASSERT_EQ(lk[0].backward.size(), 2u);
  EXPECT_NEAR(lk[0].forward[0].seconds, mt(2e6), kTol);
  EXPECT_NEAR(lk[0].backward[0].seconds, mt(5e6), kTol);
  EXPECT_NEAR(lk[0].backward[1].seconds, mt(2e6), kTol);
}

TEST(KernelModel, DecomposedDropoutIsTheFusedKernel) {
  // Export: bernoulli_ (4 MB in, 4 MB out), div_ (4, 4), mul (x and mask 8 MB in, 4 MB out; has a
  // backward). CUDA's native_dropout: one kernel reading x (4 MB), writing y (4 MB) and a 1-byte
  // mask (1 MB for 1M float32 elements): 9 MB; backward reads dy (4) and the mask (1), writes dx
  // (4): 9 MB. Views (_unsafe_view) launch nothing either way.
  const auto lk =
      ddpsim::gpu::layer_kernels(one_layer({mem("bernoulli_", 4e6, 4e6, false), mem("div_", 4e6, 4e6, false),
                                            mem("mul", 8e6, 4e6, true), mem("_unsafe_view", 4e6, 4e6, true)}),
                                 context());
  ASSERT_EQ(lk[0].forward.size(), 1u);
  ASSERT_EQ(lk[0].backward.size(), 1u);
  EXPECT_NEAR(lk[0].forward[0].seconds, mt(9e6), kTol);
  EXPECT_NEAR(lk[0].backward[0].seconds, mt(9e6), kTol);
  // A lone div_ or mul (no bernoulli_ before it) is an ordinary element-wise op.
  const auto plain = ddpsim::gpu::layer_kernels(one_layer({mem("mul", 8e6, 4e6, true)}), context());
  EXPECT_NEAR(plain[0].forward[0].seconds, mt(12e6), kTol);
  EXPECT_NEAR(plain[0].backward[0].seconds, mt(16e6), kTol);
}

TEST(KernelModel, AutocastRunsLayerNormAndSoftmaxInFloat32) {
  // Records at float32: in = out = 4 MB. Under autocast activations are half (2 MB).
  // layer_norm (autocast "fp32" list): cast x half -> float (2 + 4 = 6 MB), LN in float32 (8 MB),
  // its float32 output cast to half by the consumer (4 + 2 = 6 MB). Backward: the output cast's
  // gradient (6 MB), LN backward at float32 (2 x 4 + 3 x 4 = 20 MB: dy and x twice, dx; 4 + 4 = 8
  // MB), the input cast's (6 MB).
  auto c = context();
  c.act_bytes_factor = 0.5;
  const auto ln = ddpsim::gpu::layer_kernels(one_layer({mem("native_layer_norm", 4e6, 4e6, true)}), c);
  ASSERT_EQ(ln[0].forward.size(), 3u);
  ASSERT_EQ(ln[0].backward.size(), 4u);
  EXPECT_NEAR(ln[0].forward[0].seconds, mt(6e6), kTol);
  EXPECT_NEAR(ln[0].forward[1].seconds, mt(8e6), kTol);
  EXPECT_NEAR(ln[0].forward[2].seconds, mt(6e6), kTol);
  EXPECT_NEAR(ln[0].backward[0].seconds, mt(6e6), kTol);
  EXPECT_NEAR(ln[0].backward[1].seconds, mt(20e6), kTol);
  EXPECT_NEAR(ln[0].backward[2].seconds, mt(8e6), kTol);
  EXPECT_NEAR(ln[0].backward[3].seconds, mt(6e6), kTol);
  // softmax ("fp32_set_opt_dtype"): one half_to_float kernel (reads 2, writes 4 MB), then the cast
  // of its output (6 MB); backward: cast gradient (6 MB), softmax backward reads dy and y in
  // float32 and writes a half dx (4 + 4 + 2 = 10 MB).
  const auto sm = ddpsim::gpu::layer_kernels(one_layer({mem("_softmax", 4e6, 4e6, true)}), c);
  ASSERT_EQ(sm[0].forward.size(), 2u);
  ASSERT_EQ(sm[0].backward.size(), 2u);
  EXPECT_NEAR(sm[0].forward[0].seconds, mt(6e6), kTol);
  EXPECT_NEAR(sm[0].forward[1].seconds, mt(6e6), kTol);
  EXPECT_NEAR(sm[0].backward[1].seconds, mt(10e6), kTol);
  // Outside autocast nothing changes: 8 MB forward, 12 MB backward.
  const auto f32 = ddpsim::gpu::layer_kernels(one_layer({mem("_softmax", 4e6, 4e6, true)}), context());
  ASSERT_EQ(f32[0].forward.size(), 1u);
  EXPECT_NEAR(f32[0].forward[0].seconds, mt(8e6), kTol);
  EXPECT_NEAR(f32[0].backward[0].seconds, mt(12e6), kTol);
}

TEST(KernelModel, SequenceLengthScalesAttentionQuadratically) {
  // Scores GEMM Q K^T: batch 12, m = n = 128 (both grow with the sequence), k = 64. At 4x the
  // sequence: m = n = 512, so 16x the FLOPs; a softmax with in = out = c2 r^2 (c2 = 1e6 B)
  // moves 16x the bytes; a memory op linear in r (c1 = 1e6) 4x.
  KernelRecord qk;
  qk.op = KernelRecord::Op::GEMM;
  qk.batch = 12;
  qk.m = qk.n = 128;
  qk.k = 64;
  qk.size_exp = {0, 1, 1, 0};
  qk.batch_exp = {1, 0, 0, 0};
  KernelRecord sm;
  sm.in[2] = sm.out[2] = 1e6;
  sm.backward = true;
  KernelRecord lin;
  lin.in[1] = lin.out[1] = 1e6;
  auto c = context();
  c.size_ratio = 4;
  const auto lk = ddpsim::gpu::layer_kernels(one_layer({qk, sm, lin}), c);
  EXPECT_DOUBLE_EQ(lk[0].flops_fwd, 2.0 * 12 * 512 * 512 * 64);
  EXPECT_NEAR(lk[0].forward[1].seconds, 2e-6 + 32e6 / 0.9e12, kTol);
  EXPECT_NEAR(lk[0].backward.back().seconds, 2e-6 + 48e6 / 0.9e12, kTol);  // in + 2 x out
  EXPECT_NEAR(lk[0].forward[2].seconds, 2e-6 + 8e6 / 0.9e12, kTol);
  // The batch doubles the bmm batch (exponent 1 on b), not m.
  c.size_ratio = 1;
  c.batch_ratio = 2;
  EXPECT_DOUBLE_EQ(ddpsim::gpu::layer_kernels(one_layer({qk}), c)[0].flops_fwd, 2.0 * 24 * 128 * 128 * 64);
}

TEST(KernelModel, FlashAttentionRemovesTheScoreMatrix) {
  // Eager: Q K^T, softmax on the 12x128x128 scores (786,432 B in fp32 per tensor), P V. SDPA flash:
  // one forward kernel with both GEMMs' FLOPs (2 x 2*12*128*128*64) and no score traffic.
  KernelRecord qk;
  qk.op = KernelRecord::Op::GEMM;
  qk.batch = 12;
  qk.m = qk.n = 128;
  qk.k = 64;
  qk.grad_a = qk.grad_b = true;
  KernelRecord sm;
  sm.in[0] = sm.out[0] = 4.0 * 12 * 128 * 128;
  sm.backward = true;
  KernelRecord pv = qk;
  pv.n = 64;
  pv.k = 128;
  auto c = context();
  const auto eager = ddpsim::gpu::layer_kernels(one_layer({qk, sm, pv}), c);
  EXPECT_EQ(eager[0].forward.size(), 3u);
  c.attention = "sdpa_flash";
  c.attention_fwd_efficiency = 0.5;
  c.attention_bwd_efficiency = 0.4;
  const auto flash = ddpsim::gpu::layer_kernels(one_layer({qk, sm, pv}), c);
  ASSERT_EQ(flash[0].forward.size(), 1u);
  ASSERT_EQ(flash[0].backward.size(), 1u);
  const double f = 2 * 2.0 * 12 * 128 * 128 * 64;
  // 50.331648 MFLOP at 0.5 x 100 TFLOPS = 1.00663296 us vs Q,K,V,O 4 x 2 B x 12*128*64 = 786,432 B
  // = 0.8738 us: compute-bound, + 2 us.
  EXPECT_NEAR(flash[0].forward[0].seconds, f / 50e12 + 2e-6, kTol);
  EXPECT_NEAR(flash[0].forward[0].shape.memory_s, 4 * 2.0 * 12 * 128 * 64 / 0.9e12, kTol);
  EXPECT_NEAR(flash[0].backward[0].shape.compute_s, 2.5 * f / (0.4 * 100e12), kTol);
  EXPECT_DOUBLE_EQ(flash[0].flops_fwd, f);
}

// One layer of ten zero-byte element-wise kernels (2 us each on the GPU).
ddpsim::config::Scenario ten_tiny_kernels() {
  ddpsim::config::Scenario s;
  s.model.batch_size = 1;
  s.cluster.gpu.peak_flops = {{"float32", 10e12}};
  s.cluster.gpu.hbm_bandwidth = 1e12;
  s.cluster.gpu.sm_count = 10;
  s.training.batch_size = 1;
  s.compute.kernel_overhead = 2e-6;
  ddpsim::config::LayerSpec l;
  l.name = "act";
  l.type = ddpsim::config::LayerType::ELEMENTWISE;
  l.kernels.assign(10, KernelRecord{});
  s.model.layers = {l};
  return s;
}

TEST(KernelModel, LaunchBoundStepIsSetByTheHost) {
  // Ten tiny kernels behind an eager host that needs 6.9 + 2 = 8.9 us per operator: kernel i is
  // launched at 8.9 i us, so the forward ends at 10 x 8.9 + 2 = 91 us. With CUDA graphs the GPU
  // runs them back to back: 20 us.
  auto s = ten_tiny_kernels();
  auto p = ddpsim::gpu::build_compute_profile(s);
  EXPECT_NEAR(p.forward_total, 91e-6, 1e-12);
  EXPECT_NEAR(p.gpu_idle_s, 71e-6, 1e-12);
  s.training.cuda_graphs = true;
  p = ddpsim::gpu::build_compute_profile(s);
  EXPECT_NEAR(p.forward_total, 20e-6, 1e-12);
}

TEST(KernelModel, ViewsAndModuleCallsDelayTheLaunchesBehindThem) {
  // The same ten kernels, the layer with 4 views (0.48 x 6.9 us each), 3 module calls (0.34 x
  // 6.9 us) and 2 view nodes (0.46 x 8.5 us each, in backward; the kernels have none). The host
  // spends 4 x 3.312 + 3 x 2.346 = 20.286 us before the first launch, so kernel i starts at
  // 20.286 + 8.9 i us and the forward ends at 20.286 + 89 + 2 = 111.286 us.
  auto s = ten_tiny_kernels();
  s.model.layers[0].host_views = 4;
  s.model.layers[0].host_view_nodes = 2;
  s.model.layers[0].host_module_calls = 3;
  auto p = ddpsim::gpu::build_compute_profile(s);
  const double before = 4 * 0.48 * 6.9e-6 + 3 * 0.34 * 6.9e-6;
  EXPECT_NEAR(before, 20.286e-6, 1e-12);
  EXPECT_NEAR(p.forward_total, 111.286e-6, 1e-12);
  EXPECT_NEAR(p.host_forward_s, before + 10 * 8.9e-6, 1e-12);
  EXPECT_NEAR(p.host_backward_s, 2 * 0.46 * 8.5e-6, 1e-12);
  ASSERT_EQ(p.host_only_forward.size(), 1u);
  EXPECT_NEAR(p.host_only_forward[0], before, 1e-15);
  EXPECT_NEAR(p.host_only_backward[0], 7.82e-6, 1e-15);
  // CUDA graphs replay without the host: none of it.
  s.training.cuda_graphs = true;
  p = ddpsim::gpu::build_compute_profile(s);
  EXPECT_NEAR(p.forward_total, 20e-6, 1e-12);
  EXPECT_EQ(p.host_forward_s + p.host_backward_s, 0.0);
}

}  // namespace

namespace {

// A model whose last layer is a linear layer producing [rows, classes] logits.
ddpsim::config::ModelSpec logits_model(double rows, double classes) {
  KernelRecord r;
  r.op = KernelRecord::Op::GEMM;
  r.m = rows;
  r.n = classes;
  r.k = 768;
  r.grad_a = r.grad_b = true;
  auto m = one_layer({r});
  m.layers[0].type = ddpsim::config::LayerType::LINEAR;
  return m;
}

}  // namespace

TEST(KernelModel, CrossEntropyOverAVocabularyReadsEachRowThreeTimes) {
  // 64 rows x 50,257 classes (GPT-2) at float32: N = 3,216,448 elements. SoftMax.cu: a row of
  // 201 KB exceeds the 48 KiB of shared memory, so cunn_SoftMaxForward reads it three times and
  // writes it once (16 B per element); nll_loss reads one logit and an int64 target per row
  // (12 B). Backward: nll_loss_backward zeroes the gradient (4 B per element) and writes a row's
  // element (12 B per row); cunn_SoftMaxBackward reads dy twice and y once, writes dx (16 B).
  const double n = 64.0 * 50257;
  std::string error;
  const auto l = ddpsim::gpu::loss_kernels(logits_model(64, 50257), context(), "auto", &error);
  EXPECT_TRUE(error.empty());
  EXPECT_EQ(l.rows, 64);
  EXPECT_EQ(l.classes, 50257);
  ASSERT_EQ(l.forward.size(), 2u);
  ASSERT_EQ(l.backward.size(), 3u);
  EXPECT_NEAR(l.forward[0].seconds, mt(16 * n), kTol);
  EXPECT_NEAR(l.forward[1].seconds, mt(64 * 12.0), kTol);
  EXPECT_NEAR(l.backward[0].seconds, mt(4 * n), kTol);
  EXPECT_NEAR(l.backward[1].seconds, mt(64 * 12.0), kTol);
  EXPECT_NEAR(l.backward[2].seconds, mt(16 * n), kTol);
  EXPECT_DOUBLE_EQ(l.saved_bytes, 4 * n);  // log_softmax's float32 result
  EXPECT_NEAR(l.seconds(), mt(16 * n) + 2 * mt(768.0) + mt(4 * n) + mt(16 * n), kTol);

  // Under autocast the half logits are cast to float32 first (2 + 4 B) and the gradient back
  // (4 + 2 B): cross_entropy_loss is on autocast's CUDA fp32 list.
  auto half = context();
  half.act_bytes_factor = 0.5;
  const auto h = ddpsim::gpu::loss_kernels(logits_model(64, 50257), half, "cross_entropy");
  ASSERT_EQ(h.forward.size(), 3u);
  ASSERT_EQ(h.backward.size(), 4u);
  EXPECT_NEAR(h.forward[0].seconds, mt(6 * n), kTol);
  EXPECT_NEAR(h.forward[1].seconds, mt(16 * n), kTol);
  EXPECT_NEAR(h.backward[3].seconds, mt(6 * n), kTol);
  EXPECT_DOUBLE_EQ(h.saved_bytes, 4 * n);
}

TEST(KernelModel, CrossEntropyKernelDependsOnTheRowLength) {
  auto fwd_bytes = [](double classes) {
    const auto l = ddpsim::gpu::loss_kernels(logits_model(10, classes), context(), "auto");
    return (l.forward[0].seconds - 2e-6) * 0.9e12 / (10 * classes);
  };
  auto bwd_bytes = [](double classes) {
    const auto l = ddpsim::gpu::loss_kernels(logits_model(10, classes), context(), "auto");
    return (l.backward[2].seconds - 2e-6) * 0.9e12 / (10 * classes);
  };
  // <= 1024 elements and 4096 bytes: the persistent warp kernels (x once, y once; dy, y, dx).
  EXPECT_NEAR(fwd_bytes(1000), 8, 1e-9);
  EXPECT_NEAR(bwd_bytes(1000), 12, 1e-9);
  EXPECT_NEAR(fwd_bytes(1024), 8, 1e-9);
  // Longer rows that fit (49,152 - 32 x 4) / 4 = 12,256 floats of shared memory, a multiple of
  // 4: cunn_SoftMaxForwardSmem reads x once; the backward has no such variant (dy twice).
  EXPECT_NEAR(fwd_bytes(1028), 8, 1e-9);
  EXPECT_NEAR(bwd_bytes(1028), 16, 1e-9);
  EXPECT_NEAR(fwd_bytes(12252), 8, 1e-9);
  // Not a multiple of 4, or 12,256 and more: three reads.
  EXPECT_NEAR(fwd_bytes(1025), 16, 1e-9);
  EXPECT_NEAR(fwd_bytes(12256), 16, 1e-9);
  EXPECT_NEAR(fwd_bytes(30522), 16, 1e-9);
}

TEST(KernelModel, CrossEntropyNeedsLogits) {
  // "none" and a model without a linear last layer: no loss; "cross_entropy" there says why.
  EXPECT_EQ(ddpsim::gpu::loss_kernels(logits_model(64, 50257), context(), "none").rows, 0);
  auto m = one_layer({mem("tanh", 4e6, 4e6, true)});
  m.name = "pooled";
  m.layers[0].type = ddpsim::config::LayerType::ELEMENTWISE;
  std::string error;
  EXPECT_EQ(ddpsim::gpu::loss_kernels(m, context(), "auto", &error).rows, 0);
  EXPECT_TRUE(error.empty());
  EXPECT_EQ(ddpsim::gpu::loss_kernels(m, context(), "cross_entropy", &error).rows, 0);
  EXPECT_NE(error.find("model pooled's last layer (l, elementwise)"), std::string::npos) << error;
  // One output is a regression head, not logits.
  EXPECT_EQ(ddpsim::gpu::loss_kernels(logits_model(64, 1), context(), "auto").rows, 0);
}
