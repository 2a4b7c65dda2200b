#include "engine/simulation.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <memory>
#include <mutex>
#include <simgrid/s4u.hpp>
#include <string>

#include "core/error.hpp"
#include "ddp/bucketizer.hpp"
#include "gpu/compute_model.hpp"
#include "network/analytic.hpp"
#include "network/flow.hpp"

namespace sg4 = simgrid::s4u;

namespace ddpsim::engine {
namespace {

// Work amounts are seconds times this speed; SimGrid's work precision (1e-5) is then 1e-14 s.
constexpr double kGpuSpeed = 1e9;

struct IterationPlan {
  int number = 1;
  const std::vector<ddp::Bucket>* buckets = nullptr;
  bool used_map_allreduce = false;  // find_unused_parameters without static_graph
};

struct BucketState {
  int pending = 0;
  bool launched = false;
  double ready = 0, launch = 0, start = 0, rs_end = 0, end = 0;
};

class StepSimulator {
 public:
  StepSimulator(const config::Scenario& sc, const RunOptions& opt)
      : sc_(sc),
        opt_(opt),
        profile_(gpu::build_compute_profile(sc)),
        plans_(ddp::plan_buckets(sc.model, sc.ddp)),
        analytic_(sc.cluster, sc.collective),
        world_(sc.cluster.world_size()) {
    // Parameters of each layer in the order their gradients became ready.
    std::vector<int> rank_in_order(sc.model.params.size(), 0);
    for (size_t i = 0; i < sc.model.grad_ready_order.size(); ++i) rank_in_order[sc.model.grad_ready_order[i]] = static_cast<int>(i);
    layer_params_.resize(sc.model.layers.size());
    for (size_t l = 0; l < sc.model.layers.size(); ++l) {
      for (int p : sc.model.layers[l].params)
        if (sc.model.params[p].requires_grad) layer_params_[l].push_back(p);
      std::sort(layer_params_[l].begin(), layer_params_[l].end(),
                [&](int a, int b) { return rank_in_order[a] < rank_in_order[b]; });
    }
  }

  report::StepReport run() {
    std::string arg0 = "ddpsim";
    std::string log = "--log=root.thresh:critical";
    char* argv[] = {arg0.data(), log.data(), nullptr};
    int argc = 2;
    sg4::Engine e(&argc, argv);
    network::FlowNetwork::configure(e);
    flow_ = std::make_unique<network::FlowNetwork>(e, sc_.cluster, analytic_.ring(), kGpuSpeed);

    if (opt_.simulate_iteration1) iterations_.push_back({1, &plans_.iteration1, false});
    const int steady_number = plans_.rebuilt ? plans_.rebuild_iteration : 2;
    iterations_.push_back({steady_number, &plans_.steady_state, false});
    for (auto& it : iterations_) it.used_map_allreduce = sc_.ddp.find_unused_parameters && !sc_.ddp.static_graph;

    mutex_ = sg4::Mutex::create();
    cv_ = sg4::ConditionVariable::create();
    sg4::Host* gpu0 = flow_->host(0);
    sg4::Actor::create("compute-stream", gpu0, [this] { compute_stream(); });
    if (world_ > 1) sg4::Actor::create("nccl-stream", gpu0, [this] { comm_stream(); });
    e.run();

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
    r.steady_iteration = steady_number;
    r.has_iteration1 = opt_.simulate_iteration1;
    if (results_.size() != iterations_.size()) throw core::SimulationError("simulation ended before every iteration finished");
    if (opt_.simulate_iteration1) r.iteration1 = results_.front();
    r.steady = results_.back();
    r.trace = std::move(trace_);
    r.flows = flow_->flows();
    return r;
  }

 private:
  void exec(double seconds, const std::string& name, const char* cat) {
    if (seconds <= 0) return;
    const double t0 = sg4::Engine::get_clock();
    sg4::this_actor::execute(seconds * kGpuSpeed);
    if (opt_.collect_trace) trace_.push_back({name, cat, 0, t0, sg4::Engine::get_clock() - t0, nullptr});
  }

  bool ddp_active() const { return world_ > 1; }

