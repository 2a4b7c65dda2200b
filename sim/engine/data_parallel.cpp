#include "engine/data_parallel.hpp"

#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <simgrid/s4u.hpp>
#include <string>

#include "collectives/collective_model.hpp"
#include "core/error.hpp"
#include "core/units.hpp"
#include "gpu/compute_model.hpp"
#include "gpu/kernel_model.hpp"
#include "network/flow.hpp"
#include "network/registry.hpp"

namespace sg4 = simgrid::s4u;

namespace ddpsim::engine {

namespace {

using namespace dp_costs;

class ActorClock final : public network::Clock {
 public:
  void sleep_for(double seconds) override { sg4::this_actor::sleep_for(seconds); }
};

enum Phase { SCATTER, REPLICATE, FORWARD, GATHER, BACKWARD, REDUCE, OPTIMIZER, PHASES };
const char* const kPhaseNames[PHASES] = {"scatter",  "replicate", "forward",  "gather",
                                         "backward", "reduce",    "optimizer"};

// A peer copy or an NCCL call: every participating stream must reach it; the last one runs it.
struct Sync {
  int participants = 0;
  int arrived = 0;
  bool done = false;
  std::vector<int> gpus;
  bool port = true;  // counted as port transfer time (peer copies, NCCL calls)
  std::function<void()> run;
  std::string name;      // --trace: the event on every participant's track
  const char* cat = "";  // its category: "copy", "nccl", "h2d"
  double start = 0;      // when the last participant started it
  sg4::ConditionVariablePtr cv;
};

struct Item {
  double seconds = 0;  // a kernel
  std::shared_ptr<Sync> sync;
  Phase phase = SCATTER;
  const std::string* name = nullptr;  // --trace: the kernel's layer (or what it is)
};

// --trace tracks: the Python process (pid 0: its main thread, a parallel_apply and an autograd
// device thread per GPU, the step's phases) and one process per GPU (pid 1 + g: its current
// stream). Host spans nest (a layer's dispatch holds its GIL waits); a GPU's items never overlap.
constexpr int kHostPid = 0;
int apply_tid(int i) { return 1 + 2 * i; }
int autograd_tid(int i) { return 2 + 2 * i; }

class DataParallelSim {
 public:
  DataParallelSim(const config::Scenario& sc, const RunOptions& opt)
      : sc_(sc),
        opt_(opt),
        profile_(gpu::build_compute_profile(sc)),
        model_(sc.cluster, sc.collective),
        g_(sc.cluster.gpus_per_node) {
    op_ = gpu::eager_host_cost().forward_op_s;
    const auto layer_name = [&](size_t l) {
      return l < sc.model.layers.size() ? sc.model.layers[l].name : "layer " + std::to_string(l);
    };
    for (size_t l = 0; l < profile_.forward_ops.size(); ++l) fwd_names_.push_back(layer_name(l) + " (forward)");
    for (size_t l = 0; l < profile_.backward_ops.size(); ++l) bwd_names_.push_back(layer_name(l) + " (backward)");
    port_bw_ = sc.cluster.intra_bandwidth();
    // A peer copy (cudaMemcpyAsync between two GPUs) takes the links between the pair: all of
    // the GPU's links through an NVSwitch or its PCIe link, at most peer_links of them in an
    // NVLink mesh (DGX-1 V100 hybrid cube mesh: at most 2 between a pair, configs/clusters).
    const auto& c = sc.cluster;
    pair_bw_ = (c.fabric == config::IntraFabric::NVLINK_MESH && c.peer_links > 0)
                   ? std::min(port_bw_, c.intra_link.bandwidth * c.peer_links)
                   : port_bw_;
    const auto& m = sc.model;
    for (const auto& p : m.params) {
      dp_.param_bytes += p.bytes();
      if (p.requires_grad) dp_.grad_bytes += p.bytes();
    }
    for (const auto& b : m.buffers) dp_.buffer_bytes += static_cast<double>(b.numel) * config::dtype_size(b.dtype);
    dp_.input_bytes = gpu::input_bytes_per_sample(sc) * sc.training.batch_size * g_;
    dp_.output_bytes = g_ > 1 ? dp_output_bytes_per_sample(sc) * sc.training.batch_size * g_ : 0.0;
    dp_.nccl = sc.training.data_parallel.nccl;
    dp_.gil_share = sc.training.data_parallel.gil_share;
    gpus_.resize(static_cast<size_t>(g_));
    for (int i = 0; i < g_; ++i) {
      gpus_[static_cast<size_t>(i)].gpu = i;
      gpus_[static_cast<size_t>(i)].port_bandwidth = port_bw_;
    }
  }

