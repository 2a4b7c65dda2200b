#include "gpu/kernel_model.hpp"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>

namespace ddpsim::gpu {

namespace {

// Large-tile main-loop efficiency of a full wave. NVIDIA Matrix Multiplication Background User's
// Guide (DU-09799-001, "Typical Tile Dimensions in cuBLAS and Performance"): large FP16 GEMMs on
// A100 run at roughly 80 % of the 312 TFLOPS peak with 256x128 tiles. TF32 reaches as much: the
// PyTorch docs (notes/cuda.rst, "TensorFloat-32 (TF32) on Ampere devices") time a 10240^3 matmul
// on GA100 at 0.016 s in TF32 (134 TFLOPS, 86 % of 156). SGEMM (SIMT): the same page times it at
// 0.11 s in FP32 (19.5 TFLOPS: the whole peak, +-5 % from the rounding), cuBLAS reaches 19.0 of
// 19.5 TFLOPS at m = n = k = 2304 on A100 80GB PCIe (triton-lang/triton issue 2491, cuBLAS
// column; 2304^2 / 128^2 = 324 tiles = 3 full waves on 108 SMs, so no quantization loss), and
// ~14 of 15.7 on V100 (cuBLAS figures quoted in the guide and the GTC'19 S9926 talk: 0.89). We
// take 0.95 for a full wave (it was 0.85, below every one of these). Kernel-level figures, not
// training throughput; the rows are in tests/data/kernels/ (KernelDevSet test).
// Those are SMs of 64 FP32 lanes. On SMs of 128 (GA10x, Ada, Hopper, Blackwell), whose FP32 peak
// counts twice the lanes, cuBLAS's SIMT kernels reach less of it: on an H200 (torch 2.11, cuBLAS
// picks sm80_xmma_gemm_f32f32 and cutlass_80_simt_sgemm kernels), GPT-2's and GPT-2 medium's
// 50,257-column output GEMMs ran at 51.6 and 51.4 TFLOPS, 0.77 of 67 (bench/results/
// device-h200-2026-12-04, per-layer forward; tests/data/kernels rows S7); cuBLAS on an RTX 4070 Ti
// (Ada) reaches 29.2 of 35.5 TFLOPS, 0.82 (Yinghan-Li/YHs_Sample issue 4, 5120 x 4096 x 4096).
// We take 0.78.
constexpr double kTensorCoreGemmEfficiency = 0.80;
constexpr double kSimtGemmEfficiency = 0.95;
constexpr double kSimtGemmEfficiencyWideSm = 0.78;
// Large streaming kernels (copy/triad) reach ~90 % of the datasheet HBM bandwidth on V100, A100
// and H100 (BabelStream results, Deakin et al., and NVIDIA's nvbandwidth device-local copy).
constexpr double kStreamEfficiency = 0.90;

// Relative main-loop efficiency of a CTA tile versus 256x128: smaller tiles re-read operands more
// often per FLOP (arithmetic intensity tm*tn/(tm+tn)). Approximate reading of the guide's tile-size
// comparison (Figure "Performance of different tile sizes", A100, cuBLAS 11).
struct Tile {
  int m, n;
  double rel;
};
constexpr Tile kTensorCoreTiles[] = {{256, 128, 1.0}, {128, 256, 1.0}, {128, 128, 0.95},
                                     {128, 64, 0.85}, {64, 128, 0.85}, {64, 64, 0.70}};
constexpr Tile kSimtTiles[] = {{128, 128, 1.0}, {128, 64, 0.9}, {64, 64, 0.8}};

// Tensor-core efficiency when a leading dimension (k of A, n of B/C) is not a multiple of 16 bytes:
// the guide's "Tensor Core Requirements" (cuBLAS >= 11.0 uses tensor cores regardless, but fastest
// with 16-byte multiples; Figure 2(b), k swept on A100, shows misaligned k at about half speed,
// and odd k at roughly a quarter). Approximate readings of that figure.
constexpr double kMisaligned4ByteFactor = 0.5;
constexpr double kMisalignedFactor = 0.25;

// Split-K: each split must keep at least this many k elements (CUTLASS's split-K examples use
// k/split >= 128..256), at most this many splits.
constexpr double kMinSplitK = 256;
constexpr int kMaxSplits = 16;
// A convolution's dgrad never splits its reduction: every cuDNN 9 dgrad kernel in the H200 kernel
// tables of ResNet-50 and ResNet-101 at batch 64 (bench/results/device-h200-2026-12-04/step.json,
// step-2.json: 66 calls a step over float32 and bfloat16) is an `..._segment_k_off_...` or a
// `..._strided_...` kernel, while the fprop and wgrad kernels there run `segment_k_on` or
// `split_k` variants too; on a V100 with cuDNN 7.6 (DeepBench, tests/data/kernels S6) the dgrads
// of 3x3 convolutions on 7x7 maps took 134-135 us at batch 8 and at batch 16 alike, as one
// unsplit wave of 128x128 tiles does (16 and 28 CTAs on 80 SMs, K = 4608).
constexpr bool kDgradSplitK = false;

// Eager PyTorch's host cost per operator (kHostForwardOp etc., kernel_model.hpp): measured on this
// repository's CPU with scripts/measure_dispatch.py (torch 1.13, one thread: a chain of tiny
// element-wise ops on a tensor that requires grad; median per op): 6.9 us forward (dispatcher +
// autograd recording), 8.5 us per backward node. cudaLaunchKernel adds 1-3 us per launch on CUDA
// 12 drivers (NVIDIA CUDA Graphs blog, "Getting Started with CUDA Graphs"; we take 2 us).
// Host work that launches nothing, as a share of the op above (the CPU part, no launch), measured
// with `scripts/measure_dispatch.py --ratios` (torch 1.13, one thread; the three chains in turn
// within each repetition, so the machine's speed cancels; 2026-12-04, three runs of 9 repetitions
// on this project's 2-vCPU AMD EPYC machine, medians 2.89-3.03 us per op): a view op in forward
// (view, t, permute, expand, reshape in turn: no kernel, an autograd view node each) 0.48 of an
// op, its view node in backward 0.46 of a backward op, an nn.Module call (_call_impl without
// hooks) 0.34 of an op in forward and nothing in backward (0.02-0.09). The export counts them per
// layer (`host_ops`, scripts/export_model.py host_op_counts); checked on whole models in
// sim/gpu/NOTES.md ("Views and module calls").
constexpr double kViewShare = 0.48;
constexpr double kViewNodeShare = 0.46;
constexpr double kModuleCallShare = 0.34;
// Batch norm (batch_norm_kernels below). Both cuDNN's NCHW training kernels and PyTorch's own
// work a channel at a time: a channel's N x H x W elements are reduced (mean, variance; in backward
// the sums of dy and (x - mean) dy) before any of them is normalised, and the parallel unit is the
// channel (Normalization.cuh batch_norm_collect_statistics_kernel and batch_norm_backward_kernel
// launch `dim3 blocks(input.size(1))`, one block of 512 threads per channel; cuDNN's bn_*_1C11_*
// kernels are closed source). A layer with few channels leaves most of the GPU idle and takes as
// long as one channel's elements at one unit's rate, whatever the HBM bandwidth; a wide layer
// streams. Per-channel rates (element passes per second: each element of a channel read or
// written once counts one) and a fixed time per channel, from the H200 kernel table of ResNet-50
// at batch 64 (bench/results/device-h200-2026-12-04/step.json, torch 2.11, cuDNN 9; per kernel
// name the time per step and calls, less 2 us a launch; the layers behind each name are fixed by
// their spatial size: 112^2 -> the <..., 512, ...> kernels, 56^2 -> 128, 28^2 -> 32, 14^2 and 7^2
// -> _singleread), least squares over the four cuDNN kernel variants per direction (log error):
// - cuDNN forward (bn_fw_tr_1C11_kernel_NCHW, _singleread): 5.23e9 per channel, 18.5 us; the
//   variants within -7.7 .. +4.4 %. Backward (bn_bw_1C11_kernel_new, _singleread): 3.47e9, 28.0 us,
//   -2.0 .. +2.1 %. Passes: x twice and y once forward (statistics, then normalise), x and dy
//   twice and dx once backward, except the _singleread kernels (small channels: N x H x W up to
//   kCudnnBnSingleReadElements) which read x (and dy) once.
// - PyTorch's kernels (bfloat16): batch_norm_collect_statistics_kernel (x once) 1.12e9 per channel,
//   batch_norm_backward_kernel (x and dy twice, dx once) 2.31e9 per channel, no fixed time (one
//   aggregate each: one constant each). batch_norm_transform_input_kernel's grid spans the batch as
//   well (blocks_trans: C x min(256K / C, N / tb)): not channel-bound; 0.291 of the HBM peak.
// Checked on ResNet-101 (step-2.json, 79 small-channel layers where ResNet-50 has 28, not used in
// the fits; KernelDevSet.BatchNormPerChannelRatesAreTheH200KernelTable): cuDNN forward / backward
// in total +0.7 / +0.5 %, the native statistics / backward kernels -6.8 / -7.9 % (as fractions of
// the HBM peak, as before, +15.7 / +14.8 %). Other GPUs: the rates and fixed times scale with the
// SM clock (a channel's unit runs on one SM: per SM cycle, as the H200's 1.983 GHz gives them), the
// transform kernel's bytes with the SMs' cycles (bytes per SM cycle over all SMs). Checked on a
// Volta GPU (NVIDIA/apex, apex/pyprof/README.md, torchvision ResNet-50 at batch 64 in float16,
// nvprof kernel durations and grids; the GPU is not named, volta_fp16 kernels: taken as a V100
// SXM2, 80 SMs at 1.53 GHz): batch_norm_collect_statistics_kernel on the stem (grid 64 blocks, 64
// x 112^2 elements a channel) 929.5 us, the model 929 us (in seconds, as the H200's, it would be
// 719 us); batch_norm_transform_input_kernel 377.5 us, the model 316 us (as a fraction of the peak,
// as before, 786 us). KernelDevSet.BatchNormAndMaxPoolOnAVoltaFromApexPyProf.
constexpr double kBnReferenceSmClock = 67e12 / (2.0 * 128 * 132);  // the h200 preset's SM clock
constexpr double kCudnnBnFwdChannelRate = 5.23e9;
constexpr double kCudnnBnFwdChannelFixed = 18.5e-6;
constexpr double kCudnnBnBwdChannelRate = 3.47e9;
constexpr double kCudnnBnBwdChannelFixed = 28.0e-6;
// Where cuDNN switches to the _singleread kernels, in elements per channel (N x H x W): between
// 12,544 (14^2 at batch 64: _singleread) and 50,176 (28^2: not) in the table; the geometric mean.
// Where in that range is not known (the choice moves a layer there by about 10 %).
constexpr double kCudnnBnSingleReadElements = 25088;
constexpr double kNativeBnStatsChannelRate = 1.12e9;
constexpr double kNativeBnBackwardChannelRate = 2.31e9;
constexpr double kNativeBnTransformFraction = 0.291;  // of the H200's 4.8 TB/s: per SM cycle below
constexpr double kNativeBnTransformBytesPerSmCycle = kNativeBnTransformFraction * 4.8e12 / (132 * kBnReferenceSmClock);
// TensorIterator's strided path (aten/src/ATen/native/cuda/CUDALoops.cuh, gpu_kernel_impl_nocast /
// gpu_kernel_impl: when !iter.is_contiguous() -- an operand broadcast against the output, a
// 0-dim CUDA tensor among them, or strided -- launch_legacy_kernel<128, unroll> with an
// OffsetCalculator and one scalar load per element and operand, instead of
// launch_vectorized_kernel's 16-byte loads). SM cycles per output element (over all SMs), from
// the H200 kernel table of GPT-2 at batch 8, seq 1024 (bench/results/device-h200-2026-12-04/
// step.json, torch 2.11; 24 calls each on the 8 x 12 x 1024 x 1024 attention scores, forward and
// backward, less 2 us a launch): the scale by a 0-dim tensor (elementwise_kernel<128, ...,
// DivFunctor>) and the causal mask (where_kernel_impl) take 0.807 / 0.745 cycles per element in
// float32 (unroll 2) and 0.681 / 0.657 in bfloat16 (unroll 4), where streaming their bytes at the
// model's rate would take 0.43 / 0.22: both bound by the elements, not the bytes. The means per
// element size; one GPU, applied per SM cycle to every GPU (sim/gpu/NOTES.md "Strided
// element-wise kernels").
constexpr double kStridedCyclesPerElement4 = 0.776;
constexpr double kStridedCyclesPerElement2 = 0.669;
// Casts from float16/bfloat16 to float32 (aten/src/ATen/native/cuda/Copy.cu direct_copy_kernel_cuda,
// read at pytorch/pytorch 007aa8ae and at 1.x: float32 -> half is special-cased to
// gpu_kernel_nocast, vectorized, since 2.x; half -> float32 goes through gpu_kernel with dynamic
// casting, CUDALoops.cuh's unrolled_elementwise_kernel with LoadWithCast: contiguous, but one
// scalar load per element). SM cycles per element from the same H200 table (GPT-2 bf16, batch 8):
// its unrolled direct_copy row, 10.863 ms over 171 calls a step, less 2 us a launch, over the
// elements of the half -> float32 casts that step makes (the softmax inputs and the gradients of
// the softmax outputs' casts, 24 x 8 x 12 x 1024 x 1024; the GELU's pow inputs, 12 x 8 x 1024 x
// 3072; the gradients of the weight and bias casts, 123.6 M; of the three GEMM input casts, 25 x
// 8 x 1024 x 768; 158 of the 171 calls): 0.92 cycles per element, 0.83 if the other 13 calls were
// as large as the pow casts. Streaming the bytes would take 0.38.
constexpr double kHalfToFloatCyclesPerElement = 0.90;
// Max pooling, NCHW (aten/src/ATen/native/cuda/DilatedMaxPool2d.cu): max_pool_forward_nchw runs
// one thread per output element (CUDA_KERNEL_LOOP), which splits its index into n, c, h, w with
// integer divisions and scans its window with scalar loads, writing the value and an int64 index;
// max_pool_backward_nchw runs one thread per input element (grid x over H x W, y over the batch, z
// over the channels), which finds the output windows covering it and compares each one's saved
// index. Both are bound by their elements, not their bytes: the H200 kernel table (ResNet-50 at
// batch 64, its one 3 x 3 stride-2 max pool, 64 x 112^2 -> 56^2; step.json, less 2 us a launch)
// gives 4.14 / 4.24 SM cycles per output element forward and 2.90 / 2.88 per input element
// backward in float32 / bfloat16: the same times in both dtypes, where the bytes halve (streaming
// them would take 1.70 / 1.09 cycles per output element forward, 0.42 / 0.27 per input element
// backward). The means; one window shape measured (sim/gpu/NOTES.md "Max pooling").
constexpr double kMaxPoolForwardCyclesPerOutput = 4.19;
constexpr double kMaxPoolBackwardCyclesPerInput = 2.89;

double peak(const config::GpuSpec& gpu, const std::string& dtype) {
  auto it = gpu.peak_flops.find(dtype);
  return it != gpu.peak_flops.end() ? it->second : 0.0;
}

}  // namespace

DeviceRates device_rates(const config::GpuSpec& gpu, const std::string& math, double kernel_fixed_s) {
  DeviceRates d;
  d.gpu = gpu.name;
  d.sms = std::max(1, gpu.sm_count);
  d.hbm_bandwidth = gpu.hbm_bandwidth;
  d.memory_efficiency = kStreamEfficiency;
  d.kernel_fixed_s = kernel_fixed_s;
  if (const double fp32 = peak(gpu, "float32"); fp32 > 0 && gpu.fp32_lanes_per_sm > 0)
    d.sm_cycles_per_s = fp32 / (2.0 * gpu.fp32_lanes_per_sm);
  const bool half = math == "float16" || math == "bfloat16";
  if ((half || math == "tf32") && peak(gpu, math) > 0) {
    d.tensor_cores = true;
    d.math_peak = peak(gpu, math);
    d.elem_bytes = half ? 2 : 4;
    d.align_elems = 16 / d.elem_bytes;  // 8 for fp16/bf16, 4 for tf32
    d.gemm_efficiency = kTensorCoreGemmEfficiency;
  } else {
    // No tensor-core path for this dtype on this GPU (e.g. bfloat16 or tf32 on Volta): FP32 SIMT.
    const bool f64 = math == "float64";
    d.math_peak = peak(gpu, f64 ? "float64" : "float32");
    d.elem_bytes = f64 ? 8 : (half ? 2 : 4);
    // FP64 runs on its own units (not the FP32 lanes): the 64-lane figure.
    d.gemm_efficiency = (!f64 && gpu.fp32_lanes_per_sm > 64) ? kSimtGemmEfficiencyWideSm : kSimtGemmEfficiency;
  }
  return d;
}

GemmEstimate gemm_estimate(double batch, double m, double n, double k, const DeviceRates& d, bool split_k) {
  GemmEstimate best;
  best.seconds = std::numeric_limits<double>::infinity();
  const double per_sm = d.math_peak / d.sms;
  double align = 1;
  if (d.tensor_cores) {
    const auto a = static_cast<long long>(d.align_elems);
    const auto ki = static_cast<long long>(k), ni = static_cast<long long>(n);
    if (ki % a != 0 || ni % a != 0) {
      const bool four = (ki * d.elem_bytes) % 4 == 0 && (ni * d.elem_bytes) % 4 == 0;
      align = four ? kMisaligned4ByteFactor : kMisalignedFactor;
    }
  }
  const double eb = d.elem_bytes;
  const double operand_bytes = eb * batch * (m * k + k * n + m * n);
  const auto consider = [&](const Tile& t) {
    const double tiles = batch * std::ceil(m / t.m) * std::ceil(n / t.n);
    int max_split = 1;
    if (split_k && tiles < d.sms) {
      max_split =
          static_cast<int>(std::min<double>({kMaxSplits, std::floor(d.sms / tiles), std::floor(k / kMinSplitK)}));
      max_split = std::max(1, max_split);
    }
    for (int s = 1; s <= max_split; ++s) {
      const double ctas = tiles * s;
      const double waves = std::ceil(ctas / d.sms);
      const double kk = std::ceil(k / s);
      const double tile_s = 2.0 * t.m * t.n * kk / (per_sm * d.gemm_efficiency * t.rel * align);
      // Split-K writes s fp32 partial tiles and a reduction reads them back.
      const double bytes = operand_bytes + (s > 1 ? 2.0 * 4.0 * batch * m * n * s : 0.0);
      GemmEstimate e;
      e.tile_m = t.m;
      e.tile_n = t.n;
      e.split_k = s;
      e.ctas = ctas;
      e.waves = waves;
      e.alignment_factor = align;
      e.flops = 2.0 * batch * m * n * k;
      e.bytes = bytes;
      e.shape.compute_s = waves * tile_s;
      e.shape.memory_s = bytes / (d.hbm_bandwidth * d.memory_efficiency);
      // A split-K GEMM is two kernels (partials, then the reduction).
      e.shape.overhead_s = d.kernel_fixed_s * (s > 1 ? 2 : 1);
      e.seconds = std::max(e.shape.compute_s, e.shape.memory_s) + e.shape.overhead_s;
      if (e.seconds < best.seconds) best = e;
    }
  };
  if (d.tensor_cores)
    for (const auto& t : kTensorCoreTiles) consider(t);
  else
    for (const auto& t : kSimtTiles) consider(t);
  // Its compute part is all waves of these CTAs (what NCCL's SMs cost it: gpu/contention).
  if (best.ctas > 0) best.shape.waves = intern_waves({WaveGroup{best.ctas, 1.0}});
  return best;
}

// A memory-bound kernel that reaches `fraction` of the HBM peak.
static Kernel memory_kernel_at(double bytes, const DeviceRates& d, double fraction) {
  Kernel k;
  k.shape.memory_s = d.hbm_bandwidth > 0 ? bytes / (d.hbm_bandwidth * fraction) : 0.0;
  k.shape.overhead_s = d.kernel_fixed_s;
  k.seconds = k.shape.memory_s + k.shape.overhead_s;
  return k;
}

Kernel memory_kernel(double bytes, const DeviceRates& d) { return memory_kernel_at(bytes, d, d.memory_efficiency); }

namespace {
// A kernel moving `bytes` that takes `bound_s` instead when that is longer: work bound by SM cycles
// or by a few latency-bound units, not by HBM (compute-like for the contention model).
Kernel at_least(double bytes, double bound_s, const DeviceRates& d) {
  Kernel k = memory_kernel(bytes, d);
  if (bound_s > k.shape.memory_s) {
    k.shape.compute_s = bound_s;
    k.seconds = bound_s + k.shape.overhead_s;
  }
  return k;
}

// A memory kernel that may instead be bound by SM cycles per element.
Kernel cycle_bound_kernel(double bytes, double elements, double cycles_per_element, const DeviceRates& d) {
  if (d.sm_cycles_per_s <= 0 || elements <= 0) return memory_kernel(bytes, d);
  return at_least(bytes, elements * cycles_per_element / d.sm_cycles_per_s, d);
}
}  // namespace

Kernel strided_elementwise_kernel(double bytes, double elements, double elem_bytes, const DeviceRates& d) {
  return cycle_bound_kernel(bytes, elements, elem_bytes <= 2 ? kStridedCyclesPerElement2 : kStridedCyclesPerElement4,
                            d);
}

Kernel half_to_float_cast_kernel(double half_bytes, const DeviceRates& d) {
  return cycle_bound_kernel(3 * half_bytes, half_bytes / 2, kHalfToFloatCyclesPerElement, d);
}

namespace {
// A kernel whose parallel unit is the channel: `passes` x the channel's `channel_elements` at `rate`
// plus `fixed_s` (the H200's, scaled by this GPU's SM clock; the H200's where it is unknown), or its
// `bytes` at the streaming rate, whichever is longer.
Kernel per_channel_kernel(double bytes, double passes, double channel_elements, double rate, double fixed_s,
                          const DeviceRates& d) {
  if (channel_elements <= 0 || rate <= 0) return memory_kernel(bytes, d);
  const double clock = d.sm_cycles_per_s > 0 ? d.sm_cycles_per_s / d.sms : kBnReferenceSmClock;
  const double scale = clock / kBnReferenceSmClock;
  return at_least(bytes, passes * channel_elements / (rate * scale) + fixed_s / scale, d);
}
}  // namespace

BatchNormKernels batch_norm_kernels(double in, double o, double channels, double elem_bytes, bool pytorch_kernels,
                                    bool channels_last, const DeviceRates& d) {
  BatchNormKernels bn;
  // Elements of one channel (N x H x W); 0 when the channel count is unknown.
  const double ch = channels > 0 && elem_bytes > 0 ? in / elem_bytes / channels : 0.0;
  if (channels_last) {
    // batch_norm_use_channels_last_kernels / cuDNN's NHWC kernels: no per-channel bound taken (the
    // reductions run across channels in a block); the forward's statistics and normalise passes,
    // the backward's reduce and element-wise kernels.
    bn.forward = {memory_kernel(in, d), memory_kernel(in + o, d)};
    bn.backward = {memory_kernel(o + in, d), memory_kernel(o + 2 * in, d)};
  } else if (pytorch_kernels) {
    // The transform at kNativeBnTransformBytesPerSmCycle over all SMs (the fraction of the peak it
    // was read as where the SMs' cycles are unknown).
    const Kernel transform =
        d.sm_cycles_per_s > 0
            ? cycle_bound_kernel(in + o, in + o, 1.0 / kNativeBnTransformBytesPerSmCycle, d)
            : at_least(in + o, memory_kernel_at(in + o, d, kNativeBnTransformFraction).shape.memory_s, d);
    bn.forward = {per_channel_kernel(in, 1, ch, kNativeBnStatsChannelRate, 0, d), transform};
    bn.backward = {per_channel_kernel(2 * o + 3 * in, 5, ch, kNativeBnBackwardChannelRate, 0, d)};
  } else if (ch > 0 && ch <= kCudnnBnSingleReadElements) {
    bn.forward = {per_channel_kernel(in + o, 2, ch, kCudnnBnFwdChannelRate, kCudnnBnFwdChannelFixed, d)};
    bn.backward = {per_channel_kernel(o + 2 * in, 3, ch, kCudnnBnBwdChannelRate, kCudnnBnBwdChannelFixed, d)};
  } else {
    bn.forward = {per_channel_kernel(2 * in + o, 3, ch, kCudnnBnFwdChannelRate, kCudnnBnFwdChannelFixed, d)};
    bn.backward = {per_channel_kernel(2 * o + 3 * in, 5, ch, kCudnnBnBwdChannelRate, kCudnnBnBwdChannelFixed, d)};
  }
  return bn;
}

Kernel roofline_kernel(double flops, double bytes, double efficiency, const DeviceRates& d) {
  Kernel k;
  k.shape.compute_s = d.math_peak > 0 ? flops / (d.math_peak * efficiency) : 0.0;
  k.shape.memory_s = bytes / (d.hbm_bandwidth * d.memory_efficiency);
  k.shape.overhead_s = d.kernel_fixed_s;
  k.seconds = std::max(k.shape.compute_s, k.shape.memory_s) + k.shape.overhead_s;
  return k;
}

HostCost eager_host_cost() {
  return {kHostForwardOp,
          kHostBackwardOp,
          kLaunch,
          kViewShare * kHostForwardOp,
          kViewNodeShare * kHostBackwardOp,
          kModuleCallShare * kHostForwardOp};
}

double scaled_dim(double dim, int exp, double ratio) {
  if (exp == 0 || ratio == 1.0) return dim;
  return std::max(1.0, std::round(dim * std::pow(ratio, exp)));
}

namespace {

Kernel from_gemm(const GemmEstimate& g) {
  Kernel k;
  k.seconds = g.seconds;
  k.shape = g.shape;
  return k;
}

double poly(const double (&c)[3], double r) { return c[0] + c[1] * r + c[2] * r * r; }

// Dimension i of a record at the scenario's batch and size. Without batch exponents (exports whose
// batch probe changed the op sequence) the batch rides on the first dimension that can carry it:
// the bmm batch when > 1, else the GEMM rows (linear layers flatten batch x tokens into m).
double dim(const config::KernelRecord& r, size_t i, double value, const KernelContext& c) {
  int eb = 0;
  if (!r.batch_exp.empty())
    eb = r.batch_exp[i];
  else if (r.op == config::KernelRecord::Op::CONV)
    eb = i == 0 ? 1 : 0;
  else
    eb = (r.batch > 1) ? (i == 0 ? 1 : 0) : (i == 1 ? 1 : 0);
  const int es = r.size_exp.empty() ? 0 : r.size_exp[i];
  return scaled_dim(scaled_dim(value, eb, c.batch_ratio), es, c.size_ratio);
}

double round_up(double x, double a) { return std::ceil(x / a) * a; }

// The stride of a convolution along one axis, from its recorded input size, filter size and
// output size (the export records no stride): the smallest s for which some padding 0..r-1 gives
// floor((in + 2*pad - r) / s) + 1 == out, PyTorch's output-size rule without dilation. With
// X = in + 2*pad - r between max(0, in - r) and in + r - 2, floor(X / s) == out - 1 needs
// s*(out - 1) <= X < s*out: the smallest such s is ceil((min X + 1) / out), valid when
// s*(out - 1) <= max X (closed form: sizes reach 2^31). Sizes that stride 1 also explains are
// read as stride 1 (DeepBench's 1x1 stride-2 convolution padded by 3, 7x7 -> 7x7, is one), so
// such a dgrad keeps the full GEMM; a patchify convolution (16x16, stride 16, 224 -> 14) reads as
// stride 15, which leaves its dgrad's multiply-adds within 14 %.
double conv_stride(double in, double r, double out) {
  if (!(in >= 1 && r >= 1 && out >= 1)) return 1;
  const double x_lo = std::max(0.0, in - r), x_hi = in + r - 2;
  const double s = std::max(1.0, std::ceil((x_lo + 1) / out));
  if (out == 1 || s * (out - 1) <= x_hi) return s;
  return std::max(1.0, std::round(in / out));
}

// The dropout rewrite in mem_kernels: after a bernoulli_ record, the next div_ and mul of the same
// layer are the rest of the decomposed dropout.
struct DropoutState {
  double mask_bytes = 0;
  bool pending_div = false, pending_mul = false;
};

struct Gemm4 {
  double b, m, n, k;
};

Gemm4 gemm_dims(const config::KernelRecord& r, const KernelContext& c) {
  return {dim(r, 0, r.batch, c), dim(r, 1, r.m, c), dim(r, 2, r.n, c), dim(r, 3, r.k, c)};
}

void add(LayerKernels& lk, bool fwd, const Kernel& k) { (fwd ? lk.forward : lk.backward).push_back(k); }

void gemm_kernels(const config::KernelRecord& r, const KernelContext& c, LayerKernels& lk) {
  const auto g = gemm_dims(r, c);
  const auto& d = c.gemm;
  add(lk, true, from_gemm(gemm_estimate(g.b, g.m, g.n, g.k, d)));
  lk.flops_fwd += 2 * g.b * g.m * g.n * g.k;
  // autograd's mm/addmm/bmm backward: grad_A = grad_C B^T (m x k, inner n), grad_B = A^T grad_C
  // (k x n, inner m), grad_bias = grad_C summed over the rows.
  if (r.grad_a) {
    add(lk, false, from_gemm(gemm_estimate(g.b, g.m, g.k, g.n, d)));
    lk.flops_bwd += 2 * g.b * g.m * g.n * g.k;
  }
  if (r.grad_b) {
    add(lk, false, from_gemm(gemm_estimate(g.b, g.k, g.n, g.m, d)));
    lk.flops_bwd += 2 * g.b * g.m * g.n * g.k;
  }
  if (r.bias) add(lk, false, memory_kernel(d.elem_bytes * g.b * g.m * g.n + 4 * g.n, c.memory));
}

// PyTorch's depthwise convolution (ConvParams::is_depthwise: not transposed, groups == input
// channels > 1, output channels a multiple of them) is not cuDNN's implicit GEMM:
// _select_conv_backend (aten/src/ATen/native/Convolution.cpp) picks ConvBackend::CudaDepthwise2d,
// PyTorch's own kernels (aten/src/ATen/native/cuda/DepthwiseConv2d.cu), unless use_cudnn_depthwise
// picks cuDNN's depthwise kernels (fp16/bf16 workloads it lists, channels_last). The native
// kernels are direct: the forward runs one thread per output with R*S multiply-adds in float
// (acc_type), the input gradient one thread per input element (R*S per multiplier), the weight
// gradient one block per (channel, tap) summing input x grad_output over N*P*Q. Each is priced as
// a roofline: its tensors' bytes once at the streaming rate or its multiply-adds at the FP32
// CUDA-core peak, whichever takes longer. A lower bound: the weight gradient's re-reads of its
// channel's planes (one per tap) are taken to hit L2, and the kernels use no shared memory
// ("bandwidth-bound ... the kernels are very simple, not even using shared memory", NVIDIA's
// ngimel in pytorch/pytorch#1708); cuDNN's depthwise kernels get the same price. As a grouped
// implicit GEMM each group's single channel was padded to the tensor-core width both ways (64x
// the multiply-adds at fp16) in one-channel-wide tiles: 30-75x this bound.
bool depthwise(const config::KernelRecord& r) {
  return !r.transposed && r.g > 1 && r.g == r.c && std::fmod(r.o, r.c) == 0;
}

void depthwise_kernels(const config::KernelRecord& r, const KernelContext& c, LayerKernels& lk) {
  const double n = dim(r, 0, r.n, c), h = dim(r, 1, r.h, c), w = dim(r, 2, r.w, c), p = dim(r, 3, r.p, c),
               q = dim(r, 4, r.q, c);
  const double eb = c.conv.elem_bytes;
  const double in_b = eb * n * r.c * h * w, out_b = eb * n * r.o * p * q, w_b = eb * r.o * r.r * r.s;
  const double f = 2 * n * r.o * p * q * r.r * r.s;
  const auto direct = [&] { return roofline_kernel(f, in_b + out_b + w_b, 1.0, c.memory); };
  add(lk, true, direct());
  lk.flops_fwd += f;
  if (r.grad_a) {
    add(lk, false, direct());
    lk.flops_bwd += f;
  }
  if (r.grad_b) {
    add(lk, false, direct());
    lk.flops_bwd += f;
  }
  if (r.bias) add(lk, false, memory_kernel(out_b, c.memory));
}

void conv_kernels(const config::KernelRecord& r, const KernelContext& c, LayerKernels& lk) {
  if (depthwise(r)) return depthwise_kernels(r, c, lk);
  const double n = dim(r, 0, r.n, c);
  // The convolution whose forward the GEMMs below describe: the layer itself, or, for a
  // ConvTranspose, the convolution it is the adjoint of (input n x o x p x q, output n x c x h x w,
  // the same weight). ConvTranspose's forward is that convolution's dgrad and its input gradient
  // that convolution's forward; the weight gradient is the same GEMM with the operands' roles
  // swapped (aten/src/ATen/native/cudnn/ConvShared.cpp: `cudnn_convolution_transpose_forward`
  // returns `cudnn_convolution_backward_input`, `cudnn_convolution_transpose_backward_input` runs
  // `cudnn_convolution_forward_out`, `..._transpose_backward_weight` is
  // `cudnn_convolution_backward_weight` with input and grad_output exchanged).
  const bool tr = r.transposed;
  const double rc = tr ? r.o : r.c, ro = tr ? r.c : r.o;  // input / output channels
  const double rh = tr ? r.p : r.h, rw = tr ? r.q : r.w;  // recorded input size
  const double rp = tr ? r.h : r.p, rq = tr ? r.w : r.q;  // recorded output size
  const double h = dim(r, tr ? 3 : 1, rh, c), w = dim(r, tr ? 4 : 2, rw, c), p = dim(r, tr ? 1 : 3, rp, c),
               q = dim(r, tr ? 2 : 4, rq, c);
  const auto& d = c.conv;
  const double cg = rc / r.g, og = ro / r.g;
  // cuDNN pads channel counts to the tensor-core granularity (NVIDIA Convolutional Layers User's
  // Guide, "Channels In And Out": C = 3 first layers are padded to 4 or 8).
  const double a = d.tensor_cores ? d.align_elems : 1;
  const double cp = round_up(cg, a), op = round_up(og, a);
  const double eb = d.elem_bytes;
  const double in_b = eb * n * rc * h * w, out_b = eb * n * ro * p * q, w_b = eb * ro * cg * r.r * r.s;
  // Implicit GEMM (Convolutional Layers guide, "Convolution Algorithms"): forward M = N*P*Q,
  // N = K (filters), K = C*R*S; the operands are read from the tensors, not an im2col copy.
  // Layout: PyTorch's default memory format is NCHW (torch.contiguous_format). cuDNN's
  // tensor-core convolutions run in NHWC and, given NCHW tensors, launch NCHW->NHWC transposes of
  // their inputs and an NHWC->NCHW transpose of their output for every call (NVIDIA
  // Convolutional Layers User's Guide, "Tensor Layouts In Memory: NCHW vs NHWC"). Half precision:
  // the per-operation "NCHW<>NHWC kernels" of cuDNN fp16 convolutions in the Nsight traces of
  // microsoft/onnxruntime PR 17200, "Make CUDA a NHWC EP". TF32 (float32 convolutions on Ampere
  // and later, torch.backends.cudnn.allow_tf32 on by default): the nsys profile of PyTorch's
  // conv2d on an A100 with cuDNN 8.3.2 in pytorch/pytorch#81940 (NVIDIA's ptrblck, 2022-07-22)
  // shows sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nhwc beside
  // cudnn::ops::nchwToNhwcKernel<float> and nhwcToNchwKernel<float>, each launched once per
  // convolution (1,011 calls each) and together 55 % of the convolution kernel's time; an sm86
  // profile in pytorch/pytorch#119458 shows the same tf32 NHWC kernel and nchwToNhwcKernel<float>.
  // Each transpose reads and writes its tensor once, a memory-bound kernel inside the
  // convolution's call (its time is added to the convolution's, one aten op for the host).
  // With training.memory_format "channels_last" the tensors are already NHWC: cuDNN is given NHWC
  // descriptors (pytorch/pytorch#29974 / #32482: a channels_last input or weight makes the
  // convolution run and return channels_last) and runs its NHWC kernels directly, so there is
  // nothing to transpose ("To maximize performance, we recommend using the NHWC tensor layout",
  // same guide). Convolutions off the tensor cores (FP32 before Ampere, float64) get no transposes
  // either way and no layout effect: none is modelled there (PyTorch's maintainers expect
  // channels_last to help only tensor-core inputs, pytorch/pytorch#44943).
  const bool transposes = d.tensor_cores && !c.channels_last;
  auto implicit = [&](double gm, double gn, double gk, double bytes, std::initializer_list<double> transposed,
                      double more_compute_s = 0, bool split_k = true) {
    auto e = gemm_estimate(r.g, gm, gn, gk, d, split_k);
    if (more_compute_s > 0)  // not tiled: shrinks the GEMM's share
      add_shape(e.shape, KernelShape{more_compute_s, 0, 0, nullptr});
    e.shape.memory_s = bytes / (d.hbm_bandwidth * d.memory_efficiency);
    e.seconds = std::max(e.shape.compute_s, e.shape.memory_s) + e.shape.overhead_s;
    if (transposes)
      for (double t : transposed) {
        const Kernel k = memory_kernel(2 * t, c.memory);
        e.shape.memory_s += k.shape.memory_s;
        e.shape.overhead_s += k.shape.overhead_s;
        e.seconds += k.seconds;
        lk.transposes_s += k.seconds;
      }
    return from_gemm(e);
  };
  const double f = 2 * n * p * q * ro * cg * r.r * r.s;
  // Forward transposes: x and w in, y out.
  const auto fprop = [&] { return implicit(n * p * q, op, cp * r.r * r.s, in_b + w_b + out_b, {in_b, w_b, out_b}); };
  // dgrad: M = N*H*W, N = C, K = K*R*S; wgrad: M = K, N = C*R*S, K = N*P*Q (guide, same section).
  // Separate cuDNN calls (cudnn_convolution_backward_input / _weight), each transposing its own
  // operands: dgrad dy and w in, dx out; wgrad dy and x in, dw out.
  // A strided convolution's dgrad skips the filter taps that fall between the strided positions:
  // "It is strided dgrad. Lots of computations can be skipped" (NVIDIA's CUTLASS maintainer on
  // a cuDNN dgrad_engine kernel of a 1x1 stride-2 convolution that ran in a third of the
  // M = N*H*W GEMM's time, NVIDIA/cutlass#928; CUTLASS's strided dgrad splits the problem by the
  // output phase and runs only the taps that contribute). Its multiply-adds are then the
  // forward's (a transposed convolution): M = N*H*W/(stride_h*stride_w), about N*P*Q, and
  // unchanged at stride 1 (where a "valid" convolution's dgrad still runs over the padded
  // N*H*W); dx is still written whole (its bytes). DeepBench's V100 rows (tests/data/kernels,
  // S6): stride-2 dgrads took 1.6x their forward (median), not the 4x of M = N*H*W.
  const auto dgrad = [&] {
    // One GEMM per output phase (ph, pw) of the stride: M = N*ceil(H/sh)*ceil(W/sw), K = K times
    // the taps that land on that phase, ceil((R - ph)/sh) * ceil((S - pw)/sw); phases without taps
    // only write zeros (in dx's bytes). The largest phase is the kernel's shape, the others add
    // their compute. Along an axis with R = a*s + b (0 <= b < s), b phases have a + 1 taps and
    // s - b have a, so the phases fall in at most 2 x 2 groups of equal GEMMs.
    const double sh = conv_stride(rh, r.r, rp), sw = conv_stride(rw, r.s, rq);
    const double pm = n * std::ceil(h / sh) * std::ceil(w / sw);
    struct Group {
      double taps, count;
    };
    const auto groups = [](double taps, double stride) {
      const double a = std::floor(taps / stride), b = taps - a * stride;
      std::vector<Group> g;
      if (b > 0) g.push_back({a + 1, b});
      if (a > 0) g.push_back({a, stride - b});
      return g;
    };
    const auto gh = groups(r.r, sh), gw = groups(r.s, sw);
    double more = 0;
    for (const auto& x : gh)
      for (const auto& y : gw) {
        const double count = x.count * y.count - (&x == &gh[0] && &y == &gw[0] ? 1 : 0);
        if (count > 0)
          more += count * gemm_estimate(r.g, pm, cp, op * x.taps * y.taps, d, kDgradSplitK).shape.compute_s;
      }
    return implicit(pm, cp, op * gh[0].taps * gw[0].taps, out_b + w_b + in_b, {out_b, w_b, in_b}, more, kDgradSplitK);
  };
  add(lk, true, tr ? dgrad() : fprop());
  lk.flops_fwd += f;
  if (r.grad_a) {
    add(lk, false, tr ? fprop() : dgrad());
    lk.flops_bwd += f;
  }
  if (r.grad_b) {
    add(lk, false, implicit(op, cp * r.r * r.s, n * p * q, out_b + in_b + w_b, {out_b, in_b, w_b}));
    lk.flops_bwd += f;
  }
  if (r.bias) add(lk, false, memory_kernel(tr ? in_b : out_b, c.memory));
}

// Flash / memory-efficient attention: the FLOPs of the two eager GEMMs, bytes of Q, K, V, O only.
// Backward: FlashAttention-2's backward runs 5 GEMMs of the forward's size to the forward's 2
// (recomputing the scores): 2.5x the FLOPs (Dao, "FlashAttention-2", arXiv 2307.08691, §3.2);
// reads Q, K, V, O, dO and writes dQ, dK, dV.
void fused_attention(const Gemm4& qk, const Gemm4& pv, const KernelContext& c, LayerKernels& lk) {
  const auto& d = c.gemm;
  const double eb = d.elem_bytes;
  const double flops = 2 * qk.b * qk.m * qk.n * qk.k + 2 * pv.b * pv.m * pv.n * pv.k;
  const double q = qk.b * qk.m * qk.k, kk = qk.b * qk.n * qk.k, v = pv.b * pv.k * pv.n, o = pv.b * pv.m * pv.n;
  lk.forward.push_back(roofline_kernel(flops, eb * (q + kk + v + o), c.attention_fwd_efficiency, d));
  lk.backward.push_back(roofline_kernel(2.5 * flops, eb * (2 * (q + kk + v) + 2 * o), c.attention_bwd_efficiency, d));
  lk.flops_fwd += flops;
  lk.flops_bwd += 2 * flops;  // model FLOPs: recomputation is not useful work
}

// ---- Memory-bound operators as PyTorch's CUDA implementation runs them -------------------------
// The export records an operator's bytes read (`in`) and written (`out`) once each. Several
// operators make more passes over memory than that, some make none, and the meta-device export
// sees decompositions that CUDA fuses. Sources per rule below (PyTorch 1.13-2.x).

// Views launch no kernel (aten/src/ATen/native/TensorShape.cpp: view, _unsafe_view, expand,
// permute, transpose, ... alias their input's storage). Their backward is a view of the gradient.
bool is_view(const std::string& op) {
  static const char* views[] = {"_unsafe_view", "view",  "_reshape_alias", "expand",  "permute",
                                "transpose",    "t",     "unsqueeze",      "squeeze", "slice",
                                "select",       "alias", "as_strided",     "detach",  "unflatten"};
  for (const char* v : views)
    if (op == v) return true;
  return false;
}

// Autocast's fp32 policy (aten/src/ATen/autocast_mode.cpp, TORCH_LIBRARY_IMPL(aten, Autocast, m),
// "fp32" and "fp32_set_opt_dtype" lists): under float16/bfloat16 autocast these run in float32
// and return float32. layer_norm / native_layer_norm ("fp32") cast their half input to float32
// first (cached_cast: a copy kernel); softmax / log_softmax ("fp32_set_opt_dtype") are called with
// dtype=float32, which SoftMax.cpp (`softmax` / `log_softmax` with a dtype, the same in 1.x and at
// 2.x HEAD) serves with one half_to_float kernel for a kHalf input only; a bfloat16 input is cast
// first (`input_.toType(dtype)`) and the softmax runs on float32.
enum class AutocastFp32 { NO, CAST_INPUT, HALF_TO_FLOAT };
AutocastFp32 autocast_fp32(const std::string& op, bool bfloat16) {
  if (op == "native_layer_norm" || op == "layer_norm" || op == "exp" || op == "log" || op == "rsqrt" || op == "pow" ||
      op == "reciprocal" || op == "nll_loss_forward" || op == "mse_loss")
    return AutocastFp32::CAST_INPUT;
  if (op == "_softmax" || op == "_log_softmax" || op == "softmax" || op == "log_softmax")
    return bfloat16 ? AutocastFp32::CAST_INPUT : AutocastFp32::HALF_TO_FLOAT;
  return AutocastFp32::NO;
}

// Training-mode batch norm as an export records it (the ops a dispatch mode sees, below the
// composite batch_norm): native_batch_norm (torch 1.x), _native_batch_norm_legit and
// _batch_norm_with_update (what torch 2.x dispatches nn.BatchNorm to), cudnn_batch_norm.
bool is_batch_norm(const std::string& op) {
  return op == "native_batch_norm" || op == "_native_batch_norm_legit" || op == "_batch_norm_with_update" ||
         op == "cudnn_batch_norm";
}

// Bytes and passes of the memory-bound operator `r` (forward kernels and, if it has one, backward
// kernels) appended to lk. `dropout` carries the dropout rewrite across the layer's records.
// `channels`: the layer's channel count where it is a batch norm with a weight (0: unknown).
void mem_kernels(const config::KernelRecord& r, const KernelContext& c, LayerKernels& lk, DropoutState& dropout,
                 double channels) {
  if (is_view(r.name)) return;
  // Bytes at float32 (the export's dtype) and at the scenario's activation dtype.
  const double in32 = poly(r.in, c.size_ratio) * c.batch_ratio, o32 = poly(r.out, c.size_ratio) * c.batch_ratio;
  double in = in32 * c.act_bytes_factor, o = o32 * c.act_bytes_factor;

  // Dropout: F.dropout on CUDA calls native_dropout when is_fused_kernel_acceptable (Dropout.cpp:
  // CUDA input, 0 < p < 1), one kernel (aten/src/ATen/native/cuda/Dropout.cu, fused_dropout_kernel)
  // that reads x and writes y and a one-byte-per-element mask; its backward (masked_scale_kernel)
  // reads grad_out and the mask and writes grad_in. The meta-device export cannot take that path
  // and records _dropout_impl's decomposition bernoulli_ (mask), div_ (scale), mul (apply): the
  // three records are replaced by the two kernels.
  if (r.name == "bernoulli_") {
    dropout.mask_bytes = o32 / 4.0;  // one byte per element (records are float32)
    dropout.pending_div = dropout.pending_mul = true;
    lk.forward.push_back(memory_kernel(in + o + dropout.mask_bytes, c.memory));
    return;
  }
  if (dropout.pending_div && r.name == "div_") {
    dropout.pending_div = false;
    return;
  }
  if (dropout.pending_mul && r.name == "mul") {
    dropout.pending_mul = false;
    if (r.backward) lk.backward.push_back(memory_kernel(o + dropout.mask_bytes + o, c.memory));
    return;
  }

  // Autocast fp32-policy ops: the op's own traffic at float32 plus the casts (a cast reads half
  // and writes float32 or the reverse: the float32 bytes plus half of them). The op's
  // float32 output is cast back to half once by its consumer (a linear or matmul under autocast);
  // the casts' backward (_to_copy's) converts the gradients the other way.
  const bool half = c.act_bytes_factor < 1.0;
  const auto policy = half ? autocast_fp32(r.name, c.bfloat16) : AutocastFp32::NO;
  // Casts: forward input cast (before the op) and output cast (after it); backward the output
  // cast's gradient conversion first, the input cast's last (reverse order).
  double cast_in = 0, cast_out = 0;
  // A cast to float32 takes Copy.cu's unrolled path (half_to_float_cast_kernel), one to half the
  // vectorized one (memory_kernel).
  if (policy != AutocastFp32::NO) {
    if (policy == AutocastFp32::CAST_INPUT) {
      cast_in = in + in32;
      lk.forward.push_back(half_to_float_cast_kernel(in, c.memory));
      lk.per_element.add(lk.forward.back());
    }  // else half_to_float: the op itself reads the half input
    cast_out = o32 + o;
    // The output cast's gradient: half to float32.
    if (r.backward) {
      lk.backward.push_back(half_to_float_cast_kernel(o, c.memory));
      lk.per_element.add(lk.backward.back());
    }
    if (policy == AutocastFp32::CAST_INPUT) in = in32;
    o = o32;
  }

  if (is_batch_norm(r.name)) {
    // Training-mode batch norm (batch_norm_kernels; the passes, rates and sources are at the
    // constants above): cuDNN's kernels for float32 and float16 (torch.backends.cudnn on, the
    // default; Normalization.cpp _batch_norm_impl_index / 2.x _select_batch_norm_backend),
    // PyTorch's own for bfloat16 (use_cudnn requires input and weight not kBFloat16). The
    // per-channel running-statistics update moves no activation bytes and is left out.
    const double elem_bytes = 4.0 * c.act_bytes_factor;
    auto bn = batch_norm_kernels(in, o, channels, elem_bytes, c.bfloat16, c.channels_last, c.memory);
    lk.forward.insert(lk.forward.end(), bn.forward.begin(), bn.forward.end());
    if (r.backward) lk.backward.insert(lk.backward.end(), bn.backward.begin(), bn.backward.end());
  } else if (r.name == "native_layer_norm" || r.name == "layer_norm") {
    // layer_norm_kernel.cu: the forward (vectorized_layer_norm_kernel) reads a row into registers
    // once and writes y. The backward runs layer_norm_grad_input_kernel(_vectorized), one block
    // per row whose compute_gI loops over the row twice: once reading dy and x for the row's two
    // sums (stats_x1, stats_x2), then, after the block reduction, again reading dy and x to write
    // dx; then GammaBetaBackward(...)CUDAKernel reads dy and x once more for dgamma and dbeta: two
    // kernels, 7 passes. The second read of a row is taken as a DRAM pass, as batch norm's: the
    // ATen layer-norm backward measured on a GB300 (meta-pytorch/KernelAgent PR 133, bf16, CUDA
    // graph replay; tests/data/kernels) takes 1.25-1.47x what even 7 passes at the streaming rate
    // give, so the re-read is not free there.
    lk.forward.push_back(memory_kernel(in + o, c.memory));
    if (r.backward) {
      lk.backward.push_back(memory_kernel(2 * o + 3 * in, c.memory));
      lk.backward.push_back(memory_kernel(o + in, c.memory));
    }
  } else if (r.name == "max_pool2d_with_indices" && !c.channels_last && o32 > 0) {
    // DilatedMaxPool2d.cu's NCHW kernels (kMaxPool*): the export's float32 bytes are the input
    // (4 B an element) and the output with its int64 indices (12 B an output element). Bytes at
    // the scenario's dtype, the indices at 8 B; the backward reads grad_out and the indices and
    // writes grad_in.
    const double eb = 4.0 * c.act_bytes_factor;
    const double in_el = in32 / 4.0, out_el = o32 / 12.0;
    const double bytes = in_el * eb + out_el * (eb + 8.0);
    lk.forward.push_back(cycle_bound_kernel(bytes, out_el, kMaxPoolForwardCyclesPerOutput, c.memory));
    if (r.backward) lk.backward.push_back(cycle_bound_kernel(bytes, in_el, kMaxPoolBackwardCyclesPerInput, c.memory));
  } else if (r.strided) {
    // TensorIterator's strided path (kStridedCyclesPerElement*): the output's elements at the
    // dtype the op runs in. The backward of a broadcasting op computes the gradient of the full
    // operand against the same broadcast one (div: grad / other; where: where(cond, grad, 0)), of
    // a strided copy the copy's gradient through the same strides: the same path and elements.
    // Elements from the float32 bytes the export records (a bool or int64 result would be
    // miscounted; the flagged ops of the bundled models all return floating tensors).
    const double elements = o32 / 4.0;
    const double eb = elements > 0 ? o / elements : 4.0;
    lk.forward.push_back(strided_elementwise_kernel(in + o, elements, eb, c.memory));
    lk.per_element.add(lk.forward.back());
    if (r.backward) {
      lk.backward.push_back(strided_elementwise_kernel(in + 2 * o, elements, eb, c.memory));
      lk.per_element.add(lk.backward.back());
    }
  } else {
    lk.forward.push_back(memory_kernel(in + o, c.memory));
    // Backward (the export's byte rule): read grad_out, read what was saved, write grad_in.
    if (r.backward) lk.backward.push_back(memory_kernel(in + 2 * o, c.memory));
  }
  if (cast_out > 0) lk.forward.push_back(memory_kernel(cast_out, c.memory));
  if (cast_in > 0 && r.backward) lk.backward.push_back(memory_kernel(cast_in, c.memory));
}

bool is_bmm_of_activations(const config::KernelRecord& r) {
  return r.op == config::KernelRecord::Op::GEMM && r.batch > 1 && r.grad_a && r.grad_b;
}

}  // namespace

std::vector<LayerKernels> layer_kernels(const config::ModelSpec& m, const KernelContext& c) {
  std::vector<LayerKernels> out(m.layers.size());
  const bool fused_attention_on = c.attention != "eager";
  // SDPA rewrite state: after an activation x activation bmm (the scores Q K^T), the memory-bound
  // ops on tensors of the score matrix's size (scale, mask, softmax, dropout) until the next such
  // bmm (P V) are inside the fused kernel.
  bool in_attention = false;
  double score_bytes = 0;
  Gemm4 qk{};
  size_t qk_layer = 0;
  for (size_t li = 0; li < m.layers.size(); ++li) {
    const auto& layer = m.layers[li];
    auto& lk = out[li];
    std::vector<const config::KernelRecord*> mems;  // for the fused-epilogue option
    DropoutState dropout;
    // A batch norm's channels: its weight's length (BatchNorm's weight and bias are [C]).
    double channels = 0;
    if (layer.type == config::LayerType::BATCHNORM && !layer.params.empty() && layer.params[0] >= 0 &&
        static_cast<size_t>(layer.params[0]) < m.params.size() && m.params[layer.params[0]].shape.size() == 1)
      channels = static_cast<double>(m.params[layer.params[0]].numel);
    for (const auto& r : layer.kernels) {
      if (fused_attention_on && is_bmm_of_activations(r)) {
        if (!in_attention) {
          in_attention = true;
          qk = gemm_dims(r, c);
          qk_layer = li;
          score_bytes = 4.0 * r.batch * r.m * r.n;  // at the export's size and dtype
          continue;
        }
        in_attention = false;
        fused_attention(qk, gemm_dims(r, c), c, out[qk_layer]);
        continue;
      }
      if (in_attention && r.op == config::KernelRecord::Op::MEM && (r.in[0] + r.in[1] + r.in[2]) >= 0.5 * score_bytes)
        continue;
      switch (r.op) {
        case config::KernelRecord::Op::GEMM: gemm_kernels(r, c, lk); break;
        case config::KernelRecord::Op::CONV: conv_kernels(r, c, lk); break;
        case config::KernelRecord::Op::MEM: {
          const double fl = poly(r.flops, c.size_ratio) * c.batch_ratio;
          lk.flops_fwd += fl;
          if (r.backward) lk.flops_bwd += fl;
          if (c.fuse_bias_gelu_dropout && layer.type == config::LayerType::ELEMENTWISE) {
            mems.push_back(&r);
            break;
          }
          mem_kernels(r, c, lk, dropout, channels);
          break;
        }
      }
    }
    if (!mems.empty()) {
      // Fused element-wise chain (one kernel, as torch.compile or a fused bias-GELU-dropout emits):
      // reads the chain's first inputs and writes its last output; backward likewise.
      const double s = c.batch_ratio * c.act_bytes_factor;
      const double in = poly(mems.front()->in, c.size_ratio) * s, o = poly(mems.back()->out, c.size_ratio) * s;
      lk.forward.push_back(memory_kernel(in + o, c.memory));
      bool bwd = false;
      for (const auto* r : mems) bwd = bwd || r->backward;
      if (bwd) lk.backward.push_back(memory_kernel(in + 2 * o, c.memory));
    }
  }
  return out;
}

namespace {

// What the backward of a memory-bound op keeps from its forward (tools/autograd/derivatives.yaml):
// 0 = nothing that grows with the activations, 1 = its inputs (`in`), 2 = its result (`out`).
int saved_kind(const std::string& op) {
  static const char* nothing[] = {"add",          "add_",  "sub",        "neg",      "div",  "div_",
                                  "_unsafe_view", "clone", "cat",        "_to_copy", "triu", "where",
                                  "embedding",    "mean",  "bernoulli_", "copy_",    "view"};
  static const char* result[] = {"_softmax", "relu", "relu_", "rsqrt", "reciprocal", "tanh", "sigmoid", "exp"};
  for (const char* n : nothing)
    if (op == n) return 0;
  for (const char* n : result)
    if (op == n) return 2;
  return 1;  // mul (both operands), pow, silu, gelu, native_layer_norm, native_batch_norm, pooling, ...
}

}  // namespace

std::vector<double> layer_saved_bytes(const config::ModelSpec& m, const KernelContext& c) {
  std::vector<double> out(m.layers.size(), 0.0);
  const bool fused_attention_on = c.attention != "eager";
  // The SDPA rewrite of layer_kernels: the score matrix and the ops on it are never stored; the
  // fused kernel keeps Q, K, V and its output (and a per-row logsumexp, left out: 1/head_dim of it).
  bool in_attention = false;
  double score_bytes = 0;
  Gemm4 qk{};
  // A tensor saved by two ops is stored once: autograd's SavedVariable keeps a reference to the
  // tensor (torch/csrc/autograd/saved_variable.cpp), not a copy. Records with the export's `sv`
  // carry each storage once (below); for those without it, and for GEMMs and convolutions under
  // half autocast, the one case read off the records is an op that saves its result (relu, relu_, softmax,
  // ...) followed at once by an op that saves its (first) input of the same size: the input is
  // that result (ResNet's relu_ then the next convolution or max-pool; a softmax outside autocast
  // then the bmm with V). `pending` holds the bytes of such a result until the next record.
  double pending = 0;
  const auto aliased = [&](double input_bytes) {
    return pending > 0 && std::fabs(input_bytes - pending) <= 1e-9 * std::max(input_bytes, pending);
  };
  const bool half = c.act_bytes_factor < 1.0;
  // The result a record keeps that the next record may save again as its input (its bytes; 0
  // when it keeps none). Under half autocast an fp32-policy op (softmax) returns float32 and its
  // consumer saves the half copy autocast casts for it: two tensors.
  const auto kept_result = [&](const config::KernelRecord& r) {
    if (r.op != config::KernelRecord::Op::MEM || !r.backward || saved_kind(r.name) != 2) return 0.0;
    if (half && autocast_fp32(r.name, c.bfloat16) != AutocastFp32::NO) return 0.0;
    return poly(r.out, c.size_ratio) * c.batch_ratio * c.act_bytes_factor;
  };
  for (size_t li = 0; li < m.layers.size(); ++li) {
    // Dropout (the rewrite of layer_kernels): on CUDA native_dropout keeps only its one-byte mask
    // (derivatives.yaml native_dropout: mask), not the input the decomposed mul would.
    bool dropout_mul = false;
    double dropout_mask = 0;
    for (const auto& r : m.layers[li].kernels) {
      if (r.op == config::KernelRecord::Op::MEM && r.name == "bernoulli_") {
        dropout_mul = true;
        dropout_mask = poly(r.out, c.size_ratio) * c.batch_ratio / 4.0;  // records are float32
        pending = 0;
        continue;
      }
      if (dropout_mul && r.op == config::KernelRecord::Op::MEM && r.name == "mul") {
        dropout_mul = false;
        if (r.backward) out[li] += dropout_mask;
        pending = 0;
        continue;
      }
      if (fused_attention_on && is_bmm_of_activations(r)) {
        pending = 0;
        if (!in_attention) {
          in_attention = true;
          qk = gemm_dims(r, c);
          score_bytes = 4.0 * r.batch * r.m * r.n;
          continue;
        }
        in_attention = false;
        const auto pv = gemm_dims(r, c);
        out[li] +=
            c.gemm.elem_bytes * (qk.b * qk.m * qk.k + qk.b * qk.n * qk.k + pv.b * pv.k * pv.n + pv.b * pv.m * pv.n);
        continue;
      }
      if (in_attention && r.op == config::KernelRecord::Op::MEM && (r.in[0] + r.in[1] + r.in[2]) >= 0.5 * score_bytes) {
        pending = 0;
        continue;
      }
      // What the export saw autograd save (`sv`, storages charged once): exact in float32 and,
      // for memory-bound ops, scaled by the activations' size under autocast. Under half autocast a
      // GEMM or convolution saves the half copy autocast casts for it, one per op even of the
      // same input (a layer norm's output read by the q, k and v projections: three casts, where
      // float32 saves one tensor), so those keep the byte rule below.
      if (r.has_saved && (r.op == config::KernelRecord::Op::MEM || !half)) {
        const double s = c.batch_ratio * (r.op == config::KernelRecord::Op::MEM ? c.act_bytes_factor : 1.0);
        out[li] += std::max(0.0, poly(r.saved, c.size_ratio)) * s;
        pending = kept_result(r);
        continue;
      }
      switch (r.op) {
        case config::KernelRecord::Op::GEMM: {
          // mm/bmm backward: grad_B = A^T grad_C needs A; grad_A = grad_C B^T needs B (an
          // activation only for activation x activation products).
          const auto g = gemm_dims(r, c);
          const double a = c.gemm.elem_bytes * g.b * g.m * g.k;
          if (r.grad_b && !aliased(a)) out[li] += a;
          if (r.grad_a && is_bmm_of_activations(r)) out[li] += c.gemm.elem_bytes * g.b * g.k * g.n;
          break;
        }
        case config::KernelRecord::Op::CONV: {
          // convolution_backward's weight gradient needs the input.
          const double x = c.conv.elem_bytes * dim(r, 0, r.n, c) * r.c * dim(r, 1, r.h, c) * dim(r, 2, r.w, c);
          if (r.grad_b && !aliased(x)) out[li] += x;
          break;
        }
        case config::KernelRecord::Op::MEM: {
          if (!r.backward) break;
          const int kind = saved_kind(r.name);
          const double s = c.batch_ratio * c.act_bytes_factor;
          const double in = poly(r.in, c.size_ratio) * s, res = poly(r.out, c.size_ratio) * s;
          if (kind == 1 && !aliased(in)) out[li] += in;
          if (kind == 2) {
            // An in-place op (relu_) returns its input's storage: after a result of that size
            // saved just before, its own result is that tensor again.
            const bool in_place = !r.name.empty() && r.name.back() == '_';
            if (!(in_place && aliased(in))) out[li] += res;
          }
          break;
        }
      }
      pending = kept_result(r);
    }
  }
  return out;
}

std::vector<double> layer_input_bytes(const config::ModelSpec& m, const KernelContext& c) {
  std::vector<double> out(m.layers.size(), -1.0);
  const double eb = 4.0 * c.act_bytes_factor;  // records are float32; activations at the run's dtype
  for (size_t li = 0; li < m.layers.size(); ++li) {
    if (m.layers[li].kernels.empty()) continue;
    const auto& r = m.layers[li].kernels.front();
    switch (r.op) {
      case config::KernelRecord::Op::GEMM: {
        const auto g = gemm_dims(r, c);
        out[li] = eb * g.b * g.m * g.k;
        break;
      }
      case config::KernelRecord::Op::CONV:
        out[li] = eb * dim(r, 0, r.n, c) * r.c * dim(r, 1, r.h, c) * dim(r, 2, r.w, c);
        break;
      case config::KernelRecord::Op::MEM:
        out[li] = std::max(0.0, poly(r.in, c.size_ratio)) * c.batch_ratio * c.act_bytes_factor;
        break;
    }
  }
  return out;
}

}  // namespace ddpsim::gpu

