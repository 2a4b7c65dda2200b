// The NCCL-stream actor of one collective stream (engine/executor.hpp).
#include <algorithm>
#include <simgrid/s4u.hpp>

#include "engine/executor.hpp"

namespace sg4 = simgrid::s4u;

namespace ddpsim::engine {
namespace {

class SimClock final : public network::Clock {
 public:
  void sleep_for(double seconds) override { sg4::this_actor::sleep_for(seconds); }
};

class NcclStream {
 public:
  NcclStream(ExecContext& ctx, int stream, int worker) : ctx_(ctx), plan_(ctx.plan), stream_(stream) {
    // Trace tracks: the collective streams' first workers, then their second ones, ...
    // (report::Timeline::comm_streams, counted when the simulation starts).
    track_ = stream + worker * std::max(1, ctx.timeline.comm_streams);
    group_ = plan_.streams[static_cast<size_t>(stream)].group;
  }

  void run() {
    for (int ti; (ti = ctx_.board.next(stream_)) >= 0;) run_job(ti);
  }

 private:
  // The process group an operation runs over (its own, else the stream's): its size and model.
  // The network backend knows the whole cluster's ring: a sub-group's collectives (FSDP's
  // HYBRID_SHARD and post-forward groups) take their model's time alone, without flows or link
  // statistics.
  struct Group {
    int world = 1;
    const collectives::CollectiveModel* model = nullptr;
    bool sub = false;
  };
  Group group_of(const plan::CommOp& op) const {
    const size_t g = static_cast<size_t>(op.group >= 0 ? op.group : group_);
    Group out;
    out.world = plan_.groups.at(g).size;
    out.model = g < ctx_.group_models.size() && ctx_.group_models[g] ? ctx_.group_models[g] : &ctx_.model;
    out.sub = out.world != plan_.world_size;
    return out;
  }

  static gpu::CommLoad load_of(double bytes, double seconds, int channels, int world) {
    gpu::CommLoad l;
    l.channels = channels;
    // A ring all-reduce sends and receives 2(N-1)/N of the bytes on every rank.
    if (seconds > 0) l.link_bytes_per_s = 2.0 * 2.0 * (world - 1) / world * bytes / seconds;
    return l;
  }

  // Runs one phase on the network backend and, with contention, as NCCL kernels on every
  // simulated GPU; returns when both are done. `hop_bytes`: the payload on each ring hop;
  // `counted`: a steady step's (link statistics).
  void run_phase(const collectives::PhaseTiming& phase, double start_latency, const gpu::CommLoad& load,
                 double hop_bytes, bool counted, bool sub_group) {
    std::vector<int> kernels;
    const double alone = start_latency + phase.total();
    if (ctx_.contention.enabled)
      for (auto& s : ctx_.shares) kernels.push_back(s->start_nccl(alone, load));
    if (sub_group)
      clock_.sleep_for(start_latency + phase.total());
    else
      ctx_.backend.run_phase(clock_, {phase, start_latency, hop_bytes, counted});
    for (size_t r = 0; r < kernels.size(); ++r) ctx_.shares[r]->finish_nccl(kernels[r]);
  }

  // With a representative rank: not before the ranks it stands for would have started it.
  void gate(const plan::Task& t) {
    if (t.gate.from < 0) return;
    const double f = plan_.factor[static_cast<size_t>(plan_.steps[static_cast<size_t>(t.micro_step)].report)][0];
    double at = ctx_.mark_time[static_cast<size_t>(t.gate.from)];
    for (const auto& term : t.gate.terms) {
      if (term.after >= 0) {
        JobState& j = ctx_.board.job(term.after);
        ctx_.board.wait_until(j.changed, [&] { return j.done; });
        const auto& a = plan_.tasks[static_cast<size_t>(term.after)];
        at = std::max(at, ctx_.timeline.jobs[static_cast<size_t>(a.micro_step)][static_cast<size_t>(a.record)].end);
      }
      at += term.seconds * f;
    }
    const double now_s = sg4::Engine::get_clock();
    if (at > now_s) sg4::this_actor::sleep_for(at - now_s);
  }