  report::StepReport run() {
    const auto engine = network::FlowBackend::create_engine();
    sg4::Engine& e = *engine;
    auto* zone = sg4::create_star_zone("platform");
    host_ = zone->create_host("python", 1.0)->seal();
    backend_ = network::make_backend(
        config::to_string(sc_.simulation.backend),
        {zone, sc_.cluster, model_.ring(), sc_.simulation, sc_.collective.nccl_cross_nic, false, g_, pair_bw_});
    zone->seal();
    mutex_ = sg4::Mutex::create();
    gil_ = sg4::Mutex::create();
    host_cv_ = sg4::ConditionVariable::create();
    for (int i = 0; i < g_; ++i) {
      streams_.emplace_back();
      streams_.back().cv = sg4::ConditionVariable::create();
      sg4::Actor::create("stream-" + std::to_string(i), host_, [this, i] { stream(i); });
    }
    sg4::Actor::create("python-main", host_, [this] { main_thread(); });
    e.run();
    if (!finished_) throw core::SimulationError("DataParallel simulation ended before the step finished");
    return build_report();
  }

 private:
  struct Stream {
    std::deque<Item> q;
    sg4::ConditionVariablePtr cv;
    bool closed = false;
  };

  // ------------------------------------------------------------------ GPU streams

  void push(int g, Item it) {
    auto& s = streams_[static_cast<size_t>(g)];
    s.q.push_back(std::move(it));
    s.cv->notify_all();
  }

  void stream(int g) {
    auto& s = streams_[static_cast<size_t>(g)];
    auto& rec = gpus_[static_cast<size_t>(g)];
    while (true) {
      Item it;
      {
        std::unique_lock lock(*mutex_);
        while (s.q.empty() && !s.closed) s.cv->wait(lock);
        if (s.q.empty()) break;
        it = std::move(s.q.front());
        s.q.pop_front();
      }
      if (it.sync) {
        Sync& y = *it.sync;
        if (++y.arrived == y.participants) {
          const double r0 = sg4::Engine::get_clock();
          y.start = r0;
          y.run();
          const double took = sg4::Engine::get_clock() - r0;
          if (y.port) {
            comm_busy_ += took;
            for (int p : y.gpus) gpus_[static_cast<size_t>(p)].transfer_s += took;
          }
          y.done = true;
          y.cv->notify_all();
        } else {
          std::unique_lock lock(*mutex_);
          while (!y.done) y.cv->wait(lock);
        }
        if (opt_.collect_trace) trace(1 + g, 0, y.name, y.cat, y.start, sg4::Engine::get_clock() - y.start);
      } else if (it.seconds > 0) {
        const double t0 = sg4::Engine::get_clock();
        sg4::this_actor::sleep_for(it.seconds);
        rec.kernel_s += it.seconds;
        if (g == 0) compute_only_ += it.seconds;
        if (opt_.collect_trace) trace(1 + g, 0, it.name ? *it.name : "kernel", kPhaseNames[it.phase], t0, it.seconds);
      }
      mark(it.phase);
    }
    if (++drained_ == g_) {
      finished_ = true;
      end_ = sg4::Engine::get_clock();
    }
  }

