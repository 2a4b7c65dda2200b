#pragma once
// The step plan of torch.nn.DataParallel (training.wrapper "data_parallel"; plan/step_plan.hpp):
// one Python process drives the G GPUs of one node. One step as PyTorch runs it
// (torch/nn/parallel/data_parallel.py, replicate.py, scatter_gather.py, parallel_apply.py,
// _functions.py, comm.py; torch/csrc/cuda/comm.cpp; aten/src/ATen/native/cuda/Copy.cu), every
// device's work on its current stream:
//  1. the input batch (G x batch_size samples) is copied to GPU 0; DataParallel.forward checks
//     every parameter's and buffer's device, then Scatter sends chunk j to GPU j: a peer copy
//     on GPU 0's stream (Copy.cu: the copy runs on the source's current stream, with a two-way
//     barrier between the two streams), one after the other;
//  2. replicate: broadcast_coalesced of the parameters, then of the buffers, from GPU 0 to all G
//     GPUs in chunks of 10 MiB (comm.py buffer_size=10485760; utils::take_tensors per dtype, a
//     chunk closes once it reaches the size), each chunk flattened on GPU 0 (a copy when it holds
//     more than one tensor) and sent by an NCCL broadcast (comm.cpp, when NCCL is available),
//     else by peer copies GPU 0 -> j; then Python builds G module replicas;
//  3. parallel_apply: one Python thread per GPU runs its replica's forward; every op's host cost
//     is the per-kernel model's eager dispatch cost (gpu/compute_model), of which
//     training.data_parallel.gil_share is spent holding the GIL (the plan's process lock), so the
//     threads' dispatch is serialized to that extent;
//  4. Gather: peer copies of the outputs j -> GPU 0 on GPU j's stream, serialized by the
//     two-way barrier on GPU 0's stream;
//  5. backward: Gather's backward scatters the output gradient from GPU 0; the autograd engine's
//     device threads (C++, no GIL) run each replica's backward in parallel; Broadcast's backward,
//     ReduceAddCoalesced, runs once every replica is done: per 10 MiB chunk (torch._utils.
//     _take_tensors: a chunk closes before it would exceed the size) a flatten on every GPU and
//     an NCCL reduce to GPU 0 (comm.reduce_add), else peer copies j -> 0 and an add on GPU 0;
//  6. the optimizer runs on GPU 0 alone.
// With one GPU DataParallel calls the module directly: the plain one-GPU step plus its own host
// work.
//
// Streams: 0 the main thread; per GPU i, 1 + 3i its parallel_apply thread, 2 + 3i its autograd
// device thread, 3 + 3i its current stream. A task a host thread pushes to a GPU stream follows
// the host thread's task before it (`after`); the phases are DpPhase.
#include <vector>

#include "config/specs.hpp"
#include "gpu/kernel_model.hpp"
#include "plan/step_plan.hpp"
#include "report/report.hpp"

namespace ddpsim::plan {

// DataParallel's own host work, measured on this repository's CPU with scripts/measure_dp_host.py
// (torch 1.13) relative to the per-op cost of scripts/measure_dispatch.py in the same run, and
// scaled to that script's quiet-machine figure (6.9 us, gpu/kernel_model.cpp): the machine was
// loaded (39.2 us per op in that run); ratios: replicate 1.98 op per module and 0.68 op per
// parameter or buffer tensor per replica, a thread's start + join 19.7 ops, the device check
// 0.066 op per tensor. The model's modules are counted as its layers. Each ATen call DataParallel
// makes itself (chunk, .to, flatten, an NCCL call, a Python Function's apply) costs one eager op
// (gpu::eager_host_cost().forward_op_s(): 6.9 us + the 2 us launch).
namespace dp_costs {
constexpr double kQuietOp = gpu::kHostForwardOp;
constexpr double kReplicatePerModule = 1.98 * kQuietOp;
constexpr double kReplicatePerTensor = 0.68 * kQuietOp;
constexpr double kThreadStartJoin = 19.7 * kQuietOp;
constexpr double kDeviceCheckPerTensor = 0.066 * kQuietOp;
// comm.py broadcast_coalesced / reduce_add_coalesced default buffer_size.
constexpr double kCoalesceBytes = 10485760.0;
}  // namespace dp_costs

enum DpPhase { DP_SCATTER, DP_REPLICATE, DP_FORWARD, DP_GATHER, DP_BACKWARD, DP_REDUCE, DP_OPTIMIZER, DP_PHASES };

inline int dp_main_stream() { return 0; }
inline int dp_apply_stream(int gpu) { return 1 + 3 * gpu; }
inline int dp_autograd_stream(int gpu) { return 2 + 3 * gpu; }
inline int dp_gpu_stream(int gpu) { return 3 + 3 * gpu; }

// What the builder needs besides the scenario and the profile (dp_inputs computes them).
struct DpInputs {
  double op_s = 0;          // one eager ATen call DataParallel makes itself (gpu::eager_host_cost().forward_op_s())
  double output_bytes = 0;  // the whole output Gather copies (0 with one GPU)
  double input_bytes = 0;   // the whole input batch (G x batch_size samples)
  double h2d_s = 0;         // the input's host-to-device copy: all of it to GPU 0, or each chunk to its GPU
  bool input_on_cpu = false;
  double peer_bandwidth = 0;  // bytes/s of a peer copy between two GPUs
};
DpInputs dp_inputs(const config::Scenario& scenario, const gpu::ComputeProfile& profile);

// What the report says of DataParallel that the run does not decide: bytes, coalesced calls, the
// settings, each GPU's port bandwidth and host-link bytes (report/metrics adds the run's figures).
report::DataParallelReport dp_report_facts(const config::Scenario& scenario, const DpInputs& in);

// `profile`: forward_ops / backward_ops per layer, the host cost per op and the optimizer kernels.
Plan build_data_parallel(const config::Scenario& scenario, const gpu::ComputeProfile& profile, const DpInputs& in);

// The chunks broadcast_coalesced builds (torch/csrc/utils/tensor_flatten.cpp take_tensors: per
// dtype, a chunk is closed once its size reaches `limit`; leftovers last, by dtype) and those
// reduce_add_coalesced builds (torch/_utils.py _take_tensors: per dtype, a chunk is closed before
// a tensor that would take it past `limit`; leftovers last). `bytes[i]`, `type[i]` per tensor;
// returns tensor indices per chunk.
std::vector<std::vector<int>> take_tensors_cpp(const std::vector<double>& bytes, const std::vector<int>& type,
                                               double limit);
std::vector<std::vector<int>> take_tensors_py(const std::vector<double>& bytes, const std::vector<int>& type,
                                              double limit);

// Bytes of one sample's model output (what Gather copies to GPU 0): the setting, else the last
// layer's last kernel record (GEMM m x n, convolution o x p x q, memory-bound bytes written) at the
// export batch, halved under fp16/bf16 autocast. Throws ConfigError when neither is known.
double dp_output_bytes_per_sample(const config::Scenario& scenario);

}  // namespace ddpsim::plan
