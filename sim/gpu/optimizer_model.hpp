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

// What the host does around the optimizer's GPU work, in launch order: `host_s` of host work
// (Python, dispatch, cudaLaunchKernel) before a launch that moves `bytes`, or host work alone
// (`kernel` false). The constants are measured on this repository's CPU (torch 1.13) with
// scripts/measure_optimizer_host.py; each is named in optimizer_model.cpp.
struct HostLaunch {
  double host_s = 0;
  double bytes = 0;
  bool kernel = true;
};

// optimizer.step() over tensors of `numels` elements of `dtypes` (empty ones skipped).
std::vector<HostLaunch> optimizer_host_launches(const std::vector<OptimizerOp>& ops, const std::string& optimizer,
                                                const std::string& impl, const std::vector<double>& numels,
                                                const std::vector<config::DType>& dtypes);

// A foreach pass of one op (`depth` tensor lists, `transfers` per element) as the gradient
// utilities run it (GradScaler's _amp_foreach_non_finite_check_and_unscale_, clip_grad_norm_'s
// _foreach_norm / _foreach_mul_ in 2.x, zero_grad's _foreach_zero_): the Python that builds the
// lists, one call per dtype group and its multi-tensor-apply launches.
std::vector<HostLaunch> foreach_pass_launches(double transfers, int depth, const std::vector<double>& numels,
                                              const std::vector<config::DType>& dtypes);

// The same pass one tensor at a time (torch 1.13's clip_grad_norm_ norms and scaling, zero_grad's
// per-gradient zero_()): `host_per_op` of host work and a launch per tensor.
std::vector<HostLaunch> per_tensor_launches(double transfers, const std::vector<double>& numels,
                                            const std::vector<config::DType>& dtypes, double host_per_op);

// Host constants (seconds), measured here: see optimizer_model.cpp.
double optimizer_host_per_loop_op();                 // a for_loop op, its Python included
double zero_grad_host_per_tensor(bool set_to_none);  // Optimizer.zero_grad's loop, per gradient

}  // namespace ddpsim::gpu