  void mark(Phase p) { phase_end_[p] = std::max(phase_end_[p], sg4::Engine::get_clock()); }

  void trace(int pid, int tid, const std::string& name, const char* cat, double t0, double dur) {
    if (dur > 0) trace_.push_back({name, cat, tid, t0, dur, nullptr, pid});
  }

  // `gpus`: the streams that take part; `port`: whether it crosses their intra-node ports (a peer
  // copy or an NCCL call; not the host-to-device copy).
  std::shared_ptr<Sync> make_sync(std::vector<int> gpus, std::function<void()> run, std::string name, const char* cat,
                                  bool port = true) {
    auto y = std::make_shared<Sync>();
    y->participants = static_cast<int>(gpus.size());
    y->port = port;
    if (opt_.collect_trace) y->name = std::move(name);
    y->cat = cat;
    y->gpus = std::move(gpus);
    y->run = std::move(run);
    y->cv = sg4::ConditionVariable::create();
    return y;
  }

  // A peer copy src -> dst (Copy.cu: on src's stream, after dst's stream reaches it; dst's stream
  // waits for it to finish).
  void peer_copy(int src, int dst, double bytes, Phase ph) {
    if (bytes <= 0 || src == dst) return;
    auto y = make_sync(
        {src, dst},
        [this, src, dst, bytes] {
          backend_->transfer(clock_, src, dst, bytes, pair_bw_);
          gpus_[static_cast<size_t>(src)].tx_bytes += bytes;
          gpus_[static_cast<size_t>(dst)].rx_bytes += bytes;
          comm_alone_ += bytes / pair_bw_;
        },
        "peer copy " + std::to_string(src) + " -> " + std::to_string(dst) + " (" + core::format_bytes(bytes) + ")",
        "copy");
    push(src, {0, y, ph});
    push(dst, {0, y, ph});
  }

  // An NCCL broadcast from GPU 0 (ring 0 -> 1 -> ... -> G-1) or reduce to GPU 0 (1 -> ... -> G-1 -> 0)
  // of `bytes` over all G GPUs: ncclBcast / ncclReduce on every device's current stream.
  void nccl_call(bool reduce, double bytes, Phase ph) {
    std::vector<int> all;
    for (int i = 0; i < g_; ++i) all.push_back(i);
    auto y = make_sync(
        all,
        [this, reduce, bytes] {
          const auto t = model_.broadcast(bytes);
          backend_->run_phase(clock_, {t.reduce_scatter, t.base_latency});
          comm_alone_ += t.total();
          for (int i = 0; i < g_; ++i) {
            auto& r = gpus_[static_cast<size_t>(i)];
            const bool sends = reduce ? i != 0 : i != g_ - 1;
            const bool receives = reduce ? i != 1 : i != 0;
            if (sends) r.tx_bytes += bytes;
            if (receives) r.rx_bytes += bytes;
          }
        },
        std::string(reduce ? "ncclReduce to GPU 0 (" : "ncclBcast from GPU 0 (") + core::format_bytes(bytes) + ")",
        "nccl");
    for (int i = 0; i < g_; ++i) push(i, {0, y, ph});
  }

  double copy_kernel(double bytes) const {
    return gpu::roofline_kernel(0, 2 * bytes, profile_.peak_flops, sc_.cluster.gpu.hbm_bandwidth, sc_.compute).seconds;
  }

  // ------------------------------------------------------------------ host threads

  // Python work on the main thread: it holds the GIL throughout.
  void python(double seconds, const char* what) {
    if (seconds <= 0) return;
    std::unique_lock lock(*gil_);
    const double t0 = sg4::Engine::get_clock();
    sg4::this_actor::sleep_for(seconds);
    dp_.host_python_s += seconds;
    if (opt_.collect_trace) trace(kHostPid, 0, what, "python", t0, seconds);
  }

