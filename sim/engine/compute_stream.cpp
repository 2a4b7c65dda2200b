// The compute-stream actor (engine/executor.hpp): a simulated rank's compute stream, or one GPU's
// stream of a process plan (HOST streams: kernels follow the host task that issued them, jobs on
// GPU streams run when every stream taking part has reached them).
#include <algorithm>
#include <simgrid/s4u.hpp>
#include <string>

#include "engine/executor.hpp"

namespace sg4 = simgrid::s4u;

namespace ddpsim::engine {
namespace {

using plan::Mark;
using plan::Slot;
using plan::TaskKind;

class ComputeStream {
 public:
  ComputeStream(ExecContext& ctx, int rank, int stream)
      : ctx_(ctx),
        plan_(ctx.plan),
        rank_(rank),
        stream_(stream),
        gpu_(ctx.plan.streams[static_cast<size_t>(stream)].gpu),
        track_(ctx.track(stream)) {}

  void run() {
    for (int ti : ctx_.programs[static_cast<size_t>(stream_)]) {
      const plan::Task& t = plan_.tasks[static_cast<size_t>(ti)];
      if (!t.ranks.has(rank_)) continue;
      if (t.micro_step != si_) si_ = t.micro_step;
      // Another GPU of a process: its kernels are not the reported rank's.
      rs_ = gpu_ == 0 ? &ctx_.timeline.ranks[static_cast<size_t>(rank_)][static_cast<size_t>(si_)] : &other_gpu_;
      const auto& st = plan_.steps[static_cast<size_t>(si_)];
      const double f = t.scaled ? plan_.factor[static_cast<size_t>(st.report)][static_cast<size_t>(rank_)] : 1.0;
      if (ctx_.process) follow(ctx_, t.after, stream_);
      switch (t.kind) {
        case TaskKind::KERNEL: kernel(t, f); break;
        case TaskKind::HOST: host(t); break;
        case TaskKind::COLLECTIVE:
          if (t.stream == stream_ || std::find(t.joined.begin(), t.joined.end(), stream_) != t.joined.end())
            joint(ti, t);
          else
            launch(ti, t);
          break;
        case TaskKind::WAIT: wait(t); break;
        case TaskKind::MARK: mark(ti, t); break;
      }
      if (ctx_.process) {
        phase_point(ctx_, t);
        if (t.stream == stream_) task_done(ctx_, ti);
      }
    }
    idle();
    if (ctx_.process) {
      double& end = ctx_.timeline.process.end;
      end = std::max(end, now());
    }
    ctx_.board.rank_finished();
  }

 private:
  // Kernels this stream has issued but not yet simulated. They are simulated when the rank next
  // needs the clock (a launch, a wait, a mark): as one timed wait while the NCCL kernels on its
  // GPU stay the same, each kernel taking its contention-free time times its slowdown (GpuShare),
  // re-planned whenever an NCCL kernel starts or finishes beside them. This is the arithmetic of
  // one Exec per kernel at a fraction of the activities.
  struct Queued {
    double seconds = 0;  // alone, already scaled by the rank's factor
    // Its task's shape, unscaled: the contention slowdown of a kernel does not change when all of
    // its parts scale by one factor (gpu/contention.hpp), so the task's own shape serves.
    const gpu::KernelShape* shape = nullptr;
    const plan::Task* task = nullptr;
    double* took = nullptr;  // where the time it took is added (copy, h2d), if anywhere
  };

