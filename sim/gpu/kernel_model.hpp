#pragma once
// Per-kernel GPU time estimates from the hardware description alone (docs/facts.md §8):
// - GEMMs and implicit-GEMM convolutions run in output tiles; time = waves x one tile's main loop,
//   waves = ceil(CTAs / SMs) (wave quantization), tensor cores only for eligible dtypes, reduced
//   efficiency for leading dimensions that are not 16-byte multiples, split-K when the output has
//   too few tiles to fill the GPU;
// - memory-bound kernels: fixed cost + bytes / achieved HBM bandwidth, so the achieved bandwidth
//   grows with the size (half the asymptote at bytes = fixed cost x bandwidth);
// - backward kernels derived per forward kernel (linear: dgrad + wgrad GEMMs + bias reduction;
//   conv: dgrad + wgrad implicit GEMMs; memory-bound: one kernel reading grad_out and what was
//   saved, writing grad_in);
// - SDPA attention backends fuse the score matrix away (one kernel forward, one backward).
// Every constant is in kernel_model.cpp with its source; none is fitted to end-to-end training.
#include <string>
#include <vector>

#include "config/specs.hpp"
#include "gpu/compute_model.hpp"

namespace ddpsim::gpu {

// One GPU at one math mode (what a kernel runs on).
struct DeviceRates {
  std::string gpu;
  int sms = 1;
  double hbm_bandwidth = 0;  // bytes/s, datasheet
  double math_peak = 0;      // FLOP/s of the math path (tensor cores when eligible)
  bool tensor_cores = false;
  int align_elems = 1;             // leading dimensions must be multiples of this for full tensor-core speed
  int elem_bytes = 4;              // operand element size
  double gemm_efficiency = 0.8;    // fraction of math_peak one full wave of large tiles reaches
  double memory_efficiency = 0.9;  // fraction of HBM bandwidth a large streaming kernel reaches
  double kernel_fixed_s = 2e-6;    // GPU-side cost of any kernel (launch to completion, empty)
  // SM clock cycles per second over the GPU (SMs x clock), from the FP32 peak: 2 FLOPs per FP32
  // lane per cycle. 0 when the GPU file gives no FP32 peak.
  double sm_cycles_per_s = 0;
};

// `math` is the operand/math mode: "float32" (SIMT FP32), "tf32", "float16", "bfloat16", "float64".
DeviceRates device_rates(const config::GpuSpec& gpu, const std::string& math, double kernel_fixed_s);

struct GemmEstimate {
  double seconds = 0;
  KernelShape shape;
  int tile_m = 0, tile_n = 0, split_k = 1;
  double ctas = 0, waves = 0;
  double alignment_factor = 1;  // efficiency factor from operand alignment (1 = aligned)
  double flops = 0, bytes = 0;
};

// C[m, n] = A[m, k] B[k, n], `batch` independent products (bmm). Row-major operands: the leading
// dimensions are k (A) and n (B, C). `split_k` false: one CTA per output tile, never a split
// reduction (a convolution's dgrad, as cuDNN runs it).
GemmEstimate gemm_estimate(double batch, double m, double n, double k, const DeviceRates& d, bool split_k = true);

// A streaming kernel moving `bytes` (read + written).
Kernel memory_kernel(double bytes, const DeviceRates& d);
// An element-wise kernel on TensorIterator's strided path (an operand broadcast or strided against
// the output: CUDALoops.cuh launch_legacy_kernel, no vector loads): `elements` output elements of
// `elem_bytes` each, moving `bytes`; bound by the streaming rate or by SM cycles per element.
Kernel strided_elementwise_kernel(double bytes, double elements, double elem_bytes, const DeviceRates& d);
// A cast of `half_bytes` of float16/bfloat16 to float32 (read 2, write 4 bytes an element):
// Copy.cu's direct_copy_kernel_cuda runs it through gpu_kernel with dynamic casting, the unrolled,
// non-vectorized path (the other direction, float32 to half, is vectorized: memory_kernel).
Kernel half_to_float_cast_kernel(double half_bytes, const DeviceRates& d);

// Training-mode batch norm over an input of `channels` channels (N x C x H x W, or channels_last):
// the forward kernels and the backward kernels of one call, as cuDNN (float32, float16 with a
// float32 weight) or PyTorch's own kernels (`pytorch_kernels`: bfloat16, or half weights) run it
// (kernel_model.cpp, "Batch norm").
// `in_bytes` / `out_bytes`: the input and output at the activation dtype, `elem_bytes` bytes an
// element; channels <= 0 (unknown): no per-channel bound.
struct BatchNormKernels {
  std::vector<Kernel> forward, backward;
};
BatchNormKernels batch_norm_kernels(double in_bytes, double out_bytes, double channels, double elem_bytes,
                                    bool pytorch_kernels, bool channels_last, const DeviceRates& d);

// A kernel bound by its FLOPs at `efficiency` x d.math_peak or by its bytes at the streaming rate,
// whichever takes longer, plus the fixed cost. Fused attention (PyTorch SDPA flash /
// memory-efficient backends): an achieved fraction of the tensor-core peak, bytes for Q, K, V, O
// (forward) or those plus their gradients (backward); PyTorch's direct depthwise convolution
// kernels: the FP32 CUDA-core peak, the tensors' bytes once.
Kernel roofline_kernel(double flops, double bytes, double efficiency, const DeviceRates& d);

// Eager PyTorch's dispatch of one forward op (dispatcher + autograd recording) and of one backward
// node on the CPU, and cudaLaunchKernel's cost per launch (sources in kernel_model.cpp). Other host
// costs are priced as shares of the forward op (ddp/host_costs.hpp, gpu/optimizer_model.hpp,
// plan/dp_builder.hpp).
inline constexpr double kHostForwardOp = 6.9e-6;
inline constexpr double kHostBackwardOp = 8.5e-6;
inline constexpr double kLaunch = 2.0e-6;

// Host side of eager PyTorch: CPU seconds per operator (dispatcher + autograd + cudaLaunchKernel).
struct HostCost {
  double forward_dispatch_s = 0, backward_dispatch_s = 0, launch_s = 0;
  // Host work without a kernel (LayerSpec::host_views etc.): a forward view op, an autograd view
  // node in backward, an nn.Module call.
  double view_s = 0, view_node_s = 0, module_call_s = 0;
  // Per kernel launched: dispatch + autograd + launch.
  double forward_op_s() const { return forward_dispatch_s + launch_s; }
  double backward_op_s() const { return backward_dispatch_s + launch_s; }
};
HostCost eager_host_cost();

// Forward and backward kernels of one layer, from its kernel records, at the scenario's batch and
// size (ratio = scenario size / export size). Both lists are in execution order.
struct LayerKernels {
  std::vector<Kernel> forward, backward;
  double flops_fwd = 0, flops_bwd = 0;  // model FLOPs (GEMM work counted once, no padding)
  double transposes_s = 0;              // cuDNN's NCHW<->NHWC transposes inside the convolutions (both passes)
  PerElementTime per_element;           // its non-vectorized element-wise kernels (both passes)
};

struct KernelContext {
  DeviceRates gemm;             // linear / matmul operands
  DeviceRates conv;             // convolutions (cuDNN may use TF32 where cuBLAS does not)
  DeviceRates memory;           // element-wise / normalisation / reductions
  double batch_ratio = 1;       // scenario batch / export batch
  double size_ratio = 1;        // scenario seq_len or image_size / export's
  double act_bytes_factor = 1;  // activation bytes vs the export dtype (0.5 under fp16/bf16 autocast)
  std::string attention = "eager";
  double attention_fwd_efficiency = 0, attention_bwd_efficiency = 0;
  bool fuse_bias_gelu_dropout = false;
  bool channels_last = false;  // tensors in torch.channels_last (NHWC): cuDNN needs no layout transposes
  // Half precision is bfloat16 (not float16): batch norm runs PyTorch's own kernels, not cuDNN's
  // (Normalization.cpp _batch_norm_impl_index: use_cudnn requires input and weight not kBFloat16),
  // and softmax / log_softmax under autocast cast their input to float32 first (SoftMax.cpp serves
  // half_to_float for kHalf only).
  bool bfloat16 = false;
};

// Layers' kernels in forward order; the attention rewrite (SDPA) works across layer boundaries
// because eager attention's softmax/dropout may be separate modules.
std::vector<LayerKernels> layer_kernels(const config::ModelSpec& m, const KernelContext& ctx);

// Activation bytes each layer's forward keeps for its backward, per layer in forward order, at the
// context's batch, size and dtype: a linear/bmm keeps its input operand(s), a convolution its
// input, a memory-bound op its inputs or its result as its derivative needs (derivatives.yaml;
// ops whose backward needs neither keep nothing), or, where the export recorded it, what autograd
// saved (`sv`: each tensor once). Without `sv` a tensor kept by two ops counts twice unless it is a
// result saved again by the next op. With an SDPA backend: Q, K, V and the output, no score matrix.
std::vector<double> layer_saved_bytes(const config::ModelSpec& m, const KernelContext& ctx);
// Per layer, the activation bytes its first kernel record reads (a GEMM's A, a convolution's
// input, a memory-bound op's inputs) at the context's batch, size and activation dtype; -1 for a
// layer without records. A checkpointed block's first layer reads the block's input, which
// torch.utils.checkpoint keeps.
std::vector<double> layer_input_bytes(const config::ModelSpec& m, const KernelContext& ctx);

// The training loss on the model's output, which the export leaves out (it ends at the logits):
// torch.nn.functional.cross_entropy with class-index targets, as the training loops of image
// classifiers and language models call it on [rows, classes] logits. `loss` is training.loss:
// "auto" (cross-entropy when the model's last layer is a linear layer with at least 2 outputs, else
// none), "cross_entropy" (the same, an error without such a layer: `error` says why) or "none".
// Kernels per PyTorch's CUDA code (kernel_model.cpp names the functions); rows == 0: no loss.
LossKernels loss_kernels(const config::ModelSpec& m, const KernelContext& ctx, const std::string& loss,
                         std::string* error = nullptr);

// Rescaled dimension: dim x ratio^exp, rounded, at least 1.
double scaled_dim(double dim, int exp, double ratio);

}  // namespace ddpsim::gpu