  // One eager op from parallel_apply thread `tid`: gil_share of its host cost under the GIL.
  void threaded_op(double cost, int tid) {
    const double s = sc_.training.data_parallel.gil_share;
    if (cost <= 0) return;
    if (s > 0) {
      const double w0 = sg4::Engine::get_clock();
      gil_->lock();
      dp_.gil_wait_s += sg4::Engine::get_clock() - w0;
      if (opt_.collect_trace) trace(kHostPid, tid, "GIL wait", "gil wait", w0, sg4::Engine::get_clock() - w0);
      sg4::this_actor::sleep_for(s * cost);
      gil_->unlock();
    }
    if (s < 1) sg4::this_actor::sleep_for((1 - s) * cost);
  }

  // The forward's ops for GPU g, dispatched from host track `tid` (a parallel_apply thread, or
  // the main thread with one GPU); each layer's dispatch is one span of the trace.
  void forward_ops(int g, bool threaded, int tid) {
    for (size_t l = 0; l < profile_.forward_ops.size(); ++l) {
      const double t0 = sg4::Engine::get_clock();
      for (double k : profile_.forward_ops[l]) {
        if (threaded)
          threaded_op(profile_.host_forward_op_s, tid);
        else
          sg4::this_actor::sleep_for(profile_.host_forward_op_s);
        push(g, {k, nullptr, FORWARD, &fwd_names_[l]});
      }
      if (opt_.collect_trace) trace(kHostPid, tid, fwd_names_[l], "dispatch", t0, sg4::Engine::get_clock() - t0);
    }
  }

  void backward_ops(int g) {
    // An autograd device thread (C++): no GIL.
    for (size_t l = profile_.backward_ops.size(); l-- > 0;) {
      const double t0 = sg4::Engine::get_clock();
      for (double k : profile_.backward_ops[l]) {
        sg4::this_actor::sleep_for(profile_.host_backward_op_s);
        push(g, {k, nullptr, BACKWARD, &bwd_names_[l]});
      }
      if (opt_.collect_trace)
        trace(kHostPid, autograd_tid(g), bwd_names_[l], "dispatch", t0, sg4::Engine::get_clock() - t0);
    }
  }

  // Runs `body(i)` on n new actors and waits for all of them (threads joined).
  void run_threads(int n, const std::string& name, const std::function<void(int)>& body) {
    int left = n;
    for (int i = 0; i < n; ++i)
      sg4::Actor::create(name + std::to_string(i), host_, [this, i, &left, &body] {
        body(i);
        if (--left == 0) host_cv_->notify_all();
      });
    std::unique_lock lock(*mutex_);
    while (left > 0) host_cv_->wait(lock);
  }

  void broadcast_coalesced(const std::vector<double>& bytes, const std::vector<int>& types) {
    for (const auto& chunk : take_tensors_cpp(bytes, types, kCoalesceBytes)) {
      double b = 0;
      for (int i : chunk) b += bytes[static_cast<size_t>(i)];
      python(op_ * (1 + g_), "broadcast_coalesced: flatten, NCCL calls");
      if (chunk.size() > 1) push(0, {copy_kernel(b), nullptr, REPLICATE, &kFlatten});
      ++dp_.broadcast_calls;
      if (dp_.nccl) {
        nccl_call(false, b, REPLICATE);
      } else {
        for (int j = 1; j < g_; ++j) peer_copy(0, j, b, REPLICATE);
      }
    }
  }