  double* slot(Slot s) {
    switch (s) {
      case Slot::H2D: return &rs_->h2d;
      case Slot::COPY: return &rs_->copy;
      case Slot::TRAVERSAL: return &rs_->traversal;
      case Slot::BCAST_WAIT: return &rs_->bcast_wait;
      case Slot::FINALIZE_WAIT: return &rs_->finalize_wait;
      case Slot::STALL: return &rs_->stall;
      case Slot::PARAM_SYNC_WAIT: return &rs_->param_sync_wait;
      case Slot::DDP_FORWARD: return &rs_->ddp_forward;
      case Slot::DDP_HOOK: return &rs_->ddp_hook;
      case Slot::DDP_BUCKET: return &rs_->ddp_bucket;
      case Slot::HOOK_KERNEL: return &rs_->hook_kernel;
      case Slot::BUFFER_COPY: return &rs_->buffer_copy;
      case Slot::ALLGATHER_WAIT: return &rs_->allgather_wait;
      case Slot::REDUCE_WAIT: return &rs_->reduce_wait;
      case Slot::NONE: break;
    }
    return nullptr;
  }

  void kernel(const plan::Task& t, double f) {
    const gpu::Kernel* k = &t.kernel;
    if (!t.per_rank.empty()) {
      if (static_cast<size_t>(rank_) >= t.per_rank.size()) return;
      k = &t.per_rank[static_cast<size_t>(rank_)];
    }
    if (k->seconds <= 0) return;
    Queued q;
    q.seconds = k->seconds * f;
    q.shape = &k->shape;
    q.task = &t;
    q.took = slot(t.slot);
    if (ctx_.process) {
      // One kernel at a time: what it follows on the host decides when it starts.
      const double t0 = sg4::Engine::get_clock();
      sg4::this_actor::sleep_for(q.seconds);
      account(q, t0, q.seconds);
      return;
    }
    queued_.push_back(q);
  }

  // Simulates the queued kernels; returns the clock after them.
  double now() {
    auto& q = queued_;
    if (q.empty()) return sg4::Engine::get_clock();
    if (!ctx_.contention.enabled) {
      double total = 0;
      for (const auto& k : q) total += k.seconds;
      double t = sg4::Engine::get_clock();
      sg4::this_actor::sleep_for(total);
      for (const auto& k : q) {
        account(k, t, k.seconds);
        t += k.seconds;
      }
      q.clear();
      return sg4::Engine::get_clock();
    }
    GpuShare& share = *ctx_.shares[static_cast<size_t>(rank_)];
    share.compute_begin();
    size_t i = 0;
    double done = 0;                          // alone-seconds of q[i] already computed
    double took = 0;                          // time q[i] has taken so far
    double start = sg4::Engine::get_clock();  // when q[i] began
    rate_factor_.resize(q.size());            // slowdown of each kernel under the current NCCL set
    while (i < q.size()) {
      const double t0 = sg4::Engine::get_clock();
      double total = 0;
      for (size_t k = i; k < q.size(); ++k) {
        rate_factor_[k] = share.slowdown(*q[k].shape);
        total += (q[k].seconds - (k == i ? done : 0.0)) * rate_factor_[k];
      }
      const double passed = share.wait_compute(total);
      // Rounding of the clock: at large simulated times a wait shorter than its resolution does
      // not advance it, so what is left below that counts as done.
      const double eps = 1e-12 * std::max(1.0, t0 + total);
      double t = 0;  // into this wait
      while (i < q.size()) {
        const double rest = (q[i].seconds - done) * rate_factor_[i];
        if (t + rest > passed + eps) {
          // Cut by a change of the NCCL set: keep what it computed, re-plan the rest.
          done += (passed - t) / rate_factor_[i];
          took += passed - t;
          break;
        }
        took += rest;
        t += rest;
        account(q[i], start, took);
        ++i;
        done = 0;
        took = 0;
        start = t0 + t;
      }
    }
    q.clear();
    return sg4::Engine::get_clock();
  }

  // The compute stream stops issuing kernels (it waits for communication or the host): NCCL
  // kernels on its GPU run at full speed meanwhile. Between two kernels it stays busy (no time
  // passes there), which spares a rebalance per flush.
  void idle() {
    if (ctx_.contention.enabled) ctx_.shares[static_cast<size_t>(rank_)]->compute_end();
  }

