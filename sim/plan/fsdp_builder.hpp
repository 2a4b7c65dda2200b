#pragma once
// The step plan of FullyShardedDataParallel (FSDP1, torch/distributed/fsdp/) and fully_shard
// (FSDP2, torch/distributed/_composable/fsdp/), with activation checkpointing; and the pieces the
// memory model shares with it (units, blocks, shard sizes).
//
// Units (the wrapping): the model's blocks are its layers grouped by the first numbered component
// of their names ("layers.3.attention.wq" -> block "layers.3"); training.fsdp.wrap "block" makes
// each block a unit (transformer_auto_wrap_policy), "every_k_blocks" k consecutive blocks, "root"
// one unit of everything. The root unit holds the parameters outside every block (embeddings,
// final norm, output layer); it is all-gathered first and kept unsharded until its backward
// (FSDP1 _runtime_utils.py _post_forward_reshard: the root is not freed after forward; FSDP2
// _fsdp_state.py _lazy_init: the root's post_forward_mesh_info is None).
//
// One rank's program per micro-step (the representative rank), streams:
//   0 compute; 1 the shard group's NCCL stream (all-gathers and reduce-scatters, or NO_SHARD's
//   all-reduces); 2 (HYBRID_SHARD) the replica group's NCCL stream (the all-reduce of each
//   reduce-scattered shard across nodes).
// All collectives of one process group run on one NCCL stream in issue order: torch/distributed/
// fsdp/api.py BackwardPrefetch's note, "For a single process group using NCCL backend, any
// collectives, even if issued from different streams, contend for the same per-device NCCL
// stream". The CPU is taken to run ahead of the GPU (kernels are asynchronous), so a collective
// is issued as soon as its dependencies and FSDP's rate limiter allow.
//
// Forward, per unit u in forward order: wait for AG(u) (param_dtype bytes, padded shard per rank);
// FSDP2: the copy-out kernel (foreach_all_gather_copy_out) on the compute stream; u's forward
// layers; then u is resharded (freed) unless kept (root, SHARD_GRAD_OP, NO_SHARD,
// reshard_after_forward false).
//   FSDP2: u's pre-forward issues AG(u) unless prefetched, then wait_for_unshard makes the
//   all-gather streams wait for the copy-out of the unit gathered before u (comm_ctx.
//   all_gather_state) and copies u out; the copy-in stream waits for nothing else
//   (_fsdp_collectives.py foreach_all_gather), so AG(u+1) waits for the copy-out of u-1: two units
//   ahead of the compute. training.fsdp.num_to_forward_prefetch N (FSDPState._pre_forward's
//   explicit prefetch, after u's own wait; not from the root) issues AG(u+1..u+N) there: N + 1 ahead.
//   FSDP1: with limit_all_gathers, _runtime_utils.py _unshard dequeues a free event from
//   _FreeEventQueue (_limits.py, at most 2 in flight) and synchronizes on it: AG(k) starts after
//   the free of the unit two frees back (three with forward_prefetch, which issues AG(k+1) in
//   _pre_forward of k via _prefetch_handle). Without the limiter every all-gather is issued at once.
// Backward, per unit in reverse order: its pre-backward hook unshards it if it was freed
// (_pre_backward_hook), FSDP2 copies out, and prefetches the next unit (FSDP1 BACKWARD_PRE / FSDP2
// _backward_prefetch, or num_to_backward_prefetch units: in the pre-backward hook; BACKWARD_POST:
// in _post_backward_hook after the unit's gradient computation); a checkpointed block recomputes
// its forward; the layers'
// backward; then the post-backward hook issues the reduce-scatter of the unit's gradients
// (reduce_dtype bytes): FSDP1 _reduce_grad (pre-divide, reduce_scatter_tensor, post-divide;
// HYBRID_SHARD: all_reduce on _inter_node_pg), FSDP2 foreach_reduce (_fsdp_collectives.py:
// foreach_reduce_scatter_copy_in, reduce_scatter_tensor, all_reduce for HSDP, the divide and
// copy-out; post_backward first makes the compute stream wait for the previous unit's
// reduce-scatter, comm_ctx.reduce_scatter_state, and the copy-in runs on the compute stream).
// FSDP1: a reduce-scatter waits for the previous all-reduce, both on the one post-backward CUDA
// stream; FSDP2 runs the all-reduces on their own stream (FSDPCommContext.all_reduce_stream),
// beside the next reduce-scatter. The final callback waits for every reduction, then
// the optimizer steps the local shard (1/shard group size of the parameters).
#include <string>
#include <vector>

#include "ddp/step_plan.hpp"
#include "plan/step_plan.hpp"
#include "report/report.hpp"

