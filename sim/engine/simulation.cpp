#include "engine/simulation.hpp"

#include <algorithm>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <simgrid/s4u.hpp>
#include <string>

#include "collectives/collective_model.hpp"
#include "core/error.hpp"
#include "ddp/reducer.hpp"
#include "ddp/step_plan.hpp"
#include "engine/data_parallel.hpp"
#include "engine/gpu_share.hpp"
#include "gpu/compute_model.hpp"
#include "memory/memory_model.hpp"
#include "network/flow.hpp"
#include "network/registry.hpp"
#include "report/metrics.hpp"
#include "report/timeline.hpp"

namespace sg4 = simgrid::s4u;

namespace ddpsim::engine {
namespace {

// The calling SimGrid actor, as network backends see it.
class ActorClock final : public network::Clock {
 public:
  void sleep_for(double seconds) override { sg4::this_actor::sleep_for(seconds); }
};

// A chain of collectives on one NCCL stream, shared by every simulated rank: it starts when
// every rank has launched it and the stream is free. Its times go to the Timeline record.
struct Job {
  int stream = 0;
  std::string label;
  std::vector<ddp::HookOp> ops;
  bool broadcast = false;
  double not_before = -1;  // ZeRO: the other ranks' shards are stepped by then (representative rank)
  int arrived = 0;
  bool started = false, done = false;
  sg4::ConditionVariablePtr changed;  // notified when it starts and when it is done
};

// The engine (DESIGN.md): one compute-stream actor per simulated rank drives a ddp::Reducer per
// backward pass; one actor per NCCL stream runs the launched collectives in FIFO order and hands
// each phase to the network backend; everything observed goes into a report::Timeline.
class StepSimulator {
 public:
  StepSimulator(const config::Scenario& sc, const RunOptions& opt)
      : sc_(sc),
        opt_(opt),
        profile_(gpu::build_compute_profile(sc)),
        model_(sc.cluster, sc.collective),
        world_(sc.cluster.world_size()),
        ranks_(sc.stragglers.explicit_ranks() && world_ > 1 ? world_ : 1),
        streams_(world_ > 1 ? sc.streams.comm_streams : 0) {
    std::vector<int> rank_in_order(sc.model.params.size(), 0);
    for (size_t i = 0; i < sc.model.grad_ready_order.size(); ++i)
      rank_in_order[sc.model.grad_ready_order[i]] = static_cast<int>(i);
    layer_params_.resize(sc.model.layers.size());
    for (size_t l = 0; l < sc.model.layers.size(); ++l) {
      for (int p : sc.model.layers[l].params)
        if (sc.model.params[p].requires_grad) layer_params_[l].push_back(p);
      std::sort(layer_params_[l].begin(), layer_params_[l].end(),
                [&](int a, int b) { return rank_in_order[a] < rank_in_order[b]; });
    }
    broadcast_bytes_ = ddp::Reducer::forward_broadcast_bytes(sc.model, sc.ddp);

    contention_.enabled = sc.contention.enabled && world_ > 1;
    contention_.hbm_bytes_per_nccl_byte =
        sc.contention.hbm_bytes_per_nccl_byte.value_or(sc.cluster.gpu.hbm_bytes_per_nccl_byte.value_or(2.5));
    contention_.comm_slowdown = sc.contention.comm_slowdown.value_or(sc.cluster.gpu.comm_slowdown.value_or(5.5 / 4.7));
    contention_.max_slowdown = sc.contention.max_slowdown;
    contention_.fixed_compute_slowdown = sc.contention.compute_slowdown;
    contention_.nccl_high_priority = sc.streams.nccl_high_priority;

    ddp::HookCosts costs{profile_.peak_flops, sc.cluster.gpu.hbm_bandwidth, sc.compute, world_};
    ddp::plan_steps(plan_, sc, costs, ranks_, opt.simulate_iteration1);
    setup_zero();

    // The Timeline is sized once: actors hold references into it.
    auto& t = timeline_;
    t.world_size = world_;
    t.batch_size = sc.training.batch_size;
    t.report_iteration = plan_.report_iteration;
    t.steady_steps = plan_.steady_steps;
    t.has_iteration1 = plan_.has_iteration1;
    t.loader_samples_per_s = sc.training.loader_samples_per_s.value_or(0.0);
    for (const auto& st : plan_.steps) {
      report::MicroStepInfo info;
      info.report = st.report;
      info.sync = st.sync;
      for (const auto& b : *st.buckets) {
        info.bucket_bytes.push_back(b.bytes);
        info.bucket_tensors.push_back(static_cast<int>(b.param_indices.size()));
      }
      t.steps.push_back(std::move(info));
      t.jobs.emplace_back(2 + st.buckets->size() + zero_jobs_);
    }
    t.ranks.assign(static_cast<size_t>(ranks_), std::vector<report::RankStepRecord>(plan_.steps.size()));
    traced_.assign(static_cast<size_t>(ranks_), 0);
    if (opt.collect_trace) {
      traced_ranks_ = select_traced_ranks(plan_.factor, ranks_);
      for (const auto& tr : traced_ranks_) traced_[static_cast<size_t>(tr.rank)] = 1;
    }
    jobs_.resize(plan_.steps.size());
    for (size_t i = 0; i < plan_.steps.size(); ++i) jobs_[i].resize(2 + plan_.steps[i].buckets->size() + zero_jobs_);
  }