  void account(const Queued& k, double start, double took) {
    rs_->compute_only += k.seconds;
    if (ctx_.process) ctx_.timeline.process.gpus[static_cast<size_t>(gpu_)].kernel_s += k.seconds;
    if (ctx_.contention.enabled) rs_->contention += std::max(0.0, took - k.seconds);
    if (k.took) *k.took += took;
    if (ctx_.tracing(rank_)) {
      std::string name = k.task->name;
      if (const auto at = name.find("{rank}"); at != std::string::npos) name.replace(at, 6, std::to_string(rank_));
      if (track_)
        ctx_.timeline.trace.push_back({name, k.task->category, track_->tid, start, took, nullptr, track_->pid});
      else
        ctx_.timeline.trace.push_back({name, k.task->category, 0, start, took, nullptr, rank_});
    }
  }

  // Host work: the stream issues nothing meanwhile; the host's time counts as compute.
  void host(const plan::Task& t) {
    now();
    if (double* s = slot(t.slot)) *s += t.seconds;  // several per micro-step (DDP's hooks)
    idle();
    sg4::this_actor::sleep_for(t.seconds);
    rs_->compute_only += t.seconds;
  }

  // Hands a job to its collective stream; the first rank to arrive opens its record.
  void launch(int ti, const plan::Task& t) {
    now();
    auto& rec = ctx_.timeline.jobs[static_cast<size_t>(si_)][static_cast<size_t>(t.record)];
    if (ctx_.board.job(ti).arrived == 0) {
      rec.present = true;
      rec.bucket = t.role == plan::JobRole::BUCKET ? t.bucket : -1;
      if (t.role == plan::JobRole::PARAM_SYNC) {
        rec.param_sync = true;
        rec.param_sync_ops = static_cast<int>(t.chain.size());
        rec.param_sync_bytes = 0;
        for (const auto& op : t.chain) rec.param_sync_bytes += op.bytes;
      }
      if (t.role == plan::JobRole::UNIT_ALLGATHER || t.role == plan::JobRole::UNIT_REDUCE ||
          t.role == plan::JobRole::UNIT_REPLICA_ALLREDUCE) {
        rec.unit = t.bucket;
        rec.fsdp_op = t.role == plan::JobRole::UNIT_ALLGATHER ? "all-gather"
                      : t.role == plan::JobRole::UNIT_REDUCE  ? "reduce"
                                                              : "replica all-reduce";
        for (const auto& op : t.chain)
          if (op.kind != plan::OpKind::KERNEL) rec.bytes += op.bytes;
      }
    }
    ctx_.board.arrive(ti);
  }

  // A job on GPU streams: the last stream to reach it runs it, the others wait for it.
  void joint(int ti, const plan::Task& t) {
    JobState& j = ctx_.board.job(ti);
    if (++j.arrived == 1 + static_cast<int>(t.joined.size())) {
      run_joint_job(ctx_, ti);
      ctx_.board.done(ti);
    } else {
      ctx_.board.wait_until(j.changed, [&] { return j.done; });
    }
    const double dur = sg4::Engine::get_clock() - j.start;
    if (ctx_.tracing(rank_) && track_ && dur > 0)
      ctx_.timeline.trace.push_back({t.name, t.category, track_->tid, j.start, dur, nullptr, track_->pid});
  }

