#include "engine/simulation.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <simgrid/s4u.hpp>
#include <string>

#include "core/error.hpp"
#include "ddp/bucketizer.hpp"
#include "ddp/comm_hooks.hpp"
#include "engine/gpu_share.hpp"
#include "gpu/compute_model.hpp"
#include "network/analytic.hpp"
#include "network/flow.hpp"

namespace sg4 = simgrid::s4u;

namespace ddpsim::engine {
namespace {

// Work amounts are seconds times this speed; SimGrid's work precision (1e-5) is then 1e-14 s.
constexpr double kGpuSpeed = 1e9;

// One forward/backward pass. An optimizer step is `micro_steps` of them; all but the last run
// under no_sync() (no hooks, no communication).
struct MicroStep {
  int iteration = 1;  // DDP's iteration number of the optimizer step it belongs to
  int report = 0;     // index of the report (optimizer step) it belongs to
  bool sync = true;   // gradients are reduced in this pass
  bool last = true;   // the optimizer runs after it
  const std::vector<ddp::Bucket>* buckets = nullptr;
  const std::vector<ddp::BucketComm>* comm = nullptr;
  bool used_map_allreduce = false;
};

// A chain of collectives on one NCCL stream, shared by every simulated rank: it starts when
// every rank has launched it and the stream is free.
struct Job {
  int stream = 0;
  int bucket = -1;  // -1: buffer broadcast or used-map all-reduce
  std::string label;
  std::vector<ddp::HookOp> ops;
  bool broadcast = false;
  int arrived = 0;
  double launch0 = 0, all_launched = 0, start = 0, rs_end = 0, end = 0, alone = 0;
  bool started = false, done = false;
  std::string algorithm, protocol;  // of its (first) all-reduce, as NCCL picks them
  int channels = 0;
};

struct RankStep {
  double start = 0, end = 0, fwd = 0, bwd = 0, finalize_wait = 0, bcast_wait = 0, stall = 0, opt = 0, copy = 0;
  double compute_only = 0, contention = 0, traversal = 0, h2d = 0, backward_done = 0;
  std::vector<double> ready, launch;  // per bucket
};

// Deterministic lognormal factors with mean 1 (Box-Muller on mt19937_64's raw output, so the
// numbers do not depend on the standard library's distributions).
class Jitter {
 public:
  explicit Jitter(uint64_t seed) : rng_(seed) {}
  double lognormal_mean_one(double cv) {
    if (cv <= 0) return 1.0;
    const double sigma2 = std::log(1 + cv * cv);
    const double u1 = (static_cast<double>(rng_() >> 11) + 0.5) / 9007199254740992.0;
    const double u2 = (static_cast<double>(rng_() >> 11) + 0.5) / 9007199254740992.0;
    const double z = std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2);
    return std::exp(-sigma2 / 2 + std::sqrt(sigma2) * z);
  }

 private:
  std::mt19937_64 rng_;
};

class StepSimulator {
 public:
  StepSimulator(const config::Scenario& sc, const RunOptions& opt)
      : sc_(sc),
        opt_(opt),
        profile_(gpu::build_compute_profile(sc)),
        plans_(ddp::plan_buckets(sc.model, sc.ddp)),
        analytic_(sc.cluster, sc.collective),
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
    for (const auto& b : sc.model.buffers) buffer_bytes_ += static_cast<double>(b.numel) * config::dtype_size(b.dtype);

    contention_.enabled = sc.contention.enabled && world_ > 1;
    contention_.hbm_bytes_per_nccl_byte =
        sc.contention.hbm_bytes_per_nccl_byte.value_or(sc.cluster.gpu.hbm_bytes_per_nccl_byte.value_or(2.5));
    contention_.comm_slowdown = sc.contention.comm_slowdown.value_or(sc.cluster.gpu.comm_slowdown.value_or(5.5 / 4.7));
    contention_.max_slowdown = sc.contention.max_slowdown;
    contention_.fixed_compute_slowdown = sc.contention.compute_slowdown;
    contention_.nccl_high_priority = sc.streams.nccl_high_priority;

