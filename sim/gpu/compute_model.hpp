#pragma once
// Per-kernel compute times for one rank: measured times from the profile when present (scaled
// linearly with batch), else a roofline estimate max(FLOPs / (peak * eff), bytes / (HBM * eff)).
// Every kernel keeps its roofline shape so that the contention model knows what it is bound by.
#include <algorithm>
#include <string>
#include <vector>

#include "config/specs.hpp"
#include "gpu/contention.hpp"

namespace ddpsim::gpu {

struct Kernel {
  double seconds = 0;  // alone
  KernelShape shape;   // compute and memory components of `seconds`
};

// PyTorch's non-vectorized element-wise kernels (gpu/kernel_model.cpp: strided operands, casts to
// float32): their time, and how much of it exceeds streaming their bytes.
struct PerElementTime {
  double seconds = 0, over_bytes_s = 0;
  void add(const Kernel& k) {
    seconds += k.seconds;
    over_bytes_s += std::max(0.0, k.seconds - k.shape.memory_s - k.shape.overhead_s);
  }
  void add(const PerElementTime& o) {
    seconds += o.seconds;
    over_bytes_s += o.over_bytes_s;
  }
};

// The training loss on the logits (gpu/kernel_model.hpp loss_kernels; rows == 0: none).
struct LossKernels {
  std::vector<Kernel> forward, backward;  // execution order (backward: the loss's first)
  double rows = 0, classes = 0;           // the logits, at the scenario's batch and size
  double saved_bytes = 0;                 // log_softmax's float32 result, kept for its backward
  double seconds() const;
};

// One kernel class of a transferred profile: "compute-bound" (kernels whose math term exceeds
// their memory term: GEMMs, convolutions, fused attention), "memory-bound" (the rest) and "fixed"
// (per-kernel fixed cost and the GPU's wait for the host's dispatch).
struct TransferClass {
  std::string name;
  double measured_s = 0;     // measured time on GPU A attributed to the class (one micro-step)
  double transferred_s = 0;  // the same kernels' time on GPU B
  double factor() const { return measured_s > 0 ? transferred_s / measured_s : 1.0; }
};

struct ComputeProfile {
  std::vector<Kernel> forward;   // per layer, forward order
  std::vector<Kernel> backward;  // per layer (indexed like `forward`)
  std::vector<Kernel> copy_in;   // per parameter: the DDP hook's grad -> bucket copy (div by world size)
  std::vector<Kernel> copy_out;  // per parameter: bucket -> grad copy in finalize_backward
  // Per module buffer: DDP's buffer sync copies it back out of its flattened broadcast bucket
  // (c10d comm.cpp BroadcastWork::finish, one copy_ per buffer); a read and a write of its bytes.
  std::vector<Kernel> buffer_copy;
  Kernel h2d;           // the input batch's host-to-device copy
  Kernel grad_unscale;  // GradScaler.unscale_ (float16 autocast only)
  Kernel clip;          // clip_grad_norm_ (when enabled)
  Kernel optimizer;
  Kernel zero_grad;  // optimizer.zero_grad(set_to_none=False): writes every gradient
  // The GPU's wait for the host while it issues unscale_, clip, the step and zero_grad (eager, a
  // replicated optimizer: not with CUDA graphs, FSDP or ZeRO): their host work walked against their kernels
  // (gpu/optimizer_model.hpp), after GradScaler's found_inf `.item()` when it syncs (`optimizer_sync`), else from the
  // host's lead at the backward's end (`host_lead_s`; unknown without the per-kernel model: nothing exposed).
  Kernel optimizer_host_wait;
  double optimizer_host_s = 0;  // host seconds of those four (0 with CUDA graphs)
  bool optimizer_sync = false;  // GradScaler.step's `.item()` waits for the GPU before the step
  double host_lead_s = -1;      // host ahead of the GPU at the backward's end (-1: unknown)
  double forward_total = 0, backward_total = 0;
  int measured_layers = 0;  // layers timed from measurements rather than the roofline
  std::string compute_dtype;
  double peak_flops = 0;  // the peak used for the roofline
  bool autocast = false;
  double compute_scale = 1.0;  // applied to match training.measured_single_gpu_step (1 = none)
  // Per micro-step: every kernel of one forward + backward (+ the optimizer on the last micro-step)
  // is multiplied by compute_scale; the input copy is not.
  std::string compute_scale_per = "micro-step";
  // Where the times come from: "measured on <gpu>", "transferred from <gpu A> (per-kernel
  // scaling)", "estimated (per-kernel model)" or "estimated (roofline: no kernel records)".
  std::string provenance;
  double model_flops = 0;  // forward + backward FLOPs of one micro-step (MFU's numerator)
  double mfu_peak = 0;     // the peak MFU is taken against
  std::string mfu_peak_dtype;
  int seq_len = 0, image_size = 0;  // the sizes the layers are evaluated at (0: not applicable)
  std::string attention = "eager";
  double host_forward_s = 0, host_backward_s = 0;  // eager host dispatch time (0 with CUDA graphs)
  // cuDNN's NCHW<->NHWC transposes inside tensor-core convolutions of one micro-step (forward and
  // backward), per-kernel model only: what training.memory_format "channels_last" would remove.
  double conv_transposes_s = 0;
  // PyTorch's non-vectorized element-wise kernels of one micro-step, per-kernel model only (the
  // layers', gpu::LayerKernels::per_element, and the weights' gradient casts; the loss's in `loss`).
  PerElementTime per_element;
  // The training loss on the logits (training.loss; per-kernel model only; rows 0: none), one
  // replica's. Its kernels are also the last of the last layer's forward (and forward_ops) and the
  // first of its backward; DataParallel runs them once, on GPU 0, over the gathered batch instead.
  LossKernels loss;
  double gpu_idle_s = 0;  // GPU time spent waiting for the host (launch-bound share), in the kernels
  int kernels_forward = 0, kernels_backward = 0;
  // "Measured there, predicted here" (provenance "transferred from ..."): the measured times of GPU
  // A (transfer_from) scaled per kernel to the cluster's GPU (transfer_to). Per kernel class, the
  // measured time attributed to the class on A and what it becomes on B (empty: no transfer).
  std::string transfer_from, transfer_from_device, transfer_to;
  std::vector<TransferClass> transfer;
  // Per layer, the GPU seconds of each kernel before the host's dispatch is folded in (forward:
  // the ops that cost host time; backward: every kernel), and the host seconds per op (0 without
  // the per-kernel model or with CUDA graphs). engine/data_parallel replays these with its own
  // host threads; the DDP engine uses the folded per-layer times above.
  std::vector<std::vector<double>> forward_ops, backward_ops;
  double host_forward_op_s = 0, host_backward_op_s = 0;
  // Per layer, host seconds before its forward / backward kernels that launch nothing (views,
  // autograd view nodes, module calls: LayerSpec::host_views ...); included in host_*_s above.
  // Empty where forward_ops is.
  std::vector<double> host_only_forward, host_only_backward;
};

// Achieved fraction of peak FLOP/s for a layer type: the scenario's per-type value, else the
// scenario's global value if given, else the GPU file's value for the compute dtype, else the
// default for the type.
double flops_efficiency_for(const config::Scenario& scenario, config::LayerType type);

// Roofline time of one kernel of `flops` and `bytes`.
Kernel roofline_kernel(double flops, double bytes, double peak_flops, double hbm_bandwidth,
                       const config::ComputeSettings& s);
double roofline_time(double flops, double bytes, double peak_flops, double hbm_bandwidth,
                     const config::ComputeSettings& s);

ComputeProfile build_compute_profile(const config::Scenario& scenario);

// One GPU, no DDP: input copy + forward + backward + unscale/clip + optimizer + zero_grad.
double single_gpu_step(const ComputeProfile& p);

// MFU of a step of `step_s` seconds holding `micro_steps` micro-steps: model FLOPs / (time x peak).
double mfu(const ComputeProfile& p, double step_s, int micro_steps = 1);

// Bytes an optimizer step moves per parameter element of `elem_size` bytes: the element reads and
// writes of every op of `impl` in PyTorch 1.13 (`torch_1_13`) or 2.x (gpu/optimizer_model.hpp).
double optimizer_bytes_per_element(const std::string& optimizer, int elem_size, bool sgd_momentum = true,
                                   const std::string& impl = "foreach", bool torch_1_13 = false);
// The optimizer step over the parameters `params` (indices into the model's; frozen ones are
// skipped), in ddp.pytorch_version's torch: the memory-bound passes of its ops over their elements
// plus one kernel overhead per launch (per tensor for for_loop, per multi-tensor-apply launch
// for foreach and fused)
// (ZeroRedundancyOptimizer steps a shard or a DDP bucket with it). Not scaled by compute_scale.
Kernel optimizer_kernel(const config::Scenario& scenario, const std::vector<int>& params, double peak_flops);
// The math mode cuDNN's convolutions run in: PyTorch's defaults (torch.backends.cudnn.allow_tf32
// on) make float32 convolutions TF32 where the GPU has it; otherwise the compute dtype's.
std::string conv_math_mode(const config::GpuSpec& gpu, config::ComputeDtype dtype);
// Bytes of one input sample (from the model's export input unless the scenario gives it).
double input_bytes_per_sample(const config::Scenario& scenario);

}  // namespace ddpsim::gpu