  report::StepReport run() {
    const auto engine = network::FlowBackend::create_engine();
    sg4::Engine& e = *engine;
    // One star zone: hosts for the simulated ranks' GPUs, and whatever the backend adds; routes
    // are per endpoint (no N x N table).
    auto* zone = sg4::create_star_zone("platform");
    // GPU work is timed waits (GpuShare), not Execs: the hosts only place the actors.
    for (int r = 0; r < ranks_; ++r) hosts_.push_back(zone->create_host("compute" + std::to_string(r), 1.0)->seal());
    backend_ = network::make_backend(config::to_string(sc_.simulation.backend),
                                     {zone, sc_.cluster, model_.ring(), sc_.simulation, sc_.collective.nccl_cross_nic,
                                      opt_.collect_trace, 0, 0, streams_ <= 1});
    zone->seal();

    mutex_ = sg4::Mutex::create();
    queued_.resize(static_cast<size_t>(ranks_));
    rate_factor_.resize(static_cast<size_t>(ranks_));
    outstanding_.assign(static_cast<size_t>(ranks_), 0);
    // Created up front: creating one is a simcall, which would yield inside arrive().
    for (auto& step : jobs_)
      for (auto& j : step) j.changed = sg4::ConditionVariable::create();
    queues_.resize(static_cast<size_t>(std::max(streams_, 1)));
    for (size_t s = 0; s < queues_.size(); ++s) stream_cv_.push_back(sg4::ConditionVariable::create());
    for (int r = 0; r < ranks_; ++r) {
      shares_.push_back(std::make_unique<GpuShare>(sc_.cluster.gpu, sc_.compute.memory_efficiency, contention_));
      sg4::Actor::create("compute-stream-" + std::to_string(r), hosts_[static_cast<size_t>(r)],
                         [this, r] { compute_stream(r); });
    }
    for (int s = 0; s < streams_; ++s)
      sg4::Actor::create("nccl-stream-" + std::to_string(s), hosts_[0], [this, s] { comm_stream(s); });
    e.run();
    if (finished_ranks_ != ranks_) throw core::SimulationError("simulation ended before every rank finished its steps");
    return build_report();
  }

 private:
  // ------------------------------------------------------------------ compute stream

  // Kernels a compute stream has issued but not yet simulated. They are simulated when the rank
  // next needs the clock (a launch, a wait, a phase boundary): as one timed wait while the NCCL
  // kernels on its GPU stay the same, each kernel taking its contention-free time times its
  // slowdown (GpuShare), re-planned whenever an NCCL kernel starts or finishes beside them. This is
  // the arithmetic of one Exec per kernel at a fraction of the activities.
  struct Queued {
    gpu::Kernel kernel;  // already scaled by the rank's straggler factor
    std::string name;    // only when tracing rank 0
    const char* category = "";
    double* took = nullptr;  // where the time it took is added (copy, h2d), if anywhere
  };

  bool tracing(int rank) const { return opt_.collect_trace && traced_[static_cast<size_t>(rank)]; }

  template <class Name>  // a callable giving the kernel's name, called only when tracing
  void run_kernel(int rank, const gpu::Kernel& k, double factor, const Name& name, const char* cat,
                  double* took = nullptr) {
    if (k.seconds <= 0) return;
    Queued q;
    q.kernel.seconds = k.seconds * factor;
    q.kernel.shape = k.shape;
    q.kernel.shape.compute_s *= factor;
    q.kernel.shape.memory_s *= factor;
    q.kernel.shape.overhead_s *= factor;
    if (tracing(rank)) q.name = name();
    q.category = cat;
    q.took = took;
    queued_[static_cast<size_t>(rank)].push_back(std::move(q));
  }