    ddp::HookCosts costs{profile_.peak_flops, sc.cluster.gpu.hbm_bandwidth, sc.compute};
    for (const auto& b : plans_.iteration1)
      comm_iter1_.push_back(ddp::plan_bucket_comm(b, sc.model, sc.ddp, false, costs));
    // PowerSGD compresses from start_powerSGD_iter on: the steady state reported is after it.
    for (const auto& b : plans_.steady_state)
      comm_steady_.push_back(ddp::plan_bucket_comm(b, sc.model, sc.ddp, true, costs));

    // Straggler factors: per step (all micro-steps of it) and rank, drawn in a fixed order.
    const int k = sc.training.gradient_accumulation_steps;
    steady_steps_ = ranks_ > 1 ? sc.stragglers.steps : 1;
    const int reports = (opt.simulate_iteration1 ? 1 : 0) + steady_steps_;
    Jitter jitter(sc.simulation.seed);
    factor_.assign(static_cast<size_t>(reports), std::vector<double>(static_cast<size_t>(ranks_), 1.0));
    for (int s = 0; s < reports; ++s)
      for (int r = 0; r < ranks_; ++r) {
        double f = jitter.lognormal_mean_one(sc.stragglers.jitter_cv);
        for (const auto& [rank, slow] : sc.stragglers.slow_ranks)
          if (rank == r) f *= slow;
        factor_[s][r] = f;
      }
    const bool used_map = sc.ddp.find_unused_parameters && !sc.ddp.static_graph;
    const int steady_iteration = plans_.rebuilt ? plans_.rebuild_iteration : 2;
    int report = 0;
    auto add_step = [&](int iteration, const std::vector<ddp::Bucket>& b, const std::vector<ddp::BucketComm>& c) {
      for (int m = 0; m < k; ++m) steps_.push_back({iteration, report, m == k - 1, m == k - 1, &b, &c, used_map});
      report_iteration_.push_back(iteration);
      ++report;
    };
    if (opt.simulate_iteration1) add_step(1, plans_.iteration1, comm_iter1_);
    for (int s = 0; s < steady_steps_; ++s) add_step(steady_iteration + s, plans_.steady_state, comm_steady_);
    // Sized once: actors hold references to jobs while others arrive.
    jobs_.resize(steps_.size());
    for (size_t i = 0; i < steps_.size(); ++i) jobs_[i].resize(2 + steps_[i].buckets->size());
    rank_steps_.assign(static_cast<size_t>(ranks_), std::vector<RankStep>(steps_.size()));
  }

  report::StepReport run() {
    std::string arg0 = "ddpsim";
    std::string log = "--log=root.thresh:critical";
    char* argv[] = {arg0.data(), log.data(), nullptr};
    int argc = 2;
    sg4::Engine e(&argc, argv);
    network::FlowNetwork::configure(e);
    const double speed = contention_.enabled ? kGpuSpeed * GpuShare::kCapacity : kGpuSpeed;
    flow_ = std::make_unique<network::FlowNetwork>(e, sc_.cluster, analytic_.ring(), speed);

    mutex_ = sg4::Mutex::create();
    cv_ = sg4::ConditionVariable::create();
    queues_.resize(static_cast<size_t>(std::max(streams_, 1)));
    for (int r = 0; r < ranks_; ++r) {
      shares_.push_back(std::make_unique<GpuShare>(flow_->host(r), kGpuSpeed, sc_.cluster.gpu,
                                                   sc_.compute.memory_efficiency, contention_));
      sg4::Actor::create("compute-stream-" + std::to_string(r), flow_->host(r), [this, r] { compute_stream(r); });
    }
    for (int s = 0; s < streams_; ++s)
      sg4::Actor::create("nccl-stream-" + std::to_string(s), flow_->host(0), [this, s] { comm_stream(s); });
    e.run();
    if (finished_ranks_ != ranks_) throw core::SimulationError("simulation ended before every rank finished its steps");
    return build_report();
  }

 private:
  // ------------------------------------------------------------------ compute stream

  double run_kernel(int rank, const gpu::Kernel& k, double factor, const std::string& name, const char* cat,
                    RankStep& rs) {
    if (k.seconds <= 0) return 0;
    gpu::KernelShape shape = k.shape;
    shape.compute_s *= factor;
    shape.memory_s *= factor;
    shape.overhead_s *= factor;
    const double alone = k.seconds * factor;
    const double t0 = sg4::Engine::get_clock();
    double took;
    if (contention_.enabled) {
      took = shares_[static_cast<size_t>(rank)]->run_compute(alone, shape);
    } else {
      sg4::this_actor::execute(alone * kGpuSpeed);
      took = sg4::Engine::get_clock() - t0;
    }
    rs.compute_only += alone;
    if (contention_.enabled) rs.contention += std::max(0.0, took - alone);
    if (opt_.collect_trace && rank == 0) trace_.push_back({name, cat, 0, t0, took, nullptr});
    return took;
  }

