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

}  // namespace ddpsim::gpu
