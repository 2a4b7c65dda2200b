#include "gpu/optimizer_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

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
  int tensors = 0;
  long blocks = 0;
  for (double n : numels) {
    if (n <= 0) continue;
    ++tensors;
    long chunks = op.step_counter ? 1L : static_cast<long>(std::ceil(n / kChunkSize));
    // The per-chunk loop in closed form: the blocks fill before the tensor's last chunk (a launch,
    // the tensor carried on), or its last chunk lands with room to spare (a launch if the tensors
    // or the blocks are full).
    while (chunks > 0) {
      const long room = kMaxBlocks - blocks;
      if (chunks > room) {
        chunks -= room;
        ++launches;
        blocks = 0;
        tensors = 1;
      } else {
        blocks += chunks;
        chunks = 0;
        if (tensors == max_tensors || blocks == kMaxBlocks) {
          ++launches;
          blocks = 0;
          tensors = 0;
        }
      }
    }
  }
  return launches + (blocks != 0 ? 1 : 0);
}

// multi_tensor_apply's launches of one op over one dtype group, each with its share of the bytes
// (a launch's blocks are chunks of 65536 elements; by elements is close enough for the host walk).
void foreach_op_launches(const OptimizerOp& op, const std::vector<double>& numels, double elem_size,
                         const OptimizerHost& h, std::vector<HostLaunch>& out) {
  double elems = 0;
  for (double n : numels) elems += std::max(0.0, n);
  const double launches = multi_tensor_launches(op, numels);
  if (launches <= 0) return;
  const double bytes = op.step_counter ? 0.0 : elems * op.transfers * elem_size;
  for (int i = 0; i < static_cast<int>(launches); ++i)
    out.push_back({(i == 0 ? h.call : 0.0) + h.launch, bytes / launches, true});
}

// Tensors grouped by dtype in first-seen order (Optimizer._group_tensors_by_device_and_dtype).
std::vector<std::pair<config::DType, std::vector<double>>> by_dtype(const std::vector<double>& numels,
                                                                    const std::vector<config::DType>& dtypes) {
  std::vector<std::pair<config::DType, std::vector<double>>> groups;
  for (size_t i = 0; i < numels.size(); ++i) {
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == dtypes[i]; });
    if (it == groups.end()) {
      groups.push_back({dtypes[i], {}});
      it = groups.end() - 1;
    }
    it->second.push_back(numels[i]);
  }
  return groups;
}

double count_tensors(const std::vector<double>& numels) {
  return static_cast<double>(std::count_if(numels.begin(), numels.end(), [](double n) { return n > 0; }));
}

}  // namespace

// The optimizer's host costs as shares of one eager op (scripts/measure_optimizer_host.py, which
// times measure_dispatch.py's `mul` chain in the same run; bench/results/optimizer-host-shares-2026-12-04):
// - torch 1.13, three runs on this project's 2-vCPU AMD EPYC machine (reference op 3.0-3.2 us),
//   medians: for_loop per op (the slope per tensor over the tensor's GPU ops, its Python included)
//   SGD 0.499, Adam 0.772, AdamW 0.756, the median of the nine 0.756; foreach with every
//   torch._foreach_* a no-op (what a CUDA run pays besides the calls) SGD 0.130 per tensor, Adam
//   0.472 and AdamW 0.476 (their per-tensor bias corrections: `_get_value(step)` on the CPU
//   counters), 0.474 taken; one foreach call on a one-tensor list 0.448 (median of three calls);
//   zero_grad per gradient 0.154 (zero_()), 0.084 (set to None).
// - torch 2.11 on the H200 machine's CPU (bench/results/device-h200-2026-12-04/
//   optimizer_host-torch2.11.json over dispatch.txt's mul chain on that CPU, 7.97 us): for_loop
//   per op SGD 0.548, Adam 0.559, AdamW 1.051 (0.559 taken, the median); foreach lists SGD 0.261,
//   Adam 1.084, AdamW 1.131 (1.107); one call 0.724; zero_grad 0.254 (zero_()), 0.151 (None).
// (Before 2026-12-04 these were absolute torch 1.13 seconds of a faster CPU than the per-kernel
// model's dispatch: 2.2 us per op, 0.5 / 1.4 us per tensor, 2 us per call, 0.48 / 0.26 us.)
OptimizerHost optimizer_host_costs(double op_s, double launch_s, bool torch_1_13) {
  OptimizerHost h;
  h.loop_per_op = (torch_1_13 ? 0.756 : 0.559) * op_s;
  h.list_per_tensor = (torch_1_13 ? 0.130 : 0.261) * op_s;
  h.adam_list_per_tensor = (torch_1_13 ? 0.474 : 1.107) * op_s;
  h.call = (torch_1_13 ? 0.448 : 0.724) * op_s;
  h.zero_per_tensor = (torch_1_13 ? 0.154 : 0.254) * op_s;
  h.none_per_tensor = (torch_1_13 ? 0.084 : 0.151) * op_s;
  h.launch = launch_s;
  return h;
}

std::vector<HostLaunch> optimizer_host_launches(const std::vector<OptimizerOp>& ops, const std::string& optimizer,
                                                const std::string& impl, const std::vector<double>& numels,
                                                const std::vector<config::DType>& dtypes, const OptimizerHost& h) {
  std::vector<HostLaunch> out;
  if (impl == "for_loop") {
    // _single_tensor_*: a Python iteration per tensor, each op dispatched and launched on its own.
    for (size_t i = 0; i < numels.size(); ++i) {
      if (numels[i] <= 0) continue;
      for (const auto& op : ops)
        out.push_back({h.loop_per_op + h.launch, numels[i] * op.transfers * config::dtype_size(dtypes[i]), true});
    }
    return out;
  }
  // _multi_tensor_* / _fused_*: the per-tensor Python first (list building; Adam's and AdamW's
  // foreach also compute each tensor's bias corrections from its CPU step counter), then each op
  // over each dtype group.
  const bool adam_foreach = impl == "foreach" && (optimizer == "adam" || optimizer == "adamw");
  out.push_back({count_tensors(numels) * (adam_foreach ? h.adam_list_per_tensor : h.list_per_tensor), 0, false});
  for (const auto& [dtype, group] : by_dtype(numels, dtypes))
    for (const auto& op : ops) foreach_op_launches(op, group, config::dtype_size(dtype), h, out);
  return out;
}

