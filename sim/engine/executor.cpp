#include "engine/executor.hpp"

#include <simgrid/s4u.hpp>

#include "core/error.hpp"
#include "network/flow.hpp"

namespace sg4 = simgrid::s4u;

namespace ddpsim::engine {

namespace {
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif
}  // namespace

collectives::AllReduceTiming op_timing(const collectives::CollectiveModel& model, const plan::CommOp& op, int world) {
  switch (op.kind) {
    case plan::OpKind::BROADCAST:
    case plan::OpKind::REDUCE: return model.broadcast(op.bytes);
    case plan::OpKind::ALLGATHER: return model.allgather(op.bytes * world);
    case plan::OpKind::REDUCE_SCATTER: return model.reduce_scatter(op.bytes);
    default: return model.allreduce(op.bytes);
  }
}

std::unique_ptr<sg4::Engine> create_engine() {
  // debug/clean-atexit off: an engine destroyed as usual is shut down by its destructor; one kept
  // until exit (keep_until_exit) is not torn down by an atexit handler either.
  std::vector<std::string> args{"ddpsim", "--log=root.thresh:critical", "--cfg=debug/clean-atexit:no"};
  if (kSanitized) args.push_back("--cfg=contexts/factory:thread");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int argc = static_cast<int>(args.size());
  auto engine = std::make_unique<sg4::Engine>(&argc, argv.data());  // copies the arguments
  network::FlowBackend::configure(*engine);
  return engine;
}

void keep_until_exit(std::unique_ptr<sg4::Engine>& engine) {
  if (!kSanitized) (void)engine.release();
}

void size_timeline(const plan::Plan& plan, report::Timeline& t) {
  // Sized once: actors hold references into it.
  t.report_iteration = plan.report_iteration;
  for (const auto& st : plan.steps) {
    report::MicroStepInfo info;
    info.report = st.report;
    info.sync = st.sync;
    info.bucket_bytes = st.bucket_bytes;
    info.bucket_tensors = st.bucket_tensors;
    t.steps.push_back(std::move(info));
    t.jobs.emplace_back(static_cast<size_t>(st.records));
  }
  t.ranks.assign(static_cast<size_t>(plan.ranks), std::vector<report::RankStepRecord>(plan.steps.size()));
  t.phases = plan.phases;
  t.process.phase_end.assign(plan.phases.size(), 0.0);
  t.process.gpus.assign(static_cast<size_t>(plan.process_gpus), {});
  t.process.locked_s.assign(plan.streams.size(), 0.0);
}

void follow(ExecContext& ctx, const std::vector<int>& after, int stream) {
  for (int a : after)
    if (!ctx.done[static_cast<size_t>(a)])
      ctx.board.wait_until(ctx.wake[static_cast<size_t>(stream)],
                           [&] { return ctx.done[static_cast<size_t>(a)] != 0; });
}

// The streams that follow it are told in plan order, as a thread pushing work to them would.
void task_done(ExecContext& ctx, int ti) {
  ctx.done[static_cast<size_t>(ti)] = 1;
  for (int s : ctx.followers[static_cast<size_t>(ti)]) ctx.wake[static_cast<size_t>(s)]->notify_all();
}

void phase_point(ExecContext& ctx, const plan::Task& t) {
  if (t.phase < 0) return;
  double& e = ctx.timeline.process.phase_end[static_cast<size_t>(t.phase)];
  e = std::max(e, sg4::Engine::get_clock());
}

void run_joint_job(ExecContext& ctx, int ti) {
  const plan::Task& t = ctx.plan.tasks[static_cast<size_t>(ti)];
  auto& p = ctx.timeline.process;
  // The GPUs taking part, in ring order from the job's own stream (the root of a broadcast).
  std::vector<int> gpus{ctx.plan.streams[static_cast<size_t>(t.stream)].gpu};
  for (int s : t.joined) gpus.push_back(ctx.plan.streams[static_cast<size_t>(s)].gpu);
  const auto gpu = [&](int g) -> report::GpuStreamRecord& { return p.gpus.at(static_cast<size_t>(g)); };
  ActorClock clock;
  const double r0 = sg4::Engine::get_clock();
  ctx.board.job(ti).start = r0;
  for (const auto& op : t.chain) {
    switch (op.kind) {
      case plan::OpKind::PEER_COPY: {
        ctx.backend.transfer(clock, op.src, op.dst, op.bytes, ctx.plan.peer_bandwidth);
        gpu(op.src).tx_bytes += op.bytes;
        gpu(op.dst).rx_bytes += op.bytes;
        p.comm_alone_s += op.bytes / ctx.plan.peer_bandwidth;
        break;
      }
      case plan::OpKind::BROADCAST:
      case plan::OpKind::REDUCE: {
        // The collective model's broadcast (NCCL's Broadcast under the NCCL model, one ring pass
        // under the ring model): a broadcast from the root along the ring, a reduce along it to
        // the root (the root sends nothing, the one after it receives nothing). NCCL tunes Reduce
        // in Broadcast's branch (tuning.cc: Ring only, nsteps = nRanks, the same latency rule);
        // only the 2.8-2.20 tables' one-node Ring LL bandwidth differs (Reduce 1/4, Broadcast 1/3).
        const auto tm = op_timing(ctx.model, op, ctx.plan.world_size);
        ctx.backend.run_phase(clock, {tm.reduce_scatter, tm.base_latency});
        p.comm_alone_s += tm.total();
        // A reduce is classed with the broadcasts: NCCL tunes it in Broadcast's branch, and no
        // reduce_perf table is validated.
        p.by_function.add(collectives::Func::BROADCAST, op.bytes, tm.total());
        const bool reduce = op.kind == plan::OpKind::REDUCE;
        const size_t n = gpus.size();
        for (size_t i = 0; i < n; ++i) {
          const bool sends = reduce ? i != 0 : i + 1 != n;
          const bool receives = reduce ? i != 1 : i != 0;
          if (sends) gpu(gpus[i]).tx_bytes += op.bytes;
          if (receives) gpu(gpus[i]).rx_bytes += op.bytes;
        }
        break;
      }
      default: throw core::SimulationError("a job on GPU streams runs peer copies, broadcasts and reduces only");
    }
  }
  const double took = sg4::Engine::get_clock() - r0;
  p.comm_busy_s += took;
  for (int g : gpus) gpu(g).transfer_s += took;
}

}  // namespace ddpsim::engine