  void compute_stream() {
    const auto& m = sc_.model;
    for (size_t k = 0; k < iterations_.size(); ++k) {
      const IterationPlan& plan = iterations_[k];
      report::IterationReport rep;
      rep.iteration = plan.number;
      const double t0 = sg4::Engine::get_clock();
      rep.start_s = t0;
      begin_iteration(plan, t0);

      for (size_t l = 0; l < m.layers.size(); ++l) exec(profile_.forward[l], m.layers[l].name, "forward");
      const double t_fwd = sg4::Engine::get_clock();
      rep.forward_s = t_fwd - t0;

      double copy_in = 0;
      for (size_t l = m.layers.size(); l-- > 0;) {
        exec(profile_.backward[l], m.layers[l].name, "backward");
        for (int p : layer_params_[l]) {
          if (ddp_active()) {
            exec(profile_.copy_in[p], "copy grad " + m.params[p].name, "ddp");
            copy_in += profile_.copy_in[p];
          }
          mark_ready(p);
        }
      }
      const double t_bwd = sg4::Engine::get_clock();
      rep.backward_compute_s = t_bwd - t_fwd;

      // finalize_backward: the compute stream waits for every bucket's all-reduce.
      if (ddp_active()) {
        std::unique_lock lock(*mutex_);
        while (completed_ < total_collectives_) cv_->wait(lock);
      }
      const double t_wait = sg4::Engine::get_clock();
      rep.finalize_wait_s = t_wait - t_bwd;
      double copy_out = 0;
      if (ddp_active() && !sc_.ddp.gradient_as_bucket_view) {
        for (size_t b = 0; b < plan.buckets->size(); ++b) {
          double t = 0;
          for (int p : (*plan.buckets)[b].param_indices) t += profile_.copy_out[p];
          exec(t, "copy bucket " + std::to_string(b) + " to grads", "ddp");
          copy_out += t;
        }
      }
      const double t_opt0 = sg4::Engine::get_clock();
      exec(profile_.optimizer, "optimizer step (" + sc_.training.optimizer + ")", "optimizer");
      const double t_end = sg4::Engine::get_clock();
      rep.optimizer_s = t_end - t_opt0;
      rep.step_time_s = t_end - t0;
      rep.ddp_copy_s = copy_in + copy_out;
      rep.compute_only_s = profile_.forward_total + profile_.backward_total + copy_in + copy_out + profile_.optimizer;
      finish_iteration(plan, rep, t0, t_bwd);
      results_.push_back(std::move(rep));
    }
    done_ = true;
    cv_->notify_all();
  }

  void begin_iteration(const IterationPlan& plan, double t0) {
    const auto& buckets = *plan.buckets;
    state_.assign(buckets.size(), BucketState{});
    locator_.assign(sc_.model.params.size(), -1);
    for (size_t b = 0; b < buckets.size(); ++b) {
      state_[b].pending = static_cast<int>(buckets[b].param_indices.size());
      for (int p : buckets[b].param_indices) locator_[p] = static_cast<int>(b);
    }
    next_launch_ = 0;
    completed_ = 0;
    total_collectives_ = ddp_active() ? static_cast<int>(buckets.size()) + (plan.used_map_allreduce ? 1 : 0) : 0;
    iteration_start_ = t0;
    current_ = &plan;
    cv_->notify_all();
  }

  // Reducer::mark_variable_ready: a bucket whose last gradient arrived is ready; buckets are
  // launched strictly in index order, every consecutive ready bucket at once.
  void mark_ready(int p) {
    if (!ddp_active()) return;
    const int b = locator_[p];
    if (b < 0) return;
    const double now = sg4::Engine::get_clock();
    if (--state_[b].pending == 0) state_[b].ready = now;
    bool launched = false;
    while (next_launch_ < static_cast<int>(state_.size()) && state_[next_launch_].pending == 0) {
      state_[next_launch_].launched = true;
      state_[next_launch_].launch = now;
      ++next_launch_;
      launched = true;
    }
    if (launched) cv_->notify_all();
  }

  void run_allreduce(double bytes, const std::string& label, int bucket) {
    const double t0 = sg4::Engine::get_clock();
    const auto timing = analytic_.allreduce(bytes);
    double rs_end;
    if (sc_.simulation.backend == config::Backend::ANALYTIC) {
      sg4::this_actor::sleep_for(timing.base_latency + timing.reduce_scatter.total());
      rs_end = sg4::Engine::get_clock();
      sg4::this_actor::sleep_for(timing.all_gather.total());
    } else {
      sg4::this_actor::sleep_for(timing.base_latency);
      flow_->ring_phase(timing.reduce_scatter, sc_.simulation.fidelity);
      rs_end = sg4::Engine::get_clock();
      flow_->ring_phase(timing.all_gather, sc_.simulation.fidelity);
    }
    const double t1 = sg4::Engine::get_clock();
    if (bucket >= 0) {
      state_[bucket].start = t0;
      state_[bucket].rs_end = rs_end;
      state_[bucket].end = t1;
    }
    if (opt_.collect_trace) {
      core::Json args{{"bytes", bytes}, {"algorithm", timing.algorithm}, {"protocol", timing.protocol},
                      {"channels", timing.channels}};
      trace_.push_back({label, "allreduce", 1, t0, t1 - t0, args});
      trace_.push_back({"reduce-scatter", "phase", 1, t0, rs_end - t0, args});
      trace_.push_back({"all-gather", "phase", 1, rs_end, t1 - rs_end, args});
    }
  }

