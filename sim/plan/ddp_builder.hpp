#pragma once
// The step plan of DistributedDataParallel (plan/step_plan.hpp), plain or with
// ZeroRedundancyOptimizer, from the clock-free pieces of ddp/: the micro-steps, buckets and comm
// hook chains of ddp::StepPlan, the Reducer's launch decisions and the compute profile.
//
// One rank's program per micro-step, on its compute stream (torch/nn/parallel/distributed.py and
// torch/csrc/distributed/c10d/reducer.cpp):
//   STEP_BEGIN; the input copy; with broadcast_buffers, the buffer broadcast from rank 0 and a
//   wait for it; the forward, layer by layer; with find_unused_parameters, the autograd graph
//   walk (host); the backward, layer by layer, each trainable gradient copied into its bucket
//   (hooks active only in a synced micro-step), each bucket the Reducer launches handed to NCCL
//   stream b % comm_streams after its hook's own kernels (and the used-map all-reduce after the
//   last one); finalize_backward waits for every launched job and copies the buckets back out;
//   after the last micro-step the optimizer (GradScaler unscale_, clip_grad_norm_, the step,
//   zero_grad); STEP_END.
// ZeroRedundancyOptimizer (torch/distributed/optim/zero_redundancy_optimizer.py) replaces the
// step: the rank's shard, then one job of every rank's parameter broadcasts (_sync_params); with
// overlap_with_ddp (torch/distributed/algorithms/ddp_comm_hooks/ddp_zero_hook.py,
// hook_with_zero_step) the step runs at the end of the backward bucket by bucket on the owning
// rank (bucket i on rank i % world) with one broadcast per bucket, after two warm-up iterations.
#include "ddp/host_costs.hpp"
#include "ddp/step_plan.hpp"
#include "plan/step_plan.hpp"

namespace ddpsim::plan {

// Builds the plan for `ranks` simulated ranks (1: the representative rank) over the micro-steps
// of `steps` (ddp::plan_steps). Stream 0 is the compute stream, 1 + k NCCL stream k.
// DDP's own host work (ddp/host_costs.hpp) is charged where the GPU waits for it, as HOST tasks
// (slots DDP_FORWARD, DDP_HOOK, DDP_BUCKET): DDP.forward's work at the forward's start, each
// gradient's autograd hook before its copy, each bucket's Reducer work (and, at world size 1, the
// one-rank collective call) before its launch. The Reducer runs at world size 1 too (hooks,
// copies), without jobs. `host_costs` null: ddp::measured_host_costs().
Plan build_ddp(const config::Scenario& scenario, const gpu::ComputeProfile& profile, const ddp::StepPlan& steps,
               int ranks, const ddp::HostCosts* host_costs = nullptr);

// ZeroRedundancyOptimizer's pieces the DDP plan uses (exposed for the tests).
struct ZeroSteps {
  bool enabled = false, overlap = false;
  std::vector<gpu::Kernel> shard_step;   // without overlap: per rank holding parameters, its shard's step
  double max_shard_step = 0;             // the largest of them
  std::vector<CommOp> sync_params;       // without overlap: _sync_params' broadcasts, in order
  std::vector<gpu::Kernel> bucket_step;  // overlap: per steady-state bucket, its step
  std::vector<double> bucket_bytes;      // and its bytes
  size_t jobs() const { return !enabled ? 0 : overlap ? bucket_step.size() : 1; }
};
ZeroSteps zero_steps(const config::Scenario& scenario, const gpu::ComputeProfile& profile, const ddp::StepPlan& steps);

}  // namespace ddpsim::plan