  // Simulates the queued kernels of `rank`; returns the clock after them.
  double now(int rank, report::RankStepRecord& rs) {
    auto& q = queued_[static_cast<size_t>(rank)];
    if (q.empty()) return sg4::Engine::get_clock();
    if (!contention_.enabled) {
      double total = 0;
      for (const auto& k : q) total += k.kernel.seconds;
      double t = sg4::Engine::get_clock();
      sg4::this_actor::sleep_for(total);
      for (const auto& k : q) {
        account(rank, rs, k, t, k.kernel.seconds);
        t += k.kernel.seconds;
      }
      q.clear();
      return sg4::Engine::get_clock();
    }
    GpuShare& share = *shares_[static_cast<size_t>(rank)];
    share.compute_begin();
    size_t i = 0;
    double done = 0;                          // alone-seconds of q[i] already computed
    double took = 0;                          // time q[i] has taken so far
    double start = sg4::Engine::get_clock();  // when q[i] began
    // Slowdown of each kernel under the current NCCL set; per rank, since other ranks run while
    // this one waits.
    auto& rate_factor = rate_factor_[static_cast<size_t>(rank)];
    rate_factor.resize(q.size());
    while (i < q.size()) {
      const double t0 = sg4::Engine::get_clock();
      double total = 0;
      for (size_t k = i; k < q.size(); ++k) {
        rate_factor[k] = share.slowdown(q[k].kernel.shape);
        total += (q[k].kernel.seconds - (k == i ? done : 0.0)) * rate_factor[k];
      }
      const double passed = share.wait_compute(total);
      // Rounding of the clock: at large simulated times a wait shorter than its resolution does
      // not advance it, so what is left below that counts as done.
      const double eps = 1e-12 * std::max(1.0, t0 + total);
      double t = 0;  // into this wait
      while (i < q.size()) {
        const double rest = (q[i].kernel.seconds - done) * rate_factor[i];
        if (t + rest > passed + eps) {
          // Cut by a change of the NCCL set: keep what it computed, re-plan the rest.
          done += (passed - t) / rate_factor[i];
          took += passed - t;
          break;
        }
        took += rest;
        t += rest;
        account(rank, rs, q[i], start, took);
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
  void idle(int rank) {
    if (contention_.enabled) shares_[static_cast<size_t>(rank)]->compute_end();
  }

  void account(int rank, report::RankStepRecord& rs, const Queued& k, double start, double took) {
    rs.compute_only += k.kernel.seconds;
    if (contention_.enabled) rs.contention += std::max(0.0, took - k.kernel.seconds);
    if (k.took) *k.took += took;
    if (tracing(rank)) timeline_.trace.push_back({k.name, k.category, 0, start, took, nullptr, rank});
  }

  template <class Pred>
  void wait_until(const sg4::ConditionVariablePtr& cv, Pred pred) {
    std::unique_lock lock(*mutex_);
    while (!pred()) cv->wait(lock);
  }

  // A rank hands job `index` of micro-step `step` to its NCCL stream; the first arrival creates it.
  Job& arrive(size_t step, size_t index, int rank, const std::function<Job()>& make) {
    Job& j = jobs_[step].at(index);
    report::CollectiveRecord& rec = timeline_.jobs[step].at(index);
    // No SimGrid call before the count is updated: a simcall yields to the other ranks.
    if (j.arrived == 0) {
      auto changed = j.changed;
      j = make();
      j.changed = changed;
      rec.present = true;
      queues_[static_cast<size_t>(j.stream)].push_back({step, index});
    }
    ++outstanding_[static_cast<size_t>(rank)];
    if (++j.arrived == ranks_) stream_cv_[static_cast<size_t>(j.stream)]->notify_all();
    return j;
  }

  static size_t bucket_job(size_t b) { return 1 + b; }

  void compute_stream(int rank) {
    const auto& m = sc_.model;
    const bool ddp = world_ > 1;
    double iteration_start = 0;  // this rank's start of the optimizer step (its first micro-step)
    for (size_t si = 0; si < plan_.steps.size(); ++si) {
      const ddp::MicroStep& st = plan_.steps[si];
      report::RankStepRecord& rs = timeline_.ranks[static_cast<size_t>(rank)][si];
      const double f = plan_.factor[static_cast<size_t>(st.report)][static_cast<size_t>(rank)];
      const auto& buckets = *st.buckets;
      rs.start = now(rank, rs);
      const bool first_of_iteration = si == 0 || plan_.steps[si - 1].report != st.report;
      if (first_of_iteration) iteration_start = rs.start;
      if (first_of_iteration && rank == 0 && opt_.collect_trace)
        timeline_.trace.push_back(
            {"iteration " + std::to_string(plan_.report_iteration[static_cast<size_t>(st.report)]), "iteration", 0,
             rs.start, 0.0, nullptr, 0, true});

      run_kernel(
          rank, profile_.h2d, 1.0, [] { return std::string("input to GPU"); }, "data", &rs.h2d);
      // DDP's forward broadcasts the module buffers from rank 0 (broadcast_buffers): the compute
      // stream waits for it.
      if (ddp && broadcast_bytes_ > 0) {
        const double w0 = now(rank, rs);
        Job& j = arrive(si, 0, rank, [&] {
          Job b;
          b.label = "broadcast buffers";
          b.broadcast = true;
          ddp::HookOp op;
          op.bytes = broadcast_bytes_;
          op.name = "broadcast";
          b.ops.push_back(op);
          return b;
        });
        idle(rank);
        wait_until(j.changed, [&] { return j.done; });
        rs.bcast_wait = now(rank, rs) - w0;
      }
      const double tf = now(rank, rs);
      for (size_t l = 0; l < m.layers.size(); ++l)
        run_kernel(
            rank, profile_.forward[l], f, [&] { return m.layers[l].name; }, "forward");
      rs.fwd = now(rank, rs) - tf;
      if (ddp && st.sync && sc_.ddp.find_unused_parameters) {
        // prepare_for_backward walks the autograd graph to find unused parameters (host side).
        rs.traversal = sc_.compute.autograd_traversal_per_param * static_cast<double>(m.params.size());
        idle(rank);
        sg4::this_actor::sleep_for(rs.traversal);
        rs.compute_only += rs.traversal;
      }

      // Backward; with DDP active the hooks copy gradients into buckets and the Reducer says
      // which buckets to launch.
      const double tb = now(rank, rs);
      ddp::Reducer reducer(buckets, m.params.size(),
                           {ddp && st.sync, st.used_map_allreduce, sc_.ddp.gradient_as_bucket_view});
      rs.ready.assign(buckets.size(), 0);
      rs.launch.assign(buckets.size(), 0);
      for (size_t l = m.layers.size(); l-- > 0;) {
        run_kernel(
            rank, profile_.backward[l], f, [&] { return m.layers[l].name; }, "backward");
        if (!reducer.hooks_active()) continue;
        for (int p : layer_params_[l]) {
          run_kernel(
              rank, profile_.copy_in[p], f, [&] { return "copy grad " + m.params[p].name; }, "ddp", &rs.copy);
          const auto r = reducer.mark_ready(p);
          if (r.ready_bucket < 0) continue;
          rs.ready[static_cast<size_t>(r.ready_bucket)] = now(rank, rs);
          for (size_t i = 0; i < r.launched.size(); ++i)
            launch_bucket(rank, si, static_cast<size_t>(r.launched[i]), rs, f,
                          r.launch_used_map && i + 1 == r.launched.size());
        }
      }
      rs.backward_done = now(rank, rs);
      rs.bwd = rs.backward_done - tb;
      if (zero_overlap_ && st.sync && st.last && st.report >= first_steady_report_) zero_hook_step(rank, si, rs, f);

      if (reducer.hooks_active()) {
        // finalize_backward: the compute stream waits for every bucket (and the used map).
        const double w0 = now(rank, rs);
        for (size_t b = 0; b < reducer.finalize_waits(); ++b) {
          Job& j = jobs_[si][bucket_job(b)];
          if (!j.done) idle(rank);
          wait_until(j.changed, [&] { return j.done; });
        }
        rs.finalize_wait = now(rank, rs) - w0;
        if (reducer.copies_out()) {
          for (size_t b = 0; b < buckets.size(); ++b) {
            gpu::Kernel k;
            for (int p : buckets[b].param_indices) {
              k.seconds += profile_.copy_out[p].seconds;
              k.shape.memory_s += profile_.copy_out[p].shape.memory_s;
              k.shape.overhead_s += profile_.copy_out[p].shape.overhead_s;
            }
            run_kernel(
                rank, k, f, [&] { return "copy bucket " + std::to_string(b) + " to grads"; }, "ddp", &rs.copy);
          }
        }
      }
      if (st.last) {
        const double to = now(rank, rs);
        run_kernel(
            rank, profile_.grad_unscale, f, [] { return std::string("GradScaler unscale_"); }, "optimizer");
        run_kernel(
            rank, profile_.clip, f, [] { return std::string("clip_grad_norm_"); }, "optimizer");
        const double waited = optimizer_step(rank, si, rs, f);
        run_kernel(
            rank, profile_.zero_grad, f, [] { return std::string("zero_grad"); }, "optimizer");
        rs.opt += now(rank, rs) - to - waited;
      }
      rs.end = now(rank, rs);
      if (tracing(rank) && (si + 1 == plan_.steps.size() || plan_.steps[si + 1].report != st.report))
        timeline_.trace.push_back({"step " + std::to_string(plan_.report_iteration[static_cast<size_t>(st.report)]),
                                   "step", 0, iteration_start, rs.end - iteration_start, core::Json{{"rank", rank}},
                                   rank});
    }
    idle(rank);
    if (++finished_ranks_ == ranks_)
      for (auto& cv : stream_cv_) cv->notify_all();
  }

  void launch_bucket(int rank, size_t si, size_t b, report::RankStepRecord& rs, double f, bool then_used_map) {
    const ddp::MicroStep& st = plan_.steps[si];
    const auto& comm = (*st.comm)[b];
    // The hook's own kernels (compression) run on the compute stream before the collective.
    for (const auto& op : comm.at_launch)
      run_kernel(
          rank, op.kernel, f, [&] { return op.name; }, "comm hook");
    rs.launch[b] = now(rank, rs);
    Job& j = arrive(si, bucket_job(b), rank, [&] {
      Job job;
      job.stream = static_cast<int>(b % static_cast<size_t>(streams_));
      job.label = "bucket " + std::to_string(b);
      job.ops = comm.chain;
      return job;
    });
    timeline_.jobs[si][bucket_job(b)].bucket = static_cast<int>(b);
    if (then_used_map) {
      // find_unused_parameters: the int32 local-used map of every parameter is all-reduced too.
      arrive(si, bucket_job(st.buckets->size()), rank, [&] {
        Job job;
        job.label = "local_used_map";
        ddp::HookOp op;
        op.name = "all-reduce used map";
        op.bytes = ddp::Reducer::used_map_bytes(sc_.model.params.size());
        job.ops.push_back(op);
        return job;
      });
    }
    if (sc_.streams.cuda_device_max_connections == 1) {
      // One hardware queue: kernels start in launch order, so the compute kernels launched after
      // this collective wait until it has started.
      const double w0 = now(rank, rs);
      if (!j.started) idle(rank);
      wait_until(j.changed, [&] { return j.started; });
      rs.stall += now(rank, rs) - w0;
    }
  }

  // ------------------------------------------------------------------ NCCL streams

  gpu::CommLoad load_of(double bytes, double seconds, int channels) const {
    gpu::CommLoad l;
    l.channels = channels;
    // A ring all-reduce sends and receives 2(N-1)/N of the bytes on every rank.
    if (seconds > 0) l.link_bytes_per_s = 2.0 * 2.0 * (world_ - 1) / world_ * bytes / seconds;
    return l;
  }

  // Runs one phase on the network backend and, with contention, as NCCL kernels on every
  // simulated GPU; returns when both are done.
  // `hop_bytes`: the payload on each ring hop; `counted`: a steady step's (link statistics).
  void run_phase(const collectives::PhaseTiming& phase, double start_latency, const gpu::CommLoad& load,
                 double hop_bytes, bool counted) {
    std::vector<int> kernels;
    const double alone = start_latency + phase.total();
    if (contention_.enabled)
      for (auto& s : shares_) kernels.push_back(s->start_nccl(alone, load));
    backend_->run_phase(clock_, {phase, start_latency, hop_bytes, counted});
    for (size_t r = 0; r < kernels.size(); ++r) shares_[r]->finish_nccl(kernels[r]);
  }

  void comm_stream(int s) {
    auto& q = queues_[static_cast<size_t>(s)];
    while (true) {
      {
        std::unique_lock lock(*mutex_);
        while (!(finished_ranks_ == ranks_ && q.empty()) &&
               (q.empty() || jobs_[q.front().first][q.front().second].arrived < ranks_))
          stream_cv_[static_cast<size_t>(s)]->wait(lock);
        if (q.empty()) return;
      }
      auto [si, ji] = q.front();
      q.pop_front();
      Job& j = jobs_[si][ji];
      report::CollectiveRecord& rec = timeline_.jobs[si][ji];
      if (rec.zero) zero_gate(si, ji, j);
      j.started = true;
      rec.start = sg4::Engine::get_clock();
      j.changed->notify_all();
      bool first_collective = true;
      for (const auto& op : j.ops) {
        if (op.kind == ddp::HookOp::Kind::KERNEL) {
          // Hook callbacks' kernels: on the NCCL stream's timeline, not contended.
          const double t0 = sg4::Engine::get_clock();
          sg4::this_actor::sleep_for(op.kernel.seconds);
          rec.alone += op.kernel.seconds;
          if (opt_.collect_trace) timeline_.trace.push_back({op.name, "comm hook", 1, t0, op.kernel.seconds, nullptr});
          continue;
        }
        const double t0 = sg4::Engine::get_clock();
        // An all-gather (quantization hooks) is one phase, as a broadcast: op.bytes per rank in.
        const bool gather = op.kind == ddp::HookOp::Kind::ALLGATHER;
        const bool one_phase = j.broadcast || gather;
        const collectives::AllReduceTiming timing = j.broadcast ? model_.broadcast(op.bytes)
                                                    : gather    ? model_.allgather(op.bytes * world_)
                                                                : model_.allreduce(op.bytes);
        // A ring all-gather of N x b bytes moves what one phase of an all-reduce of them does.
        const auto load = load_of(gather ? op.bytes * world_ / 2 : op.bytes, timing.total(), timing.channels);
        // Link statistics: a broadcast puts the buffer on every hop, an all-reduce phase (N-1)/N of
        // it, an all-gather of N x b bytes (N-1) x b.
        const double hop_bytes = j.broadcast ? op.bytes
                                 : gather    ? op.bytes * (world_ - 1)
                                             : op.bytes * (world_ - 1) / world_;
        const bool counted = plan_.steps[si].report >= (plan_.has_iteration1 ? 1 : 0);
        run_phase(timing.reduce_scatter, timing.base_latency, load, hop_bytes, counted);
        const double rs_end = sg4::Engine::get_clock();
        if (!one_phase) run_phase(timing.all_gather, 0.0, load, hop_bytes, counted);
        const double t1 = sg4::Engine::get_clock();
        if (first_collective) {
          rec.rs_end = rs_end;
          rec.algorithm = timing.algorithm;
          rec.protocol = timing.protocol;
          rec.channels = timing.channels;
          // NCCL's estimate describes a job of this one collective; a comm hook's kernels or second
          // collective make its time alone something else.
          if (j.ops.size() == 1 && timing.nccl.nccl_model_time > 0) {
            rec.nccl_estimate = timing.nccl.nccl_model_time;
            rec.vs_nccl = collectives::explain_difference(timing.nccl);
          }
        }
        first_collective = false;
        rec.alone += timing.total();
        if (opt_.collect_trace) {
          core::Json args{{"bytes", op.bytes},
                          {"algorithm", timing.algorithm},
                          {"protocol", timing.protocol},
                          {"channels", timing.channels}};
          const int track = 1 + j.stream;
          const char* kind = j.broadcast ? "broadcast" : gather ? "allgather" : "allreduce";
          timeline_.trace.push_back({j.label + " " + op.name, kind, track, t0, t1 - t0, args});
          timeline_.trace.push_back({j.broadcast ? "broadcast"
                                     : gather    ? "all-gather"
                                                 : "reduce-scatter",
                                     "phase", track, t0, rs_end - t0, args});
          if (!one_phase) timeline_.trace.push_back({"all-gather", "phase", track, rs_end, t1 - rs_end, args});
        }
      }
      rec.end = sg4::Engine::get_clock();
      j.done = true;
      for (auto& o : outstanding_) --o;  // every rank had launched it
      j.changed->notify_all();
    }
  }

  // ------------------------------------------------------------------ ZeroRedundancyOptimizer
  // torch/distributed/optim/zero_redundancy_optimizer.py and, with overlap_with_ddp,
  // torch/distributed/algorithms/ddp_comm_hooks/ddp_zero_hook.py (hook_with_zero_step).

  void setup_zero() {
    const auto& z = sc_.training.zero_redundancy_optimizer;
    if (!z.enabled || world_ <= 1) return;
    zero_ = true;
    zero_overlap_ = z.overlap_with_ddp;
    first_steady_report_ = plan_.has_iteration1 ? 1 : 0;
    const auto& m = sc_.model;
    auto scaled = [&](gpu::Kernel k) {
      k.seconds *= profile_.compute_scale;
      k.shape.compute_s *= profile_.compute_scale;
      k.shape.memory_s *= profile_.compute_scale;
      k.shape.overhead_s *= profile_.compute_scale;
      return k;
    };
    if (!zero_overlap_) {
      // step(): the local optimizer on this rank's partition, then _sync_params: for every rank,
      // its parameters (or, with parameters_as_bucket_view, its one flat bucket; a rank holding
      // nothing broadcasts a 1-element dummy) broadcast from it, all on one process group.
      const auto shards = memory::zero_partition(m, world_);
      for (const auto& sh : shards) {
        shard_step_.push_back(scaled(gpu::optimizer_kernel(sc_, sh, profile_.peak_flops)));
        max_shard_step_ = std::max(max_shard_step_, shard_step_.back().seconds);
      }
      for (size_t r = 0; r < static_cast<size_t>(world_); ++r) {
        if (z.parameters_as_bucket_view) {
          ddp::HookOp op;
          op.name = "rank " + std::to_string(r) + " bucket";
          op.bytes = 4;  // torch.zeros(1) for a rank without parameters
          if (r < shards.size()) {
            double b = 0;
            for (int p : shards[r])
              if (m.params[static_cast<size_t>(p)].requires_grad) b += m.params[static_cast<size_t>(p)].bytes();
            if (b > 0) op.bytes = b;
          }
          zero_ops_.push_back(op);
        } else if (r < shards.size()) {
          for (int p : shards[r]) {
            ddp::HookOp op;
            op.name = m.params[static_cast<size_t>(p)].name;
            op.bytes = m.params[static_cast<size_t>(p)].bytes();
            zero_ops_.push_back(op);
          }
        }
      }
      zero_jobs_ = 1;
      return;
    }
    // overlap_with_ddp: the first iterations are warm-up (no step: ZeRO waits for DDP's rebuilt
    // buckets, saves them in the next iteration and initializes at the one after), so the steady
    // state reported is one iteration later than DDP's own.
    for (size_t r = static_cast<size_t>(first_steady_report_); r < plan_.report_iteration.size(); ++r)
      ++plan_.report_iteration[r];
    for (auto& st : plan_.steps)
      if (st.report >= first_steady_report_) ++st.iteration;
    // Bucket i belongs to rank i % world (shard_buckets=False): its step over the bucket's
    // parameters and one broadcast of their flattened data from that rank.
    for (const auto& b : plan_.buckets.steady_state) {
      bucket_step_.push_back(scaled(gpu::optimizer_kernel(sc_, b.param_indices, profile_.peak_flops)));
      bucket_bytes_.push_back(b.bytes);
    }
    zero_jobs_ = bucket_step_.size();
  }

  size_t zero_job(size_t si, size_t k) const { return 2 + plan_.steps[si].buckets->size() + k; }

  // A ZeRO broadcast job: `ops` broadcast in order on NCCL stream 0.
  Job& arrive_zero(size_t si, size_t k, int rank, std::vector<ddp::HookOp> ops, double not_before) {
    // Marked inside `make`: arrive() may yield to the NCCL stream once the job is queued.
    return arrive(si, zero_job(si, k), rank, [&] {
      auto& rec = timeline_.jobs[si][zero_job(si, k)];
      rec.zero = true;
      rec.zero_broadcasts = static_cast<int>(ops.size());
      rec.zero_bytes = 0;
      for (const auto& op : ops) rec.zero_bytes += op.bytes;
      Job b;
      b.label = "ZeRO broadcast";
      b.broadcast = true;
      b.ops = ops;
      b.not_before = not_before;
      return b;
    });
  }

  void wait_zero_jobs(int rank, size_t si, report::RankStepRecord& rs, double& waited) {
    const double w0 = now(rank, rs);
    for (size_t k = 0; k < zero_jobs_; ++k) {
      Job& j = jobs_[si][zero_job(si, k)];
      if (!j.done) idle(rank);
      wait_until(j.changed, [&] { return j.done; });
    }
    const double w = now(rank, rs) - w0;
    rs.zero_wait += w;
    waited += w;
  }

  // The optimizer step after the backward (the training loop's optimizer.step()); returns the time
  // the compute stream waited for communication in it.
  double optimizer_step(int rank, size_t si, report::RankStepRecord& rs, double f) {
    if (!zero_) {
      run_kernel(
          rank, profile_.optimizer, f, [&] { return "optimizer step (" + sc_.training.optimizer + ")"; }, "optimizer");
      return 0;
    }
    if (zero_overlap_) return 0;  // the step runs in DDP's comm hook (zero_hook_step), or not yet (warm-up)
    const double t0 = now(rank, rs);
    const size_t r = static_cast<size_t>(rank);
    if (r < shard_step_.size())
      run_kernel(
          rank, shard_step_[r], f,
          [&] {
            return "ZeRO optimizer step on rank " + std::to_string(rank) + "'s shard (" + sc_.training.optimizer + ")";
          },
          "optimizer");
    now(rank, rs);
    // The representative rank stands for all: the broadcasts start once the largest shard is stepped.
    const double not_before = ranks_ < world_ ? t0 + max_shard_step_ * f : -1;
    arrive_zero(si, 0, rank, zero_ops_, not_before);
    double waited = 0;
    wait_zero_jobs(rank, si, rs, waited);
    return waited;
  }

  // hook_with_zero_step, in the last bucket's hook (the end of the backward): for every bucket in
  // order, the rank owning it waits for its all-reduce and steps it; every rank then issues that
  // bucket's broadcast; then wait_for_broadcasts.
  void zero_hook_step(int rank, size_t si, report::RankStepRecord& rs, double f) {
    zero_hook_time_ = now(rank, rs);
    const double waits_before = rs.zero_wait;
    for (size_t b = 0; b < bucket_step_.size(); ++b) {
      if (b % static_cast<size_t>(world_) == static_cast<size_t>(rank)) {
        Job& ar = jobs_[si][bucket_job(b)];
        const double w0 = now(rank, rs);
        if (!ar.done) idle(rank);
        wait_until(ar.changed, [&] { return ar.done; });
        rs.zero_wait += now(rank, rs) - w0;
        run_kernel(
            rank, bucket_step_[b], f, [&] { return "ZeRO optimizer step, bucket " + std::to_string(b); }, "optimizer");
        now(rank, rs);
      }
      ddp::HookOp op;
      op.name = "bucket " + std::to_string(b) + " from rank " + std::to_string(b % static_cast<size_t>(world_));
      op.bytes = bucket_bytes_[b];
      arrive_zero(si, b, rank, {op}, -1);
    }
    double waited = 0;
    wait_zero_jobs(rank, si, rs, waited);
    rs.opt += now(rank, rs) - zero_hook_time_ - (rs.zero_wait - waits_before);  // the steps, not the waits
  }

  // On the NCCL stream, before a ZeRO broadcast: with a representative rank, the ranks it stands
  // for must have stepped their shard (not_before) or, with overlap_with_ddp, the owner of this
  // bucket its buckets up to this one, each after its all-reduce.
  void zero_gate(size_t si, size_t ji, Job& j) {
    double gate = j.not_before;
    if (zero_overlap_ && ranks_ < world_) {
      const size_t b = ji - zero_job(si, 0);
      const size_t owner = b % static_cast<size_t>(world_);
      if (owner != 0) {
        const double f = plan_.factor[static_cast<size_t>(plan_.steps[si].report)][0];
        double t = zero_hook_time_;
        for (size_t k = owner; k <= b; k += static_cast<size_t>(world_)) {
          Job& ar = jobs_[si][bucket_job(k)];
          wait_until(ar.changed, [&] { return ar.done; });
          t = std::max(t, timeline_.jobs[si][bucket_job(k)].end) + bucket_step_[k].seconds * f;
        }
        gate = t;
      }
    }
    const double now_s = sg4::Engine::get_clock();
    if (gate > now_s) sg4::this_actor::sleep_for(gate - now_s);
  }

  // ------------------------------------------------------------------ report

  report::StepReport build_report() {
    report::StepReport r;
    r.scenario = sc_.name;
    r.model = sc_.model.name;
    r.cluster = sc_.cluster.name;
    r.gpu = sc_.cluster.gpu.name;
    r.world_size = world_;
    r.nodes = sc_.cluster.nodes;
    r.gpus_per_node = sc_.cluster.gpus_per_node;
    r.batch_size = sc_.training.batch_size;
    r.backend = backend_->name();
    r.fidelity = config::to_string(sc_.simulation.fidelity);
    r.bucket_cap_mb = sc_.ddp.bucket_cap_mb;
    r.grad_bytes = sc_.model.grad_bytes();
    r.num_params = static_cast<int>(sc_.model.params.size());
    r.rebuilt = plan_.buckets.rebuilt;
    r.comm_hook = config::to_string(sc_.ddp.comm_hook);
    r.explicit_ranks = ranks_ > 1;
    r.contention = contention_.enabled;
    r.compute_scale = profile_.compute_scale;
    r.measured_layers = profile_.measured_layers;
    r.compute_provenance = profile_.provenance;
    r.compute_scale_per = profile_.compute_scale_per;
    r.transfer_from = profile_.transfer_from;
    r.transfer_from_device = profile_.transfer_from_device;
    r.transfer_to = profile_.transfer_to;
    for (const auto& c : profile_.transfer)
      r.transfer_classes.push_back(
          {c.name, c.measured_s * profile_.compute_scale, c.transferred_s * profile_.compute_scale, c.factor()});
    r.model_flops_per_micro_step = profile_.model_flops;
    r.mfu_peak_flops = profile_.mfu_peak;
    r.mfu_peak_dtype = profile_.mfu_peak_dtype;
    r.seq_len = profile_.seq_len;
    r.image_size = profile_.image_size;
    r.attention = profile_.attention;
    report::fill_iterations(timeline_, r);
    r.trace = std::move(timeline_.trace);
    r.traced_ranks = traced_ranks_;
    r.flows = backend_->flows();
    r.flows_reused = backend_->flows_reused();
    r.ranks = config::to_string(sc_.simulation.ranks);
    r.memory = memory::estimate_memory(sc_);
    const auto& z = sc_.training.zero_redundancy_optimizer;
    r.zero_redundancy_optimizer = !z.enabled ? "off" : z.overlap_with_ddp ? "overlap_with_ddp" : "on";
    r.link_classes = backend_->link_totals();
    r.link_steps = timeline_.steady_steps;
    r.links_note = backend_->links_note();
    r.link_counters = backend_->link_counters();
    return r;
  }

  const config::Scenario& sc_;
  RunOptions opt_;
  gpu::ComputeProfile profile_;
  collectives::CollectiveModel model_;
  int world_;
  int ranks_;    // ranks simulated explicitly (1: the representative rank)
  int streams_;  // NCCL streams (process groups); 0 without DDP
  gpu::ContentionParams contention_;
  double broadcast_bytes_ = 0;
  // ZeroRedundancyOptimizer (setup_zero)
  bool zero_ = false, zero_overlap_ = false;
  int first_steady_report_ = 0;
  size_t zero_jobs_ = 0;                  // ZeRO broadcast jobs per micro-step, after the used map
  std::vector<gpu::Kernel> shard_step_;   // per rank holding parameters: its shard's step
  double max_shard_step_ = 0;             // the largest of them
  std::vector<ddp::HookOp> zero_ops_;     // _sync_params' broadcasts, in order
  std::vector<gpu::Kernel> bucket_step_;  // overlap_with_ddp: per steady-state bucket, its step
  std::vector<double> bucket_bytes_;      // and its bytes
  double zero_hook_time_ = 0;             // when the representative rank ran the hook
  std::vector<std::vector<int>> layer_params_;
  ddp::StepPlan plan_;
  report::Timeline timeline_;
  std::vector<std::vector<Job>> jobs_;  // [micro-step][job]: 0 broadcast, 1+b bucket b, 1+B used map
  std::vector<sg4::Host*> hosts_;       // one per simulated rank
  std::unique_ptr<network::Backend> backend_;
  ActorClock clock_;
  std::vector<std::unique_ptr<GpuShare>> shares_;
  std::vector<std::deque<std::pair<size_t, size_t>>> queues_;
  std::vector<sg4::ConditionVariablePtr> stream_cv_;
  sg4::MutexPtr mutex_;
  int finished_ranks_ = 0;
  std::vector<std::vector<Queued>> queued_;       // per simulated rank
  std::vector<std::vector<double>> rate_factor_;  // per simulated rank: scratch for now()
  std::vector<int> outstanding_;                  // per simulated rank: launched collectives not yet done
  std::vector<char> traced_;                      // per simulated rank: its kernels go into the trace
  std::vector<report::TracedRank> traced_ranks_;
};

}  // namespace

std::vector<report::TracedRank> select_traced_ranks(const std::vector<std::vector<double>>& factor, int ranks) {
  std::vector<report::TracedRank> out;
  if (ranks <= kTraceAllRanksUpTo) {
    for (int r = 0; r < ranks; ++r) out.push_back({r, ""});
    return out;
  }
  std::vector<double> total(static_cast<size_t>(ranks), 0.0);
  for (const auto& step : factor)
    for (int r = 0; r < ranks && r < static_cast<int>(step.size()); ++r) total[static_cast<size_t>(r)] += step[r];
  std::vector<int> order(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r) order[static_cast<size_t>(r)] = r;
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return total[static_cast<size_t>(a)] < total[static_cast<size_t>(b)]; });
  // Slowest: the largest total, the lowest rank among equals.
  int slowest = order.back();
  for (int r : order)
    if (total[static_cast<size_t>(r)] == total[static_cast<size_t>(slowest)]) {
      slowest = r;
      break;
    }
  const int median = order[static_cast<size_t>((ranks - 1) / 2)];
  auto add = [&](int rank, const std::string& role) {
    for (auto& t : out)
      if (t.rank == rank) {
        t.role += ", " + role;
        return;
      }
    out.push_back({rank, role});
  };
  add(0, "rank 0");
  add(slowest, "slowest");
  add(median, "median");
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.rank < b.rank; });
  return out;
}

report::StepReport simulate(const config::Scenario& scenario, const RunOptions& options) {
  if (scenario.training.wrapper == config::Wrapper::DATA_PARALLEL) return simulate_data_parallel(scenario, options);
  StepSimulator sim(scenario, options);
  return sim.run();
}

}  // namespace ddpsim::engine