std::vector<HostLaunch> foreach_pass_launches(double transfers, int depth, const std::vector<double>& numels,
                                              const std::vector<config::DType>& dtypes, const OptimizerHost& h) {
  std::vector<HostLaunch> out;
  out.push_back({count_tensors(numels) * h.list_per_tensor, 0, false});
  const OptimizerOp op{"foreach pass", transfers, depth};
  for (const auto& [dtype, group] : by_dtype(numels, dtypes))
    foreach_op_launches(op, group, config::dtype_size(dtype), h, out);
  return out;
}

std::vector<HostLaunch> per_tensor_launches(double transfers, const std::vector<double>& numels,
                                            const std::vector<config::DType>& dtypes, double host_per_op,
                                            double launch_s) {
  std::vector<HostLaunch> out;
  for (size_t i = 0; i < numels.size(); ++i)
    if (numels[i] > 0)
      out.push_back({host_per_op + launch_s, numels[i] * transfers * config::dtype_size(dtypes[i]), true});
  return out;
}

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

namespace {

// torch 1.13 on the CPU, one thread, float32 (scripts/measure_cpu_optimizer.py, three runs in
// bench/results/cpu-optimizer-2026-12-07 on this project's 2-core AMD EPYC VM): per tensor (us, the
// median of the runs' fits), per element without page faults (ns: the median of the cells that
// faulted nothing, and of fresh processes whose glibc keeps its heap), and the bytes per element
// that are fresh pages each step under glibc's defaults. Adam and AdamW allocate two temporaries the tensor's size
// (`exp_avg_sq.sqrt() / bias_correction2_sqrt`; foreach: `_foreach_sqrt`, `_foreach_div_`,
// `_foreach_add`): in the runs every tensor of 8M elements or more (temporaries above glibc's
// largest mmap threshold, 32 MiB) faulted 8 bytes an element each step, and smaller ones did too
// in fresh processes (the heap's top, trimmed after each step, faults again); they are taken to
// fault. The unscale's isinf takes abs() first, a float temporary (4 bytes an element faulted in
// the runs; its two bool results stayed below the threshold).
struct CpuRate {
  double us_per_tensor = 0, ns_per_element = 0, faulted_bytes_per_element = 0;
};
constexpr CpuRate kCpuAdamW{19.3, 1.86, 8}, kCpuAdamWForeach{15.8, 1.98, 8}, kCpuAdam{17.7, 1.63, 8},
    kCpuAdamForeach{14.2, 1.94, 8}, kCpuSgdMomentum{4.55, 0.53, 0}, kCpuSgdMomentumForeach{3.3, 0.53, 0},
    kCpuSgd{1.38, 0.21, 0}, kCpuUnscale{10.4, 2.33, 4}, kCpuClip{6.3, 0.28, 0}, kCpuZeroGradNone{0.09, 0, 0},
    kCpuZeroGradZero{0.55, 0.08, 0};

double cpu_pass(const CpuRate& r, const std::vector<double>& numels, double fault_s) {
  double s = 0;
  for (double n : numels)
    if (n > 0)
      s += r.us_per_tensor * 1e-6 +
           n * (r.ns_per_element * 1e-9 + r.faulted_bytes_per_element * fault_s / kCpuPageBytes);
  return s;
}

}  // namespace

CpuStep cpu_optimizer_step(const config::TrainingSettings& tr, const std::vector<double>& numels, double fault_s) {
  CpuStep c;
  const bool foreach = tr.optimizer_impl == "foreach";
  const bool adamw = tr.optimizer == "adamw", adam = tr.optimizer == "adam";
  const CpuRate opt = adamw             ? (foreach ? kCpuAdamWForeach : kCpuAdamW)
                      : adam            ? (foreach ? kCpuAdamForeach : kCpuAdam)
                      : tr.sgd_momentum ? (foreach ? kCpuSgdMomentumForeach : kCpuSgdMomentum)
                                        : kCpuSgd;
  std::string parts;
  if (tr.compute_dtype == config::ComputeDtype::FLOAT16 && tr.grad_scaler) {
    c.seconds += cpu_pass(kCpuUnscale, numels, fault_s);
    parts += "unscale_, ";
  }
  if (tr.clip_grad_norm) {
    c.seconds += cpu_pass(kCpuClip, numels, fault_s);
    parts += "clip_grad_norm_, ";
  }
  c.seconds += cpu_pass(opt, numels, fault_s);
  c.seconds += cpu_pass(tr.zero_grad_set_to_none ? kCpuZeroGradNone : kCpuZeroGradZero, numels, fault_s);
  double elements = 0;
  for (double n : numels) elements += std::max(0.0, n);
  char buf[64];
  if (elements >= 1e6)
    std::snprintf(buf, sizeof buf, "%.4gM", elements / 1e6);
  else
    std::snprintf(buf, sizeof buf, "%.0f", elements);
  c.what = parts + tr.optimizer + " " + tr.optimizer_impl + " and zero_grad over " + std::to_string(numels.size()) +
           " tensors, " + buf + " elements, one thread";
  return c;
}

}  // namespace ddpsim::gpu
