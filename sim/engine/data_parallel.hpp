#pragma once
// torch.nn.DataParallel (training.wrapper "data_parallel"): one Python process drives the GPUs of
// one node. One step as PyTorch runs it (torch/nn/parallel/data_parallel.py, replicate.py,
// scatter_gather.py, parallel_apply.py, _functions.py, comm.py; torch/csrc/cuda/comm.cpp;
// aten/src/ATen/native/cuda/Copy.cu), every device's work on its current stream:
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
//     training.data_parallel.gil_share is spent holding the GIL, so the threads' dispatch is
//     serialized to that extent and the host becomes the bottleneck when kernels are short;
//  4. Gather: peer copies of the outputs j -> GPU 0 on GPU j's stream, serialized by the
//     two-way barrier on GPU 0's stream;
//  5. backward: Gather's backward scatters the output gradient from GPU 0; the autograd engine's
//     device threads (C++, no GIL) run each replica's backward in parallel; Broadcast's backward,
//     ReduceAddCoalesced, runs once every replica is done: per 10 MiB chunk (torch._utils.
//     _take_tensors: a chunk closes before it would exceed the size) a flatten on every GPU and
//     an NCCL reduce to GPU 0 (comm.reduce_add), else peer copies j -> 0 and an add on GPU 0;
//  6. the optimizer runs on GPU 0 alone.
// No communication overlaps the backward. The step starts with the host and the GPUs idle and the
// host dispatches the forward once the input copy is done (the DDP engine's convention), so one
// GPU under DataParallel (which calls the module directly) is the plain one-GPU step plus
// DataParallel's own host work. Peer copies and NCCL calls go through the network backend
// (network/backend.hpp): the flow backend gives every GPU a port (transmit and receive link) of
// the GPU pair's bandwidth (the cluster's ring hop inside a node) that concurrent copies would
// share; PyTorch's barriers serialize every copy DataParallel issues, so no two are in flight at
// once and the analytic backend's closed form (bytes / pair bandwidth) is exact. NCCL broadcasts
// and reduces take the collective model's ring broadcast time (latency + bytes / ring bandwidth)
// through Backend::run_phase, as DDP's buffer broadcast does.
#include <vector>

#include "config/specs.hpp"
#include "engine/simulation.hpp"
#include "plan/dp_builder.hpp"
#include "report/report.hpp"

namespace ddpsim::engine {

// The torch facts (host costs, coalescing, output size) live with the plan builder.
namespace dp_costs = plan::dp_costs;
using plan::dp_output_bytes_per_sample;
using plan::take_tensors_cpp;
using plan::take_tensors_py;

report::StepReport simulate_data_parallel(const config::Scenario& scenario, const RunOptions& options);

}  // namespace ddpsim::engine
