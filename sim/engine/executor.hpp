#pragma once
// The executor of a step plan (plan/step_plan.hpp) on SimGrid: one compute-stream actor per
// simulated rank runs the plan's compute-stream program; one NCCL-stream actor per collective
// stream runs the jobs the ranks reach (JobBoard), realising each collective's phases on the
// network backend; everything observed goes into the report::Timeline. Nothing here knows which
// wrapper wrote the plan.
#include <memory>
#include <string>
#include <vector>

#include "collectives/collective_model.hpp"
#include "engine/gpu_share.hpp"
#include "engine/job_board.hpp"
#include "network/backend.hpp"
#include "plan/step_plan.hpp"
#include "report/timeline.hpp"

namespace ddpsim::engine {

// What the actors of one run share.
struct ExecContext {
  const plan::Plan& plan;
  collectives::CollectiveModel& model;
  network::Backend& backend;
  report::Timeline& timeline;
  JobBoard& board;
  gpu::ContentionParams contention;
  bool collect_trace = false;
  std::vector<char> traced;                       // per simulated rank: its kernels go into the trace
  std::vector<std::unique_ptr<GpuShare>> shares;  // per simulated rank's GPU (contention)
  std::vector<double> mark_time;                  // per task: when a MARK was reached (gates)
  std::vector<int> compute_program;               // the compute stream's tasks (plan.stream_tasks(0))
  // Per process group (plan.groups), the collective model of its ranks when they are not the
  // whole cluster (FSDP's HYBRID_SHARD groups); null or absent: `model`.
  std::vector<const collectives::CollectiveModel*> group_models{};
  bool tracing(int rank) const { return collect_trace && traced[static_cast<size_t>(rank)]; }
};

// Sizes the Timeline for `plan` (micro-steps, ranks, collective records).
void size_timeline(const plan::Plan& plan, report::Timeline& timeline);

// A simulated rank's compute stream: runs the plan's COMPUTE-stream tasks in order.
void run_compute_stream(ExecContext& ctx, int rank);
// A collective stream: runs its jobs in FIFO order until every rank has finished.
void run_nccl_stream(ExecContext& ctx, int stream);

}  // namespace ddpsim::engine