namespace ddpsim::plan {

// A block: consecutive layers sharing the first numbered component of their names.
struct Block {
  std::string name;
  std::vector<int> layers;  // forward order
};
// The model's blocks in forward order; layers outside every block are not listed.
std::vector<Block> model_blocks(const config::ModelSpec& m);
// Per block, whether activation checkpointing recomputes it (training.activation_checkpointing).
// selective_block: the k-th, 2k-th, ... blocks counting from 1.
std::vector<bool> checkpointed_blocks(const config::TrainingSettings& tr, size_t blocks);

// Per layer, the kernel a checkpointed block reruns before that layer's backward (the block's last
// layer; zero elsewhere): used by the DDP and FSDP plans alike.
std::vector<gpu::Kernel> recompute_kernels(const config::Scenario& sc, const gpu::ComputeProfile& profile);

struct FsdpUnit {
  std::string name;
  bool root = false;
  std::vector<int> layers;  // forward order
  std::vector<int> params;  // indices into the model's parameters
  double numel = 0;         // every parameter element (FSDP flattens frozen ones too)
  double grad_numel = 0;    // trainable elements
  // Per rank after padding (FSDP1 flat_param.py: the flat parameter padded to a multiple of the
  // shard group size; FSDP2 _fsdp_param.py: each parameter's dim 0 padded, _get_dim0_padded_size).
  double shard_numel = 0, grad_shard_numel = 0;
  double param_elem = 4, grad_elem = 4;  // bytes per element all-gathered (param_dtype) and reduced (reduce_dtype)
  bool kept = false;                     // not resharded after forward
  // What the collectives carry: the all-gather's bytes per rank in, the reduce-scatter's bytes per
  // rank in (the whole padded gradient), the HSDP all-reduce's (one shard).
  double allgather_bytes() const { return shard_numel * param_elem; }
  double reduce_scatter_bytes(int shard) const { return grad_shard_numel * shard * grad_elem; }
  double shard_grad_bytes() const { return grad_shard_numel * grad_elem; }
};

struct FsdpGroups {
  int shard = 1;    // ranks a unit's parameters are sharded over
  int replica = 1;  // HYBRID_SHARD: replicas of each shard (nodes)
  // FSDP2 reshard_after_forward N with 1 < N < shard: the post-forward group's size (the backward
  // all-gathers over it); 0 otherwise (N = 1 is false, N = shard is true).
  int post_forward = 0;
};
FsdpGroups fsdp_groups(const config::Scenario& sc);

// FSDP2's shard of one parameter on each of `shard` ranks, in elements: dim 0 padded to a multiple
// of the shard size (_fsdp_common.py _get_dim0_padded_size).
double dim0_shard_numel(const config::ParamSpec& p, int shard);

// The units in forward order (the root first when it holds parameters or is the only unit).
std::vector<FsdpUnit> fsdp_units(const config::Scenario& sc);

// training.fsdp.cpu_offload (FSDP1 CPUOffload(offload_params=True), FSDP2 CPUOffloadPolicy with
// pinned memory), per optimizer step of one rank. Each unshard first copies the rank's shard, in
// the parameters' own dtype, from pinned host memory to the GPU (FSDP1 FlatParamHandle.pre_unshard
// on the pre-all-gather stream, then _use_low_precision_shard's cast under MixedPrecision; FSDP2
// FSDPParam.all_gather_inputs on the copy-in stream, then the copy-in), ahead of its all-gather;
// each reduction ends with the sharded gradient, cast back to the parameters' dtype, copied to the
// host on the stream that reduced it (FSDP1 _post_backward_hook `param._cpu_grad.copy_(...,
// non_blocking=True)` on the post-backward stream; FSDP2 foreach_reduce's `.to("cpu",
// non_blocking=True)` on the post-reduce stream), so the next reduction waits for it. The final
// callback blocks the host until the copies are done (FSDP1 _wait_for_post_backward's
// current_stream().synchronize(); FSDP2 finalize_backward's grad_offload_event.synchronize()), and
// the optimizer steps the shards on the CPU (gpu::cpu_optimizer_seconds) while the GPU idles:
// the next step's first copy needs the updated shard. Copies run at the GPU's host link
// (gpu.host_bandwidth); the link's other traffic (GPUDirect RDMA through the same PCIe switch)
// is not modelled.
using FsdpOffload = report::FsdpOffloadReport;
// Zero when the scenario does not offload (or shards nothing).
FsdpOffload fsdp_offload(const config::Scenario& sc);
// Whether it offloads: training.fsdp.cpu_offload with a sharded strategy on more than one GPU (the
// scenario check refuses the rest).
bool fsdp_offloads(const config::Scenario& sc);

// The plan of `steps`' micro-steps for the representative rank (ranks must be 1).
Plan build_fsdp(const config::Scenario& scenario, const gpu::ComputeProfile& profile, const ddp::StepPlan& steps,
                int ranks);

}  // namespace ddpsim::plan