  template <class Pred>
  void wait_until(Pred pred) {
    std::unique_lock lock(*mutex_);
    while (!pred()) cv_->wait(lock);
  }

  Job& arrive(size_t step, size_t index, int rank, const std::function<Job()>& make) {
    Job& j = jobs_[step].at(index);
    if (j.arrived == 0) {
      j = make();
      queues_[static_cast<size_t>(j.stream)].push_back({step, index});
    }
    const double now = sg4::Engine::get_clock();
    if (rank == 0) j.launch0 = now;
    if (++j.arrived == ranks_) j.all_launched = now;
    cv_->notify_all();
    return j;
  }

  size_t bucket_job(size_t b) const { return 1 + b; }
  size_t used_map_job(size_t nbuckets) const { return 1 + nbuckets; }

  void compute_stream(int rank) {
    const auto& m = sc_.model;
    const bool ddp = world_ > 1;
    for (size_t si = 0; si < steps_.size(); ++si) {
      const MicroStep& st = steps_[si];
      RankStep& rs = rank_steps_[static_cast<size_t>(rank)][si];
      const double f = factor_[static_cast<size_t>(st.report)][static_cast<size_t>(rank)];
      const auto& buckets = *st.buckets;
      const double t0 = sg4::Engine::get_clock();
      rs.start = t0;

      rs.h2d = run_kernel(rank, profile_.h2d, 1.0, "input to GPU", "data", rs);
      // DDP's forward broadcasts the module buffers from rank 0 (broadcast_buffers): the compute
      // stream waits for it.
      if (ddp && sc_.ddp.broadcast_buffers && buffer_bytes_ > 0) {
        const double w0 = sg4::Engine::get_clock();
        Job& j = arrive(si, 0, rank, [&] {
          Job b;
          b.label = "broadcast buffers";
          b.broadcast = true;
          ddp::HookOp op;
          op.bytes = buffer_bytes_;
          op.name = "broadcast";
          b.ops.push_back(op);
          return b;
        });
        wait_until([&] { return j.done; });
        rs.bcast_wait = sg4::Engine::get_clock() - w0;
      }
      const double tf = sg4::Engine::get_clock();
      for (size_t l = 0; l < m.layers.size(); ++l)
        run_kernel(rank, profile_.forward[l], f, m.layers[l].name, "forward", rs);
      rs.fwd = sg4::Engine::get_clock() - tf;
      if (ddp && st.sync && sc_.ddp.find_unused_parameters) {
        // prepare_for_backward walks the autograd graph to find unused parameters (host side).
        rs.traversal = sc_.compute.autograd_traversal_per_param * static_cast<double>(m.params.size());
        sg4::this_actor::sleep_for(rs.traversal);
        rs.compute_only += rs.traversal;
      }

      // Backward; with DDP active the hooks copy gradients into buckets and launch them in order.
      const double tb = sg4::Engine::get_clock();
      std::vector<int> pending(buckets.size()), locator(m.params.size(), -1);
      for (size_t b = 0; b < buckets.size(); ++b) {
        pending[b] = static_cast<int>(buckets[b].param_indices.size());
        for (int p : buckets[b].param_indices) locator[p] = static_cast<int>(b);
      }
      rs.ready.assign(buckets.size(), 0);
      rs.launch.assign(buckets.size(), 0);
      size_t next_launch = 0;
      for (size_t l = m.layers.size(); l-- > 0;) {
        run_kernel(rank, profile_.backward[l], f, m.layers[l].name, "backward", rs);
        if (!ddp || !st.sync) continue;
        for (int p : layer_params_[l]) {
          rs.copy += run_kernel(rank, profile_.copy_in[p], f, "copy grad " + m.params[p].name, "ddp", rs);
          const int b = locator[p];
          if (b < 0 || --pending[b] > 0) continue;
          rs.ready[b] = sg4::Engine::get_clock();
          // Reducer::mark_variable_ready: launch every consecutive ready bucket, in index order.
          while (next_launch < buckets.size() && pending[next_launch] == 0)
            launch_bucket(rank, si, next_launch++, rs, f);
        }
      }
      rs.backward_done = sg4::Engine::get_clock();
      rs.bwd = rs.backward_done - tb;

      if (ddp && st.sync) {
        // finalize_backward: the compute stream waits for every bucket (and the used map).
        const double w0 = sg4::Engine::get_clock();
        const size_t n = buckets.size() + (st.used_map_allreduce ? 1 : 0);
        wait_until([&] {
          for (size_t b = 0; b < n; ++b)
            if (!jobs_[si][1 + b].done) return false;
          return true;
        });
        rs.finalize_wait = sg4::Engine::get_clock() - w0;
        if (!sc_.ddp.gradient_as_bucket_view) {
          for (size_t b = 0; b < buckets.size(); ++b) {
            gpu::Kernel k;
            for (int p : buckets[b].param_indices) {
              k.seconds += profile_.copy_out[p].seconds;
              k.shape.memory_s += profile_.copy_out[p].shape.memory_s;
              k.shape.overhead_s += profile_.copy_out[p].shape.overhead_s;
            }
            rs.copy += run_kernel(rank, k, f, "copy bucket " + std::to_string(b) + " to grads", "ddp", rs);
          }
        }
      }
      if (st.last) {
        const double to = sg4::Engine::get_clock();
        run_kernel(rank, profile_.grad_unscale, f, "GradScaler unscale_", "optimizer", rs);
        run_kernel(rank, profile_.clip, f, "clip_grad_norm_", "optimizer", rs);
        run_kernel(rank, profile_.optimizer, f, "optimizer step (" + sc_.training.optimizer + ")", "optimizer", rs);
        run_kernel(rank, profile_.zero_grad, f, "zero_grad", "optimizer", rs);
        rs.opt = sg4::Engine::get_clock() - to;
      }
      rs.end = sg4::Engine::get_clock();
    }
    if (contention_.enabled) shares_[static_cast<size_t>(rank)]->close();
    ++finished_ranks_;
    cv_->notify_all();
  }