  void run_job(int ti) {
    const plan::Task& j = plan_.tasks[static_cast<size_t>(ti)];
    const size_t si = static_cast<size_t>(j.micro_step);
    report::CollectiveRecord& rec = ctx_.timeline.jobs[si][static_cast<size_t>(j.record)];
    gate(j);
    // Jobs of other streams it must follow (FSDP: a reduce-scatter after the previous all-reduce
    // issued on the same CUDA stream).
    for (int a : j.after) {
      JobState& dep = ctx_.board.job(a);
      ctx_.board.wait_until(dep.changed, [&] { return dep.done; });
    }
    rec.start = sg4::Engine::get_clock();
    ctx_.board.started(ti);
    const bool counted = plan_.steps[si].report >= plan_.first_steady_report;
    const int track = track_;  // 1 + the NCCL stream's index (+ its worker's): 0 is the compute stream
    bool first_collective = true;
    for (const auto& op : j.chain) {
      if (op.kind == plan::OpKind::KERNEL) {
        // Hook callbacks' kernels: on the NCCL stream's timeline, not contended.
        const double t0 = sg4::Engine::get_clock();
        sg4::this_actor::sleep_for(op.kernel.seconds);
        rec.alone += op.kernel.seconds;
        if (ctx_.collect_trace)
          ctx_.timeline.trace.push_back({op.name, "comm hook", track, t0, op.kernel.seconds, nullptr});
        continue;
      }
      const double t0 = sg4::Engine::get_clock();
      // An all-gather (quantization hooks) is one phase, as a broadcast: op.bytes per rank in.
      const bool broadcast = op.kind == plan::OpKind::BROADCAST;
      const bool gather = op.kind == plan::OpKind::ALLGATHER;
      const bool scatter = op.kind == plan::OpKind::REDUCE_SCATTER;
      const bool one_phase = broadcast || gather || scatter;
      const Group grp = group_of(op);
      const int world = grp.world;
      const collectives::AllReduceTiming timing = op_timing(*grp.model, op, world);
      // A ring all-gather of N x b bytes (a reduce-scatter of N x b bytes in) moves what one phase
      // of an all-reduce of them does.
      const double phase_of = gather ? op.bytes * world / 2 : scatter ? op.bytes / 2 : op.bytes;
      const auto load = load_of(phase_of, timing.total(), timing.channels, world);
      // Link statistics: a broadcast puts the buffer on every hop, an all-reduce phase (N-1)/N of
      // it, an all-gather of N x b bytes (N-1) x b, a reduce-scatter of b bytes in (N-1)/N x b.
      const double hop_bytes = broadcast ? op.bytes : gather ? op.bytes * (world - 1) : op.bytes * (world - 1) / world;
      run_phase(timing.reduce_scatter, timing.base_latency, load, hop_bytes, counted, grp.sub);
      const double rs_end = sg4::Engine::get_clock();
      if (!one_phase) run_phase(timing.all_gather, 0.0, load, hop_bytes, counted, grp.sub);
      const double t1 = sg4::Engine::get_clock();
      if (first_collective) {
        rec.rs_end = rs_end;
        rec.algorithm = timing.algorithm;
        rec.protocol = timing.protocol;
        rec.channels = timing.channels;
        // NCCL's estimate describes a job of this one collective; a comm hook's kernels or second
        // collective make its time alone something else.
        if (j.chain.size() == 1 && timing.nccl.nccl_model_time > 0) {
          rec.nccl_estimate = timing.nccl.nccl_model_time;
          rec.vs_nccl = collectives::explain_difference(timing.nccl);
        }
      }
      first_collective = false;
      rec.alone += timing.total();
      // Its error class: the function and the size nccl-tests would print for it.
      rec.by_function.add(broadcast ? collectives::Func::BROADCAST
                          : gather  ? collectives::Func::ALL_GATHER
                          : scatter ? collectives::Func::REDUCE_SCATTER
                                    : collectives::Func::ALL_REDUCE,
                          gather ? op.bytes * world : op.bytes, timing.total());
      if (ctx_.collect_trace) {
        core::Json args{{"bytes", op.bytes},
                        {"algorithm", timing.algorithm},
                        {"protocol", timing.protocol},
                        {"channels", timing.channels}};
        const char* kind = broadcast ? "broadcast" : gather ? "allgather" : scatter ? "reducescatter" : "allreduce";
        ctx_.timeline.trace.push_back({j.name + " " + op.name, kind, track, t0, t1 - t0, args});
        ctx_.timeline.trace.push_back({broadcast ? "broadcast"
                                       : gather  ? "all-gather"
                                                 : "reduce-scatter",
                                       "phase", track, t0, rs_end - t0, args});
        if (!one_phase) ctx_.timeline.trace.push_back({"all-gather", "phase", track, rs_end, t1 - rs_end, args});
      }
    }
    rec.end = sg4::Engine::get_clock();
    ctx_.board.done(ti);
  }

  ExecContext& ctx_;
  const plan::Plan& plan_;
  int stream_;
  int track_ = 1;
  int group_ = 0;  // the stream's process group
  SimClock clock_;
};

}  // namespace

void run_nccl_stream(ExecContext& ctx, int stream, int worker) { NcclStream(ctx, stream, worker).run(); }

}  // namespace ddpsim::engine