namespace ddpsim::gpu {

double LossKernels::seconds() const {
  double s = 0;
  for (const auto& k : forward) s += k.seconds;
  for (const auto& k : backward) s += k.seconds;
  return s;
}

// F.cross_entropy(logits, target) runs at::cross_entropy_loss (aten/src/ATen/native/LossNLL.cpp):
// nll_loss_nd(log_softmax(logits, 1)) for class-index targets without label smoothing, in 1.13 and
// 2.x. What its kernels move (read at pytorch/pytorch 000cace5 for SoftMax.cu, 00e3254d for
// Loss.cu; 1.13's files were not read line by line: whether its SoftMax.cu has the shared-memory
// forward decides rows of 1,025-12,255 classes only, none of the vocabularies below):
// - autocast: cross_entropy_loss is on the CUDA fp32 list (autocast_mode.cpp; the autocast docs'
//   "CUDA Ops that can autocast to float32" name cross_entropy), so half logits are cast to float32
//   first (a copy: read 2, write 4 bytes per element) and the gradient is cast back (read 4, write 2);
// - log_softmax forward (cuda/SoftMax.cu host_softmax, inner size 1): rows of at most 1024
//   elements and 4096 bytes take the persistent warp kernel (dispatch_softmax_forward: x read once,
//   y written once); longer rows run one block per row: cunn_SoftMaxForwardSmem when the row fits
//   the block's 48 KiB of shared memory (sharedMemPerBlock less the reduction's warps x 4 bytes;
//   the length a multiple of 4 floats), which reads x once, else cunn_SoftMaxForward, which reads x
//   three times (the max, the sum of exponentials, the epilogue that writes y). Vocabularies
//   (30,522 for BERT, 50,257 for GPT-2, 32,000-128,256 for LLaMA) take the three-read kernel;
// - nll_loss forward (cuda/Loss.cu nll_loss_forward_reduce_cuda_kernel_2d): one logit and the
//   int64 target per row, charged as bytes; the kernel is one warp (<<<1, 32>>>) looping over the
//   rows, so its real time is latency-bound (sim/gpu/NOTES.md: under-priced, named);
// - backward: nll_loss_backward zeroes the whole [rows, classes] gradient (grad_input.zero_() in
//   TORCH_IMPL_FUNC(nll_loss_backward_out_cuda)) and writes one element per row (one warp, as the
//   forward); log_softmax's backward (host_softmax_backward) reads dy and y
//   and writes dx in the persistent kernel, and reads dy once more for the row's sum in the block
//   kernel (cunn_SoftMaxBackward);
// - log_softmax keeps its float32 result for the backward (derivatives.yaml: _log_softmax uses
//   result).
// Each row is taken as a DRAM pass (a block per row of 120-500 KiB; resident blocks x row exceed L2).
// Not modelled: what a training loop does around the call (Hugging Face's GPT-2 shifts the logits
// with a .contiguous() copy and some LLaMA versions upcast them with .float(); transformers
// releases differ), label smoothing, ignore_index rows (they still move their bytes).
LossKernels loss_kernels(const config::ModelSpec& m, const KernelContext& c, const std::string& loss,
                         std::string* error) {
  LossKernels out;
  if (loss == "none" || m.layers.empty()) return out;
  const auto& last = m.layers.back();
  const config::KernelRecord* logits = nullptr;
  if (last.type == config::LayerType::LINEAR)
    for (const auto& r : last.kernels)
      if (r.op == config::KernelRecord::Op::GEMM) logits = &r;
  double rows = 0, classes = 0;
  if (logits) {
    const auto g = gemm_dims(*logits, c);
    rows = g.b * g.m;
    classes = g.n;
  }
  if (classes < 2) {
    if (loss == "cross_entropy" && error)
      *error = "model " + m.name + "'s last layer (" + last.name + ", " + config::to_string(last.type) +
               ") is not a linear layer with kernel records and at least 2 outputs, so there are no logits "
               "to take a cross-entropy of";
    return out;
  }
  out.rows = rows;
  out.classes = classes;
  const double n = rows * classes;
  const bool half = c.act_bytes_factor < 1.0;
  const auto& d = c.memory;
  if (half) out.forward.push_back(half_to_float_cast_kernel(n * 2, d));
  const bool persistent = classes <= 1024 && classes * 4 <= 4096;
  const bool smem = !persistent && classes * 4 < 49152 - 32 * 4 && std::fmod(classes, 4.0) == 0;
  const double fwd_reads = (persistent || smem) ? 1 : 3;
  out.forward.push_back(memory_kernel(n * 4 * (fwd_reads + 1), d));
  out.forward.push_back(memory_kernel(rows * (8 + 4), d));
  out.backward.push_back(memory_kernel(n * 4, d));           // grad_input.zero_()
  out.backward.push_back(memory_kernel(rows * (8 + 4), d));  // one element per row
  out.backward.push_back(memory_kernel(n * 4 * (persistent ? 3 : 4), d));
  if (half) out.backward.push_back(memory_kernel(n * (4 + 2), d));
  out.saved_bytes = 4 * n;
  return out;
}

}  // namespace ddpsim::gpu