  void launch_bucket(int rank, size_t si, size_t b, RankStep& rs, double f) {
    const MicroStep& st = steps_[si];
    const auto& comm = (*st.comm)[b];
    // The hook's own kernels (compression) run on the compute stream before the collective.
    for (const auto& op : comm.at_launch) run_kernel(rank, op.kernel, f, op.name, "comm hook", rs);
    rs.launch[b] = sg4::Engine::get_clock();
    Job& j = arrive(si, bucket_job(b), rank, [&] {
      Job job;
      job.stream = static_cast<int>(b % static_cast<size_t>(streams_));
      job.bucket = static_cast<int>(b);
      job.label = "bucket " + std::to_string(b);
      job.ops = comm.chain;
      return job;
    });
    if (b + 1 == st.buckets->size() && st.used_map_allreduce) {
      // find_unused_parameters: the int32 local-used map of every parameter is all-reduced too.
      arrive(si, used_map_job(st.buckets->size()), rank, [&] {
        Job job;
        job.label = "local_used_map";
        ddp::HookOp op;
        op.name = "all-reduce used map";
        op.bytes = 4.0 * static_cast<double>(sc_.model.params.size());
        job.ops.push_back(op);
        return job;
      });
    }
    if (sc_.streams.cuda_device_max_connections == 1) {
      // One hardware queue: kernels start in launch order, so the compute kernels launched after
      // this collective wait until it has started.
      const double w0 = sg4::Engine::get_clock();
      wait_until([&] { return j.started; });
      rs.stall += sg4::Engine::get_clock() - w0;
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

  // Runs one phase on the network (flows or a sleep) and, with contention, as NCCL kernels on
  // every simulated GPU; returns when both are done.
  void run_phase(const collectives::PhaseTiming& phase, double extra_latency, const gpu::CommLoad& load) {
    std::vector<sg4::ExecPtr> kernels;
    const double alone = extra_latency + phase.total();
    if (contention_.enabled)
      for (auto& s : shares_) kernels.push_back(s->start_nccl(alone, load));
    if (sc_.simulation.backend == config::Backend::ANALYTIC) {
      if (!contention_.enabled) sg4::this_actor::sleep_for(alone);
    } else {
      sg4::this_actor::sleep_for(extra_latency);
      flow_->ring_phase(phase, sc_.simulation.fidelity);
    }
    for (size_t r = 0; r < kernels.size(); ++r) shares_[r]->finish_nccl(kernels[r]);
  }

  void comm_stream(int s) {
    auto& q = queues_[static_cast<size_t>(s)];
    while (true) {
      {
        std::unique_lock lock(*mutex_);
        while (!(finished_ranks_ == ranks_ && q.empty()) &&
               (q.empty() || jobs_[q.front().first][q.front().second].arrived < ranks_))
          cv_->wait(lock);
        if (q.empty()) return;
      }
      auto [si, ji] = q.front();
      q.pop_front();
      Job& j = jobs_[si][ji];
      j.started = true;
      j.start = sg4::Engine::get_clock();
      cv_->notify_all();
      bool first_collective = true;
      for (const auto& op : j.ops) {
        if (op.kind == ddp::HookOp::Kind::KERNEL) {
          // Hook callbacks' kernels: on the NCCL stream's timeline, not contended.
          const double t0 = sg4::Engine::get_clock();
          sg4::this_actor::sleep_for(op.kernel.seconds);
          j.alone += op.kernel.seconds;
          if (opt_.collect_trace) trace_.push_back({op.name, "comm hook", 1, t0, op.kernel.seconds, nullptr});
          continue;
        }
        const double t0 = sg4::Engine::get_clock();
        collectives::AllReduceTiming timing;
        if (j.broadcast) {
          // Ring broadcast: one pass of the bytes around the ring, pipelined.
          timing.algorithm = "Ring";
          timing.reduce_scatter.latency = analytic_.ring().phase_latency;
          timing.reduce_scatter.transfer = op.bytes / analytic_.ring().bottleneck_bw;
        } else {
          timing = analytic_.allreduce(op.bytes);
        }
        const auto load = load_of(op.bytes, timing.total(), timing.channels);
        run_phase(timing.reduce_scatter, timing.base_latency, load);
        const double rs_end = sg4::Engine::get_clock();
        if (!j.broadcast) run_phase(timing.all_gather, 0.0, load);
        const double t1 = sg4::Engine::get_clock();
        if (first_collective) {
          j.rs_end = rs_end;
          j.algorithm = timing.algorithm;
          j.protocol = timing.protocol;
          j.channels = timing.channels;
        }
        first_collective = false;
        j.alone += timing.total();
        if (opt_.collect_trace) {
          core::Json args{{"bytes", op.bytes},
                          {"algorithm", timing.algorithm},
                          {"protocol", timing.protocol},
                          {"channels", timing.channels}};
          trace_.push_back(
              {j.label + " " + op.name, j.broadcast ? "broadcast" : "allreduce", 1 + j.stream, t0, t1 - t0, args});
          trace_.push_back(
              {j.broadcast ? "broadcast" : "reduce-scatter", "phase", 1 + j.stream, t0, rs_end - t0, args});
          if (!j.broadcast) trace_.push_back({"all-gather", "phase", 1 + j.stream, rs_end, t1 - rs_end, args});
        }
      }
      j.end = sg4::Engine::get_clock();
      j.done = true;
      cv_->notify_all();
    }
  }

  // ------------------------------------------------------------------ report

  static double percentile(std::vector<double> v, double q) {
    std::sort(v.begin(), v.end());
    // Nearest rank.
    size_t idx = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
    idx = std::clamp<size_t>(idx, 1, v.size()) - 1;
    return v[idx];
  }

  report::IterationReport report_for(int report) {
    report::IterationReport rep;
    rep.iteration = report_iteration_[static_cast<size_t>(report)];
    const auto& r0 = rank_steps_[0];
    bool first = true;
    rep.micro_steps = 0;
    for (size_t si = 0; si < steps_.size(); ++si) {
      const MicroStep& st = steps_[si];
      if (st.report != report) continue;
      const RankStep& rs = r0[si];
      if (first) rep.start_s = rs.start;
      first = false;
      ++rep.micro_steps;
      rep.step_time_s = rs.end - rep.start_s;
      rep.forward_s += rs.fwd;
      rep.backward_compute_s += rs.bwd;
      rep.ddp_copy_s += rs.copy;
      rep.finalize_wait_s += rs.finalize_wait;
      rep.optimizer_s += rs.opt;
      rep.compute_only_s += rs.compute_only;
      rep.contention_s += rs.contention;
      rep.h2d_s += rs.h2d;
      rep.autograd_traversal_s += rs.traversal;
      rep.samples += sc_.training.batch_size;
      double waits = rs.finalize_wait + rs.bcast_wait + rs.stall;
      if (st.sync && ranks_ > 1) {
        double slowest = 0;
        for (const auto& rr : rank_steps_) slowest = std::max(slowest, rr[si].backward_done);
        rep.straggler_wait_s += std::min(rs.finalize_wait, std::max(0.0, slowest - rs.backward_done));
      }
      rep.comm_exposed_s += waits;
      const auto& jobs = jobs_[si];
      for (const Job& j : jobs) {
        if (j.arrived == 0) continue;
        rep.comm_alone_s += j.alone;
        rep.comm_busy_s += j.end - j.start;
      }
      if (!st.sync || world_ <= 1) continue;
      // Bucket rows: the synced micro-step of this optimizer step.
      rep.buckets.clear();
      double prev_end = rs.backward_done;
      for (size_t b = 0; b < st.buckets->size(); ++b) {
        const Job& j = jobs[bucket_job(b)];
        report::BucketRow row;
        row.index = static_cast<int>(b);
        row.bytes = (*st.buckets)[b].bytes;
        row.num_tensors = static_cast<int>((*st.buckets)[b].param_indices.size());
        row.ready_s = rs.ready[b] - rs.start;
        row.launch_s = rs.launch[b] - rs.start;
        row.start_s = j.start - rs.start;
        row.rs_end_s = j.rs_end - rs.start;
        row.end_s = j.end - rs.start;
        row.alone_s = j.alone;
        row.exposed_s = std::max(0.0, j.end - std::max(prev_end, rs.backward_done));
        row.algorithm = j.algorithm;
        row.protocol = j.protocol;
        row.channels = j.channels;
        prev_end = std::max(prev_end, j.end);
        rep.buckets.push_back(row);
      }
    }
    rep.comm_exposed_s -= rep.straggler_wait_s;
    rep.exposed_comm_s = rep.step_time_s - rep.compute_only_s;
    // The clock and the sums add the same durations in different orders: drop rounding noise.
    if (std::abs(rep.exposed_comm_s) < 1e-12 * rep.step_time_s) rep.exposed_comm_s = 0.0;
    if (rep.comm_alone_s > 0) rep.overlap_ratio = 1.0 - rep.exposed_comm_s / rep.comm_alone_s;
    rep.comm_hidden_s = std::max(0.0, rep.comm_busy_s - rep.comm_exposed_s);
    rep.micro_step_time_s = rep.step_time_s / rep.micro_steps;
    rep.comm_alone_per_sample_s = rep.samples > 0 ? rep.comm_alone_s / rep.samples : 0.0;
    // A data loader slower than the step holds every step to its pace (prefetching hides the rest).
    if (sc_.training.loader_samples_per_s) {
      const double need = rep.samples / *sc_.training.loader_samples_per_s;
      if (need > rep.step_time_s) {
        rep.data_wait_s = need - rep.step_time_s;
        rep.step_time_s = need;
        rep.exposed_comm_s = rep.step_time_s - rep.compute_only_s;
        if (rep.comm_alone_s > 0) rep.overlap_ratio = 1.0 - rep.exposed_comm_s / rep.comm_alone_s;
        rep.micro_step_time_s = rep.step_time_s / rep.micro_steps;
      }
    }
    return rep;
  }

  static void accumulate(report::IterationReport& into, const report::IterationReport& x, double w) {
    into.step_time_s += w * x.step_time_s;
    into.forward_s += w * x.forward_s;
    into.backward_compute_s += w * x.backward_compute_s;
    into.ddp_copy_s += w * x.ddp_copy_s;
    into.finalize_wait_s += w * x.finalize_wait_s;
    into.optimizer_s += w * x.optimizer_s;
    into.compute_only_s += w * x.compute_only_s;
    into.comm_alone_s += w * x.comm_alone_s;
    into.comm_busy_s += w * x.comm_busy_s;
    into.exposed_comm_s += w * x.exposed_comm_s;
    into.contention_s += w * x.contention_s;
    into.straggler_wait_s += w * x.straggler_wait_s;
    into.comm_exposed_s += w * x.comm_exposed_s;
    into.data_wait_s += w * x.data_wait_s;
    into.comm_hidden_s += w * x.comm_hidden_s;
    into.h2d_s += w * x.h2d_s;
    into.autograd_traversal_s += w * x.autograd_traversal_s;
    into.micro_step_time_s += w * x.micro_step_time_s;
    into.comm_alone_per_sample_s += w * x.comm_alone_per_sample_s;
  }

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
    r.backend = config::to_string(sc_.simulation.backend);
    r.fidelity = config::to_string(sc_.simulation.fidelity);
    r.bucket_cap_mb = sc_.ddp.bucket_cap_mb;
    r.grad_bytes = sc_.model.grad_bytes();
    r.num_params = static_cast<int>(sc_.model.params.size());
    r.rebuilt = plans_.rebuilt;
    r.has_iteration1 = opt_.simulate_iteration1;
    r.comm_hook = sc_.ddp.comm_hook;
    r.explicit_ranks = ranks_ > 1;
    r.contention = contention_.enabled;
    r.compute_scale = profile_.compute_scale;
    r.measured_layers = profile_.measured_layers;
    int first_steady = 0;
    if (opt_.simulate_iteration1) {
      r.iteration1 = report_for(0);
      first_steady = 1;
    }
    if (steady_steps_ == 1) {
      r.steady = report_for(first_steady);
    } else {
      // Explicit ranks: the mean over the steady steps, with the step-time distribution.
      std::vector<double> times;
      report::IterationReport mean;
      for (int s = 0; s < steady_steps_; ++s) {
        auto x = report_for(first_steady + s);
        times.push_back(x.step_time_s);
        accumulate(mean, x, 1.0 / steady_steps_);
        if (s == steady_steps_ - 1) {
          mean.buckets = x.buckets;
          mean.iteration = x.iteration;
          mean.micro_steps = x.micro_steps;
          mean.samples = x.samples;
        }
      }
      if (mean.comm_alone_s > 0) mean.overlap_ratio = 1.0 - mean.exposed_comm_s / mean.comm_alone_s;
      mean.step_time_p50_s = percentile(times, 0.50);
      mean.step_time_p95_s = percentile(times, 0.95);
      mean.step_time_p99_s = percentile(times, 0.99);
      mean.steps_simulated = steady_steps_;
      r.steady = mean;
    }
    r.steady_iteration = r.steady.iteration;
    r.trace = std::move(trace_);
    r.flows = flow_->flows();
    return r;
  }

  const config::Scenario& sc_;
  RunOptions opt_;
  gpu::ComputeProfile profile_;
  ddp::BucketPlans plans_;
  network::AnalyticNetwork analytic_;
  std::unique_ptr<network::FlowNetwork> flow_;
  int world_;
  int ranks_;    // ranks simulated explicitly (1: the representative rank)
  int streams_;  // NCCL streams (process groups); 0 without DDP
  gpu::ContentionParams contention_;
  double buffer_bytes_ = 0;
  std::vector<std::vector<int>> layer_params_;
  std::vector<ddp::BucketComm> comm_iter1_, comm_steady_;
  int steady_steps_ = 1;
  std::vector<std::vector<double>> factor_;  // [report][rank]
  std::vector<MicroStep> steps_;
  std::vector<int> report_iteration_;
  std::vector<std::vector<Job>> jobs_;  // [micro-step][job]: 0 broadcast, 1+b bucket b, 1+B used map
  std::vector<std::vector<RankStep>> rank_steps_;
  std::vector<std::unique_ptr<GpuShare>> shares_;
  std::vector<std::deque<std::pair<size_t, size_t>>> queues_;
  std::vector<report::TraceEvent> trace_;
  sg4::MutexPtr mutex_;
  sg4::ConditionVariablePtr cv_;
  int finished_ranks_ = 0;
};

}  // namespace

report::StepReport simulate(const config::Scenario& scenario, const RunOptions& options) {
  StepSimulator sim(scenario, options);
  return sim.run();
}

}  // namespace ddpsim::engine
