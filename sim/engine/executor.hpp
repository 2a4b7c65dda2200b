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

// The clock of the calling actor, for the network backend.
class ActorClock final : public network::Clock {
 public:
  void sleep_for(double seconds) override { simgrid::s4u::this_actor::sleep_for(seconds); }
};

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
  std::vector<std::vector<int>> programs;         // per stream: plan.stream_tasks(stream)
  // A plan with HOST streams (a process driving several GPUs): its tasks say which tasks of other
  // streams they follow (`after`), so each task's end is recorded and announced on its stream;
  // HOST tasks take the process lock (Python's GIL) for their `locked` share.
  bool process = false;
  std::vector<char> done;                                // per task
  std::vector<simgrid::s4u::ConditionVariablePtr> wake;  // per stream: what it follows may have ended
  std::vector<std::vector<int>> followers;  // per task: the streams with a task following it, in plan order
  simgrid::s4u::MutexPtr lock;              // the process lock
  // Per task: the host threads it starts (HOST streams whose first task follows it), started
  // when it ends, in stream order, as the thread that ran it would; and where actors run.
  std::vector<std::vector<int>> starts;
  simgrid::s4u::Host* host = nullptr;
  // Per process group (plan.groups), the collective model of its ranks when they are not the
  // whole cluster (FSDP's HYBRID_SHARD groups); null or absent: `model`.
  std::vector<const collectives::CollectiveModel*> group_models{};
  bool tracing(int rank) const { return collect_trace && traced[static_cast<size_t>(rank)]; }
  // The trace track of `stream` (null: the rank's own).
  const report::TraceTrack* track(int stream) const {
    const int k = plan.streams[static_cast<size_t>(stream)].track;
    return k < 0 || static_cast<size_t>(k) >= timeline.tracks.size() ? nullptr
                                                                     : &timeline.tracks[static_cast<size_t>(k)];
  }
};

// Process plans: blocks until every task of `after` has ended; records that task `ti` ended.
void follow(ExecContext& ctx, const std::vector<int>& after, int stream);
void task_done(ExecContext& ctx, int ti);
// Process plans: the host threads `ti` starts (ExecContext::starts); the first ones at time 0.
void start_threads(ExecContext& ctx, int ti);
void start_first_threads(ExecContext& ctx);
// Process plans: a task with a phase ends now (the phase ends no earlier).
void phase_point(ExecContext& ctx, const plan::Task& t);

// The simulation's Engine (one per process), configured: quiet logs, the network model's
// settings (network::FlowBackend::configure); under AddressSanitizer, actors on system threads
// (contexts/factory:thread), because ASan cannot follow SimGrid's swapped actor stacks (stale
// stack poison reported as a stack-buffer-overflow in __asan_handle_no_return). Same results.
std::unique_ptr<simgrid::s4u::Engine> create_engine();
// Leaves the engine to the process's exit: SimGrid's teardown frees every host, link, actor and
// route one by one, about a sixth of a 131,072-GPU every-flow run (docs/performance.md), which a
// process that ends next need not pay. create_engine() turns off SimGrid's own cleanup at exit
// (debug/clean-atexit). Not under the sanitizers (LeakSanitizer would report the engine), where
// the engine is destroyed as usual. Only for the process's last simulation: SimGrid allows one
// engine per process.
void keep_until_exit(std::unique_ptr<simgrid::s4u::Engine>& engine);

// The collective model's timing of one operation of a job: a broadcast or a reduce (one pass along
// the ring: NCCL tunes Reduce in Broadcast's branch), an all-gather whose output is `world` x the
// bytes each rank contributes, a reduce-scatter of the bytes each rank puts in, else an all-reduce.
// The NCCL streams, a process's joint jobs and the check before a run (simulation.cpp) all time
// operations through it.
collectives::AllReduceTiming op_timing(const collectives::CollectiveModel& model, const plan::CommOp& op, int world);

// Sizes the Timeline for `plan` (micro-steps, ranks, collective records).
void size_timeline(const plan::Plan& plan, report::Timeline& timeline);

// A simulated rank's compute stream: runs the plan's COMPUTE-stream tasks in order.
void run_compute_stream(ExecContext& ctx, int rank);
// A worker of a collective stream: takes the stream's next job (FIFO, shared with the stream's
// other workers) and runs it, until every rank has finished.
void run_nccl_stream(ExecContext& ctx, int stream, int worker);
// A host thread of a process plan (HOST stream): its host work, marks and joins.
void run_host_stream(ExecContext& ctx, int stream);
// A compute stream of a process plan: GPU `stream`'s program (rank 0).
void run_gpu_stream(ExecContext& ctx, int stream);
// A job on GPU streams (peer copy, NCCL call inside one process), run by the last stream to reach
// it: realised on the network backend, its traffic and time in the process record.
void run_joint_job(ExecContext& ctx, int ti);

}  // namespace ddpsim::engine