  void main_thread() {
    const auto& m = sc_.model;
    // The user's input.to("cuda:0"): the whole batch over GPU 0's host link; the forward is
    // dispatched once it is done (see the header).
    const bool on_cpu = sc_.training.data_parallel.input_device == "cpu" && g_ > 1;
    const double h2d = profile_.h2d.seconds <= 0 ? 0.0
                       : on_cpu                  ? profile_.h2d.seconds
                                                 : profile_.h2d.shape.memory_s * g_ + profile_.h2d.shape.overhead_s;
    h2d_s_ = h2d;
    auto h2d_on = [&](int g) {
      gpus_[static_cast<size_t>(g)].host_link_bytes = on_cpu ? dp_.input_bytes / g_ : dp_.input_bytes;
      auto y = make_sync(
          {g}, [h2d] { sg4::this_actor::sleep_for(h2d); },
          on_cpu ? "input chunk to cuda:" + std::to_string(g) : "input.to(cuda:0)", "h2d", false);
      push(g, {0, y, SCATTER});
      gpus_[static_cast<size_t>(g)].kernel_s += h2d;
      return y;
    };
    if (!on_cpu) {
      auto y = h2d_on(0);
      std::unique_lock lock(*mutex_);
      while (!y->done) y->cv->wait(lock);
    }
    compute_only_ += h2d;

    // DataParallel.forward: the device check over parameters and buffers, then Scatter.
    python(kDeviceCheckPerTensor * static_cast<double>(m.params.size() + m.buffers.size()), "device check");
    python(op_ * (2 + g_), "Scatter.apply");  // tensor.chunk, one .to per device
    if (on_cpu) {
      // Each chunk host-to-device on its GPU's background stream; the current streams wait for it.
      std::vector<std::shared_ptr<Sync>> ys;
      for (int j = 0; j < g_; ++j) ys.push_back(h2d_on(j));
      std::unique_lock lock(*mutex_);
      for (auto& y : ys)
        while (!y->done) y->cv->wait(lock);
    } else {
      const double chunk = dp_.input_bytes / g_;
      for (int j = 1; j < g_; ++j) peer_copy(0, j, chunk, SCATTER);
    }
    mark(SCATTER);

    if (g_ == 1) {
      // `if len(self.device_ids) == 1: return self.module(*inputs[0], ...)`
      forward_ops(0, false, 0);
      mark(FORWARD);
      run_threads(1, "autograd-device", [this](int i) { backward_ops(i); });
      mark(BACKWARD);
    } else {
      // replicate: parameters, buffers, then the module copies in Python.
      std::vector<double> pb, bb;
      std::vector<int> pt, bt;
      for (const auto& p : m.params) {
        pb.push_back(p.bytes());
        pt.push_back(static_cast<int>(p.dtype));
      }
      for (const auto& b : m.buffers) {
        bb.push_back(static_cast<double>(b.numel) * config::dtype_size(b.dtype));
        bt.push_back(static_cast<int>(b.dtype));
      }
      broadcast_coalesced(pb, pt);
      broadcast_coalesced(bb, bt);
      python(g_ * (kReplicatePerModule * static_cast<double>(m.layers.size()) +
                   kReplicatePerTensor * static_cast<double>(m.params.size() + m.buffers.size())),
             "replicate: module copies");
      mark(REPLICATE);

      // parallel_apply: a thread per GPU (started and joined by the main thread).
      python(kThreadStartJoin * g_, "parallel_apply: threads start, join");
      run_threads(g_, "parallel-apply-", [this](int i) { forward_ops(i, true, apply_tid(i)); });
      mark(FORWARD);

      // Gather to GPU 0.
      python(op_ * (2 + g_), "Gather.apply");
      const double out = dp_.output_bytes / g_;
      for (int j = 1; j < g_; ++j) peer_copy(j, 0, out, GATHER);
      mark(GATHER);

      // backward: Gather's backward (Python) scatters the output gradient from GPU 0, then the
      // device threads run the replicas' backward.
      python(op_ * (2 + g_), "Gather.backward: Scatter");
      for (int j = 1; j < g_; ++j) peer_copy(0, j, out, BACKWARD);
      run_threads(g_, "autograd-device-", [this](int i) { backward_ops(i); });
      mark(BACKWARD);

      // ReduceAddCoalesced (Python) over the trainable parameters' gradients.
      std::vector<double> gb;
      std::vector<int> gt;
      for (const auto& p : m.params)
        if (p.requires_grad) {
          gb.push_back(p.bytes());
          gt.push_back(static_cast<int>(p.dtype));
        }
      for (const auto& c : take_tensors_py(gb, gt, kCoalesceBytes)) {
        double b = 0;
        for (int i : c) b += gb[static_cast<size_t>(i)];
        python(op_ * (2 + g_), "ReduceAddCoalesced");  // G flattens, the reduce, the unflatten
        ++dp_.reduce_calls;
        if (c.size() > 1)
          for (int i = 0; i < g_; ++i) push(i, {copy_kernel(b), nullptr, REDUCE, &kFlatten});
        if (dp_.nccl) {
          nccl_call(true, b, REDUCE);
        } else {
          // result = inputs[root] + nonroot[0].to(root); result.add_(other.to(root)) ...
          for (int j = 1; j < g_; ++j) {
            peer_copy(j, 0, b, REDUCE);
            push(0, {gpu::roofline_kernel(0, 3 * b, profile_.peak_flops, sc_.cluster.gpu.hbm_bandwidth, sc_.compute)
                         .seconds,
                     nullptr, REDUCE, &kAdd});
          }
        }
      }
      // AccumulateGrad of every trainable parameter on GPU 0 (the reduced gradients are stolen).
      const double acc0 = sg4::Engine::get_clock();
      sg4::this_actor::sleep_for(profile_.host_backward_op_s * static_cast<double>(gb.size()));
      if (opt_.collect_trace)
        trace(kHostPid, 0, "AccumulateGrad (GPU 0)", "dispatch", acc0, sg4::Engine::get_clock() - acc0);
      mark(REDUCE);
    }

    // The optimizer on GPU 0.
    for (const gpu::Kernel* k : {&profile_.grad_unscale, &profile_.clip, &profile_.optimizer, &profile_.zero_grad})
      if (k->seconds > 0) push(0, {k->seconds, nullptr, OPTIMIZER, &kOptimizer});
    mark(OPTIMIZER);
    for (auto& s : streams_) {
      s.closed = true;
      s.cv->notify_all();
    }
  }