  void wait(const plan::Task& t) {
    const double w0 = now();
    bool ready = true;
    for (int a : t.after) {
      const JobState& j = ctx_.board.job(a);
      ready = ready && (t.until_started ? j.started : j.done);
    }
    if (!ready) idle();
    for (int a : t.after) {
      JobState& j = ctx_.board.job(a);
      if (t.until_started)
        ctx_.board.wait_until(j.changed, [&] { return j.started; });
      else
        ctx_.board.wait_until(j.changed, [&] { return j.done; });
    }
    const double waited = now() - w0;
    if (double* s = slot(t.slot)) *s += waited;
    if ((t.slot == Slot::ALLGATHER_WAIT || t.slot == Slot::REDUCE_WAIT) && t.bucket >= 0) {
      auto& per = t.slot == Slot::ALLGATHER_WAIT ? rs_->unit_allgather_wait : rs_->unit_reduce_wait;
      if (per.size() <= static_cast<size_t>(t.bucket)) per.resize(static_cast<size_t>(t.bucket) + 1, 0.0);
      per[static_cast<size_t>(t.bucket)] += waited;
    }
  }

  void mark(int ti, const plan::Task& t) {
    const double c = now();
    if (rank_ == 0) ctx_.mark_time[static_cast<size_t>(ti)] = c;
    const auto& st = plan_.steps[static_cast<size_t>(si_)];
    const bool first_of_iteration = si_ == 0 || plan_.steps[static_cast<size_t>(si_) - 1].report != st.report;
    const bool last_of_iteration = static_cast<size_t>(si_) + 1 == plan_.steps.size() ||
                                   plan_.steps[static_cast<size_t>(si_) + 1].report != st.report;
    const int iteration = plan_.report_iteration[static_cast<size_t>(st.report)];
    switch (t.mark) {
      case Mark::STEP_BEGIN:
        rs_->start = c;
        if (first_of_iteration) iteration_start_ = c;
        if (first_of_iteration && rank_ == 0 && ctx_.collect_trace)
          ctx_.timeline.trace.push_back(
              {"iteration " + std::to_string(iteration), "iteration", 0, c, 0.0, nullptr, 0, true});
        break;
      case Mark::FORWARD_BEGIN: phase_start_ = c; break;
      case Mark::FORWARD_END: rs_->fwd = c - phase_start_; break;
      case Mark::BACKWARD_BEGIN:
        phase_start_ = c;
        rs_->ready.assign(st.bucket_bytes.size(), 0);
        rs_->launch.assign(st.bucket_bytes.size(), 0);
        break;
      case Mark::BACKWARD_END:
        rs_->backward_done = c;
        rs_->bwd = c - phase_start_;
        break;
      case Mark::BUCKET_READY: rs_->ready[static_cast<size_t>(t.bucket)] = c; break;
      case Mark::BUCKET_LAUNCH: rs_->launch[static_cast<size_t>(t.bucket)] = c; break;
      case Mark::OPTIMIZER_BEGIN:
        opt_start_ = c;
        opt_waits_ = rs_->param_sync_wait;
        break;
      case Mark::OPTIMIZER_END: rs_->opt += c - opt_start_ - (rs_->param_sync_wait - opt_waits_); break;
      case Mark::STEP_END:
        rs_->end = c;
        if (ctx_.tracing(rank_) && last_of_iteration)
          ctx_.timeline.trace.push_back({"step " + std::to_string(iteration), "step", 0, iteration_start_,
                                         c - iteration_start_, core::Json{{"rank", rank_}}, rank_});
        break;
      case Mark::NONE:
      case Mark::SPAN_BEGIN:
      case Mark::SPAN_END: break;
    }
  }

  ExecContext& ctx_;
  const plan::Plan& plan_;
  int rank_, stream_, gpu_;
  const report::TraceTrack* track_;
  report::RankStepRecord other_gpu_;
  int si_ = 0;
  report::RankStepRecord* rs_ = nullptr;
  std::vector<Queued> queued_;
  std::vector<double> rate_factor_;
  double iteration_start_ = 0, phase_start_ = 0, opt_start_ = 0, opt_waits_ = 0;
};

}  // namespace

void run_compute_stream(ExecContext& ctx, int rank) { ComputeStream(ctx, rank, 0).run(); }
void run_gpu_stream(ExecContext& ctx, int stream) { ComputeStream(ctx, 0, stream).run(); }

}  // namespace ddpsim::engine