  // ProcessGroupNCCL: collectives of one process group run FIFO on one NCCL stream.
  void comm_stream() {
    size_t seen_iterations = 0;
    while (true) {
      std::unique_lock lock(*mutex_);
      while (!done_ && (current_ == nullptr || served_ == current_)) cv_->wait(lock);
      if (done_ && (current_ == nullptr || served_ == current_)) return;
      const IterationPlan* plan = current_;
      served_ = plan;
      ++seen_iterations;
      lock.unlock();
      const auto& buckets = *plan->buckets;
      for (size_t b = 0; b < buckets.size(); ++b) {
        {
          std::unique_lock l2(*mutex_);
          while (!state_[b].launched) cv_->wait(l2);
        }
        run_allreduce(buckets[b].bytes, "bucket " + std::to_string(b) + " all-reduce", static_cast<int>(b));
        ++completed_;
        cv_->notify_all();
      }
      if (plan->used_map_allreduce) {
        // find_unused_parameters: the int32 local-used map of every parameter is all-reduced too.
        run_allreduce(4.0 * static_cast<double>(sc_.model.params.size()), "local_used_map all-reduce", -1);
        ++completed_;
        cv_->notify_all();
      }
    }
  }

  void finish_iteration(const IterationPlan& plan, report::IterationReport& rep, double t0, double t_bwd) {
    const auto& buckets = *plan.buckets;
    double prev_end = t_bwd;
    for (size_t b = 0; b < buckets.size(); ++b) {
      report::BucketRow row;
      row.index = static_cast<int>(b);
      row.bytes = buckets[b].bytes;
      row.num_tensors = static_cast<int>(buckets[b].param_indices.size());
      if (ddp_active()) {
        const auto& s = state_[b];
        row.ready_s = s.ready - t0;
        row.launch_s = s.launch - t0;
        row.start_s = s.start - t0;
        row.rs_end_s = s.rs_end - t0;
        row.end_s = s.end - t0;
        row.alone_s = analytic_.allreduce(buckets[b].bytes).total();
        row.exposed_s = std::max(0.0, s.end - std::max(prev_end, t_bwd));
        prev_end = std::max(prev_end, s.end);
        rep.comm_alone_s += row.alone_s;
        rep.comm_busy_s += s.end - s.start;
      }
      rep.buckets.push_back(row);
    }
    if (ddp_active() && plan.used_map_allreduce) {
      const double t = analytic_.allreduce(4.0 * static_cast<double>(sc_.model.params.size())).total();
      rep.comm_alone_s += t;
      rep.comm_busy_s += t;  // it runs alone at the end of backward
    }
    rep.exposed_comm_s = rep.step_time_s - rep.compute_only_s;
    // The clock and the profile sum the same durations in different orders: drop rounding noise.
    if (std::abs(rep.exposed_comm_s) < 1e-12 * rep.step_time_s) rep.exposed_comm_s = 0.0;
    if (rep.comm_alone_s > 0) rep.overlap_ratio = 1.0 - rep.exposed_comm_s / rep.comm_alone_s;
  }

  const config::Scenario& sc_;
  RunOptions opt_;
  gpu::ComputeProfile profile_;
  ddp::BucketPlans plans_;
  network::AnalyticNetwork analytic_;
  std::unique_ptr<network::FlowNetwork> flow_;
  int world_;
  std::vector<std::vector<int>> layer_params_;
  std::vector<IterationPlan> iterations_;
  std::vector<report::IterationReport> results_;
  std::vector<report::TraceEvent> trace_;

  // Shared between the two stream actors (SimGrid runs actors one at a time; the mutex and
  // condition variable are simulated ones, used for blocking in simulated time).
  sg4::MutexPtr mutex_;
  sg4::ConditionVariablePtr cv_;
  std::vector<BucketState> state_;
  std::vector<int> locator_;
  int next_launch_ = 0;
  int completed_ = 0;
  int total_collectives_ = 0;
  double iteration_start_ = 0;
  const IterationPlan* current_ = nullptr;
  const IterationPlan* served_ = nullptr;
  bool done_ = false;
};

}  // namespace

report::StepReport simulate(const config::Scenario& scenario, const RunOptions& options) {
  StepSimulator sim(scenario, options);
  return sim.run();
}

}  // namespace ddpsim::engine