  // ------------------------------------------------------------------ report

  report::StepReport build_report() {
    report::StepReport r;
    r.scenario = sc_.name;
    r.model = sc_.model.name;
    r.cluster = sc_.cluster.name;
    r.gpu = sc_.cluster.gpu.name;
    r.world_size = g_;
    r.nodes = 1;
    r.gpus_per_node = g_;
    r.batch_size = sc_.training.batch_size;
    r.backend = backend_->name();
    r.fidelity = config::to_string(sc_.simulation.fidelity);
    r.bucket_cap_mb = 0;
    r.grad_bytes = sc_.model.grad_bytes();
    r.num_params = static_cast<int>(sc_.model.params.size());
    r.comm_hook = "none";
    r.compute_scale = profile_.compute_scale;
    r.measured_layers = profile_.measured_layers;
    r.compute_provenance = profile_.provenance;
    r.compute_scale_per = profile_.compute_scale_per;
    r.model_flops_per_micro_step = profile_.model_flops;
    r.mfu_peak_flops = profile_.mfu_peak;
    r.mfu_peak_dtype = profile_.mfu_peak_dtype;
    r.seq_len = profile_.seq_len;
    r.image_size = profile_.image_size;
    r.attention = profile_.attention;
    r.flows = backend_->flows();
    r.ranks = "data_parallel";
    r.has_iteration1 = false;
    r.steady_iteration = 1;

    auto& d = dp_;
    double prev = 0;
    double* out[PHASES] = {&d.scatter_s,  &d.replicate_s, &d.forward_s,  &d.gather_s,
                           &d.backward_s, &d.reduce_s,    &d.optimizer_s};
    for (int p = 0; p < PHASES; ++p) {
      const double e = std::max(prev, phase_end_[p]);
      *out[p] = e - prev;
      if (opt_.collect_trace) trace(kHostPid, phases_tid(), kPhaseNames[p], "phase", prev, e - prev);
      prev = e;
    }
    if (opt_.collect_trace) {
      r.trace = std::move(trace_);
      const std::string host = "python process (torch.nn.DataParallel)";
      r.trace_tracks.push_back({kHostPid, 0, host, "main thread"});
      for (int i = 0; i < g_; ++i) {
        r.trace_tracks.push_back({kHostPid, apply_tid(i), host, "parallel_apply thread " + std::to_string(i)});
        r.trace_tracks.push_back({kHostPid, autograd_tid(i), host, "autograd device thread " + std::to_string(i)});
      }
      r.trace_tracks.push_back({kHostPid, phases_tid(), host, "step phases"});
      for (int i = 0; i < g_; ++i)
        r.trace_tracks.push_back(
            {1 + i, 0, "GPU " + std::to_string(i) + " (" + sc_.cluster.gpu.name + ")", "current stream"});
    }
    const double step = std::max(prev, end_);
    for (auto& g : gpus_) {
      g.bandwidth_use =
          (step > 0 && g.port_bandwidth > 0) ? (g.tx_bytes + g.rx_bytes) / (step * 2 * g.port_bandwidth) : 0.0;
      g.transfer_bandwidth_share = (g.transfer_s > 0 && g.port_bandwidth > 0)
                                       ? std::max(g.tx_bytes, g.rx_bytes) / (g.transfer_s * g.port_bandwidth)
                                       : 0.0;
    }
    d.gpus = gpus_;

    auto& s = r.steady;
    s.iteration = 1;
    s.step_time_s = step;
    s.forward_s = d.forward_s;
    s.backward_compute_s = d.backward_s;
    s.optimizer_s = d.optimizer_s;
    s.compute_only_s = compute_only_;
    s.comm_alone_s = comm_alone_;
    s.comm_busy_s = comm_busy_;
    s.exposed_comm_s = step - compute_only_;
    s.comm_exposed_s = comm_busy_;
    s.comm_hidden_s = 0;
    if (comm_busy_ > 0) s.overlap_ratio = 0.0;
    s.h2d_s = h2d_s_;
    s.samples = sc_.training.batch_size;
    s.micro_step_time_s = step;
    s.comm_alone_per_sample_s = comm_alone_ / std::max(1, sc_.training.batch_size);
    r.iteration1 = s;
    r.data_parallel = d;
    return r;
  }

