#pragma once
// The optimizer step, op by op, as torch.optim runs it (docs/scenarios.md `training.optimizer`).

#include <string>
#include <vector>

#include "config/specs.hpp"

namespace ddpsim::gpu {

// One GPU op of an optimizer step. for_loop: one kernel per (non-empty) parameter tensor; foreach
// and fused: multi-tensor-apply launches over `depth` tensor lists.
struct OptimizerOp {
  const char* name;           // the torch call
  double transfers = 0;       // element reads + writes per parameter element
  int depth = 1;              // tensor lists the multi-tensor-apply kernel takes
  bool scalar_list = false;   // a per-tensor scalar list (depth_to_max_tensors_scalarlist)
  bool step_counter = false;  // over the 1-element `step` tensors (no per-element traffic)
};

// The GPU ops of one step of `optimizer` ("sgd", "adam", "adamw") in `impl` ("for_loop",
// "foreach", "fused") of PyTorch 1.13 (`torch_1_13`) or 2.x; weight decay as the defaults
// (SGD, Adam 0; AdamW 1e-2), nesterov, maximize, amsgrad, capturable off.
std::vector<OptimizerOp> optimizer_ops(const std::string& optimizer, const std::string& impl, bool sgd_momentum,
                                       bool torch_1_13);

// Element reads + writes per parameter element of all the ops.
double optimizer_transfers(const std::vector<OptimizerOp>& ops);

// Kernel launches of the ops over parameter tensors of `numels` elements, grouped by `dtypes`
// (torch's _group_tensors_by_device_and_dtype), in order.
double optimizer_launches(const std::vector<OptimizerOp>& ops, const std::string& impl,
                          const std::vector<double>& numels, const std::vector<config::DType>& dtypes);

// The optimizer's host costs (seconds): each is its share of one eager op measured by
// scripts/measure_optimizer_host.py (torch 1.13 here, torch 2.11 on the H200 machine's CPU),
// times the per-kernel model's dispatch cost of an op, so that they run on the same assumed CPU
// as the layers' dispatch; the shares are named in optimizer_model.cpp.
struct OptimizerHost {
  double loop_per_op = 0;           // a for_loop op, its Python included (no launch)
  double list_per_tensor = 0;       // foreach: building the lists, per tensor (SGD, the gradient utilities)
  double adam_list_per_tensor = 0;  // foreach Adam / AdamW: the lists and each tensor's bias corrections
  double call = 0;                  // one foreach call (its first launch)
  double zero_per_tensor = 0;       // Optimizer.zero_grad, zero_() per gradient
  double none_per_tensor = 0;       // Optimizer.zero_grad, set to None per gradient
  double launch = 0;                // cudaLaunchKernel per kernel
};
// `op_s`: the per-kernel model's dispatch of an op, `launch_s` its launch (kernel_model.hpp HostCost).
OptimizerHost optimizer_host_costs(double op_s, double launch_s, bool torch_1_13);

// What the host does around the optimizer's GPU work, in launch order: `host_s` of host work
// (Python, dispatch, cudaLaunchKernel) before a launch that moves `bytes`, or host work alone
// (`kernel` false).
struct HostLaunch {
  double host_s = 0;
  double bytes = 0;
  bool kernel = true;
};

// optimizer.step() over tensors of `numels` elements of `dtypes` (empty ones skipped).
std::vector<HostLaunch> optimizer_host_launches(const std::vector<OptimizerOp>& ops, const std::string& optimizer,
                                                const std::string& impl, const std::vector<double>& numels,
                                                const std::vector<config::DType>& dtypes, const OptimizerHost& h);

// A foreach pass of one op (`depth` tensor lists, `transfers` per element) as the gradient
// utilities run it (GradScaler's _amp_foreach_non_finite_check_and_unscale_, clip_grad_norm_'s
// _foreach_norm / _foreach_mul_ in 2.x, zero_grad's _foreach_zero_): the Python that builds the
// lists, one call per dtype group and its multi-tensor-apply launches.
std::vector<HostLaunch> foreach_pass_launches(double transfers, int depth, const std::vector<double>& numels,
                                              const std::vector<config::DType>& dtypes, const OptimizerHost& h);

// The same pass one tensor at a time (torch 1.13's clip_grad_norm_ norms and scaling, zero_grad's
// per-gradient zero_()): `host_per_op` of host work and a launch (`launch_s`) per tensor.
std::vector<HostLaunch> per_tensor_launches(double transfers, const std::vector<double>& numels,
                                            const std::vector<config::DType>& dtypes, double host_per_op,
                                            double launch_s);

// The optimizer step on the CPU (training.fsdp.cpu_offload): GradScaler's unscale_ (FSDP's
// ShardedGradScaler._foreach_non_finite_check_and_unscale_cpu_: isinf, isnan and a multiply per
// gradient), clip_grad_norm_, optimizer.step() and zero_grad over float32 tensors of `numels`
// elements, one thread (torchrun sets OMP_NUM_THREADS=1 for each of several processes per node:
// torch/distributed/run.py). Per element and per tensor costs measured with torch 1.13 on this
// project's CPU by scripts/measure_cpu_optimizer.py (optimizer_model.cpp names the runs), plus the
// page faults of the temporaries Adam, AdamW and the unscale allocate each step, at
// kCpuPageFaultSeconds a page.
// A minor page fault on a fresh 4 KiB anonymous page, zeroing included: 1.9 us, from a published
// measurement on bare metal (besthub.dev, "Why Is the First memset So Slow?": the first memset of a
// fresh 1 GB buffer 0.66 s against 0.16 s once mapped, 262,144 faults; another public rdtsc
// measurement on a Core i7 gives a 1.0 us median, ddumbying.vercel.app "Page fault latency
// measurement"). This project's VM takes about 11 us (bench/results/cpu-optimizer-2026-12-07): the
// prediction's band reaches it (report/prediction.cpp cpu_optimizer_part).
inline constexpr double kCpuPageFaultSeconds = 1.9e-6;
inline constexpr double kCpuPageBytes = 4096;
inline constexpr double kCpuPageFaultSecondsHere = 11e-6;
struct CpuStep {
  double seconds = 0;
  std::string what;  // its parts in words
};
// `page_fault_s`: a fault's cost (0: the temporaries are reused and fault nothing).
CpuStep cpu_optimizer_step(const config::TrainingSettings& tr, const std::vector<double>& numels,
                           double page_fault_s = kCpuPageFaultSeconds);
// Another host's core is taken to run the measured per-tensor and per-element work within this
// factor of this project's VM (an assumption: no other CPU was measured).
inline constexpr double kCpuCoreSpread = 0.3;

}  // namespace ddpsim::gpu
