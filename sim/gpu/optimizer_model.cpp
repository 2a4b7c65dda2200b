#include "gpu/optimizer_model.hpp"

#include <algorithm>
#include <cmath>

namespace ddpsim::gpu {

// Per op: element reads + writes (an out-of-place op allocates and writes its result), and for
// foreach the number of tensor lists its multi_tensor_apply takes (in-place unary or scalar: 1,
// out-of-place unary or in-place binary: 2, addcmul_/addcdiv_: 3; aten/src/ATen/native/cuda/
// ForeachUnaryOp.cu, ForeachBinaryOpScalar.cu, ForeachBinaryOpList.cu, ForeachPointwiseOp.cu).
// grad.conj() of a real tensor is the tensor itself: addcmul_(grad, grad) reads it once from DRAM.
// The `step` counters are CPU tensors except with fused (torch/optim/adam.py __init__ state:
// on the parameter's device only when capturable or fused): their += 1 runs no GPU kernel then.
std::vector<OptimizerOp> optimizer_ops(const std::string& optimizer, const std::string& impl, bool sgd_momentum,
                                       bool torch_1_13) {
  std::vector<OptimizerOp> ops;
  if (optimizer == "sgd") {
    // torch/optim/sgd.py (v1.13.0 and 2.x alike) _single_tensor_sgd / _multi_tensor_sgd:
    // buf.mul_(momentum).add_(grad, alpha=1 - dampening); param.add_(buf, alpha=-lr).
    // 2.x _fused_sgd -> torch._fused_sgd_ (aten/src/ATen/native/cuda/FusedSgdKernel.cu): one pass
    // reading param, grad, momentum_buffer and writing param, momentum_buffer (the gradient is
    // written back only for a GradScaler's grad_scale).
    if (impl == "fused") {
      if (sgd_momentum) return {{"_fused_sgd_", 5, 3}};
      return {{"_fused_sgd_", 3, 2}};
    }
    if (sgd_momentum) {
      ops.push_back({"mul_(momentum_buffer, momentum)", 2, 1});
      ops.push_back({"add_(momentum_buffer, grad)", 3, 2});
    }
    ops.push_back({"add_(param, update, alpha=-lr)", 3, 2});
    return ops;
  }
  const bool adamw = optimizer == "adamw";
  if (impl == "fused") {
    // torch/optim/adam.py / adamw.py _fused_adam(w): torch._foreach_add_(device_state_steps, 1)
    // on the device's step counters, then torch._fused_adam(w)_ over (param, grad, exp_avg,
    // exp_avg_sq) (aten/src/ATen/native/cuda/fused_adam_utils.cuh: stores every list but the
    // gradient unless grad_scale is given): 4 reads, 3 writes.
    ops.push_back({"_foreach_add_(state_steps, 1)", 0, 1, false, true});
    ops.push_back({adamw ? "_fused_adamw_" : "_fused_adam_", 7, 4});
    return ops;
  }
  // AdamW's decoupled decay (adamw.py _single_tensor_adamw / _multi_tensor_adamw, 1.13 and 2.x):
  // param.mul_(1 - lr * weight_decay), weight_decay 1e-2 by default.
  if (adamw) ops.push_back({"mul_(param, 1 - lr * weight_decay)", 2, 1});
  const bool foreach = impl == "foreach";
  if (torch_1_13) {
    // v1.13.0 torch/optim/adam.py _single_tensor_adam / _multi_tensor_adam (not capturable):
    // exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1); exp_avg_sq.mul_(beta2).addcmul_(grad, grad);
    // denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps) (foreach: _foreach_sqrt,
    // _foreach_div_ by a scalar list, out-of-place _foreach_add); param.addcdiv_(exp_avg, denom).
    ops.push_back({"mul_(exp_avg, beta1)", 2, 1});
    ops.push_back({"add_(exp_avg, grad)", 3, 2});
  } else {
    // 2.x torch/optim/adam.py _single_tensor_adam / _multi_tensor_adam (not capturable):
    // exp_avg.lerp_(grad, 1 - beta1); exp_avg_sq.mul_(beta2).addcmul_(grad, grad);
    // denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps) (foreach: _foreach_sqrt,
    // _foreach_div_ and _foreach_add_ in place); param.addcdiv_(exp_avg, denom, value=-step_size).
    ops.push_back({"lerp_(exp_avg, grad, 1 - beta1)", 3, 2});
  }
  ops.push_back({"mul_(exp_avg_sq, beta2)", 2, 1});
  ops.push_back({"addcmul_(exp_avg_sq, grad, grad)", 3, 3});
  ops.push_back({"sqrt(exp_avg_sq)", 2, 2});
  if (foreach) {
    ops.push_back({"_foreach_div_(sqrt, bias_correction2_sqrt list)", 2, 1, true});
    if (torch_1_13)
      ops.push_back({"_foreach_add(sqrt, eps)", 2, 2});
    else
      ops.push_back({"_foreach_add_(sqrt, eps)", 2, 1});
    ops.push_back({"_foreach_addcdiv_(param, exp_avg, denom, step_size list)", 4, 3, true});
  } else {
    ops.push_back({"div(sqrt, bias_correction2_sqrt)", 2, 2});
    ops.push_back({"add_(denom, eps)", 2, 1});
    ops.push_back({"addcdiv_(param, exp_avg, denom)", 4, 3});
  }
  return ops;
}

double optimizer_transfers(const std::vector<OptimizerOp>& ops) {
  double transfers = 0;
  for (const auto& op : ops) transfers += op.transfers;
  return transfers;
}

namespace {

// aten/src/ATen/native/cuda/MultiTensorApply.cuh (v1.13.0 .. 2.5, kernel arguments up to 4 KB):
// kChunkSize, depth_to_max_tensors, depth_to_max_tensors_scalarlist, depth_to_max_blocks.
constexpr double kChunkSize = 65536;
constexpr int kMaxTensors[5] = {110, 64, 48, 36, 30};
constexpr int kMaxTensorsScalarList[5] = {96, 64, 48, 36, 30};
constexpr int kMaxBlocks = 320;

// multi_tensor_apply's launch loop: a launch when the tensors are full (after a tensor's last
// chunk) or the blocks are (one per chunk of 65536 elements); a tensor cut by a full launch
// carries on in the next.
double multi_tensor_launches(const OptimizerOp& op, const std::vector<double>& numels) {
  const int d = std::clamp(op.depth, 1, 5) - 1;
  const int max_tensors = op.scalar_list ? kMaxTensorsScalarList[d] : kMaxTensors[d];
  double launches = 0;
  int tensors = 0, blocks = 0;
  for (double n : numels) {
    if (n <= 0) continue;
    ++tensors;
    const auto chunks = op.step_counter ? 1L : static_cast<long>(std::ceil(n / kChunkSize));
    for (long c = 0; c < chunks; ++c) {
      ++blocks;
      const bool last = c == chunks - 1;
      if ((tensors == max_tensors && last) || blocks == kMaxBlocks) {
        ++launches;
        blocks = 0;
        tensors = last ? 0 : 1;
      }
    }
  }
  return launches + (blocks != 0 ? 1 : 0);
}

}  // namespace

double optimizer_launches(const std::vector<OptimizerOp>& ops, const std::string& impl,
                          const std::vector<double>& numels, const std::vector<config::DType>& dtypes) {
  if (impl == "for_loop") {
    const auto tensors =
        static_cast<double>(std::count_if(numels.begin(), numels.end(), [](double n) { return n > 0; }));
    return tensors * static_cast<double>(ops.size());
  }
  // Optimizer._group_tensors_by_device_and_dtype: one list per dtype, in first-seen order.
  std::vector<config::DType> order;
  for (auto t : dtypes)
    if (std::find(order.begin(), order.end(), t) == order.end()) order.push_back(t);
  double launches = 0;
  for (auto t : order) {
    std::vector<double> group;
    for (size_t i = 0; i < numels.size(); ++i)
      if (dtypes[i] == t) group.push_back(numels[i]);
    for (const auto& op : ops) launches += multi_tensor_launches(op, group);
  }
  return launches;
}

}  // namespace ddpsim::gpu