  int phases_tid() const { return 1 + 2 * g_; }

  const config::Scenario& sc_;
  RunOptions opt_;
  std::vector<std::string> fwd_names_, bwd_names_;  // per layer, for the trace
  const std::string kFlatten = "flatten (coalesce)", kAdd = "add (reduce on GPU 0)", kOptimizer = "optimizer";
  std::vector<report::TraceEvent> trace_;
  gpu::ComputeProfile profile_;
  collectives::CollectiveModel model_;
  int g_;
  double op_ = 0, port_bw_ = 0, pair_bw_ = 0;
  sg4::Host* host_ = nullptr;
  std::unique_ptr<network::Backend> backend_;
  ActorClock clock_;
  sg4::MutexPtr mutex_, gil_;
  sg4::ConditionVariablePtr host_cv_;
  std::deque<Stream> streams_;
  std::vector<report::DataParallelGpu> gpus_;
  report::DataParallelReport dp_;
  double phase_end_[PHASES] = {};
  double compute_only_ = 0, comm_alone_ = 0, comm_busy_ = 0, h2d_s_ = 0, end_ = 0;
  int drained_ = 0;
  bool finished_ = false;
};

}  // namespace

report::StepReport simulate_data_parallel(const config::Scenario& scenario, const RunOptions& options) {
  if (scenario.cluster.nodes != 1)
    throw core::ConfigError(scenario.file + ": /nodes: " + std::to_string(scenario.cluster.nodes) +
                            " nodes with training.wrapper \"data_parallel\"; expected 1");
  DataParallelSim sim(scenario, options);
  return sim.run();
}

}  // namespace ddpsim::engine
